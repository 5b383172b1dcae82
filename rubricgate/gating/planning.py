"""The plan of a loaded suite: which cases it shares with the baseline, its power, and whether
gate.margin can be shown at all within the trial budget (`validate` refuses one that cannot)."""

from __future__ import annotations

from collections.abc import Sequence

from rubricgate.errors import GateInputError
from rubricgate.gating.power import Plan, make_plan
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline
from rubricgate.models.config import GateConfig


def shared_baseline(baseline: Baseline, case_ids: Sequence[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """Baseline (passes, trials) per dimension of the planned cases it holds, with trials."""
    out = {}
    for case in case_ids:
        dims = baseline.cases.get(case)
        if dims and all(dims[d].trials for d in DIMENSIONS):
            out[case] = {d: (dims[d].passes, dims[d].trials) for d in DIMENSIONS}
    return out


def suite_plan(baseline: Baseline | None, case_ids: Sequence[str], gate: GateConfig, first: int,
               target: float | None = None) -> Plan | None:
    """The plan for a run of `case_ids` at `first` trials per case first; None when it shares no case
    (or there is no baseline)."""
    if baseline is None:
        return None
    shared = shared_baseline(baseline, case_ids)
    if not shared:
        return None
    return make_plan(shared, DIMENSIONS, gate.confidence, gate.margin, first, gate.max_trials_per_case, target)


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
