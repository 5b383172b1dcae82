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
`gate.inconclusive: pass` is set, when it exits 0 and the headline says so. That key lets through
the rate tests' INCONCLUSIVE only: a suspected collapse, and a dimension undecided while errored
trials of it may hide failures, still exit 2, the first reason saying why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from rubricgate import exitcodes
from rubricgate.gating.changes import LET_THROUGH, held_reason, listed
from rubricgate.gating.collapse import CaseFinding, case_family, certain_collapses
from rubricgate.gating.dependence import Dependence, baseline_sessions
from rubricgate.gating.dependence import check as check_dependence
from rubricgate.gating.evidence import TRIAL, Bounds, Unit, family, weigh
from rubricgate.gating.exact import Stratum
from rubricgate.gating.outcome import ALPHA_SHARES, Evidence, classify, label
from rubricgate.gating.stats import add_intervals
from rubricgate.models.baseline import Baseline, MeasuredWith
from rubricgate.models.config import GateConfig
from rubricgate.models.results import Decision, GateDetail, RateRow, shared_phrase
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
           per_case: Counts, run_with: MeasuredWith | None = None, look: Look | None = None,
           errored: Mapping[str, int] | None = None, edited: Sequence[str] = ()) -> tuple[Decision, GateDetail]:
    """Exit 0 when every rate holds, 1 on a regression, 2 when it cannot be judged or decided.

    Fills each row's baseline, delta, status, p_value, drop_upper and label. `run_with` (the
    run's agent, CLI version and model) is checked against what the baseline was measured with.
    `look` carries the spending fractions, the PASS bound's score and the confirmation counts of
    an adaptive run; `errored` the run's errored trials per case (failures in the worst case);
    `edited` the cases set aside from the baseline as edited since (gating/case_edits.py).
    """
    look = look or Look()
    errored = {c: n for c, n in (errored or {}).items() if n}
    detail = GateDetail(new_cases_rule=gate.new_cases_rule(), interval=INTERVAL_NOTE)
    detail.notes += (stale_baseline(baseline.measured_with, run_with)
                     + baseline_age(baseline, gate.baseline_max_age_days))
    if all(row.trials == 0 for row in rates.values()) and not errored:
        return cannot_judge(["no trial was graded"], gate.method), detail
    if not baseline.cases and edited:
        every = f"every case baseline.json holds was edited since it was measured ({listed(list(edited))})"
        return cannot_judge([f"{every}: nothing is left to compare; re-measure: rubricgate baseline update"],
                            gate.method), detail
    if baseline.format_version == 1 or not baseline.cases:
        return cannot_judge([f"baseline.json is format 1 (suite rates only): re-measure it with `{REMEASURE}`"],
                            gate.method), detail
    per_case = {**{c: {d: (0, 0) for d in rates} for c in errored if c not in per_case}, **per_case}
    strata = shared_strata(per_case, baseline, rates, detail)
    detail.edited_cases = [c for c in edited if c in per_case]
    if not detail.shared_cases:
        return only_new_cases(per_case, detail, gate, errored), detail
    lost = {d: [errored.get(c, 0) for c in _shared_ids(per_case, baseline, d)] for d in rates}
    if look.dependence is None and gate.method == "statistical":
        shared = [c for c in per_case if c in baseline.cases]
        look = replace(look, dependence=check_dependence(baseline_sessions(baseline, shared, list(rates))))
    unit = look.dependence.unit() if look.dependence is not None else TRIAL
    look = replace(look, unit=unit)
    if look.dependence is not None:
        detail.dependence = look.dependence.as_json()
        detail.notes += [look.dependence.line()] if look.dependence.line() else []
    reasons, warnings, undecided = judge_dimensions(rates, strata, gate, detail.shared_cases, look.spend,
                                                    look.pass_scores, lost, unit, _sessions(baseline, per_case, rates))
    lost_cases = {c: errored.get(c, 0) + look.lost_confirm.get(c, 0) for c in {*errored, *look.lost_confirm}}
    case_lines(judge_cases(per_case, baseline, gate, look, lost_cases), detail)
    if gate.method != "statistical":  # where the rate fell, that already says REGRESSION
        hidden = [d for d, row in rates.items() if row.status != "regression"]
        detail.case_regressions += [f.line() for f in certain_collapses(per_case, _counts_of(baseline), hidden)]
    new_reasons, new_warnings = judge_new_cases(per_case, detail, gate)
    if detail.new_cases:
        shared_headline(rates, strata, {c: v for c, v in per_case.items() if c in baseline.cases}, gate.confidence)
    reasons = reasons + detail.case_regressions + new_reasons
    hiding = [d for d, n in lost.items() if sum(n) and rates[d].status == "inconclusive"]
    suspects = list(dict.fromkeys(line.split(":", 1)[0] for line in detail.suspected))
    edits = edited_failing(per_case, detail, errored)
    unjudged_new = errored_new_cases(detail, errored)
    held = ([f"collapse suspected ({listed(suspects)})"] if suspects else []) + \
        ([f"errored trials of {', '.join(hiding)} may hide failures"] if hiding else []) + \
        (["case(s) edited since baseline.json was measured fail now or were not judged"] if edits else []) + \
        (["new case(s) under gate.new_cases: strict were not judged on every trial"] if unjudged_new else [])
    undecided = undecided + detail.suspected + edits + unjudged_new
    warnings = warnings + new_warnings + _finding_lines(detail) + _notes(detail)
    return final_decision(gate, reasons, warnings, undecided, held), detail


def _shared_ids(per_case: Counts, baseline: Baseline, dim: str) -> list[str]:
    """The shared cases of one dimension, in the order shared_strata lists them."""
    return [c for c in per_case if c in baseline.cases and dim in per_case[c] and dim in baseline.cases[c]]


@dataclass(frozen=True)
class Look:
    """Where an adaptive run stands (the defaults: a run that looks once): the tests' nominal
    fraction of alpha at this look, the PASS bound's calibrated band scores (None: calibrated here as a
    design that looks once), the per-case family's fraction (the tests' when unset), the counts of
    re-tried cases' confirmation trials alone, the most confirmation trials a suspected case could
    get, and how a case's trials count (within-run dependence)."""

    spend: float = 1.0
    confirmed: Counts = field(default_factory=dict)
    pass_scores: tuple[float, ...] | None = None
    case_spend: float | None = None
    confirm_room: int | None = None
    unit: Unit = TRIAL
    dependence: Dependence | None = None  # the within-run check (None: made here from the baseline)
    lost_confirm: Mapping[str, int] = field(default_factory=dict)  # errored confirmation trials per case

    def cases_spend(self) -> float:
        """The per-case family's fraction of alpha at this look."""
        return self.spend if self.case_spend is None else self.case_spend


def final_decision(gate: GateConfig, reasons: list[str], warnings: list[str], undecided: list[str],
                   held: Sequence[str] = ()) -> Decision:
    """Regression (1) beats undecided (2) beats pass (0).

    gate.inconclusive: pass lets the `undecided` reasons exit 0 unless the run is `held` (what
    holds it, each never PASS whatever that key says: a suspected collapse, a dimension whose
    errored trials may hide failures, an edited case that fails now or was not judged). A held
    run exits 2, and under `pass` its first reason says why."""
    if reasons:
        return Decision(status="regression", exit_code=exitcodes.REGRESSION, method=gate.method,
                        reasons=reasons, warnings=warnings + undecided)
    if undecided:
        let_through = gate.inconclusive == "pass" and not held
        code = exitcodes.OK if let_through else exitcodes.CANNOT_JUDGE
        note = [LET_THROUGH] if let_through else []
        why = [held_reason(held)] if held and gate.inconclusive == "pass" else []
        return Decision(status="inconclusive", exit_code=code, method=gate.method,
                        reasons=why + undecided, warnings=note + warnings)
    return Decision(status="pass", exit_code=exitcodes.OK, method=gate.method, warnings=warnings)


def judge_cases(per_case: Counts, baseline: Baseline, gate: GateConfig, look: Look,
                errored: Mapping[str, int] | None = None) -> list[CaseFinding]:
    """The per-case family (statistical; under strict only a stable case whose every trial failed
    or errored with some errored, whose failures may hide there, is kept: a suspected collapse)."""
    level = (1 - gate.confidence) * ALPHA_SHARES["cases"]
    found = case_family(per_case, _counts_of(baseline), level, gate.margin, look.cases_spend(), look.confirmed,
                        errored, look.unit, look.confirm_room)
    if gate.method != "statistical":
        return [f for f in found if f.kind == "suspected" and f.errored]
    return found


def _counts_of(baseline: Baseline) -> Counts:
    return {c: {d: (v.passes, v.trials) for d, v in dims.items()} for c, dims in baseline.cases.items()}


def case_lines(findings: list[CaseFinding], detail: GateDetail) -> None:
    """The per-case findings onto the detail, one list per kind (summary.json gate.*)."""
    detail.case_regressions = [f.line() for f in findings if f.kind == "collapse"]
    detail.suspected = [f.line() for f in findings if f.kind == "suspected"]
    detail.unconfirmed = [f.line() for f in findings if f.kind == "unconfirmed"]
    detail.flaky = [f.line() for f in findings if f.kind == "flaky"]


def shared_strata(per_case: Counts, baseline: Baseline, rates: dict[str, RateRow],
                  detail: GateDetail) -> dict[str, list[Stratum]]:
    """Per dimension, (current passes, trials, baseline passes, trials) of every shared case."""
    shared = [c for c in per_case if c in baseline.cases]
    detail.shared_cases = len(shared)
    detail.judged_cases = sum(any(per_case[c][d][1] and baseline.cases[c][d].trials for d in per_case[c]
                                  if d in baseline.cases[c]) for c in shared)
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
                     shared: int, spend: float = 1.0, pass_scores: tuple[float, ...] | None = None,
                     errored: Mapping[str, list[int]] | None = None, unit: Unit = TRIAL,
                     sessions: Mapping[str, list[int]] | None = None) -> tuple[list[str], list[str], list[str]]:
    """Test (statistical) or compare (strict) each dimension; label every row.

    Returns (regression reasons, warnings, undecided reasons). The evidence is weighed once per
    dimension (rubricgate/gating/evidence.py): under statistical the p-values are divided by the
    look's nominal fraction and Holm-adjusted across the dimensions (Tarone's count: a dimension
    that did not vary costs the others nothing), and the PASS bound is taken at the calibrated
    score with errored trials counted as failures (rubricgate/gating/outcome.py).
    """
    alpha = 1 - gate.confidence
    level = alpha * ALPHA_SHARES["dimensions"]
    tested = [d for d, s in strata.items() if _measured(s, (errored or {}).get(d))]
    # Strict compares rates alone: no bound to calibrate (a strict run never loads numpy for one).
    bounds = Bounds(alpha, gate.margin, 1 - level * spend / max(len(tested), 1), pass_scores) \
        if gate.method == "statistical" else None
    weighed = {d: weigh(strata[d], level, bounds, (errored or {}).get(d), unit, (sessions or {}).get(d))
               for d in tested}
    evidence = family({d: e for d, e in weighed.items() if e is not None}, spend)
    reasons: list[str] = []
    warnings: list[str] = []
    undecided: list[str] = []
    for dim in strata:
        row, ev = rates[dim], evidence.get(dim)
        if ev is None:
            row.status, row.label = "no_baseline", _no_baseline(dim, strata[dim])
            continue
        row.baseline, row.delta = _reference(strata[dim]), -ev.drop or 0.0
        row.drop_upper = ev.upper if bounds is not None else None
        line = _evidence(dim, strata[dim], ev.drop, ev.p_drop if gate.method == "statistical" else None, shared, unit)
        if gate.method == "strict":
            _strict_row(row, ev, line, reasons, undecided, sum((errored or {}).get(dim, [])))
            continue
        row.p_value = ev.p_drop
        outcome, row.label = (classify(ev, gate.margin, gate.drift_allowance),
                              label(ev, gate.margin, gate.drift_allowance))
        row.status = _ROW_STATUS[outcome]
        if outcome == "regression":
            reasons.append(line)
        elif outcome == "inconclusive":
            undecided.append(f"{line}: {row.label}")
    return reasons, warnings, undecided


def _sessions(baseline: Baseline, per_case: Counts, rates: Mapping[str, RateRow]) -> dict[str, list[int]]:
    """Per dimension, the baseline's sessions of each shared case (shared_strata's order)."""
    return {d: [len(baseline.cases[c][d].runs()) for c in _shared_ids(per_case, baseline, d)] for d in rates}


def _measured(strata: list[Stratum], lost: Sequence[int] | None) -> bool:
    """Some shared case has a baseline and trials in the run, judged or errored: a case whose
    every trial errored still weighs on the PASS bound (each errored trial a failure)."""
    return any((s[1] or e) and s[3] for s, e in zip(strata, lost or [0] * len(strata)))


def _no_baseline(dim: str, strata: list[Stratum]) -> str:
    """Why a dimension has no comparison: the baseline never measured it (a grader added since
    it was, until `baseline update`), or no shared case has trials on both sides."""
    return "no shared case" if strata else f"no baseline: run `rubricgate baseline update` to measure {dim}"


def _strict_row(row: RateRow, ev: Evidence, line: str, reasons: list[str], undecided: list[str], lost: int) -> None:
    """A deterministic reviewer: any dip is a regression, an equal rate is no change; errored
    trials that would make a dip had they failed leave the row undecided."""
    if ev.drop > EPS:
        row.status, row.label = "regression", "REGRESSION"
        reasons.append(line)
        return
    if lost and ev.drop + lost / max(row.trials + lost, 1) > EPS:
        row.status, row.label = "inconclusive", f"INCONCLUSIVE: {lost} errored trial(s) could hide a drop"
        undecided.append(f"{line}: {row.label}")
        return
    row.status, row.label = "ok", "improvement" if ev.drop < -EPS else "no change"


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


def errored_new_cases(detail: GateDetail, errored: Mapping[str, int]) -> list[str]:
    """Under `gate.new_cases: strict` every trial of a new (or edited) case must pass: one that
    errored is no pass, nor evidence of a failure, so it holds the decision (exit 2, never 0)."""
    if detail.new_cases_rule != "strict":
        return []
    hit = [f"{c} {n} errored trial(s)" for c in detail.new_cases if (n := errored.get(c, 0))]
    return [f"new case(s) not judged on every trial ({listed(hit)}): gate.new_cases: strict requires "
            "every trial to pass; fix what made them error and run them again"] if hit else []


def edited_failing(per_case: Counts, detail: GateDetail, errored: Mapping[str, int] | None = None) -> list[str]:
    """Under `gate.new_cases: report`, an edited case that fails now, or has errored trials its
    failures may hide in, holds the decision: without counts of it as it is, its failure cannot be
    told from a regression (an edit must hide no more than deleting the case does). Under
    `strict` it is judged as a new case: every trial passes."""
    if detail.new_cases_rule == "strict":
        return []
    failing = [f"{c} {d} {x}/{n}" for c in detail.edited_cases for d, (x, n) in per_case[c].items() if x < n]
    failing += [f"{c} {n} errored trial(s)" for c in detail.edited_cases if (n := (errored or {}).get(c, 0))]
    if not failing:
        return []
    only = " ".join(f"--only {c}" for c in detail.edited_cases[:5])
    return [f"case(s) edited since baseline.json was measured fail now or were not judged ({listed(failing)}): "
            "without counts of them "
            "as they are, a failure cannot be told from a regression; re-measure them: rubricgate run " + only
            + ", then rubricgate baseline update --from <that run> --allow-partial"]


def only_new_cases(per_case: Counts, detail: GateDetail, gate: GateConfig,
                   errored: Mapping[str, int] | None = None) -> Decision:
    """No case the baseline holds ran (`run --only` of a case added since): the new cases are
    reported; under `gate.new_cases: strict` they are judged (every trial must pass), otherwise
    nothing was compared and the run cannot judge (exit 2)."""
    reasons, warnings = judge_new_cases(per_case, detail, gate)
    if not detail.new_cases:
        return cannot_judge(["no case of this run is in baseline.json (were cases renamed?)"], gate.method)
    if detail.new_cases_rule == "strict":
        unjudged = errored_new_cases(detail, errored or {})
        return final_decision(gate, reasons, warnings + _notes(detail), unjudged, held=unjudged)
    names = ", ".join(detail.new_cases[:10]) + (" ..." if len(detail.new_cases) > 10 else "")
    return cannot_judge([f"only case(s) new to baseline.json ran ({names}): reported, not gated (gate.new_cases: "
                         "report); `rubricgate baseline update --from <this run> --allow-partial` adds them "
                         "(the run left the other cases out)"], gate.method)


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


def _finding_lines(detail: GateDetail) -> list[str]:
    """Unconfirmed drops and flaky stable cases, at most 10 lines each (all of them are in
    summary.json's gate.unconfirmed and gate.flaky)."""
    out = []
    # "flaky" alone is every case whose trials disagree (the reports' list of them): these are the
    # ones among them whose baseline never failed, named so that the two lists cannot be confused.
    for name, items, where in (("unconfirmed drop", detail.unconfirmed, "gate.unconfirmed"),
                               ("flaky, never failing in the baseline:", detail.flaky, "gate.flaky")):
        out += [f"{name} {f}" for f in items[:10]]
        if len(items) > 10:
            out.append(f"{name}: {len(items) - 10} more case(s) (summary.json {where})")
    return out


def _notes(detail: GateDetail) -> list[str]:
    notes = list(detail.notes)
    new = [c for c in detail.new_cases if c not in detail.edited_cases]
    if new:
        notes.append(f"{len(new)} case(s) not in baseline.json, reported apart: {listed(new)}")
    if detail.edited_cases:
        notes.append(f"{len(detail.edited_cases)} case(s) edited since baseline.json was measured (what they ask "
                     f"or review), judged as new cases, not against their old counts: {listed(detail.edited_cases)};"
                     " `rubricgate baseline update` re-measures them")
    if detail.missing_cases:
        notes.append(f"judged on the {detail.shared_cases} case(s) both runs share; {len(detail.missing_cases)} "
                     "baseline case(s) with no judged trial in this run (left out, or every trial errored): "
                     + listed(detail.missing_cases))
    return notes


def _reference(strata: list[Stratum]) -> float:
    """The baseline's rate standardized to the run's trial mix (what the delta is against)."""
    rows = [s for s in strata if s[1] and s[3]]
    n1 = sum(s[1] for s in rows)
    if not n1:  # every trial errored: the baseline's pooled rate of the shared cases
        return sum(s[2] for s in strata) / max(sum(s[3] for s in strata), 1)
    return sum(s[1] / n1 * s[2] / s[3] for s in rows)


def _evidence(dim: str, strata: list[Stratum], drop: float, p_adjusted: float | None, shared: int,
              unit: Unit = TRIAL) -> str:
    both = [s for s in strata if s[1] and s[3]] or [s for s in strata if s[3]]  # none judged: the baseline's
    x1, n1 = sum(s[0] for s in both), sum(s[1] for s in both)
    x0, n0 = sum(s[2] for s in both), sum(s[3] for s in both)
    test = "" if p_adjusted is None else f", stratified {unit.p_name()} (Holm) {p_adjusted:.3g}"
    cases = shared_phrase(len(both), shared)
    return f"{dim} {x1}/{n1} vs baseline {x0}/{n0} on {cases}, drop {drop * 100:+.1f} points{test}"


def cannot_judge(reasons: list[str], method: str = "strict") -> Decision:
    """A decision for runs the gate could not judge (bad input, interrupted, budget spent)."""
    return Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, method=method, reasons=reasons)
