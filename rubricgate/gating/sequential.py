"""Adaptive trials that stay valid under repeated looks: the design, the looks and alpha spending.

The run looks at the data after every round. Two errors are controlled, each by its own
spending of alpha over the looks (Lan & DeMets, Biometrika 1983: the chance of a first crossing
at look k is the increment of a spending function there):
  * a false REGRESSION (the tests): a Lan-DeMets spending function of the information fraction
    (the design's trials so far over the budget's), Pocock type, so a large drop can stop the
    run early. The looks share most of their trials, so a look's nominal test level may exceed
    its increment: the levels come from the joint distribution of the looks
    (rubricgate/gating/boundaries.py), and the gate runs each look's exact test at alpha x that
    level (p-values divided by it).
  * a false PASS (the bound): most of alpha at the planned look (the first where an unchanged
    reviewer is expected to PASS, at its median counts), the rest at looks with more trials,
    where a run that saw one more failure than expected can still PASS. The bound's score at
    each look is calibrated exactly (rubricgate/gating/passbound.py): the chance of a PASS by
    look k at a drop of exactly the margin is at most alpha x the cumulative fraction at k.

The design reaches past the budget: CONTINUATIONS more budgets of rounds, pre-planned, for a run
continued after it ended INCONCLUSIVE (`rubricgate run --continue`). Their looks get the tests'
TEST_CONTINUATION share of alpha and whatever the PASS spending reaches there, so a run
continued up to five times still errs with probability at most alpha in all.

What makes that hold is that the design is fixed before the first trial: every case gets every
round up to gate.max_trials_per_case (and again per continuation), and which looks there are
depends on the baseline alone, never on what the run has seen (adding trials to a case
*because* it failed would bias its count downwards).

A case that was reliable in the baseline (rubricgate/gating/collapse.py: at most one failure in
5 or more trials) or never failed there, and fails now, is the one exception, handled apart: it
is re-tried with a confirmation batch drawn after the failure that selected it, and its per-case
test uses those fresh trials only (rubricgate/gating/collapse.py), tested once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from statistics import NormalDist

from rubricgate.gating.boundaries import nominal_fractions
from rubricgate.gating.evidence import TRIAL, Unit
from rubricgate.gating.outcome import ALPHA_SHARES
from rubricgate.gating.passbound import calibrate
from rubricgate.models.base import DIMENSIONS

CONTINUATIONS = 5  # budgets of rounds a run may be continued by, planned with the first
TEST_CONTINUATION = 0.05  # the tests' share of alpha kept for the continuations, a fifth each
PASS_RESERVE = 0.06  # the PASS bound's share of alpha kept for looks after the planned one
PASS_EARLY = 0.10  # when the planned look is past the budget: the budget's last look's share
# The reserve after the planned look, cumulatively, by the trials of a look as a multiple of the
# planned look's: most where one more failure than the planned look's is outweighed (2.5x).
PASS_AFTER = ((1.5, 0.1), (2.5, 0.6), (4, 0.8), (6, 0.9))
TEST_SHAPE = "pocock"  # the tests' Lan-DeMets shape (ld_spending)
_N = NormalDist()


def tests_alpha_share(dims: int) -> float:
    """The share of alpha the tests' nominal levels are computed at: Holm's first (smallest) level
    across the run's `dims` graded dimensions. A look's level grows with alpha (the looks' overlap
    weighs more), so the fractions found at the smallest level are conservative at Holm's later,
    larger ones; a dimension the run does not grade never lowers it."""
    return ALPHA_SHARES["dimensions"] / max(dims, 1)


# (round, PASS band scores) -> an unchanged reviewer's median counts PASS
PassCheck = Callable[[int, tuple[float, ...]], bool]


@dataclass
class Schedule:
    """The fixed design: trials per case after each round, and the looks with their spending."""

    caps: dict[str, int]  # the most design trials each case gets within the budget
    first: int  # trials every case gets before the first look
    looks: list[int]  # rounds after which the gate looks, the budget's and the continuations'
    budget_looks: int  # how many of `looks` are within the budget (the rest: continuations)
    spend: list[float]  # the tests' nominal alpha fraction at each look (false REGRESSION)
    case_spend: list[float]  # the per-case family's fraction at each look: the tests' increments
    planned: int  # the planned look (may be past the budget: then a continuation's)
    pass_cumulative: list[float]  # the PASS bound's cumulative fraction of alpha by each look
    n0: int = 1  # the baseline's pooled (effective) trials per dimension (what the PASS calibration uses)
    rho: float = 0.0  # within-run dependence (gating/dependence.py): trials count at their design effect
    alpha: float = 0.05
    margin: float = 0.05
    _scores: list[tuple[float, ...]] = field(default_factory=list)

    def trials_after(self, case: str, rounds: int) -> int:
        """Design trials of `case` once `rounds` rounds have run (continuation rounds included)."""
        return min(rounds, self.caps[case]) if rounds <= self.budget_round() else rounds

    def budget_round(self) -> int:
        return self.looks[self.budget_looks - 1]

    def planned_continuations(self) -> int:
        """Continuations the design was planned with (look_rounds: CONTINUATIONS, or none when a
        whole run counts as one observation)."""
        return (len(self.looks) - self.budget_looks) // max(self.budget_round(), 1)

    def looks_after(self, continuations: int) -> int:
        """Looks a run may take once continued `continuations` times. A continuation is one more
        budget of rounds with a look after each (look_rounds), as the spending plans it
        (false_alarm_spending: a fifth of the rest by the end of each). Counted in the budget's
        looks instead, a run whose first look comes after several rounds got more, shorter
        continuations than planned, and a last partial one let a spent design be taken again."""
        return min(len(self.looks), self.budget_looks + max(continuations, 0) * self.budget_round())

    def total_after(self, rounds: int) -> int:
        """Design trials of the whole suite once `rounds` rounds have run."""
        return sum(self.trials_after(c, rounds) for c in self.caps)

    def effective_after(self, rounds: int) -> int:
        """Design trials once `rounds` rounds have run, each case's at its design effect (at least 1 a case)."""
        unit = Unit(self.rho)
        return max(len(self.caps), round(sum(unit.effective(self.trials_after(c, rounds)) for c in self.caps)))

    def pass_score(self, look: int) -> tuple[float, ...]:
        """The PASS bound's calibrated band scores at look `look` (0-based), computed when first needed."""
        if look >= len(self._scores):
            upto = max(look + 1, self.budget_looks)
            trials = [self.effective_after(r) for r in self.looks[:upto]]
            self._scores = list(calibrate(self.n0, trials, self.pass_cumulative[:upto], self.alpha, self.margin,
                                          extended=self.budget_looks < upto < len(self.looks)).z)
        return self._scores[look]


def caps(baseline: Mapping[str, tuple[int, int]], max_trials: int, first: int = 1) -> dict[str, int]:
    """Every case gets every round, up to `max_trials` (at least `first`). A drop that makes every
    case proportionally worse moves a reliable case's count the most for its noise, so sparing
    reliable cases (allocating by the baseline's uncertainty) costs power where it is cheapest."""
    return {c: max(max_trials, first) for c in baseline}


def look_rounds(first: int, last: int, continuations: int = 0) -> list[int]:
    """After the first round, then after every round up to the last, and on through the
    continuations' rounds: with levels from the joint distribution, one more look costs the
    others little, and a run stops one round sooner."""
    last = max(last, first)
    return list(range(max(1, first), last + 1)) + list(range(last + 1, last * (1 + continuations) + 1))


def false_alarm_spending(fractions: Sequence[float], budget_looks: int) -> list[float]:
    """The tests' cumulative spending: Lan-DeMets (Pocock type) over the budget's information
    fractions up to 1 - TEST_CONTINUATION, then a fifth of the rest by the end of each
    continuation, linearly in its looks' information. The last look spends everything."""
    within = [(1 - TEST_CONTINUATION) * c for c in _cumulative(ld_spending(fractions[:budget_looks], 1.0))]
    rest = list(fractions[budget_looks:])
    if not rest:
        return within[:-1] + [1.0]
    top = fractions[budget_looks - 1]
    span = (rest[-1] - top) / CONTINUATIONS if rest[-1] > top else 1.0
    out = within + [min(1.0, 1 - TEST_CONTINUATION + TEST_CONTINUATION * (f - top) / (span * CONTINUATIONS))
                    for f in rest]
    return out[:-1] + [1.0]


def pass_spending(rounds: Sequence[int], budget_looks: int, planned: int) -> list[float]:
    """The PASS bound's cumulative fraction of alpha by each look: none before the planned look
    (PASS_EARLY at the budget's last look when the planned one is past it), 1 - PASS_RESERVE at
    the planned look, then the reserve by PASS_AFTER's multiples of the planned look's rounds,
    all of it by the last look. A look's calibration spends at most this by it."""
    out = [0.0] * len(rounds)
    last_budget = budget_looks - 1
    for k in range(len(rounds)):
        if k < planned:
            out[k] = PASS_EARLY if planned > last_budget and k >= last_budget else 0.0
            continue
        share = max((s for m, s in PASS_AFTER if rounds[k] >= m * rounds[planned]), default=0.0)
        out[k] = 1 - PASS_RESERVE + PASS_RESERVE * share
    out[-1] = 1.0
    return out


def schedule(baseline: Mapping[str, tuple[int, int]], max_trials: int, first: int,
             expected_pass: PassCheck, alpha: float = 0.05, margin: float = 0.05, unit: Unit = TRIAL,
             n0_effective: float | None = None, dims: int = len(DIMENSIONS)) -> Schedule:
    """The design for these shared cases. `expected_pass(round, score)` tells whether an unchanged
    reviewer's median counts PASS after that round at that score; the planned look is the first
    look where they do at the score a look would get with 1 - PASS_RESERVE of alpha and no PASS
    before it. The tests spend alpha by information fraction (nominal levels over the looks'
    joint distribution, at Holm's first level over the `dims` graded dimensions), the PASS bound
    around the planned look (`pass_spending`).

    With within-run dependence (`unit`) a case's trials count at their design effect, in the
    information and the PASS calibration alike (`n0_effective`: the baseline's pooled effective
    trials); when a whole run counts as one observation, more rounds add nothing and the design
    is the first round alone."""
    if unit.rho >= 1:
        max_trials = first
    allocation = caps(baseline, max_trials, first)
    budget = max(allocation.values(), default=first)
    rounds = look_rounds(first, budget, 0 if unit.rho >= 1 else CONTINUATIONS)
    budget_looks = len(look_rounds(first, budget))
    raw_n0 = sum(n for _, n in baseline.values()) or 1
    n0 = max(1, round(n0_effective if n0_effective is not None else raw_n0))
    total = sum(allocation.values()) or 1
    trials = [len(allocation) * r for r in rounds]
    effective = [max(len(allocation), round(len(allocation) * unit.effective(r))) for r in rounds]
    planned = first_true(len(rounds), lambda k: expected_pass(
        rounds[k], _fixed_score(n0, effective[k], alpha * (1 - PASS_RESERVE), margin)))
    fractions = [t / total for t in trials]
    tests = false_alarm_spending(fractions, budget_looks)
    shrink = n0 / raw_n0  # the baseline's effective share of its trials
    info = information({c: n0_c * shrink for c, (_, n0_c) in baseline.items()}, rounds, unit)
    increments = [b - a for a, b in zip([0.0] + tests[:-1], tests)]
    return Schedule(allocation, first, rounds, budget_looks,
                    nominal_fractions(info, tests, alpha * tests_alpha_share(dims)), increments, planned,
                    pass_spending(rounds, budget_looks, planned), n0, unit.rho, alpha, margin)


def first_true(count: int, holds: Callable[[int], bool]) -> int:
    """The first k in [0, count) where `holds` (bisection: it holds from some k on, as an unchanged
    reviewer's PASS does with more trials; each test is a calibration); count - 1 when none does."""
    low, high = -1, count - 1
    if not holds(high):
        return high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if holds(mid) else (mid, high)
    return high


def _fixed_score(n0: int, n1: int, alpha: float, margin: float) -> tuple[float, ...]:
    return calibrate(n0, [n1], [1.0], alpha, margin).z[0]


def information(baseline_trials: Mapping[str, float], rounds: Sequence[int], unit: Unit = TRIAL) -> list[float]:
    """The information about the drop at each look, up to a constant: per case 1 / (1/n + 1/n0)
    for n design trials now (effective ones under dependence) and n0 in the baseline (the
    baseline's trials are shared by every look, which is why the looks are so strongly correlated)."""
    return [sum(1 / (1 / max(unit.effective(r), 1e-9) + 1 / max(n0, 1e-9)) for n0 in baseline_trials.values())
            for r in rounds]


def _cumulative(increments: Sequence[float]) -> list[float]:
    """Spent by each look, the last exactly 1 (no rounding left over)."""
    return list(accumulate(increments))[:-1] + [1.0]


def ld_spending(fractions: Sequence[float], alpha: float, shape: str | None = None) -> list[float]:
    """The increments of a Lan-DeMets spending function at these information fractions (design
    trials so far over the whole design's; the last is 1), as fractions of alpha summing to 1.

    obf: O'Brien-Fleming type, 2 - 2 Phi(z_{alpha/2} / sqrt(t)), little early and most at the end;
    pocock: Pocock type, ln(1 + (e - 1) t), spread evenly."""
    shape = shape or TEST_SHAPE
    z = _N.inv_cdf(1 - alpha / 2)
    cumulative = {"obf": lambda t: 2 * (1 - _N.cdf(z / math.sqrt(t))) / alpha if t > 0 else 0.0,
                  "pocock": lambda t: math.log(1 + (math.e - 1) * t)}[shape]
    levels = [min(1.0, cumulative(min(1.0, t))) for t in fractions[:-1]] + [1.0]
    return [max(0.0, b - a) for a, b in zip([0.0] + levels[:-1], levels)]


def confirmation_size(baseline: tuple[int, int], level: float, room: int) -> int:
    """Trials a re-tried case needs so that failing them all is significant at `level` (Fisher's
    one-sided exact p of 0/n against the baseline's x0/n0; 1 / C(n + n0, n) when x0 = n0), at most
    `room`; 0 when even `room` cannot."""
    x0, n0 = baseline
    for n in range(1, room + 1):
        # P(0 current passes | x0 passes in total over n + n0 trials) = C(n0, x0) / C(n + n0, x0)
        if math.comb(n0, x0) / math.comb(n + n0, x0) <= level:
            return n
    return 0


def undecided(outcomes: Sequence[str]) -> bool:
    """Is any dimension still open at this look?"""
    return any(o == "inconclusive" for o in outcomes)
