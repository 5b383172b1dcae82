"""The plan of a loaded suite: which cases it shares with the baseline, its power, and whether
gate.margin can be shown at all within the trial budget (`validate` refuses one that cannot)."""

from __future__ import annotations

from collections.abc import Sequence

from rubricgate.errors import GateInputError
from rubricgate.gating.power import Plan, make_plan
from rubricgate.models.baseline import Baseline
from rubricgate.models.config import GateConfig
from rubricgate.models.dimensions import DIMENSIONS


def measured_dimensions(baseline: Baseline, case_ids: Sequence[str], dims: Sequence[str] = DIMENSIONS) -> list[str]:
    """Of the graded `dims`, those the baseline measured on any planned case (the rest have no baseline)."""
    return [d for d in dims if any(d in baseline.cases.get(c, {}) for c in case_ids)]


def shared_baseline(baseline: Baseline, case_ids: Sequence[str],
                    dims: Sequence[str] = DIMENSIONS) -> dict[str, dict[str, tuple[int, int]]]:
    """Baseline (passes, trials) per measured dimension of the planned cases it holds, with trials."""
    measured = measured_dimensions(baseline, case_ids, dims)
    out = {}
    for case in case_ids:
        counts = baseline.cases.get(case)
        if measured and counts and all(d in counts and counts[d].trials for d in measured):
            out[case] = {d: (counts[d].passes, counts[d].trials) for d in measured}
    return out


def suite_plan(baseline: Baseline | None, case_ids: Sequence[str], gate: GateConfig, first: int,
               target: float | None = None, dims: Sequence[str] = DIMENSIONS) -> Plan | None:
    """The plan for a run of `case_ids` at `first` trials per case first; None when it shares no case
    (or there is no baseline)."""
    if baseline is None:
        return None
    shared = shared_baseline(baseline, case_ids, dims)
    if not shared:
        return None
    return make_plan(shared, measured_dimensions(baseline, case_ids, dims), gate.confidence, gate.margin, first, gate.max_trials_per_case, target)


def check_margin(plan: Plan | None, gate: GateConfig, config_name: str = "rubricgate.yaml") -> None:
    """GateInputError when an unchanged reviewer cannot bound the drop under gate.margin within
    gate.max_trials_per_case: such a run could only ever end INCONCLUSIVE."""
    if plan is None or gate.method != "statistical":
        return
    worst = max(plan.dimensions, key=lambda d: d.unchanged_bound if d.unchanged_bound is not None else 1.0)
    bound = worst.unchanged_bound
    if bound is not None and bound <= gate.margin:
        return
    reach = "never" if bound is None else f"{bound * 100:.1f} points"
    raise GateInputError(config_name, "gate.margin",
                         f"{gate.margin:g} cannot be shown by this suite within gate.max_trials_per_case="
                         f"{gate.max_trials_per_case}: an unchanged reviewer's {worst.dimension} bound reaches {reach}",
                         "raise gate.margin or gate.max_trials_per_case, or add cases (`rubricgate plan` shows what reaches it)")
