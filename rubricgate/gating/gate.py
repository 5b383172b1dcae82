"""Per-case counts vs baseline -> decision, exit code, and a label per rate.

The gate compares only what both sides measured: per dimension, the cases present in the run
and in baseline.json, each at its own trials. Cases new to the run are reported apart (and, under
`gate.new_cases: strict`, must pass every trial); baseline cases the run did not hold (`--only`,
a removed fixture) are listed. So an `--only` run is judged against its own cases' baseline.

  strict       a dimension whose rate on the shared cases is below the baseline's (with a float
               tolerance) fails: the seeds' rule, right for a deterministic reviewer.
  statistical  per dimension a one-sided stratified exact test (rubricgate/gating/exact.py), Holm
               across the dimensions, so an unchanged reviewer fails a run with probability at
               most 1 - gate.confidence over all three dimensions together.

Labels say what is known: REGRESSION only when the gate counts it; "no change" (or
"improvement") only when the upper confidence bound on the drop is below gate.margin; otherwise
"inconclusive: the drop could be up to X points; run K more trials per case".
"""

from __future__ import annotations

import math

from rubricgate import exitcodes
from rubricgate.gating.exact import Stratum, holm, lower_p
from rubricgate.gating.stats import DropBound, drop_bound, more_trials
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline, MeasuredWith
from rubricgate.models.config import GateConfig
from rubricgate.models.results import Decision, GateDetail, RateRow

# Rates are ratios of small integers (and format 1 stored them rounded to 6 digits): compare
# with a tolerance so 60/90 against a stored 0.666667 is not a dip.
EPS = 1e-6
Counts = dict[str, dict[str, tuple[int, int]]]  # case -> dimension -> (passes, trials)
INTERVAL_NOTE = ("suite intervals treat cases as clusters (design-effect-adjusted Wilson): they cover the "
                 "reviewer's rate on cases like these; per-case intervals are Wilson over that case's trials")


def decide(rates: dict[str, RateRow], baseline: Baseline, gate: GateConfig,
           per_case: Counts, run_with: MeasuredWith | None = None) -> tuple[Decision, GateDetail]:
    """Exit 0 when every rate holds, 1 on a regression, 2 when nothing can be compared.

    Fills each row's baseline, delta, status, p_value, drop_upper and label. `run_with` (the
    run's agent, CLI version and model) is checked against what the baseline was measured with.
    """
    detail = GateDetail(new_cases_rule=gate.new_cases_rule(), interval=INTERVAL_NOTE)
    detail.notes += stale_baseline(baseline.measured_with, run_with)
    if all(rates[d].trials == 0 for d in DIMENSIONS):
        return cannot_judge(["no trial was graded"], gate.method), detail
    strata = shared_strata(per_case, baseline, rates, detail)
    if not detail.shared_cases:
        return cannot_judge(["no case of this run is in baseline.json (were cases renamed?)"], gate.method), detail
    reasons, warnings = judge_dimensions(rates, strata, gate, detail.shared_cases)
    new_reasons, new_warnings = judge_new_cases(per_case, detail, gate)
    reasons, warnings = reasons + new_reasons, warnings + new_warnings + _notes(detail)
    status, code = ("regression", exitcodes.REGRESSION) if reasons else ("pass", exitcodes.OK)
    return Decision(status=status, exit_code=code, method=gate.method, reasons=reasons, warnings=warnings), detail


def shared_strata(per_case: Counts, baseline: Baseline, rates: dict[str, RateRow],
                  detail: GateDetail) -> dict[str, list[Stratum]]:
    """Per dimension, (current passes, trials, baseline passes, trials) of every shared case.

    A format 1 baseline has no per-case counts: the run is then one pooled stratum against
    the suite rate at baseline.trials per case (the old behaviour), with a note to migrate.
    """
    if baseline.format_version == 1 or not baseline.cases:
        detail.shared_cases = len(per_case)
        detail.notes.append("baseline.json is format 1 (suite rates only): judged on pooled rates; "
                            "run `rubricgate baseline update` to record per-case counts")
        n0 = baseline.trials * max(len(per_case), 1)
        # ceil (less the tolerance): the reference count is never below the stored rate, so strict
        # still fails 33/37 against a stored 0.9 and passes 60/90 against a stored 0.666667.
        return {d: [(rates[d].passes, rates[d].trials, min(n0, math.ceil((baseline.rates[d] - EPS) * n0)), n0)]
                for d in DIMENSIONS}
    shared = [c for c in per_case if c in baseline.cases]
    detail.shared_cases = len(shared)
    detail.new_cases = [c for c in per_case if c not in baseline.cases]
    detail.missing_cases = [c for c in baseline.cases if c not in per_case]
    return {d: [(*per_case[c][d], baseline.cases[c][d].passes, baseline.cases[c][d].trials)
                for c in shared if d in per_case[c] and d in baseline.cases[c]] for d in DIMENSIONS}


def judge_dimensions(rates: dict[str, RateRow], strata: dict[str, list[Stratum]], gate: GateConfig,
                     shared: int) -> tuple[list[str], list[str]]:
    """Test (statistical, with Holm) or compare (strict) each dimension; label every row."""
    bounds = {d: drop_bound(s, gate.confidence) for d, s in strata.items()}
    tested = {d: lower_p(strata[d]) for d, b in bounds.items() if b is not None}
    adjusted = holm(tested, 1 - gate.confidence) if gate.method == "statistical" else {}
    reasons, warnings = [], []
    for dim, bound in bounds.items():
        row = rates[dim]
        if bound is None:
            row.status, row.label = "no_baseline", "no shared case"
            continue
        row.baseline, row.delta, row.drop_upper = _reference(strata[dim], bound), -bound.drop or 0.0, bound.upper
        row.p_value = adjusted.get(dim)
        line = _evidence(dim, strata[dim], bound, row.p_value, shared)
        if _regressed(gate, bound, row.p_value):
            row.status, row.label = "regression", "REGRESSION"
            reasons.append(line)
            continue
        _label(row, bound, gate)
        if row.status == "inconclusive":
            warnings.append(f"{line}: {row.label}")
    return reasons, warnings


def _regressed(gate: GateConfig, bound: DropBound, p_adjusted: float | None) -> bool:
    if gate.method == "statistical":
        return p_adjusted is not None and p_adjusted <= 1 - gate.confidence
    return bound.drop > EPS


def _label(row: RateRow, bound: DropBound, gate: GateConfig) -> None:
    """no change / improvement when the bound allows it (strict: a deterministic reviewer)."""
    settled = gate.method == "strict" or bound.upper < gate.margin
    if settled:
        row.status, row.label = "ok", "improvement" if bound.drop < -EPS else "no change"
        return
    row.status, row.label = "inconclusive", inconclusive_label(bound, gate)


def inconclusive_label(bound: DropBound, gate: GateConfig) -> str:
    """'inconclusive: the drop could be up to X points; run K more trials per case' (or why not)."""
    head = f"inconclusive: the drop could be up to {bound.upper * 100:.1f} points"
    k = more_trials(bound, gate.margin)
    if k is None:
        return f"{head}; the baseline's own uncertainty is too large: re-measure it with more trials per case"
    # Never suggest stopping short of gate.min_trials per case: below it the bound is not stable.
    k = max(k, 1, gate.min_trials - bound.current_trials // max(bound.cases, 1))
    return f"{head}; run {k} more trial{'s' * (k > 1)} per case"


def judge_new_cases(per_case: Counts, detail: GateDetail, gate: GateConfig) -> tuple[list[str], list[str]]:
    """New cases: their rates apart; under `strict` any failed trial of one is a regression."""
    failing = []
    for case in detail.new_cases:
        for dim, (x, n) in per_case[case].items():
            if x < n:
                failing.append(f"new case {case}: {dim} {x}/{n}")
    for dim in DIMENSIONS:
        x = sum(per_case[c][dim][0] for c in detail.new_cases if dim in per_case[c])
        n = sum(per_case[c][dim][1] for c in detail.new_cases if dim in per_case[c])
        if n:
            detail.new_case_rates[dim] = RateRow(rate=x / n, passes=x, trials=n, status="no_baseline")
    if detail.new_cases_rule == "strict":
        return [f"{f} (no baseline; gate.new_cases: strict requires every trial to pass)" for f in failing], []
    return [], [f"{f} (no baseline: reported, not gated)" for f in failing]


def stale_baseline(measured: MeasuredWith | None, run: MeasuredWith | None) -> list[str]:
    """A note when the run's agent, CLI version or model is not what the baseline was measured with."""
    if measured is None or run is None:
        return []
    keys = (("agent", "agent"), ("agent_version", "CLI version"), ("model", "model"))
    diffs = [f"{label} {getattr(measured, k) or 'unknown'} -> {getattr(run, k) or 'unknown'}"
             for k, label in keys if getattr(measured, k) != getattr(run, k)]
    return [f"the baseline was measured with a different setup ({', '.join(diffs)}): a change may be the "
            "agent's, not the reviewer's"] if diffs else []


def _notes(detail: GateDetail) -> list[str]:
    notes = list(detail.notes)
    if detail.new_cases:
        notes.append(f"{len(detail.new_cases)} case(s) not in baseline.json, reported apart: "
                     + ", ".join(detail.new_cases[:10]) + (" ..." if len(detail.new_cases) > 10 else ""))
    if detail.missing_cases:
        notes.append(f"judged on the {detail.shared_cases} case(s) both runs share; {len(detail.missing_cases)} "
                     "baseline case(s) not in this run: " + ", ".join(detail.missing_cases[:10])
                     + (" ..." if len(detail.missing_cases) > 10 else ""))
    return notes


def _reference(strata: list[Stratum], bound: DropBound) -> float:
    current = sum(x1 for x1, n1, _, n0 in strata if n1 and n0) / bound.current_trials
    return current + bound.drop


def _evidence(dim: str, strata: list[Stratum], bound: DropBound, p_adjusted: float | None, shared: int) -> str:
    x1, n1 = sum(s[0] for s in strata if s[1] and s[3]), bound.current_trials
    x0, n0 = sum(s[2] for s in strata if s[1] and s[3]), sum(s[3] for s in strata if s[1] and s[3])
    test = "" if p_adjusted is None else f", stratified exact p (Holm) {p_adjusted:.3g}"
    return (f"{dim} {x1}/{n1} vs baseline {x0}/{n0} on {shared} shared case(s), "
            f"drop {bound.drop * 100:+.1f} points{test}")


def cannot_judge(reasons: list[str], method: str = "strict") -> Decision:
    """A decision for runs the gate could not judge (bad input, interrupted, budget spent)."""
    return Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, method=method, reasons=reasons)
