"""Adaptive trials that stay valid under repeated looks: the design, the looks and alpha spending.

The run looks at the data after a fixed set of rounds. Two errors are controlled, each by its
own spending of alpha over the looks, both used through the union bound (a look's share is used
on its own, so no joint distribution of the statistics across looks is needed and every look
keeps the exact discrete tests):
  * a false REGRESSION (the tests): look k's p-values are divided by s_k, the increment at that
    look of a Lan-DeMets spending function of the information fraction (the design's trials so
    far over its whole; Lan & DeMets, Biometrika 1983), Pocock type by default, so a large drop
    can stop the run early;
  * a false PASS (the bound): the bound at look k is taken at confidence 1 - alpha x b_k, with
    most of alpha at the planned look (where an unchanged reviewer is expected to PASS) and a
    share kept for a later look, where a run that saw one more failure than expected can still
    PASS.
Each set of fractions sums to 1, so whatever the looks see and wherever the run stops, each
error's chance over all looks is at most alpha.

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
from statistics import NormalDist
from typing import Protocol

# The PASS bound's alpha fractions from the planned look on (the look where an unchanged reviewer
# is expected to PASS, then the ones after it; the third, two looks on, is about twice the trials
# of the planned one, where one unexpected failure still leaves room to PASS); what is left is
# shared by the other looks. They sum to less than 1, so every look gets some.
PLANNED_SHARES = (0.76, 0.03, 0.17, 0.02)
TEST_SHAPE = "pocock"  # the tests' Lan-DeMets shape (ld_spending)
_N = NormalDist()


@dataclass(frozen=True)
class Schedule:
    """The fixed design: trials per case after each round, and the looks with their spending."""

    caps: dict[str, int]  # the most design trials each case gets
    first: int  # trials every case gets before the first look
    looks: list[int]  # rounds after which the gate looks (round r: every case still under its cap)
    spend: list[float]  # the tests' alpha fraction at each look (false REGRESSION); sums to 1
    pass_spend: list[float]  # the PASS bound's alpha fraction at each look (false PASS); sums to 1

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
    """first, then about every 1.5x (first, first+1, ... 1.5x), and the last round."""
    rounds, r = [], max(1, first)
    while r < last:
        rounds.append(r)
        r = max(r + 1, math.ceil(r * 1.5))
    return rounds + [max(last, first)]


def spending(looks: int, planned: int) -> list[float]:
    """PLANNED_SHARES from the planned look on; the rest of alpha shared equally by the other looks
    (or added to the planned one when there are none). Sums to 1."""
    if looks == 1:
        return [1.0]
    out = [0.0] * looks
    for j, share in enumerate(PLANNED_SHARES):
        if planned + j < looks:
            out[planned + j] = share
    free = [k for k in range(looks) if not out[k]]
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
    first such look (or the last). The tests spend alpha by information fraction
    (`ld_spending`), the PASS bound around the planned look (`spending`)."""
    allocation = caps(baseline, max_trials, first)
    rounds = look_rounds(first, max(allocation.values(), default=first))
    planned = next((k for k, r in enumerate(rounds)
                    if expected_pass({c: min(r, cap) for c, cap in allocation.items()},
                                     PLANNED_SHARES[0] if len(rounds) > 1 else 1.0)), len(rounds) - 1)
    total = sum(allocation.values()) or 1
    fractions = [sum(min(r, cap) for cap in allocation.values()) / total for r in rounds]
    return Schedule(allocation, first, rounds, ld_spending(fractions, alpha), spending(len(rounds), planned))


def ld_spending(fractions: Sequence[float], alpha: float, shape: str | None = None) -> list[float]:
    """The increments of a Lan-DeMets spending function at these information fractions (design
    trials so far over the whole design's; the last is 1), as fractions of alpha summing to 1.

    obf: O'Brien-Fleming type, 2 - 2 Phi(z_{alpha/2} / sqrt(t)), little early and most at the end;
    pocock: Pocock type, ln(1 + (e - 1) t), spread evenly. Each increment is used on its own (the
    union bound), so any fixed shape keeps the total at alpha."""
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
