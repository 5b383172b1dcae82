"""Comparison of two runs: per-case flips, the stratified exact test per dimension, a decision.

Two sources, one computation:
  * two stored runs (`rubricgate compare RUN_A RUN_B`): base = RUN_A, head = RUN_B;
  * a paired run (`rubricgate compare --base REF`, rubricgate/flows/compare_run.py): the same cases run
    with the reviewer files at REF and as in the working tree, base and head trials interleaved.

The unit is the case, not a trial index: pairing trial 1 with trial 1 is arbitrary (re-pairing
the same trials changes the answer). Per dimension the head's per-case counts are tested against
the base's with the gate's own test (rubricgate/gating/exact.py: stratified exact test, Holm across the
dimensions), and labelled the same way (rubricgate/gating/gate.py). The decision follows gate.method:
  statistical  a dimension fails when its Holm-adjusted p <= 1 - confidence, or one case
               collapses (the run's per-case family, base as the reference: case_collapses):
               an unchanged reviewer fails the comparison with probability at most 1 - confidence;
  strict       a dimension fails when its rate on the shared cases is lower at all, and so does
               a case that passed every base trial and fails every head trial (another case's
               gain would hide it from the rate). Its false-alarm rate is stated with the
               result: the exact chance that an unchanged reviewer dips on these counts (0 for a
               deterministic reviewer).
A side with trials that did not run (interrupted, budget spent) cannot be judged: exit 2. A case
with no judged trial on a side (every one errored, or none ran) is `unjudged`, never `unchanged`.
An INCONCLUSIVE `compare --base` is not continued: its next step is a fresh comparison with more
rounds, at least the rounds at which the per-case rates it showed would decide (`rounds_to_decide`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from rubricgate import exitcodes
from rubricgate.gating.collapse import KIND_WORDS, CaseFinding, case_family, certain_collapses
from rubricgate.gating.evidence import weigh
from rubricgate.gating.exact import Stratum, dip_probability, holm, null_distribution
from rubricgate.gating.gate import EPS, final_decision, judge_dimensions
from rubricgate.gating.outcome import ALPHA_SHARES
from rubricgate.gating.paired import PairedLook
from rubricgate.gating.stats import compared, counted, trial_passed
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.config import GateConfig
from rubricgate.models.results import CaseSummary, Decision, RateRow, Summary, TrialResult

FlipKind = Literal["regressed", "fixed", "unchanged", "unjudged", "added", "removed"]
KINDS: tuple[FlipKind, ...] = ("regressed", "fixed", "unchanged", "unjudged", "added", "removed")
Counts = dict[str, dict[str, tuple[int, int]]]
MOST_SCALE = 8  # rounds_to_decide looks up to this many times the rounds that were run


@dataclass
class CaseFlip:
    """How one case moved from base to head (a trial passes when every dimension passes)."""

    case_id: str
    kind: FlipKind
    base: str  # "passes/trials" or "-" when the case is absent
    head: str
    reasons: list[str] = field(default_factory=list)
    p_value: float | None = None  # Holm-adjusted over every case both runs hold, one-sided in the move's direction
    credible: bool = False  # the move holds on its own at the gate's confidence


@dataclass
class DimensionTest:
    """Per-case counts over the shared cases and the stratified exact test for one dimension."""

    dimension: str
    cases: int
    base_passes: int
    base_trials: int
    head_passes: int
    head_trials: int
    p_value: float  # one-sided stratified exact p, before Holm
    p_holm: float | None  # Holm-adjusted across the dimensions (statistical)
    dip_chance: float  # P(head rate < base rate) if nothing changed: strict's false-alarm rate here
    status: str = "ok"
    label: str = ""


@dataclass
class Comparison:
    base_label: str
    head_label: str
    flips: list[CaseFlip]
    tests: list[DimensionTest]
    decision: Decision
    order: dict = field(default_factory=dict)  # how base and head trials were interleaved (seed, rounds)

    def counts(self) -> dict[str, int]:
        """Cases per flip kind."""
        return {kind: sum(f.kind == kind for f in self.flips) for kind in KINDS}


def compare_summaries(base: Summary, head: Summary, gate: GateConfig, base_label: str = "base",
                      head_label: str = "head", look: PairedLook | None = None,
                      judged: Collection[str] | None = None) -> Comparison:
    """Flips, per-dimension tests and the decision for two runs of the same suite (`look`: the
    levels of one look of `compare --base`'s adaptive rounds, gating/paired.py). `judged`: the
    cases the tests are on (default every case; each case's flip is shown either way)."""
    flips = case_flips(base, head, 1 - gate.confidence)
    problems = _unjudgeable(base, head)
    counts = [summary_counts(side) for side in (base, head)]
    if judged is not None:
        counts = [{case: dims for case, dims in side.items() if case in judged} for side in counts]
    tests = [] if problems else dimension_tests(counts[0], counts[1], gate, look)
    if not problems and not tests:
        problems = ["the two runs share no case that ran on both sides"]
    cases = [] if problems else case_collapses(counts[0], counts[1], gate, look)
    decision = _cannot(problems, gate) if problems else decide_comparison(tests, gate, cases)
    return Comparison(base_label, head_label, flips, tests, decision)


def unjudged_comparison(base: Summary | None, head: Summary | None, reasons: list[str], gate: GateConfig,
                        base_label: str = "base", head_label: str = "head") -> Comparison:
    """A comparison that decides nothing (exit 2 with `reasons`): what ran is listed, and a case
    a side never judged (that side never ran: None) is `unjudged`."""
    if base is not None and head is not None:
        flips = case_flips(base, head, 1 - gate.confidence)
    else:
        ran, never = ("base", "head") if base is not None else ("head", "base")
        present = base if base is not None else head
        cases = present.cases if present is not None else []
        flips = [CaseFlip(c.id, "unjudged", *((_score(c), "-") if ran == "base" else ("-", _score(c))),
                          _no_judged(((ran, c),)) + [f"{never}: never ran"]) for c in cases]
    return Comparison(base_label, head_label, flips, [], _cannot(reasons, gate))


def summary_counts(summary: Summary) -> Counts:
    """Per case and dimension: (passes, trials) over the trials the gate compared (stats.compared).

    By hand rather than through analysis.case_counts (the same counts from cases_df): the gating
    layer sits below analysis, and at 2,000 cases x 3 trials this loop takes ~20 ms where pandas
    takes ~0.5 s to import and ~0.25 s to build the frame, on `compare --base` and on every
    comparison page the viewer serves."""
    out: Counts = {}
    for case in summary.cases:
        trials = [t for t in case.trials if compared(t)]
        dims = {d for t in trials for d in t.grades}
        if trials:
            out[case.id] = {d: (sum(t.grades[d].passed for t in trials if d in t.grades),
                                sum(d in t.grades for t in trials)) for d in _ordered(dims)}
    return out


def dimension_tests(base: Counts, head: Counts, gate: GateConfig,
                    look: PairedLook | None = None) -> list[DimensionTest]:
    """The gate's test and labels with base as the reference and head as the current run."""
    shared = [c for c in head if c in base]
    dims = _ordered({d for c in shared for d in head[c] if d in base[c]})
    strata = {d: [(*head[c][d], *base[c][d]) for c in shared if d in head[c] and d in base[c]] for d in dims}
    rows = {d: _row(strata[d]) for d in dims}
    if look is None:
        judge_dimensions(rows, strata, gate, len(shared))
    else:
        judge_dimensions(rows, strata, gate, len(shared), look.spend, look.pass_scores)
    return [_test(d, strata[d], rows[d]) for d in dims if any(s[1] and s[3] for s in strata[d])]


def one_sided(base: Counts, head: Counts) -> list[str]:
    """A line for each side grading a dimension, on the cases both hold, that the other does not:
    nothing tests it (a head whose agent now shows tool calls failed tool_use every trial, and the
    verdict's test alone passed it), so the comparison cannot judge it."""
    shared = [c for c in head if c in base]
    graded = {side: {d for c in shared for d in counts[c]} for side, counts in (("base", base), ("head", head))}
    lines = []
    for side, other in (("head", "base"), ("base", "head")):
        if only := _ordered(graded[side] - graded[other]):
            lines.append(f"the {side} side grades {', '.join(only)} and the {other} side does not (their agents or "
                         "gate.dimensions differ): nothing compares it; change what is graded in a change of its own")
    return lines


def case_collapses(base: Counts, head: Counts, gate: GateConfig, look: PairedLook | None = None) -> list[CaseFinding]:
    """One case collapsing, head against base: the run's per-case family (gating/collapse.py) at
    its share of alpha, a look at its increment of the tests' spending (the union bound over the
    looks, as `run` spends it). A case's drop moves a suite's sum little, so without it a change
    that fails one case every trial PASSed. Each round is a run of its own: trials count one by
    one. Strict: a case that fails every trial where it passed every base trial (any dip of a
    dimension fails it anyway; one hidden by other cases' gains did not)."""
    if gate.method != "statistical":
        return certain_collapses(head, base, {d for dims in head.values() for d in dims})
    level = (1 - gate.confidence) * ALPHA_SHARES["cases"]
    found = case_family(head, base, level, gate.margin, look.case_spend if look is not None else 1.0)
    return [f for f in found if f.kind in ("collapse", "suspected")]


def _case_line(f: CaseFinding) -> str:
    """'fixture-x: verdict 0/10 vs base 10/10 (collapse; per-case exact p, Holm over cases and dimensions, 5e-05)'."""
    (x1, n1), (x0, n0) = f.current, f.baseline
    if f.certain:
        return f.line(against="base")
    return (f"{f.case_id}: {f.dimension} {x1}/{n1} vs base {x0}/{n0} ({KIND_WORDS[f.kind]}; "
            f"per-case exact p, Holm over cases and dimensions, {f.p_adjusted:.2g})")


def decide_comparison(tests: list[DimensionTest], gate: GateConfig, cases: list[CaseFinding] | None = None) -> Decision:
    """Exit 1 on a regression (a dimension, or one case collapsing), 2 when undecided (0 under
    gate.inconclusive: pass, never with a collapse suspected), else 0; strict states its
    false-alarm rate."""
    reasons, warnings, undecided = [], [], []
    for t in tests:
        line = (f"{t.dimension}: {t.base_passes}/{t.base_trials} -> {t.head_passes}/{t.head_trials} on {t.cases} "
                f"shared case(s), stratified exact p {t.p_value:.3g}"
                + ("" if t.p_holm is None else f" (Holm {t.p_holm:.3g})"))
        if t.status == "regression":
            reasons.append(line)
        elif t.status == "inconclusive":
            undecided.append(f"{line}: {t.label}")
    if gate.method == "strict":
        warnings += _strict_rate(tests, 1 - gate.confidence)
    dipped = {t.dimension for t in tests if t.status == "regression"}
    cases = [f for f in cases or [] if not (f.certain and f.dimension in dipped)]  # the dip already says it
    collapsed, suspected, held = _case_reasons(cases)
    return final_decision(gate, reasons + collapsed, warnings, undecided + suspected, held)


def _case_reasons(cases: list[CaseFinding]) -> tuple[list[str], list[str], list[str]]:
    """(collapses: regressions, suspected collapses: undecided, what holds the run: never PASS)."""
    suspected = [f for f in cases if f.kind == "suspected"]
    held = [f"collapse suspected ({', '.join(dict.fromkeys(f.case_id for f in suspected))})"] if suspected else []
    return [_case_line(f) for f in cases if f.regression], [_case_line(f) for f in suspected], held


def _strict_rate(tests: list[DimensionTest], alpha: float) -> list[str]:
    chance = min(1.0, sum(t.dip_chance for t in tests))
    line = (f"strict fails on any dip: on these counts an unchanged reviewer would fail it with probability "
            f"at most {chance:.1%} (sum over dimensions of the exact chance of a dip)")
    if chance > alpha:
        line += f"; that is above {alpha:.0%}: this reviewer is noisy, use --method statistical"
    return [line]


def case_flips(base: Summary, head: Summary, alpha: float = 0.05) -> list[CaseFlip]:
    """One flip per case id in either run, in head order then base-only cases.

    A regressed or fixed case carries its one-sided exact p (Holm across every case both runs
    hold, a case that did not move at p 1: a family of the cases that moved is chosen by the data,
    and read a 5/6 -> 0/6 case "credible" beside a decision that could not establish it) and is
    `credible` when that holds at alpha: most single-case moves of a noisy reviewer are not, and an
    unchanged run should list few credible ones.
    """
    base_cases, head_cases = _by_id(base), _by_id(head)
    ids = list(head_cases) + [cid for cid in base_cases if cid not in head_cases]
    flips = [_flip(cid, base_cases.get(cid), head_cases.get(cid)) for cid in ids]
    raw = {f.case_id: _case_p(f, base_cases[f.case_id], head_cases[f.case_id])
           if f.kind in ("regressed", "fixed") else 1.0
           for f in flips if f.case_id in base_cases and f.case_id in head_cases}
    adjusted = holm(raw, alpha)
    for f in flips:
        if f.case_id in adjusted and f.kind in ("regressed", "fixed"):
            f.p_value = adjusted[f.case_id]
            f.credible = f.p_value <= alpha
    return flips


def _case_p(flip: CaseFlip, base: CaseSummary, head: CaseSummary) -> float:
    stratum: Stratum = (*_all_pass(head), *_all_pass(base))
    ev = weigh([stratum], 1.0, None)
    return 1.0 if ev is None else ev.p_drop if flip.kind == "regressed" else ev.p_rise


def _flip(cid: str, base: CaseSummary | None, head: CaseSummary | None) -> CaseFlip:
    if base is None or head is None:
        present = head or base
        kind: FlipKind = "added" if base is None else "removed"
        return CaseFlip(cid, kind, _score(base), _score(head), _failures(present.trials) if present else [])
    (bx, bn), (hx, hn) = _all_pass(base), _all_pass(head)
    if not bn or not hn:
        return CaseFlip(cid, "unjudged", _score(base), _score(head), _no_judged((("base", base), ("head", head))))
    if abs(hx / hn - bx / bn) <= EPS:
        still = _failures(_ran(head.trials))
        return CaseFlip(cid, "unchanged", _score(base), _score(head), [f"still failing: {r}" for r in still])
    if hx / hn < bx / bn:
        return CaseFlip(cid, "regressed", _score(base), _score(head), _failures(_ran(head.trials)))
    return CaseFlip(cid, "fixed", _score(base), _score(head), [f"was: {r}" for r in _failures(_ran(base.trials))])


def _no_judged(sides: tuple[tuple[str, CaseSummary], ...]) -> list[str]:
    """'side: no judged trial (N errored)' for each side whose case has no trial that counts;
    'side: never ran' when none of its trials even started (an interrupt came first)."""
    reasons = []
    for side, case in sides:
        errored = sum(t.errored for t in case.trials)
        if not _ran(case.trials):
            reasons.append(f"{side}: no judged trial ({errored} errored)" if errored else f"{side}: never ran")
    return reasons


def _row(strata: list[Stratum]) -> RateRow:
    x, n = sum(s[0] for s in strata), sum(s[1] for s in strata)
    return RateRow(rate=x / n if n else None, passes=x, trials=n)


def _test(dim: str, strata: list[Stratum], row: RateRow) -> DimensionTest:
    both = [s for s in strata if s[1] and s[3]]
    ev = weigh(both, 1.0, None)
    return DimensionTest(dim, len(both), sum(s[2] for s in both), sum(s[3] for s in both),
                         sum(s[0] for s in both), sum(s[1] for s in both), 1.0 if ev is None else ev.p_drop,
                         row.p_value, dip_probability(null_distribution(both)), row.status, row.label)


def _cannot(problems: list[str], gate: GateConfig) -> Decision:
    return Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, method=gate.method, reasons=problems)


def _unjudgeable(base: Summary, head: Summary) -> list[str]:
    problems = _shared_runs(base, head)
    for label, summary in (("base", base), ("head", head)):
        missing = sum(not counted(t) and not t.errored for c in summary.cases for t in c.trials)
        if missing or not summary.complete:  # an interrupted run has no record of what it never ran
            why = f"{missing} trials did not run" if missing else (summary.decision.reasons or ["it did not end"])[0]
            problems.append(f"{label} run {summary.run_id} is incomplete ({why})")
        if summary.errored:  # infrastructure failures: neither side's reviewer was judged there
            problems.append(f"{label} run {summary.run_id}: {len(summary.errored)} trial(s) errored (infrastructure)")
    return problems


def _shared_runs(base: Summary, head: Summary) -> list[str]:
    """A run whose trials both sides hold (the same run, a copy of its folder, or one continued,
    merged or regraded the other): the test takes the sides for samples measured apart, and the
    same trials on both would show no change."""
    held = [{r for r in (s.run_id, *s.counted_runs) if r} for s in (base, head)]
    both = sorted(held[0] & held[1])
    if not both:
        return []
    return [f"the two runs share the trials of {both[0]} (a run that continued, merged or regraded another holds "
            "its trials): compare runs measured apart"]


def _ordered(dims: set[str]) -> list[str]:
    return [d for d in DIMENSIONS if d in dims] + sorted(dims - set(DIMENSIONS))


def _all_pass(case: CaseSummary) -> tuple[int, int]:
    ran = _ran(case.trials)
    return sum(map(trial_passed, ran)), len(ran)


def _ran(trials: list[TrialResult]) -> list[TrialResult]:
    return [t for t in trials if compared(t)]


def _by_id(summary: Summary) -> dict[str, CaseSummary]:
    return {c.id: c for c in summary.cases}


def _score(case: CaseSummary | None) -> str:
    if case is None:
        return "-"
    x, n = _all_pass(case)
    return f"{x}/{n}"


def _failures(trials: list[TrialResult]) -> list[str]:
    """Distinct failure reasons, each with the trials it happened in."""
    seen: dict[str, list[int]] = {}
    for t in trials:
        for dim, g in t.grades.items():
            if not g.passed:
                seen.setdefault(f"{dim}: {g.category or 'failed'}: {g.reason}".rstrip(": "), []).append(t.trial)
    return [f"{reason} (trial {', '.join(map(str, ts))})" for reason, ts in seen.items()]


def rounds_to_decide(base: Counts, head: Counts, rounds: int, gate: GateConfig) -> int | None:
    """The rounds (2x, 4x, ... up to MOST_SCALE x `rounds`) at which a comparison that looks
    once would decide if every case kept the rates it showed in these `rounds`; None: not within
    that. A projection from the counts, not a promise: the new rounds bring their own noise."""
    scale = 2
    while scale <= MOST_SCALE:
        scaled = [{c: {d: (x * scale, n * scale) for d, (x, n) in dims.items()} for c, dims in side.items()}
                  for side in (base, head)]
        tests = dimension_tests(scaled[0], scaled[1], gate)
        if tests and all(t.status != "inconclusive" for t in tests):
            return rounds * scale
        scale *= 2
    return None
