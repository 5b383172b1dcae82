"""Adaptive trials that stay valid under repeated looks: the design, the looks and alpha spending.

The run looks at the data after every round. Two errors are controlled, each by its own
spending of alpha over the looks (Lan & DeMets, Biometrika 1983: the chance of a first crossing
at look k is the increment of a spending function there):
  * a false REGRESSION (the tests): a Lan-DeMets spending function of the information fraction
    (the design's trials so far over its whole), Pocock type, so a large drop can stop the run
    early;
  * a false PASS (the bound): most of alpha at the planned look (where an unchanged reviewer is
    expected to PASS) and shares at the looks after it, where a run that saw one more failure
    than expected can still PASS.
The looks share most of their trials, so a look's nominal test level may exceed its increment:
the tests' levels come from the joint distribution of the looks (rubricgate/gating/boundaries.py),
and the gate runs each look's exact test at alpha x that level (p-values divided by it). The PASS
bound, which works next to the boundary where the counts are far from normal, and the per-case
family (rubricgate/gating/collapse.py), whose levels are far smaller, keep their increments (the
union bound, exact whatever the joint distribution).

What makes that hold is that the design is fixed before the first trial: every case gets every
round up to gate.max_trials_per_case, and which looks there are depends on the baseline alone,
never on what the run has seen (adding trials to a case *because* it failed would bias its
count downwards).

A case that was reliable in the baseline (at most one failure in 5 or more trials) and fails now
is the one exception, handled apart: it is re-tried with a confirmation batch drawn after the
failure that selected it, and its per-case test uses those fresh trials only
(rubricgate/gating/collapse.py), tested once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from statistics import NormalDist
from typing import Protocol

from rubricgate.gating.boundaries import nominal_fractions
from rubricgate.gating.outcome import ALPHA_SHARES
from rubricgate.models.base import DIMENSIONS

# The PASS bound's alpha fractions, by the trials of a look as a multiple of the planned look's
# (the first where an unchanged reviewer is expected to PASS): most at the planned look, then
# at 2.5 times its trials (where one unexpected failure is outweighed), a little at 1.5 and 4
# times and at the budget's look (a run's last chance: no multiple reaches it, so the last look);
# what is left is shared by the other looks, so every look gets some. Used as they are (the
# union bound): see `schedule` for why the PASS bound does not take joint levels.
PASS_SHARES = ((1, 0.76), (1.5, 0.03), (2.5, 0.17), (4, 0.02), (math.inf, 0.01))
TEST_SHAPE = "pocock"  # the tests' Lan-DeMets shape (ld_spending)
# The tests' nominal levels are computed at Holm's first (smallest) level across the dimensions:
# a look's level grows with alpha (the looks' overlap weighs more), so the fractions found at the
# smallest level are conservative at Holm's later, larger ones.
TEST_ALPHA_SHARE = ALPHA_SHARES["dimensions"] / len(DIMENSIONS)
_N = NormalDist()


@dataclass(frozen=True)
class Schedule:
    """The fixed design: trials per case after each round, and the looks with their spending."""

    caps: dict[str, int]  # the most design trials each case gets
    first: int  # trials every case gets before the first look
    looks: list[int]  # rounds after which the gate looks (round r: every case still under its cap)
    spend: list[float]  # the tests' nominal alpha fraction at each look (false REGRESSION)
    pass_spend: list[float]  # the PASS bound's alpha fraction at each look (false PASS): its increments
    case_spend: list[float]  # the per-case family's fraction at each look: the tests' increments, sum 1

    def trials_after(self, case: str, rounds: int) -> int:
        """Design trials of `case` once `rounds` rounds have run."""
        return min(rounds, self.caps[case])

    def total_after(self, rounds: int) -> int:
        """Design trials of the whole suite once `rounds` rounds have run."""
        return sum(min(rounds, cap) for cap in self.caps.values())


def caps(baseline: Mapping[str, tuple[int, int]], max_trials: int, first: int = 1) -> dict[str, int]:
    """Every case gets every round, up to `max_trials` (at least `first`). A drop that makes every
    case proportionally worse moves a reliable case's count the most for its noise, so sparing
    reliable cases (allocating by the baseline's uncertainty) costs power where it is cheapest."""
    return {c: max(max_trials, first) for c in baseline}


def look_rounds(first: int, last: int) -> list[int]:
    """After the first round, then after every round up to the last: with levels from the joint
    distribution, one more look costs the others little, and a run stops one round sooner."""
    return list(range(max(1, first), max(last, first) + 1))


def spending(rounds: Sequence[int], planned: int) -> list[float]:
    """The PASS bound's increments over the looks after `rounds`: PASS_SHARES at the first look
    with at least that multiple of the planned look's rounds (at the last look when none has);
    the rest shared equally by the other looks (or added to the planned one when there are
    none). Sums to 1."""
    if len(rounds) == 1:
        return [1.0]
    out = [0.0] * len(rounds)
    for multiple, share in PASS_SHARES:
        k = next((j for j, r in enumerate(rounds) if r >= multiple * rounds[planned]), len(rounds) - 1)
        out[k] += share
    free = [k for k in range(len(rounds)) if not out[k]]
    rest = 1 - sum(out)
    for k in free:
        out[k] = rest / len(free)
    if not free:
        out[planned] += rest
    return out


def schedule(baseline: Mapping[str, tuple[int, int]], max_trials: int, first: int,
             expected_pass: PassCheck, alpha: float = 0.05) -> Schedule:
    """The design for these shared cases. `expected_pass(trials_by_case, spend)` tells whether an
    unchanged reviewer is expected to PASS at that design and spending: the planned look is the
    first such look at its share, or the last. The tests
    spend alpha by information fraction (`ld_spending`), the PASS bound around the planned look
    (`spending`); the tests' increments are turned into nominal levels over the looks' joint
    distribution."""
    allocation = caps(baseline, max_trials, first)
    rounds = look_rounds(first, max(allocation.values(), default=first))
    planned = next((k for k, r in enumerate(rounds)
                    if expected_pass({c: min(r, cap) for c, cap in allocation.items()},
                                     PASS_SHARES[0][1] if len(rounds) > 1 else 1.0)), len(rounds) - 1)
    total = sum(allocation.values()) or 1
    fractions = [sum(min(r, cap) for cap in allocation.values()) / total for r in rounds]
    tests, bound = ld_spending(fractions, alpha), spending(rounds, planned)
    info = information({c: n0 for c, (_, n0) in baseline.items()}, allocation, rounds)
    # The PASS bound keeps its increments: next to the boundary (every trial passing) the score
    # bound is liberal and the counts far from normal, and joint levels there let a run PASS on
    # one or two failures at looks where, for a suite at exactly the margin, that happens more
    # often than the model says (bench/gate_power.py, "drop exactly the margin" on the perfect suite).
    return Schedule(allocation, first, rounds, nominal_fractions(info, _cumulative(tests), alpha * TEST_ALPHA_SHARE),
                    bound, tests)


def information(baseline_trials: Mapping[str, int], allocation: Mapping[str, int], rounds: Sequence[int]) -> list[float]:
    """The information about the drop at each look, up to a constant: per case 1 / (1/n + 1/n0)
    for n design trials now and n0 in the baseline (the baseline's trials are shared by every
    look, which is why the looks are so strongly correlated)."""
    return [sum(1 / (1 / min(r, cap) + 1 / max(baseline_trials[c], 1)) for c, cap in allocation.items())
            for r in rounds]


def _cumulative(increments: Sequence[float]) -> list[float]:
    """Spent by each look, the last exactly 1 (no rounding left over)."""
    return list(accumulate(increments))[:-1] + [1.0]


def ld_spending(fractions: Sequence[float], alpha: float, shape: str | None = None) -> list[float]:
    """The increments of a Lan-DeMets spending function at these information fractions (design
    trials so far over the whole design's; the last is 1), as fractions of alpha summing to 1.

    obf: O'Brien-Fleming type, 2 - 2 Phi(z_{alpha/2} / sqrt(t)), little early and most at the end;
    pocock: Pocock type, ln(1 + (e - 1) t), spread evenly. Used on its own, each increment keeps
    the total at alpha (the union bound): the per-case family does so."""
    shape = shape or TEST_SHAPE
    z = _N.inv_cdf(1 - alpha / 2)
    cumulative = {"obf": lambda t: 2 * (1 - _N.cdf(z / math.sqrt(t))) / alpha if t > 0 else 0.0,
                  "pocock": lambda t: math.log(1 + (math.e - 1) * t)}[shape]
    levels = [min(1.0, cumulative(min(1.0, t))) for t in fractions[:-1]] + [1.0]
    return [max(0.0, b - a) for a, b in zip([0.0] + levels[:-1], levels)]


class PassCheck(Protocol):
    """Callable protocol: (trials by case, spending fraction) -> expected to PASS."""

    def __call__(self, trials: Mapping[str, int], spend: float) -> bool: ...


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


def reliable(baseline: tuple[int, int]) -> bool:
    """Worth re-trying when it fails now: at least 5 baseline trials with at most one failure."""
    x0, n0 = baseline
    return n0 >= 5 and x0 >= n0 - 1


def undecided(outcomes: Sequence[str]) -> bool:
    """Is any dimension still open at this look?"""
    return any(o == "inconclusive" for o in outcomes)
