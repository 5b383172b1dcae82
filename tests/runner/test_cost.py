"""rubricgate.runner.cost: the budget fails closed; totals never understate an unknown spend."""

from __future__ import annotations

import threading

import pytest

from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import CaseSummary, Grade, TrialResult
from rubricgate.runner import cost


def _trial(case: str, i: int, usd: float | None, cached: bool = False, tokens: int = 10) -> TrialResult:
    return TrialResult(case_id=case, trial=i, outcome="PASS", grades={"verdict": Grade(passed=True)},
                       input_tokens=tokens, output_tokens=tokens // 2, cost_usd=usd, cached=cached)


# -- failure paths first ----------------------------------------------------------------------

def test_negative_budget_is_rejected() -> None:
    with pytest.raises(ValueError, match="max-cost"):
        cost.Budget(-1.0)


def test_budget_refuses_once_spent_and_stays_refused() -> None:
    budget = cost.Budget(0.10)
    assert budget.try_start()
    budget.record(0.06)
    assert budget.try_start()
    budget.record(0.05)
    assert not budget.try_start()
    assert budget.exhausted and "spent" in budget.reason
    assert not budget.try_start()


def test_zero_budget_starts_nothing() -> None:
    budget = cost.Budget(0.0)
    assert not budget.try_start()
    assert budget.exhausted


def test_unpriced_trial_under_a_budget_stops_new_trials() -> None:
    budget = cost.Budget(5.0)
    budget.record(None)
    assert not budget.try_start()
    assert "cannot be enforced" in budget.reason


def test_unpriced_trial_without_budget_is_fine() -> None:
    budget = cost.Budget(None)
    budget.record(None)
    budget.record(1e9)
    assert budget.try_start() and not budget.exhausted


def test_cached_trials_are_not_charged() -> None:
    budget = cost.Budget(0.01)
    budget.record(5.0, cached=True)
    budget.record(None, cached=True)
    assert budget.try_start()


def test_budget_is_thread_safe() -> None:
    budget = cost.Budget(1000.0)
    threads = [threading.Thread(target=lambda: [budget.record(0.001) for _ in range(1000)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.spent_usd == pytest.approx(4.0)


# -- not-run trials ---------------------------------------------------------------------------

def test_not_run_trial_fails_every_dimension() -> None:
    trial = cost.not_run_trial("a", 2, "cost budget spent")
    assert trial.outcome == "ERROR"
    assert set(trial.grades) == set(DIMENSIONS)
    assert all(not g.passed and g.category == "not_run" for g in trial.grades.values())
    assert cost.is_not_run(trial)
    assert not cost.is_not_run(_trial("a", 1, 0.1))


# -- totals -----------------------------------------------------------------------------------

def _case(cid: str, tags: list[str], trials: list[TrialResult]) -> CaseSummary:
    return CaseSummary(id=cid, source="task", tags=tags, trials=trials)


def test_cost_summary_totals_by_case_and_tag() -> None:
    cases = [_case("a", ["fm"], [_trial("a", 1, 0.5), _trial("a", 2, 0.25)]),
             _case("b", ["fm", "refs"], [_trial("b", 1, 1.0), _trial("b", 2, 9.0, cached=True),
                                        cost.not_run_trial("b", 3, "budget")])]
    out = cost.cost_summary(cases)
    assert out["cost_usd"] == pytest.approx(1.75)
    assert out["input_tokens"] == 30 and out["output_tokens"] == 15
    assert out["cached_trials"] == 1 and out["not_run_trials"] == 1 and out["trials"] == 5
    assert out["by_case"]["a"]["cost_usd"] == pytest.approx(0.75)
    assert out["by_tag"]["fm"]["cost_usd"] == pytest.approx(1.75)
    assert out["by_tag"]["refs"]["cost_usd"] == pytest.approx(1.0)
    assert "budget" not in out


def test_cost_summary_unknown_cost_is_not_a_partial_sum() -> None:
    out = cost.cost_summary([_case("a", [], [_trial("a", 1, 0.5), _trial("a", 2, None)])])
    assert out["cost_usd"] is None
    assert out["unpriced_trials"] == 1
    assert out["input_tokens"] == 20


def test_cost_summary_reports_budget_state() -> None:
    budget = cost.Budget(0.1)
    budget.record(0.2)
    budget.try_start()
    out = cost.cost_summary([], budget)
    assert out["budget"]["exhausted"] is True
    assert out["budget"]["spent_usd"] == pytest.approx(0.2)
    assert out["cost_usd"] == 0.0


# -- --max-cost through the pipeline and the CLI (builtin reviewer, priced by a wrapper) ------

from click.testing import CliRunner  # noqa: E402

from rubricgate.agents.builtin import BuiltinAgent  # noqa: E402
from rubricgate.cli import main  # noqa: E402
from rubricgate.models.transcript import Usage  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402
from tests.conftest import make_repo  # noqa: E402

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "block/forecast-notebook-runner"]


class PricedAgent(BuiltinAgent):
    """The builtin reviewer, billed `price` dollars per trial (None = the agent reports no cost)."""

    price: float | None = 0.01
    calls = 0

    def run(self, request):  # type: ignore[no-untyped-def]
        PricedAgent.calls += 1
        result = super().run(request)
        return result.model_copy(update={"usage": Usage(input_tokens=100, output_tokens=20, cost_usd=self.price)})


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch):
    PricedAgent.price, PricedAgent.calls = 0.01, 0
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: PricedAgent(cfg))
    return PricedAgent


def test_budget_spent_marks_the_rest_not_run_and_exits_2(tmp_path, priced) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    outcome = run_suite(RunOptions(repo=repo, trials=2, max_cost=0.025))
    assert outcome.exit_code == 2
    assert priced.calls == 3  # 0.01 + 0.01 + 0.01 >= 0.025: no fourth trial starts
    summary = outcome.summary
    assert not summary.complete
    assert "3 of 6 trials not run" in summary.decision.reasons[0]
    assert summary.cost["not_run_trials"] == 3 and summary.cost["cost_usd"] == pytest.approx(0.03)
    assert summary.cost["input_tokens"] == 300
    assert summary.cost["budget"]["exhausted"] is True
    not_run = [t for c in summary.cases for t in c.trials if cost.is_not_run(t)]
    assert len(not_run) == 3 and not_run[0].grades["verdict"].category == "not_run"
    assert summary.rates["verdict"].trials == 3  # rates only count trials that ran


def test_unpriced_agent_under_a_budget_fails_closed(tmp_path, priced) -> None:
    priced.price = None
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    outcome = run_suite(RunOptions(repo=repo, max_cost=100.0))
    assert outcome.exit_code == 2 and priced.calls == 1
    assert "cannot be enforced" in outcome.summary.decision.reasons[0]
    assert outcome.summary.cost["cost_usd"] is None


def test_unpriced_trials_all_started_at_once_run_whole_and_say_the_budget_did_not_hold(tmp_path, priced) -> None:
    """Every trial had started before the first reported no cost: the run was whole, exit 0, and
    nothing said the --max-cost the user set was never enforced."""
    import threading

    priced.price = None
    together = threading.Barrier(len(FIXTURES), timeout=60)  # no trial ends before every one started
    plain_run = PricedAgent.run

    def run_together(self, request):  # type: ignore[no-untyped-def]
        together.wait()
        return plain_run(self, request)

    priced.run = run_together
    try:
        repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
        outcome = run_suite(RunOptions(repo=repo, max_cost=100.0, jobs=len(FIXTURES)))
    finally:
        priced.run = plain_run
    assert priced.calls == len(FIXTURES) and outcome.summary.complete
    unheld = [w for w in outcome.summary.decision.warnings if w.startswith("--max-cost was not enforced")]
    assert unheld and "reported no cost" in unheld[0], outcome.summary.decision


def test_budget_not_reached_is_a_normal_run(tmp_path, priced) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    outcome = run_suite(RunOptions(repo=repo, trials=2, max_cost=1.0))
    assert outcome.exit_code == 0 and outcome.summary.complete
    assert outcome.summary.cost["cost_usd"] == pytest.approx(0.06)
    assert outcome.summary.cost["by_case"]["fixture-data-loader"]["cost_usd"] == pytest.approx(0.02)


def test_cli_zero_budget_runs_nothing_and_exits_2(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--max-cost", "0"])
    assert result.exit_code == 2
    assert "not run" in result.stdout


def test_cli_negative_budget_is_a_usage_error(tmp_path) -> None:
    result = CliRunner().invoke(main, ["run", "--repo", str(tmp_path), "--max-cost", "-1"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_builtin_reviewer_is_free_so_a_budget_never_stops_it(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--max-cost", "0.01", "--trials", "2"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("usd", [-1e9, float("nan"), float("-inf")])
def test_a_cost_that_is_not_an_amount_never_refunds_the_budget_and_stops_it(usd: float) -> None:
    budget = cost.Budget(0.5)
    budget.record(0.25)
    budget.record(usd)
    assert budget.spent_usd == 0.25 and not budget.try_start() and "cannot be enforced" in budget.reason
