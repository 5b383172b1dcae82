"""The plan's power: the chance of a REGRESSION at a given drop, as the gate would have it.

Given the baseline (its per-case rates taken as the cases' rates, the drop spread over the cases
in proportion to their rates, p_i = b_i (1 - d / mean b), as a vaguer prompt makes every case a
little worse), PATHS runs of the current side are simulated (one uniform per trial and case,
the same for every drop, so the chance grows with the drop), with the design's looks: at each,
the stratified score statistic (the exact test's conditional mean and variance at the realized
totals, half a unit of continuity correction for the exact test's discreteness; under within-run
dependence each case's variance at its design effects, as the gate's score test) against the
look's nominal level, and the observed drop (as the gate sums it: `reference`) against the
margin. Where the exact test's sum takes few values (EXACT_VALUES: few cases carry the
information), a path's p is the exact test's own (exact.lower_p), which no smooth approximation
follows there. A run is a REGRESSION at the
first look where both hold. The level is Holm-Tarone's first step: alpha's dimension share over
the dimensions that can reject (those whose baseline varied, and the one that dropped).

tests/gating/test_plan_power.py checks each figure the plan prints against the gate itself,
simulated on the same baseline (300 runs a figure; bench/plan_power.py on more suite shapes).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

from rubricgate.gating.evidence import TRIAL, Unit, observed_drop
from rubricgate.gating.exact import import_numpy, lower_p
from rubricgate.gating.outcome import beyond

PATHS = 1000
# The exact test's p includes the observed sum (P(S <= s)): half a unit on the sum makes the normal
# approximation of a discrete statistic match it (the continuity correction; without it the plan
# over-claimed by 5-10 points at 1-3 trials a case). The score test under dependence has none.
CONTINUITY = 0.5
_CELLS = 4_000_000  # paths x cases x trials drawn at most (fewer paths on larger suites)
_N = NormalDist()
Counts = Sequence[tuple[int, int]]


def regression_chance(base: Counts, rounds: Sequence[int], levels: Sequence[float], drop: float, margin: float,
                      unit: Unit = TRIAL, sessions: Sequence[int] | None = None, seed: int = 39) -> float:
    """P(a REGRESSION by the last look) at the true `drop`, looks after `rounds` trials per case
    at one-sided `levels`."""
    np = import_numpy()
    if drop <= 0 or not base:
        return 0.0
    x0 = np.array([x for x, _ in base], dtype=float)
    n0 = np.array([n for _, n in base], dtype=float)
    b = x0 / n0
    p = np.maximum(0.0, b * (1 - drop / b.mean())) if b.mean() > 0 else b
    most = max(rounds)
    paths = max(200, min(PATHS, _CELLS // max(1, len(base) * most)))
    passed = _draws(np, p, paths, most, unit, seed)  # paths x cases x trials (a view of cached uniforms)
    edges = sorted(set(rounds))
    counts = np.cumsum(np.add.reduceat(passed, [0] + edges[:-1], axis=2, dtype=np.int32), axis=2)  # at each look
    s0 = np.array(sessions if sessions else [1] * len(base), dtype=float)
    phi0 = 1 + np.maximum(n0 / s0 - 1, 0) * unit.rho
    # A case whose baseline varied adds a value to S whatever the run does: past EXACT_VALUES - 1 of
    # them no path's sum is small, and the check is skipped (0.4 s of a 300-case plan).
    exact = not unit.rho and int(((x0 > 0) & (x0 < n0)).sum()) < EXACT_VALUES
    hit = np.zeros(paths, dtype=bool)
    for t, lvl in zip(rounds, levels):
        x1 = counts[:, :, edges.index(t)]
        reject = _score_z(np, x1, t, x0, n0, unit, phi0) <= _N.inv_cdf(max(lvl, 1e-300))
        if exact:  # the exact test's own p where its sum takes few values (EXACT_VALUES)
            few = _few_values(np, x1, t, x0, n0)
            reject[few] = exact_p(np, x1[few], t, base) <= lvl
        observed = reference(tuple((x, n) for x, n in base), t) - x1.sum(axis=1) / (t * len(base))
        hit |= reject & beyond(observed, margin)
    return float(hit.mean())


@lru_cache(maxsize=1024)  # the drop's search asks for the same looks again (0.03 s of a 300-case plan)
def reference(base: tuple[tuple[int, int], ...], t: int) -> float:
    """The baseline's rate standardized to a look of `t` run trials a case, summed as the gate sums
    it (evidence.observed_drop). A drop of exactly the margin is no REGRESSION, and on a suite whose
    cases never failed it is common (3 failures in 60 trials of 30 cases): the mean 1.0 less 57/60
    is 0.050000000000000044, over the margin, where the gate's sum of 30 weights of 1/30 is
    0.9999999999999999 and its drop under the margin. Taken from the mean, the plan counted those
    runs as caught, and its full-budget figure was caught in 73% of runs, not 80%."""
    return observed_drop([(0, t, x, n) for x, n in base])


def _score_z(np, x1, t: int, x0, n0, unit: Unit, phi0):
    """Each path's stratified score statistic at a look of `t` run trials a case (x1: paths x cases)."""
    big, total = t + n0, x1 + x0
    u = ((n0 * x1 - t * x0) / big).sum(axis=1) + (0.0 if unit.rho else CONTINUITY)
    phi1 = 1 + (t - 1) * unit.rho
    # The exact test's conditional (hypergeometric) variance; the score test under dependence
    # takes pi (1 - pi) at the pooled rate, without the finite correction (evidence._score_p).
    finite = np.maximum(big - 1, 1) if not unit.rho else big
    v0 = (n0 * t * total * (big - total) / (big * big * finite) * (n0 * phi1 + t * phi0) / big).sum(axis=1)
    return np.where(v0 > 0, u / np.sqrt(np.where(v0 > 0, v0, 1)), 0.0)


# Where the exact test's sum S takes at most this many values (1 + the cases' ranges of attainable
# passes given their totals), the plan takes the exact test's own p rather than the score statistic's
# normal approximation: with few values the exact test has few attainable levels (5 cases that passed
# every baseline trial, one run trial each: p in {1/11^k}), and no smooth approximation follows where
# the level falls between them (on such a suite the plan's first-look figure was caught in 49% of runs,
# not 80%). At 20, the figures on bench/plan_power.py's shapes are those of an exact p on every path
# (within 0.1 point), at 1.5-2.2 s of CPU a plan where that takes 8-19 s on 30 and 100 cases: wider
# sums are rarely decided differently by the two.
EXACT_VALUES = 20


def _few_values(np, x1, t: int, x0, n0):
    """The paths at this look whose exact sum S takes between 2 and EXACT_VALUES values."""
    total = x1 + x0
    values = 1 + (np.minimum(t, total) - np.maximum(0, total - n0)).sum(axis=1)
    return (values > 1) & (values <= EXACT_VALUES)


def exact_p(np, x1, t: int, base: Counts):
    """The gate's exact p (exact.lower_p, what evidence.weigh takes) of each path's counts `x1`
    (paths x cases) at `t` run trials a case, computed once per distinct set of counts: cases with
    the same baseline counts are interchangeable in S, so each path's are sorted into one key."""
    kinds = sorted(set(base))
    kind = np.array([kinds.index(c) for c in base], dtype=np.int64)
    total = x1 + np.array([x for x, _ in base])
    settled = (total == 0) | (total == t + np.array([n for _, n in base]))  # one value: lower_p skips it
    keys = np.sort(np.where(settled, -1, kind[None, :] * (t + 1) + x1), axis=1)
    # A small sum has at most EXACT_VALUES - 1 unsettled cases: the key holds those alone (the
    # settled sort first), a few hundred bytes however many cases the suite has.
    skip = settled.sum(axis=1)
    return np.array([_lower_p(key[k:].tobytes(), t, tuple(kinds)) for key, k in zip(keys, skip)])


@lru_cache(maxsize=65_536)  # the drop's search and the looks meet the same counts again
def _lower_p(key: bytes, t: int, kinds: tuple[tuple[int, int], ...]) -> float:
    codes = memoryview(key).cast("q").tolist()  # exact_p's int64 codes: kind x (t + 1) + run passes
    return lower_p([(k % (t + 1), t, *kinds[k // (t + 1)]) for k in codes])


def _draws(np, p, paths: int, trials: int, unit: Unit, seed: int):
    """Current trials' outcomes: one uniform per trial and case, the same for every drop (within-run
    dependence: with probability rho a case repeats its first trial's outcome for the whole run)."""
    u, repeat = _uniforms(paths, len(p), trials, seed)
    out = u[:, :, :trials] < p[None, :, None]
    if unit.rho:
        out = np.where((repeat < unit.rho)[:, :, None], out[:, :, :1], out)
    return out


@lru_cache(maxsize=8)
def _uniforms(paths: int, cases: int, trials: int, seed: int):
    np = import_numpy()
    rng = np.random.default_rng(seed)
    return rng.random((paths, cases, trials), dtype=np.float32), rng.random((paths, cases))


# The drop's grid: a tenth of a point. On a large suite power climbs steeply with the drop (80% to
# 87% over half a point on 100 mixed cases), so a coarser grid overstates the power at its figure.
DROP_STEPS = 1000


def smallest_drop(chance, steps: int = DROP_STEPS) -> float | None:
    """The smallest drop on a grid of 1/steps whose chance is at least 80% (None: none up to 100 points)."""
    low, high = 0, steps
    if chance(high / steps) < 0.8:
        return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if chance(mid / steps) >= 0.8 else (mid, high)
    return high / steps


def smallest_size(chance, low: int, high: int) -> int | None:
    """The smallest size in [low, high] whose chance is at least 80% (None: not even `high`)."""
    if chance(high) < 0.8:
        return None
    if chance(low) >= 0.8:
        return low
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if chance(mid) >= 0.8 else (mid, high)
    return high


def can_reject(others: Sequence[Counts]) -> int:
    """The dimensions whose test can reject when one dimension drops: that one, and the others
    whose baseline varied somewhere (the rest pass every trial on both sides: Tarone's count)."""
    return 1 + sum(1 for base in others if any(0 < x < n for x, n in base))


def level(alpha: float, share: float, dims: int, spend: float) -> float:
    """One dimension's first Holm-Tarone level at a look: alpha x its family's share / the
    dimensions that can reject x the look's nominal fraction."""
    return alpha * share / max(dims, 1) * spend
