"""rubricgate.gating.summarize: an undecided run's next step says what would decide it."""

from __future__ import annotations

from rubricgate.gating.adaptive import AdaptiveRun
from rubricgate.gating.summarize import next_step
from rubricgate.models.baseline import Baseline, CaseCount
from rubricgate.models.config import GateConfig


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
