"""The plan of a loaded suite: which cases it shares with the baseline, its power, and whether
gate.margin can be shown at all within the trial budget (`validate` refuses one that cannot)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rubricgate.errors import GateInputError
from rubricgate.gating.outcome import ALPHA_SHARES
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


# What `rubricgate baseline update` measures by default under the statistical gate: this many
# sessions (separate runs: what lets the gate check that trials of one run are independent,
# gating/dependence.py), and at least this many trials per case in all (more when a collapse
# needs them: collapse_need).
BASELINE_SESSIONS = 2
BASELINE_TRIALS = 10
CONFIRM_FACTOR = 3  # a confirmation may run this many times gate.max_trials_per_case (gating/adaptive.py)


def collapse_need(cases: int, dims: int, gate: GateConfig) -> int | None:
    """Baseline trials per case (every one passing) with which one case that fails every trial is
    shown a collapse in one run at this suite size: failing the most confirmation trials it may
    get (CONFIRM_FACTOR x gate.max_trials_per_case) is significant at the per-case family's
    level with every (case, dimension) pair counted (the worst case of Holm-Tarone's first step).
    None when no baseline of up to 1000 trials would do."""
    level = (1 - gate.confidence) * ALPHA_SHARES["cases"] / max(cases * dims, 1)
    room = CONFIRM_FACTOR * gate.max_trials_per_case
    return next((n0 for n0 in range(1, 1001) if math.comb(n0 + room, room) >= 1 / level), None)


def baseline_measure(cases: int, dims: int, gate: GateConfig, trials: int) -> tuple[int, int]:
    """(sessions, trials per case in each) that `baseline update` measures by default: under the
    statistical gate BASELINE_SESSIONS sessions with at least BASELINE_TRIALS trials a case in
    all, and what a collapse needs at this size; under strict one session of `trials`."""
    if gate.method != "statistical":
        return 1, trials
    total = max(trials, BASELINE_TRIALS, collapse_need(cases, dims, gate) or 0)
    return BASELINE_SESSIONS, -(-total // BASELINE_SESSIONS)


def collapse_line(baseline: Baseline | None, case_ids: Sequence[str], gate: GateConfig,
                  dims: Sequence[str] = DIMENSIONS) -> str:
    """What a single collapsing case needs at this suite size, against what the baseline has."""
    need = collapse_need(len(case_ids), len(dims), gate)
    if need is None:
        return f"a single collapsing case cannot be shown at {len(case_ids)} cases: raise gate.max_trials_per_case"
    have = min((counts[d].trials for c in case_ids if (counts := (baseline.cases.get(c) if baseline else None))
                for d in dims if d in counts), default=0)
    line = f"a single collapsing case is shown with {need} baseline trials per case at {len(case_ids)} cases"
    if baseline is None:
        return line
    if have < need:
        return (f"{line}; baseline.json has {have} for some case: re-measure it "
                f"(rubricgate baseline update measures at least {need})")
    return f"{line} (baseline.json has at least {have})"
