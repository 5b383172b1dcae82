"""The best valid PASS boundary of the design family, for the near-stable 30-case suite.

The family (issue 39's audit): a look after every round of 30 trials, and per dimension a PASS at
look k when the failures so far are at most f_k, against a baseline that never failed (the
reference rate 1, what most near-stable baselines are). Valid: the exact chance of a PASS at any
look when every trial fails with probability exactly the margin (a drop of the margin from 1)
is at most alpha (dynamic programming over the failure count). Cost: the mean trials until every
dimension of the near-stable suite (21 cases that never fail, 9 that fail half a percent of the
time, its three dimensions independent) PASSes at the same look, estimated on RUNS simulated
suites (the same runs for every boundary).

`best_valid()` enumerates the boundaries (first PASS at look 2 or later, thresholds that never
fall, at most MAX_FAILS failures) and keeps the cheapest valid one; `shipped()` reads the
shipped design's thresholds off its calibrated scores (gating/passbound.py, the top reference
band against a perfect baseline of the default size) and costs them the same way, so the two
are compared like for like. Usage: python bench/gate_boundary.py
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rubricgate.gating.passbound import pass_upper  # noqa: E402

ALPHA, MARGIN, CASES, LOOKS, MAX_FAILS, RUNS = 0.05, 0.05, 30, 10, 3, 100_000
NEAR = [1.0] * 21 + [0.995] * 9


@dataclass(frozen=True)
class Boundary:
    fails: tuple[int, ...]  # per look, the most failures that PASS (-1: none)
    error: float  # P(PASS at any look | every trial fails with probability MARGIN)
    trials: float  # mean trials until every dimension PASSes at one look (the budget when never)

    def describe(self) -> str:
        shown = ", ".join(f"{f} at {30 * (k + 1)}" for k, f in enumerate(self.fails)
                          if f >= 0 and (k == 0 or f != self.fails[k - 1]))
        return f"PASS on at most {shown} trials (exact error {self.error:.4f})"


def error(fails: tuple[int, ...]) -> float:
    """Exact P(failures <= fails[k] at some look k) when each trial fails with probability MARGIN."""
    alive, total = np.zeros(CASES * LOOKS + 1), 0.0
    alive[0] = 1.0
    step = np.array([math.comb(CASES, j) * MARGIN ** j * (1 - MARGIN) ** (CASES - j) for j in range(CASES + 1)])
    for f in fails:
        alive = np.convolve(alive, step)[:CASES * LOOKS + 1]
        if f >= 0:
            total += alive[:f + 1].sum()
            alive[:f + 1] = 0.0
    return float(total)


@lru_cache(maxsize=1)
def _paths() -> np.ndarray:
    """Cumulative failures per (run, dimension, look) of the near-stable suite."""
    rng = np.random.default_rng(39)
    fail = 1 - np.array(NEAR)
    per_round = (rng.random((RUNS, 3, LOOKS, CASES)) < fail).sum(axis=3)
    return np.cumsum(per_round, axis=2)


def cost(fails: tuple[int, ...]) -> float:
    """Mean trials until every dimension is at or under the threshold at the same look."""
    paths = _paths()
    limit = np.array([f if f >= 0 else -1 for f in fails])
    ok = (paths <= limit[None, None, :]).all(axis=1)  # run x look: every dimension PASSes
    first = np.where(ok.any(axis=1), ok.argmax(axis=1) + 1, LOOKS)
    return float(CASES * first.mean())


def candidates():
    """First PASS at look 2 or later, thresholds that never fall."""
    for start in range(1, LOOKS):
        for rest in itertools.combinations_with_replacement(range(MAX_FAILS + 1), LOOKS - start):
            yield tuple([-1] * start + list(rest))


@lru_cache(maxsize=1)
def best_valid() -> Boundary:
    best = None
    for fails in candidates():
        e = error(fails)
        if e > ALPHA:
            continue
        c = cost(fails)
        if best is None or c < best.trials:
            best = Boundary(fails, e, c)
    if best is None:
        raise RuntimeError("no valid boundary")
    return best


def shipped() -> Boundary:
    """The shipped design's thresholds against a perfect baseline (top band), costed the same way."""
    from rubricgate.gating.adaptive import AdaptiveRun
    from rubricgate.gating.planning import baseline_measure
    from rubricgate.models.baseline import Baseline, CaseCount
    from rubricgate.models.config import GateConfig
    from rubricgate.models.dimensions import DIMENSIONS

    gate = GateConfig(method="statistical")
    sessions, per = baseline_measure(CASES, len(DIMENSIONS), gate, 1)
    n0 = sessions * per
    cases = {f"c{i}": {d: CaseCount(passes=n0, trials=n0, sessions=[(per, per)] * sessions) for d in DIMENSIONS}
             for i in range(CASES)}
    run = AdaptiveRun(Baseline(rates={d: 1.0 for d in DIMENSIONS}, cases=cases), gate, list(cases))
    fails = []
    for k in range(LOOKS):
        z, n1 = run.schedule.pass_score(k)[-1], CASES * (k + 1)
        fails.append(max([f for f in range(n1 + 1) if pass_upper(1.0, CASES * n0, n1 - f, n1, z) <= MARGIN],
                         default=-1))
    got = tuple(fails)
    return Boundary(got, error(got), cost(got))


if __name__ == "__main__":
    best, ours = best_valid(), shipped()
    print(f"best valid: {best.trials:.1f} trials ({best.trials / 60:.2f}x the information limit): {best.describe()}")
    print(f"shipped:    {ours.trials:.1f} trials ({ours.trials / best.trials:.3f}x the best): {ours.describe()}")
