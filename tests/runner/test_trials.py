"""runner/trials.py with adaptive rounds: a statistical run adds trials round by round until the
gate decides, stops there, and a spent budget ends it with exit 2. Builtin reviewer, real pipeline."""

from __future__ import annotations

import json

import pytest
import yaml

from rubricgate.agents.builtin import BuiltinAgent
from rubricgate.models.transcript import Usage
from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import make_repo, set_severity

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "block/forecast-notebook-runner"]


def _statistical(repo, trials: int = 10, **gate) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"] = {"method": "statistical", **gate}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    stored = json.loads((repo / "baseline.json").read_text())
    for dims in stored["cases"].values():
        for d in dims:
            dims[d] = {"passes": trials, "trials": trials}
    (repo / "baseline.json").write_text(json.dumps(stored))


def _events(outcome) -> list[dict]:
    return [json.loads(line) for line in (outcome.run_dir / "events.jsonl").read_text().splitlines()]


def test_a_statistical_run_adds_rounds_until_it_passes_and_stops_there(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo, margin=0.3)
    outcome = run_suite(RunOptions(repo=repo))
    assert outcome.exit_code == 0 and outcome.summary.decision.status == "pass"
    looks = outcome.summary.gate.looks
    assert len(looks) >= 2 and looks[-1]["stop"] and not any(look["stop"] for look in looks[:-1])
    trials = {c.id: len(c.trials) for c in outcome.summary.cases}
    assert len(set(trials.values())) == 1 and 1 < trials["fixture-data-loader"] < 10  # stopped before the budget
    assert outcome.summary.gate.plan["dimensions"][0]["dimension"] == "verdict"
    kinds = [e.get("event") for e in _events(outcome)]
    assert kinds.index("plan") < kinds.index("trial_result")  # the plan comes before the first trial


def test_a_collapsing_case_is_caught_by_retrying_it(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo, margin=0.3)
    set_severity(repo, "fm-description-required", "warning")  # the block fixture now always fails
    outcome = run_suite(RunOptions(repo=repo))
    assert outcome.exit_code == 1
    assert any("vs baseline 10/10" in r for r in outcome.summary.decision.reasons)


class PricedAgent(BuiltinAgent):
    def run(self, request):  # type: ignore[no-untyped-def]
        result = super().run(request)
        return result.model_copy(update={"usage": Usage(input_tokens=1, output_tokens=1, cost_usd=0.01)})


def test_a_budget_spent_between_rounds_ends_with_exit_2_and_one_reason(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: PricedAgent(cfg))
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo, margin=0.3)
    outcome = run_suite(RunOptions(repo=repo, max_cost=0.045))
    assert outcome.exit_code == 2 and len(outcome.summary.decision.reasons) == 1
    assert "not run" in outcome.summary.decision.reasons[0]
    assert sum(len(c.trials) for c in outcome.summary.cases) < 30


@pytest.mark.parametrize("method", ["strict"])
def test_a_strict_run_keeps_its_fixed_design(tmp_path, method) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    outcome = run_suite(RunOptions(repo=repo, trials=2))
    assert outcome.exit_code == 0 and outcome.summary.gate.looks == []
    assert {len(c.trials) for c in outcome.summary.cases} == {2}


class InterruptedAgent(BuiltinAgent):
    """Ctrl-C arrives while the block fixture's first trial runs (the pass fixture ran before it)."""

    def run(self, request):  # type: ignore[no-untyped-def]
        if request.case_id == "fixture-data-loader":
            raise KeyboardInterrupt
        return super().run(request)


def test_an_interrupted_statistical_run_reports_what_ran_and_its_method(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: InterruptedAgent(cfg))
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo, margin=0.3)
    outcome = run_suite(RunOptions(repo=repo, jobs=1))
    s = outcome.summary
    assert outcome.exit_code == 2 and not s.complete and s.decision.method == "statistical"
    # Every case of the interrupted round is in the summary, the ones that never ran with no trial.
    assert len(s.cases) == 3 and any(not c.trials for c in s.cases)
    ran = sum(len(c.trials) for c in s.cases)
    assert ran >= 1 and f"run interrupted after {ran} of " in s.decision.reasons[0]
    assert "of 0 trials" not in s.decision.reasons[0]


class InterruptedAtOnce(BuiltinAgent):
    """Ctrl-C arrives while the run's first trial runs."""

    def run(self, request):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt


def test_an_interrupted_statistical_run_counts_its_trials_against_the_total_its_progress_showed(tmp_path,
                                                                                               monkeypatch) -> None:
    """The progress line said "0/36 trials" (the most the design may run) and the reason
    "interrupted after 0 of 3 trials" (the first round handed out): two totals for one run."""
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: InterruptedAtOnce(cfg))
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo, margin=0.3)
    outcome = run_suite(RunOptions(repo=repo, jobs=1))
    (plan,) = [e for e in _events(outcome) if e["event"] == "plan"]
    assert plan["total_trials"] > len(FIXTURES)
    assert outcome.summary.decision.reasons[0].startswith(
        f"run interrupted after 0 of {plan['total_trials']} trials"), outcome.summary.decision.reasons
