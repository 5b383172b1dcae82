"""rubricgate.gating.summarize: an undecided run's next step says what would decide it."""

from __future__ import annotations

from pathlib import Path

from rubricgate.gating.adaptive import AdaptiveRun
from rubricgate.gating.summarize import next_step
from rubricgate.models.baseline import Baseline, CaseCount
from rubricgate.models.config import GateConfig
from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import confirming_repo


def _baseline(passes: list[int]) -> Baseline:
    cases = {f"c{i}": {"verdict": CaseCount(passes=x, trials=10, sessions=((x // 2, 5), (x - x // 2, 5)))}
             for i, x in enumerate(passes)}
    return Baseline(rates={"verdict": sum(passes) / (10 * len(passes))}, trials=10, cases=cases)


def test_no_continuation_is_offered_when_the_baselines_own_trials_keep_the_bound_above_the_margin() -> None:
    """No number of run trials bounds the drop under the margin against this baseline: the next
    step names the baseline size that would, not `--continue`."""
    base = _baseline([10] * 5 + [0] * 12 + [5] * 3)
    run = AdaptiveRun(base, GateConfig(method="statistical"), list(base.cases), dims=["verdict"])
    step = next_step(run, "reports/r1")
    assert not step.startswith("continue this run"), step
    assert step.startswith("no continuation of this run is expected to PASS against this baseline (verdict); "
                           "to decide: about "), step
    assert "`rubricgate baseline update --trials " in step and "however many trials a run adds" in step


def test_a_run_more_trials_can_decide_is_offered_its_continuation() -> None:
    base = _baseline([10] * 21 + [9] * 6 + [6] * 3)
    run = AdaptiveRun(base, GateConfig(method="statistical"), list(base.cases), dims=["verdict"])
    assert next_step(run, "reports/r1").startswith("continue this run: ")


def test_a_cases_rate_and_each_tags_rate_count_the_design_trials_as_the_runs_rate_does(repo) -> None:
    """report.html's case table read 33.3% (confirmation included) for a case the gate, its own
    warning and `export` put at 1/5: confirmations are in no rate, per case and per tag too."""
    import json

    from rubricgate.analysis import cases_df
    from rubricgate.gating.case_rows import rounded_interval
    from tests.conftest import lowered_rule_run

    run_dir = lowered_rule_run(repo)
    summary = json.loads((run_dir / "summary.json").read_text())
    case = next(c for c in summary["cases"] if any(t["confirmation"] for t in c["trials"]))
    design = [t for t in case["trials"] if not t["confirmation"]]
    exported = cases_df(run_dir).set_index("case_id").loc[case["id"]]
    assert exported["verdict_trials"] == len(design)
    assert case["rates"]["verdict"] == exported["verdict_rate"]
    passed = sum(t["grades"]["verdict"]["passed"] for t in design)
    assert case["intervals"]["verdict"] == list(rounded_interval(passed, len(design), 0.95))
    design_all = [t for c in summary["cases"] for t in c["trials"] if not t["confirmation"]]
    for tag in case["tags"]:
        tagged = [t for c in summary["cases"] if tag in c["tags"] for t in c["trials"] if not t["confirmation"]]
        passes = sum(t["grades"]["verdict"]["passed"] for t in tagged)
        assert abs(summary["rates_by_tag"][tag]["verdict"] - passes / len(tagged)) < 1e-9, tag
    assert len(design_all) == summary["rates"]["verdict"]["trials"]


def test_every_rate_and_pass_k_of_a_run_count_the_trials_the_gate_compared(tmp_path: Path) -> None:
    """Confirmations run only for a case that failed and stop at its first pass: the suite's rates
    left them out, but the all-dimension rate beside them, pass^k, the per-case and the per-tag
    rates counted them (a verdict-only reviewer read 158/160 and 'every dimension passed in
    161/164' in one report)."""
    summary = run_suite(RunOptions(repo=confirming_repo(tmp_path / "repo"))).summary
    loader = next(c for c in summary.cases if c.id == "fixture-data-loader")
    assert any(t.confirmation for t in loader.trials), "the case was re-tried"
    design = [t for t in loader.trials if not t.confirmation]
    assert loader.rates["verdict"] == sum(t.grades["verdict"].passed for t in design) / len(design)
    every = summary.pass_k["all_pass"]
    assert every["trials"] == summary.rates["verdict"].trials, (every, summary.rates["verdict"])
    assert summary.rates_by_tag["fixture"]["verdict"] == summary.rates["verdict"].rate
    assert [g["k"] for g in summary.pass_k["by_k"]] == [len(design)]


def test_a_run_past_its_planned_look_is_not_told_it_is_expected_to_pass_there() -> None:
    """A run continued to 40 trials a case still read 'an unchanged reviewer is expected to PASS
    after 3 trials per case'."""
    base = _baseline([10] * 21 + [9] * 6 + [6] * 3)
    run = AdaptiveRun(base, GateConfig(method="statistical"), list(base.cases), dims=["verdict"])
    planned = run.schedule.looks[run.schedule.planned]
    assert f"is expected to PASS after {planned} trials per case" in next_step(run, "reports/r1")
    run.done_rounds = planned + 1
    step = next_step(run, "reports/r1")
    assert "is expected to PASS after" not in step, step
    assert f"was expected to PASS after {planned} trials per case and this run has {planned + 1}" in step
