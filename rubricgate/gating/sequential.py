"""Adaptive trials that stay valid under repeated looks: the design, the looks and alpha spending.

The procedure is a group-sequential design with Bonferroni alpha spending (the union bound; Lan &
DeMets, Biometrika 1983, for spending functions in general): the run looks at the data after a
fixed set of rounds, and look k may spend the fraction s_k of alpha, with sum(s_k) = 1. A test at
look k rejects when its p-value is at most alpha x share x s_k, and the PASS bound at look k is
taken at confidence 1 - alpha x s_k. Whatever the looks see, the chance of any false REGRESSION
over all of them is at most the sum of what each may spend, so stopping early (as soon as every
dimension is decided) costs nothing in validity. The union bound needs no joint distribution of
the statistics across looks, which is what lets each look use the exact discrete tests.

What makes that hold is that the design is fixed before the first trial: which case gets its
r-th trial in round r depends on the baseline alone, never on what the run has seen (adding trials
to a case *because* it failed would bias its count downwards). The allocation follows the
baseline's uncertainty (Neyman allocation): a case whose baseline is flaky gets up to
gate.max_trials_per_case trials, one that always passed proportionally fewer (at least one).

A case that was reliable in the baseline (at most one failure in 5 or more trials) and fails now
is the one exception, handled apart: it is re-tried with a confirmation batch drawn after the failure that selected it, and its
per-case test uses those fresh trials only (rubricgate/gating/collapse.py), tested once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

# Alpha fractions from the planned look on (the look where an unchanged reviewer is expected to
# PASS, then the ones after it for a run that just misses it); what is left is shared by the rest.
PLANNED_SHARES = (0.77, 0.12, 0.06, 0.03)


@dataclass(frozen=True)
class Schedule:
    """The fixed design: trials per case after each round, and the looks with their spending."""

    caps: dict[str, int]  # the most design trials each case gets
    first: int  # trials every case gets before the first look
    looks: list[int]  # rounds after which the gate looks (round r: every case still under its cap)
    spend: list[float]  # alpha fraction of each look; sums to 1

    def trials_after(self, case: str, rounds: int) -> int:
        """Design trials of `case` once `rounds` rounds have run."""
        return min(rounds, self.caps[case])

    def total_after(self, rounds: int) -> int:
        """Design trials of the whole suite once `rounds` rounds have run."""
        return sum(min(rounds, cap) for cap in self.caps.values())


def uncertainty(passes: int, trials: int) -> float:
    """sqrt(p(1-p)) at a shrunk baseline rate (Jeffreys: (x + 1/2) / (n + 1)), so 10/10 is not 0."""
    p = (passes + 0.5) / (trials + 1)
    return math.sqrt(p * (1 - p))


def caps(baseline: Mapping[str, tuple[int, int]], max_trials: int, first: int = 1) -> dict[str, int]:
    """Neyman allocation of up to `max_trials` per case by the baseline's uncertainty (at least `first`)."""
    u = {c: uncertainty(x, n) for c, (x, n) in baseline.items()}
    top = max(u.values(), default=0.0) or 1.0
    return {c: min(max_trials, max(first, math.ceil(max_trials * v / top - 1e-9))) for c, v in u.items()}


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
             expected_pass: PassCheck) -> Schedule:
    """The design for these shared cases. `expected_pass(trials_by_case, spend)` tells whether an
    unchanged reviewer is expected to PASS at that design and spending: the planned look is the
    first such look (or the last)."""
    allocation = caps(baseline, max_trials, first)
    rounds = look_rounds(first, max(allocation.values(), default=first))
    planned = next((k for k, r in enumerate(rounds)
                    if expected_pass({c: min(r, cap) for c, cap in allocation.items()},
                                     PLANNED_SHARES[0] if len(rounds) > 1 else 1.0)), len(rounds) - 1)
    return Schedule(allocation, first, rounds, spending(len(rounds), planned))


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
