"""The plan of a loaded suite: which cases it shares with the baseline, its power, and whether
gate.margin can be shown at all within the trial budget (`validate` refuses one that cannot)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from rubricgate.errors import GateInputError
from rubricgate.gating.dependence import baseline_sessions
from rubricgate.gating.dependence import check as check_dependence
from rubricgate.gating.outcome import ALPHA_SHARES
from rubricgate.gating.plan_power import level, regression_chance, smallest_size
from rubricgate.gating.power import Plan, default_target, make_plan, pass_cases, to_pass
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
    measured = measured_dimensions(baseline, case_ids, dims)
    found = check_dependence(baseline_sessions(baseline, list(shared), measured))
    sessions = {c: max(len(baseline.cases[c][d].runs()) for d in measured) for c in shared}
    return make_plan(shared, measured, gate.confidence, gate.margin, first, gate.max_trials_per_case, target,
                     found.unit(), sessions, collapse_need(len(case_ids), len(measured), gate), found.line())


def check_margin(plan: Plan | None, gate: GateConfig, cases: int, first: int, dims: Sequence[str] = DIMENSIONS,
                 config_name: str = "rubricgate.yaml") -> str | None:
    """Whether an unchanged reviewer can bound the drop under gate.margin within
    gate.max_trials_per_case. A configuration that no reviewer could meet (not even one that never
    fails, measured as `baseline update` does) is a GateInputError; a measured baseline whose noise
    puts the margin out of reach is a warning line (a run then ends INCONCLUSIVE unless continued,
    or whatever it adds when the baseline's own trials keep the bound up), naming what reaches it.
    None when it is within reach (or the gate is strict)."""
    if gate.method != "statistical" or not cases:
        return None
    perfect = prior_plan(cases, gate, first, dims)
    if _worst_bound(perfect) is not None:
        add = to_pass(perfect.dimensions[0], perfect.budget())
        raise GateInputError(config_name, "gate.margin",
                             f"{gate.margin:g} cannot be shown by {cases} case(s) within gate.max_trials_per_case="
                             f"{gate.max_trials_per_case}, not even by a reviewer that never fails",
                             f"raise gate.margin, or: {add}" if add else
                             "raise gate.margin or gate.max_trials_per_case, or add cases")
    if plan is None or (bound := _worst_bound(plan)) is None:
        return None
    worst = max(plan.dimensions, key=lambda d: d.unchanged_bound if d.unchanged_bound is not None else 1.0)
    add = to_pass(worst, plan.budget())
    return (f"gate.margin {gate.margin:g} is out of reach of the measured baseline within gate.max_trials_per_case="
            f"{gate.max_trials_per_case}: an unchanged reviewer's {worst.dimension} bound reaches {bound}, so its runs "
            f"end INCONCLUSIVE{'' if worst.run_limited else ' unless continued'}"
            + (f"; to PASS within the budget: {add}" if add else "")
            + " (`rubricgate plan` shows the figures)")


def _worst_bound(plan: Plan) -> str | None:
    """The worst dimension's expected bound of an unchanged reviewer when above the margin, in words."""
    bounds = [d.unchanged_bound for d in plan.dimensions]
    if all(b is not None and b <= plan.margin for b in bounds):
        return None
    worst = max((b for b in bounds if b is not None), default=None)
    if worst is None or any(b is None for b in bounds):
        return "never"
    digits = 2 if f"{worst * 100:.1f}" == f"{plan.margin * 100:.1f}" else 1  # just above: say by how much
    return f"{worst * 100:.{digits}f} points"


def decision_needs(gate: GateConfig, first: int, dims: Sequence[str] = DIMENSIONS) -> str:
    """Before the first run, in one line: the cases a decision needs at this gate even from a
    reviewer that never fails (to PASS within the budget; to catch a drop of margin + 5 points, at
    most 100, in 80% of runs at `first` trials a case), each case measured as `baseline update` does."""
    alpha, target = 1 - gate.confidence, default_target(gate.margin)
    sessions, per = baseline_measure(30, len(dims), gate, first)
    base = [(sessions * per, sessions * per)]
    to_pass_at = pass_cases(base, gate.max_trials_per_case, alpha, gate.margin, sessions=[sessions], most=1000)
    once = level(alpha, ALPHA_SHARES["dimensions"], len(dims), 1.0)
    catch = smallest_size(lambda c: regression_chance(base * c, [first], [once], target, gate.margin), 1, 1000)
    words = lambda n: "more than 1000" if n is None else f"about {n}"  # noqa: E731
    return (f"the statistical gate at gate.margin {gate.margin * 100:.0f} points needs, "
            f"even from a reviewer that never "
            f"fails, {words(to_pass_at)} cases to PASS within gate.max_trials_per_case={gate.max_trials_per_case}, "
            f"and {words(catch)} cases at {first} trial(s) each to catch a {target * 100:.0f}-point drop in 80% of "
            "runs; a noisier reviewer needs more: `rubricgate plan` shows what this suite can show")


def prior_plan(cases: int, gate: GateConfig, first: int, dims: Sequence[str] = DIMENSIONS,
               target: float | None = None) -> Plan:
    """The plan before any baseline: `cases` cases of a reviewer that never fails, measured as
    `baseline update` measures by default (the best a suite of this size can do: a noisier
    reviewer needs more)."""
    dims = list(dims) or list(DIMENSIONS)
    sessions, per = baseline_measure(cases, len(dims), gate, first)
    n0 = sessions * per
    counts = {f"case {i + 1}": {d: (n0, n0) for d in dims} for i in range(cases)}
    plan = make_plan(counts, dims, gate.confidence, gate.margin, first, gate.max_trials_per_case, target,
                     sessions=dict.fromkeys(counts, sessions), collapse_need=collapse_need(cases, len(dims), gate))
    return replace(plan, note=f"before a baseline: every case as a reviewer that never fails would measure it "
                              f"({sessions} sessions, {n0} trials a case, as `rubricgate baseline update` does); "
                              "a noisier reviewer needs more")


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
                  dims: Sequence[str] = DIMENSIONS) -> tuple[str, bool]:
    """What a single collapsing case needs at this suite size, against what the baseline has, and
    whether that falls short (the baseline has fewer trials for some case, or no size would do)."""
    need = collapse_need(len(case_ids), len(dims), gate)
    if need is None:
        return (f"a single collapsing case cannot be shown at {len(case_ids)} cases: "
                "raise gate.max_trials_per_case"), True
    have = min((counts[d].trials for c in case_ids if (counts := (baseline.cases.get(c) if baseline else None))
                for d in dims if d in counts), default=0)
    line = f"a single collapsing case is shown with {need} baseline trials per case at {len(case_ids)} cases"
    if baseline is None:
        return line, False
    if have < need:
        return (f"{line}; baseline.json has {have} for some case: re-measure it "
                f"(rubricgate baseline update measures at least {need})"), True
    return f"{line} (baseline.json has at least {have})", False
