"""Per-case counts vs baseline -> decision, exit code, and a label per rate.

The gate compares only what both sides measured: per dimension, the cases present in the run
and in baseline.json, each at its own trials. Cases new to the run are reported apart (and, under
`gate.new_cases: strict`, must pass every trial); baseline cases the run did not hold (`--only`,
a removed fixture) are listed. So an `--only` run is judged against its own cases' baseline.

  strict       a dimension whose rate on the shared cases is below the baseline's (with a float
               tolerance) fails: the seeds' rule, right for a deterministic reviewer.
  statistical  per dimension a one-sided stratified exact test (rubricgate/gating/exact.py), Holm
               across the dimensions, and a per-case exact test, Holm across cases and
               dimensions (rubricgate/gating/collapse.py); alpha = 1 - gate.confidence is shared
               between the two (rubricgate/gating/outcome.py), so an unchanged reviewer exits 1
               with probability at most alpha.

Statistical outcomes (rubricgate/gating/outcome.py): PASS only when the upper confidence bound on
the drop is at most gate.margin; REGRESSION when a drop is established and exceeds the margin;
otherwise INCONCLUSIVE, which exits 2 ("could not judge at this size") unless
`gate.inconclusive: pass` is set, when it exits 0 and the headline says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from rubricgate import exitcodes
from rubricgate.gating.collapse import case_family
from rubricgate.gating.exact import Stratum, holm, lower_p, upper_p
from rubricgate.gating.outcome import ALPHA_SHARES, Evidence, classify, label
from rubricgate.gating.stats import DropBound, add_intervals, drop_bound, drop_lower
from rubricgate.models.baseline import Baseline, MeasuredWith
from rubricgate.models.config import GateConfig
from rubricgate.models.results import Decision, GateDetail, RateRow
from rubricgate.suite.baseline_file import REMEASURE

RowStatus = Literal["ok", "regression", "inconclusive", "no_baseline"]
_ROW_STATUS: dict[str, RowStatus] = {"pass": "ok", "regression": "regression", "inconclusive": "inconclusive"}

# Rates are ratios of small integers (and format 1 stored them rounded to 6 digits): compare
# with a tolerance so 60/90 against a stored 0.666667 is not a dip.
EPS = 1e-6
Counts = dict[str, dict[str, tuple[int, int]]]  # case -> dimension -> (passes, trials)
INTERVAL_NOTE = ("suite intervals treat cases as clusters (design-effect-adjusted Wilson): they cover the "
                 "reviewer's rate on cases like these; per-case intervals are Wilson over that case's trials")


def decide(rates: dict[str, RateRow], baseline: Baseline, gate: GateConfig,
           per_case: Counts, run_with: MeasuredWith | None = None, look: Look | None = None) -> tuple[Decision, GateDetail]:
    """Exit 0 when every rate holds, 1 on a regression, 2 when it cannot be judged or decided.

    Fills each row's baseline, delta, status, p_value, drop_upper and label. `run_with` (the
    run's agent, CLI version and model) is checked against what the baseline was measured with.
    `look` carries the spending fraction and confirmation counts of an adaptive run.
    """
    look = look or Look()
    detail = GateDetail(new_cases_rule=gate.new_cases_rule(), interval=INTERVAL_NOTE)
    detail.notes += stale_baseline(baseline.measured_with, run_with) + baseline_age(baseline, gate.baseline_max_age_days)
    if all(row.trials == 0 for row in rates.values()):
        return cannot_judge(["no trial was graded"], gate.method), detail
    if baseline.format_version == 1 or not baseline.cases:
        return cannot_judge([f"baseline.json is format 1 (suite rates only): re-measure it with `{REMEASURE}`"],
                            gate.method), detail
    strata = shared_strata(per_case, baseline, rates, detail)
    if not detail.shared_cases:
        return only_new_cases(per_case, detail, gate), detail
    reasons, warnings, undecided = judge_dimensions(rates, strata, gate, detail.shared_cases, look.spend,
                                                    look.bound_spend())
    case_reasons, flaky = judge_cases(per_case, baseline, gate, look)
    new_reasons, new_warnings = judge_new_cases(per_case, detail, gate)
    if detail.new_cases:
        shared_headline(rates, strata, {c: v for c, v in per_case.items() if c in baseline.cases}, gate.confidence)
    detail.case_regressions = case_reasons
    detail.flaky = flaky
    reasons = reasons + case_reasons + new_reasons
    warnings = warnings + new_warnings + _flaky_lines(flaky) + _notes(detail)
    return final_decision(gate, reasons, warnings, undecided), detail


@dataclass(frozen=True)
class Look:
    """Where an adaptive run stands: this look's fractions of alpha (1 for a run that looks once):
    the tests' nominal level, the PASS bound's and the per-case family's (the tests' when unset),
    and, for re-tried cases, the counts of their confirmation trials alone."""

    spend: float = 1.0
    confirmed: Counts = field(default_factory=dict)
    pass_spend: float | None = None
    case_spend: float | None = None

    def bound_spend(self) -> float:
        """The PASS bound's fraction of alpha at this look."""
        return self.spend if self.pass_spend is None else self.pass_spend

    def cases_spend(self) -> float:
        """The per-case family's fraction of alpha at this look."""
        return self.spend if self.case_spend is None else self.case_spend


def final_decision(gate: GateConfig, reasons: list[str], warnings: list[str], undecided: list[str]) -> Decision:
    """Regression (1) beats undecided (2, or 0 under gate.inconclusive: pass) beats pass (0)."""
    if reasons:
        return Decision(status="regression", exit_code=exitcodes.REGRESSION, method=gate.method,
                        reasons=reasons, warnings=warnings + undecided)
    if undecided:
        code = exitcodes.OK if gate.inconclusive == "pass" else exitcodes.CANNOT_JUDGE
        note = ["gate.inconclusive: pass lets this undecided run exit 0"] if code == exitcodes.OK else []
        return Decision(status="inconclusive", exit_code=code, method=gate.method, reasons=undecided,
                        warnings=note + warnings)
    return Decision(status="pass", exit_code=exitcodes.OK, method=gate.method, warnings=warnings)


def judge_cases(per_case: Counts, baseline: Baseline, gate: GateConfig, look: Look) -> tuple[list[str], list[str]]:
    """The per-case family (statistical only): collapses are reasons, flaky stable cases notes."""
    if gate.method != "statistical":
        return [], []
    base = {c: {d: (v.passes, v.trials) for d, v in dims.items()} for c, dims in baseline.cases.items()}
    level = (1 - gate.confidence) * ALPHA_SHARES["cases"]
    findings = case_family(per_case, base, level, gate.margin, look.cases_spend(), look.confirmed)
    return [f.line() for f in findings if f.regression], [f.line() for f in findings if not f.regression]


def shared_strata(per_case: Counts, baseline: Baseline, rates: dict[str, RateRow],
                  detail: GateDetail) -> dict[str, list[Stratum]]:
    """Per dimension, (current passes, trials, baseline passes, trials) of every shared case."""
    shared = [c for c in per_case if c in baseline.cases]
    detail.shared_cases = len(shared)
    detail.new_cases = [c for c in per_case if c not in baseline.cases]
    detail.missing_cases = [c for c in baseline.cases if c not in per_case]
    return {d: [(*per_case[c][d], baseline.cases[c][d].passes, baseline.cases[c][d].trials)
                for c in shared if d in per_case[c] and d in baseline.cases[c]] for d in rates}


def shared_headline(rates: dict[str, RateRow], strata: dict[str, list[Stratum]], shared: Counts,
                    confidence: float) -> None:
    """Each suite rate (and its interval) over the shared cases only: the rate the gate compared,
    so the headline never mixes in new cases (their rates are GateDetail.new_case_rates) and
    rate, baseline and delta in one row agree."""
    for dim, cells in strata.items():
        both = [s for s in cells if s[1] and s[3]]
        row = rates.get(dim)
        if row is not None and both:
            row.passes, row.trials = sum(s[0] for s in both), sum(s[1] for s in both)
            row.rate = row.passes / row.trials
    add_intervals({d: r for d, r in rates.items() if any(s[1] and s[3] for s in strata.get(d, []))}, shared, confidence)


def judge_dimensions(rates: dict[str, RateRow], strata: dict[str, list[Stratum]], gate: GateConfig,
                     shared: int, spend: float = 1.0,
                     pass_spend: float | None = None) -> tuple[list[str], list[str], list[str]]:
    """Test (statistical) or compare (strict) each dimension; label every row.

    Returns (regression reasons, warnings, undecided reasons). Under statistical the p-values are
    divided by the look's spending fraction and Holm-adjusted across the dimensions, and the
    drop's bound is taken at confidence 1 - alpha x pass_spend (rubricgate/gating/outcome.py).
    """
    alpha = (1 - gate.confidence) * (spend if pass_spend is None else pass_spend)
    bounds = {d: drop_bound(s, 1 - alpha) for d, s in strata.items()}
    level = (1 - gate.confidence) * ALPHA_SHARES["dimensions"]
    tested = [d for d, b in bounds.items() if b is not None]
    drops = holm({d: min(1.0, lower_p(strata[d]) / spend) for d in tested}, level)
    rises = holm({d: min(1.0, upper_p(strata[d]) / spend) for d in tested}, level)
    reasons: list[str] = []
    warnings: list[str] = []
    undecided: list[str] = []
    for dim, bound in bounds.items():
        row = rates[dim]
        if bound is None:
            row.status, row.label = "no_baseline", _no_baseline(dim, strata[dim])
            continue
        row.baseline, row.delta, row.drop_upper = _reference(strata[dim], bound), -bound.drop or 0.0, bound.upper
        line = _evidence(dim, strata[dim], bound, drops.get(dim) if gate.method == "statistical" else None, shared)
        if gate.method == "strict":
            _strict_row(row, bound, line, reasons)
            continue
        row.p_value = drops[dim]
        ev = Evidence(bound.drop, bound.upper, drops[dim], rises[dim], level,
                      _lower(strata[dim], gate, level * spend / len(tested)))
        outcome, row.label = classify(ev, gate.margin, gate.drift_allowance), label(ev, gate.margin, gate.drift_allowance)
        row.status = _ROW_STATUS[outcome]
        if outcome == "regression":
            reasons.append(line)
        elif outcome == "inconclusive":
            undecided.append(f"{line}: {row.label}")
    return reasons, warnings, undecided


def _no_baseline(dim: str, strata: list[Stratum]) -> str:
    """Why a dimension has no comparison: the baseline never measured it (a grader added since
    it was, until `baseline update`), or no shared case has trials on both sides."""
    return "no shared case" if strata else f"no baseline: run `rubricgate baseline update` to measure {dim}"


def _lower(strata: list[Stratum], gate: GateConfig, level: float) -> float:
    """The drop's lower bound for the drift allowance, at the dimension's Bonferroni share of the
    tests' level at this look (-inf without an allowance: nothing to compare)."""
    lower = drop_lower(strata, 1 - level) if gate.drift_allowance > 0 else None
    return float("-inf") if lower is None else lower


def _strict_row(row: RateRow, bound: DropBound, line: str, reasons: list[str]) -> None:
    """A deterministic reviewer: any dip is a regression, an equal rate is no change."""
    if bound.drop > EPS:
        row.status, row.label = "regression", "REGRESSION"
        reasons.append(line)
        return
    row.status, row.label = "ok", "improvement" if bound.drop < -EPS else "no change"


def judge_new_cases(per_case: Counts, detail: GateDetail, gate: GateConfig) -> tuple[list[str], list[str]]:
    """New cases: their rates apart; under `strict` any failed trial of one is a regression."""
    failing = []
    for case in detail.new_cases:
        for dim, (x, n) in per_case[case].items():
            if x < n:
                failing.append(f"new case {case}: {dim} {x}/{n}")
    for dim in {d: None for c in detail.new_cases for d in per_case[c]}:
        x = sum(per_case[c][dim][0] for c in detail.new_cases if dim in per_case[c])
        n = sum(per_case[c][dim][1] for c in detail.new_cases if dim in per_case[c])
        if n:
            detail.new_case_rates[dim] = RateRow(rate=x / n, passes=x, trials=n, status="no_baseline")
    if detail.new_cases_rule == "strict":
        return [f"{f} (no baseline; gate.new_cases: strict requires every trial to pass)" for f in failing], []
    return [], [f"{f} (no baseline: reported, not gated)" for f in failing]


def only_new_cases(per_case: Counts, detail: GateDetail, gate: GateConfig) -> Decision:
    """No case the baseline holds ran (`run --only` of a case added since): the new cases are
    reported; under `gate.new_cases: strict` they are judged (every trial must pass), otherwise
    nothing was compared and the run cannot judge (exit 2)."""
    reasons, warnings = judge_new_cases(per_case, detail, gate)
    if not detail.new_cases:
        return cannot_judge(["no case of this run is in baseline.json (were cases renamed?)"], gate.method)
    if detail.new_cases_rule == "strict":
        return final_decision(gate, reasons, warnings + _notes(detail), [])
    names = ", ".join(detail.new_cases[:10]) + (" ..." if len(detail.new_cases) > 10 else "")
    return cannot_judge([f"only case(s) new to baseline.json ran ({names}): reported, not gated (gate.new_cases: "
                         "report); `rubricgate baseline update --from <this run>` adds them"], gate.method)


def stale_baseline(measured: MeasuredWith | None, run: MeasuredWith | None) -> list[str]:
    """A note when the run's agent, CLI version or model is not what the baseline was measured with."""
    if measured is None or run is None:
        return []
    keys = (("agent", "agent"), ("agent_version", "CLI version"), ("model", "model"))
    diffs = [f"{label} {getattr(measured, k) or 'unknown'} -> {getattr(run, k) or 'unknown'}"
             for k, label in keys if getattr(measured, k) != getattr(run, k)]
    return [f"the baseline was measured with a different setup ({', '.join(diffs)}): a change may be the "
            "agent's, not the reviewer's"] if diffs else []


def baseline_age(baseline: Baseline, max_days: int, now: datetime | None = None) -> list[str]:
    """A note when the baseline was last measured more than `max_days` ago: a model served under
    the same name drifts, and a stored baseline does not (gate.baseline_max_age_days)."""
    if not baseline.history:
        return []
    try:
        at = datetime.fromisoformat(baseline.history[-1].at.replace("Z", "+00:00"))
    except ValueError:
        return []
    age = ((now or datetime.now(UTC)) - (at if at.tzinfo else at.replace(tzinfo=UTC))).days
    if age <= max_days:
        return []
    return [f"baseline.json was last measured {age} days ago (gate.baseline_max_age_days: {max_days}): "
            "re-measure it (`rubricgate baseline update`) or judge head against base with `rubricgate compare --base`"]


def _flaky_lines(flaky: list[str]) -> list[str]:
    """Flaky stable cases, at most 10 lines (all of them are in summary.json's gate.flaky)."""
    more = [f"flaky: {len(flaky) - 10} more stable case(s) failed once or more (summary.json gate.flaky)"]
    return [f"flaky {f}" for f in flaky[:10]] + (more if len(flaky) > 10 else [])


def _notes(detail: GateDetail) -> list[str]:
    notes = list(detail.notes)
    if detail.new_cases:
        notes.append(f"{len(detail.new_cases)} case(s) not in baseline.json, reported apart: "
                     + ", ".join(detail.new_cases[:10]) + (" ..." if len(detail.new_cases) > 10 else ""))
    if detail.missing_cases:
        notes.append(f"judged on the {detail.shared_cases} case(s) both runs share; {len(detail.missing_cases)} "
                     "baseline case(s) with no judged trial in this run (left out, or every trial errored): "
                     + ", ".join(detail.missing_cases[:10])
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
