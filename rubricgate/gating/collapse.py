"""One case that collapses: a per-case exact test with family-wise control over cases and dimensions.

A sum of passes over 300 cases barely moves when one case goes from 10/10 to 0/5, however real
that is. So besides the dimension-level test every shared case is tested on its own, per
dimension: Fisher's exact one-sided test of its current passes against its baseline passes
(rubricgate/gating/evidence.py), Holm across every (case, dimension) pair the run and the
baseline share, with Tarone's count (a pair whose every trial passed on both sides cannot
reject and costs the others nothing), at the per-case share of alpha
(rubricgate/gating/outcome.py). Holm holds under any dependence, so the correlated dimensions of
one trial cost nothing in validity.

Each (case, dimension) the family flags is one of four kinds, each with one meaning:
  collapse     its adjusted p holds AND its own drop exceeds gate.margin: a REGRESSION.
  suspected    every one of its trials in this run failed (errored trials counted as failures),
               its baseline never failed or was reliable (rubricgate/gating/sequential.py) or
               no trial of it was judged (every one errored), and
               its test does not hold: a collapse the run could not test at this size. The run
               is INCONCLUSIVE naming it (never PASS, whatever gate.inconclusive says); the line
               says how many baseline trials per case would let it be shown, or, when every
               trial of it errored, that no trial of it was judged (no baseline size shows
               failures hidden in errors). Under within-run dependence
               (rubricgate/gating/dependence.py) every such case is suspected: one run's failing
               trials may be one repeated answer, which no count within the run can tell apart.
  unconfirmed  every trial failed, its baseline passed at least once but was not reliable, and
               its test does not hold: a drop of this case that is not established (a note).
  flaky        its baseline never failed and its trials in this run disagree (some passed, some
               failed): mixed outcomes (a note).

A p-value comes with a spending fraction (the look it was computed at, under adaptive rounds):
it is divided by that fraction before Holm. A case re-tried because it failed (a confirmation,
rubricgate/gating/sequential.py) is tested on its confirmation trials only, which were drawn
after the failure that selected it: fresh data, tested once, so its fraction is 1.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from rubricgate.gating.evidence import TRIAL, Unit, family, weigh
from rubricgate.gating.exact import Stratum, tarone_count
from rubricgate.gating.outcome import Evidence, beyond

Counts = Mapping[str, Mapping[str, tuple[int, int]]]  # case -> dimension -> (passes, trials)
Kind = Literal["collapse", "suspected", "unconfirmed", "flaky"]
KIND_WORDS: dict[str, str] = {"collapse": "collapse", "suspected": "collapse suspected, not testable at this size",
                              "unconfirmed": "unconfirmed drop", "flaky": "flaky"}


@dataclass(frozen=True)
class CaseFinding:
    """One case and dimension the family flagged (see the kinds above)."""

    case_id: str
    dimension: str
    current: tuple[int, int]  # the counts the finding is about (confirmations, else the design's)
    baseline: tuple[int, int]
    p_adjusted: float
    kind: Kind
    errored: int = 0  # errored trials of this case in the run (counted as failures)
    need: int | None = None  # suspected: baseline trials per case that would let it be shown
    unit: Unit = TRIAL  # how its trials counted: under within-run dependence, the score test's design effect
    certain: bool = False  # strict: a deterministic reviewer's collapse, no test needed (certain_collapses)

    @property
    def regression(self) -> bool:
        return self.kind == "collapse"

    @property
    def dependent(self) -> bool:
        """Suspected because the trials of one run may be one repeated answer."""
        return self.kind == "suspected" and self.unit.rho > 0

    def line(self, against: str = "baseline") -> str:
        """'fixture-x: verdict 0/5 vs baseline 10/10 (collapse; per-case exact p, Holm-Tarone, 0.0021)';
        `against`: what the reference is called (`compare --base`: "base")."""
        (x1, n1), (x0, n0) = self.current, self.baseline
        if self.certain:
            return f"{self.case_id}: {self.dimension} {x1}/{n1} vs {against} {x0}/{n0} ({CERTAIN_WORDS})"
        lost = f" + {self.errored} errored" if self.errored else ""
        words = ("collapse suspected, not testable under within-run dependence" if self.dependent
                 else KIND_WORDS[self.kind])
        text = (f"{self.case_id}: {self.dimension} {x1}/{n1}{lost} vs baseline {x0}/{n0} ({words}; "
                f"per-case {self.unit.p_name()}, Holm over cases and dimensions, {self.p_adjusted:.2g})")
        if self.kind == "suspected" and self.dependent:
            text += ("; one run's failing trials may be one repeated answer: "
                     "rubricgate baseline update measures in sessions")
        elif self.kind == "suspected" and not self.current[1]:
            text += ("; no trial of it was judged (every one errored), so no baseline size would show it: "
                     "its failures may hide in the errors; fix what made them error and run it again")
        elif self.kind == "suspected":
            fix = (f"about {self.need} baseline trials per case would show it" if self.need
                   else "no baseline size within reach would show it")
            text += f"; {fix}: rubricgate baseline update"
        return text


def stable(baseline: tuple[int, int]) -> bool:
    """Stable in the baseline: it ran and every trial passed."""
    return baseline[1] > 0 and baseline[0] == baseline[1]


def reliable(baseline: tuple[int, int]) -> bool:
    """Worth re-trying when it fails now: at least 5 baseline trials with at most one failure."""
    x0, n0 = baseline
    return n0 >= 5 and x0 >= n0 - 1


CERTAIN_WORDS = "collapse: every trial fails now, hidden in the rate by other cases' gains; strict gate"


def certain_collapses(current: Counts, baseline: Counts, dims: Collection[str]) -> list[CaseFinding]:
    """Strict (a deterministic reviewer): each case that passed every baseline trial and fails
    every judged trial now, in `dims`: collapsed for certain, though other cases' gains may keep
    the dimension's rate from falling (the strict rate test alone then said PASS)."""
    return [CaseFinding(case, dim, (x, n), base, 0.0, "collapse", certain=True)
            for case, counts in current.items() for dim, (x, n) in counts.items()
            if dim in dims and n and not x and (base := baseline.get(case, {}).get(dim)) and base[0] == base[1] > 0]


def case_family(current: Counts, baseline: Counts, level: float, margin: float,
                spend: float = 1.0, confirmed: Counts | None = None,
                errored: Mapping[str, int] | None = None, unit: Unit = TRIAL,
                confirm_room: int | None = None) -> list[CaseFinding]:
    """Every shared (case, dimension) tested; the pairs of the four kinds returned.

    `current`: the run's design counts (spending fraction `spend`); `confirmed`: for re-tried
    cases, the counts of their confirmation trials alone; `errored`: per case, its errored
    trials (failures in the worst case); `confirm_room`: the most confirmation trials a
    suspected case could get (the baseline size that would show it is computed for it).
    """
    confirmed, errored = confirmed or {}, errored or {}
    pairs, raw = {}, {}
    for case, dims in current.items():
        for dim, counts in dims.items():
            base = baseline.get(case, {}).get(dim)
            if base is None or not base[1] or not (counts[1] or errored.get(case)):
                continue
            fresh = confirmed.get(case, {}).get(dim)
            if counts[0] == counts[1] and base[0] == base[1] and not fresh and not errored.get(case):
                continue  # every trial passed on both sides: nothing to flag, and it cannot reject (Tarone)
            used, fraction = (fresh, 1.0) if fresh and fresh[1] else (counts, spend)
            pairs[f"{case}\x00{dim}"] = (used, base, counts, fresh)
            if used[1]:
                ev = _case_evidence((*used, *base), level, unit)
                if ev is not None:
                    raw[f"{case}\x00{dim}"] = _scaled(ev, fraction)
    adjusted = family(raw, 1.0) if raw else {}
    count = tarone_count([e.floor_drop for e in raw.values()], level) if raw else 1
    out = []
    for key, (used, base, design, fresh) in pairs.items():
        case, dim = key.split("\x00")
        ev = adjusted.get(key)
        finding = _finding(case, dim, used, base, design, fresh, ev, level, margin, errored.get(case, 0), unit)
        if finding is not None:
            if finding.kind == "suspected" and not finding.dependent and finding.current[1]:
                room = confirm_room or max(used[1], 1)
                finding = _with_need(finding, level / (count + 1), room)
            out.append(finding)
    return out


@lru_cache(maxsize=8192)
def _case_evidence(stratum: Stratum, level: float, unit: Unit) -> Evidence | None:
    """One case's tests, kept by its counts: an adaptive run weighs every case at every look, and
    most cases of a suite share a handful of counts (a stable case at k/k against 10/10)."""
    return weigh([stratum], level, None, unit=unit)


def _scaled(ev: Evidence, fraction: float) -> Evidence:
    """p and its floor divided by the look's fraction (1 for fresh confirmation trials)."""
    if fraction == 1.0:  # p-values are at most 1 already
        return ev
    return replace(ev, p_drop=min(1.0, ev.p_drop / fraction), floor_drop=min(1.0, ev.floor_drop / fraction),
                   p_rise=min(1.0, ev.p_rise / fraction), floor_rise=min(1.0, ev.floor_rise / fraction))


def _finding(case: str, dim: str, used, base, design, fresh, ev: Evidence | None, level: float, margin: float,
             lost: int, unit: Unit) -> CaseFinding | None:
    (x1, n1), (x0, n0) = used, base
    p = ev.p_drop if ev is not None else 1.0
    if ev is not None and n1 and p <= level and beyond(x0 / n0 - x1 / n1, margin) and not unit.rho:
        return CaseFinding(case, dim, used, base, p, "collapse", lost, unit=unit)
    ran = [c for c in (design, fresh) if c and c[1]]
    passed = sum(c[0] for c in ran)
    failed = sum(c[1] - c[0] for c in ran) + lost
    if not passed and failed and x0:  # every trial failed (or errored)
        shown = used if n1 else (0, 0)
        # No trial judged: whatever its baseline, its failures may all hide in the errors.
        if stable(base) or reliable(base) or not ran:
            return CaseFinding(case, dim, shown, base, p, "suspected", lost, unit=unit)
        return CaseFinding(case, dim, shown, base, p, "unconfirmed", lost, unit=unit)
    if stable(base) and passed and failed:
        shown = design if design[0] < design[1] else (fresh or design)
        return CaseFinding(case, dim, shown, base, p, "flaky", lost, unit=unit)
    return None


def _with_need(finding: CaseFinding, level: float, room: int) -> CaseFinding:
    """The baseline trials per case (all passing) with which `room` failing confirmation trials
    would be significant at `level` (None: more than 1000)."""
    need = next((n0 for n0 in range(1, 1001) if 1 / math.comb(n0 + room, room) <= level), None)
    return replace(finding, need=need)
