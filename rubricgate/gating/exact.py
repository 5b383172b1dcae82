"""The stratified exact conditional test of "did the reviewer get worse on these cases?".

A gate on a fixed suite asks whether this reviewer passes *these* cases less often than before.
Cases differ (one passes 99% of the time, another 60%), so pooling every trial of every case into
one binomial count mixes them up, and matching a run against a suite-wide rate breaks as soon as
the two runs do not hold the same cases at the same trials. The answer is to stratify by case:
within a case, given how many of its current + reference trials passed in total, the number that
passed in the current run is hypergeometric under "nothing changed", independently across cases.

The statistic is the plain sum of current passes over the cases (the exact conditional
Cochran-Mantel-Haenszel test): its null distribution is the convolution of the per-case
hypergeometric distributions, computed exactly on the integers, so nothing is rounded, estimated
or approximated and the test is valid at 1 trial per case as at 100. With one case it is Fisher's
exact test. The p-value is the plain exact one, P(S <= observed): it never exceeds its level.

A sum of passes weighs every trial alike, so one reliable case that breaks outright moves it
little on a large suite: that shape is caught by the per-case family (rubricgate/gating/collapse.py),
not by weighting the sum (a weighted score has no integer support and would have to be rounded).
"""

from __future__ import annotations

import math
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy itself is imported on first use (_LazyNumpy)
    from numpy import ndarray


class _LazyNumpy:
    """numpy, imported on first use: a run whose cases are all settled (every trial passed, or
    failed, on both sides) never needs it, and the others pay its ~0.1 s import once, at the end."""

    def __getattr__(self, name: str):
        numpy = import_numpy()
        globals()["np"] = numpy
        return getattr(numpy, name)


np = _LazyNumpy()


def import_numpy():
    """numpy with one BLAS thread: the convolutions here use none, and by default OpenBLAS
    starts a thread per core that spins beside the trials (2% of a run's CPU, measured)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy

    return numpy

# One case: (current passes, current trials, reference passes, reference trials).
Stratum = tuple[int, int, int, int]


@dataclass(frozen=True)
class NullDistribution:
    """The exact null distribution of S = sum of current passes, and the observed S.

    pmf[j] is P(S = offset + j); `current_trials` / `reference_trials` / `total_passes` are
    over the informative cases (both sides ran), which is what the pooled rates are over.
    """

    pmf: ndarray
    offset: int
    observed: int
    current_trials: int
    reference_trials: int
    total_passes: int

    def tails(self) -> tuple[float, float, float]:
        """(P(S < observed), P(S = observed), P(S > observed)), each summed directly (no 1 - x)."""
        j = self.observed - self.offset
        return float(self.pmf[:j].sum()), float(self.pmf[j]), float(self.pmf[j + 1:].sum())


def null_distribution(strata: Iterable[Stratum]) -> NullDistribution:
    """Convolve the per-case hypergeometric distributions of the current passes.

    A case that ran on only one side carries no information about a change and is skipped;
    a case whose trials all passed (or all failed) on both sides has a one-point distribution.
    """
    pmf, offset, observed, n1_sum, n0_sum, t_sum = np.ones(1), 0, 0, 0, 0, 0
    for x1, n1, x0, n0 in strata:
        _check(x1, n1)
        _check(x0, n0)
        if n1 == 0 or n0 == 0:
            continue
        low, case_pmf = _hypergeom(n1, n0, x1 + x0)
        offset, observed = offset + low, observed + x1
        n1_sum, n0_sum, t_sum = n1_sum + n1, n0_sum + n0, t_sum + x1 + x0
        if len(case_pmf) > 1:
            pmf = np.convolve(pmf, case_pmf)  # direct summation: every term stays >= 0
    return NullDistribution(pmf, offset, observed, n1_sum, n0_sum, t_sum)


def lower_p(strata: Iterable[Stratum]) -> float:
    """One-sided exact p that the current passes are below the reference's, stratified by case."""
    return _tail_p(strata, lower=True)


def upper_p(strata: Iterable[Stratum]) -> float:
    """One-sided exact p that the current passes are above the reference's (a credible fix)."""
    return _tail_p(strata, lower=False)


def _tail_p(strata: Iterable[Stratum], lower: bool) -> float:
    """P(S <= observed) (lower) or P(S >= observed) for S = the sum of current passes."""
    dists, observed, offset = [], 0, 0
    for x1, n1, x0, n0 in strata:
        _check(x1, n1)
        _check(x0, n0)
        if n1 == 0 or n0 == 0 or _one_point(n1, n0, x1 + x0):
            # Ran on one side only, or every trial passed (or failed) on both sides: no
            # information about a change. Checked before numpy, which a run whose cases are all
            # settled then never imports (~0.15 s of the interpreter).
            continue
        low, pmf = _hypergeom(n1, n0, x1 + x0)
        observed, offset = observed + x1, offset + low
        dists.append(pmf)
    if not dists:
        return 1.0  # nothing could have moved: S is fixed
    pmf, j = _convolve_all(dists), observed - offset
    return min(1.0, float(pmf[:j + 1].sum() if lower else pmf[j:].sum()))


_DIRECT_LIMIT = 4_000_000  # above this many products an FFT is faster than direct summation


def _convolve_all(dists: list[ndarray]) -> ndarray:
    """The distribution of the sum, convolved pairwise in a balanced tree (thousands of cases)."""
    if not dists:
        return np.ones(1)
    while len(dists) > 1:
        dists = [_convolve(dists[i], dists[i + 1]) if i + 1 < len(dists) else dists[i]
                 for i in range(0, len(dists), 2)]
    return dists[0]


def _convolve(a: ndarray, b: ndarray) -> ndarray:
    """a * b; by FFT for long inputs, clipped at 0 and renormalized: the FFT's rounding (~1e-16
    of the peak) is far below any tail the gate compares with alpha."""
    if len(a) * len(b) <= _DIRECT_LIMIT:
        return np.convolve(a, b)  # direct summation: every term stays >= 0
    size = len(a) + len(b) - 1
    out = np.clip(np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size), 0.0, None)
    return out / out.sum()


def dip_probability(dist: NullDistribution, tolerance: float = 1e-6) -> float:
    """P(the pooled current rate comes out below the pooled reference rate) when nothing changed.

    This is the false-alarm rate of "fail on any dip" for these cases and counts, computed
    exactly from the same null distribution; 0 when every case is deterministic.
    """
    if not dist.current_trials or not dist.reference_trials:
        return 0.0
    s = dist.offset + np.arange(len(dist.pmf))
    dips = s / dist.current_trials < (dist.total_passes - s) / dist.reference_trials - tolerance
    return float(dist.pmf[dips].sum())


def holm(p_values: Mapping[str, float], alpha: float,
         smallest: Mapping[str, float] | None = None) -> dict[str, float]:
    """Holm-adjusted p-values; a hypothesis is rejected when its adjusted p <= alpha.

    Holm controls the family-wise error rate at alpha under any dependence between the tests,
    which matters here: the three dimensions of one trial are strongly correlated.

    `smallest` (each test's smallest attainable p given what it conditions on: `smallest_p`)
    applies Tarone's count (Tarone 1990, Biometrics 46, 515-522; step-down with Holm: Hommel and
    Krummenauer 1998, Biometrics 54, 673-681): at each step only the remaining tests that could
    still reach alpha / k count, k the smallest number for which at most k of them can. A test
    that cannot reject whatever its data (a case whose every trial passed on both sides, a
    dimension that did not vary) then costs the others nothing: each counted test is valid
    given its margins, so the family stays within alpha. The adjusted p is then "at this
    alpha": p x the count at its step, running maximum.
    """
    order = sorted(p_values, key=lambda key: p_values[key])
    running, adjusted = 0.0, {}
    # Only tests whose floor is at most alpha can ever count (alpha / k <= alpha), and most
    # (cases that passed every trial on both sides) cannot: the count runs over the few that can.
    live = sorted(smallest[k] for k in order if smallest[k] <= alpha) if smallest is not None else []
    for i, key in enumerate(order):
        m = len(order) - i if smallest is None else tarone_count(live, alpha, presorted=True)
        running = max(running, min(1.0, m * p_values[key]))
        adjusted[key] = running
        if smallest is not None and smallest[key] <= alpha:
            live.pop(bisect_left(live, smallest[key]))
    return adjusted


def tarone_count(smallest: Iterable[float], alpha: float, presorted: bool = False) -> int:
    """The smallest k >= 1 such that at most k tests can reach alpha / k (Tarone's count)."""
    floors = smallest if presorted else sorted(smallest)
    floors = list(floors) if not isinstance(floors, list) else floors
    for k in range(1, len(floors) + 1):
        if bisect_right(floors, alpha / k) <= k:
            return k
    return max(1, len(floors))


def smallest_p(strata: Iterable[Stratum], lower: bool = True) -> float:
    """The smallest one-sided p the stratified test can give on these margins: every case at the
    bottom (lower) or top of its support. 1 when nothing can move (the test cannot reject)."""
    out = 1.0
    for x1, n1, x0, n0 in strata:
        if n1 == 0 or n0 == 0 or _one_point(n1, n0, x1 + x0):
            continue
        _, pmf = _hypergeom(n1, n0, x1 + x0)
        out *= float(pmf[0] if lower else pmf[-1])
    return out


def _support(n1: int, n0: int, total: int) -> tuple[int, int]:
    """(lowest, highest) number of current passes possible given `total` passes."""
    return max(0, total - n0), min(n1, total)


def _one_point(n1: int, n0: int, total: int) -> bool:
    """True when the current passes can take one value only, given `total` passes."""
    low, high = _support(n1, n0, total)
    return low == high


@lru_cache(maxsize=4096)
def _hypergeom(n1: int, n0: int, total: int) -> tuple[int, ndarray]:
    """(lowest value, pmf) of the current passes given `total` passes over n1 + n0 trials."""
    low, high = _support(n1, n0, total)
    logs = [_log_comb(total, i) + _log_comb(n1 + n0 - total, n1 - i) for i in range(low, high + 1)]
    top = max(logs)
    weights = np.exp(np.array(logs) - top)
    pmf = weights / weights.sum()  # normalizing removes lgamma rounding: the pmf sums to 1
    pmf.flags.writeable = False  # shared through the cache
    return low, pmf


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _check(passes: int, trials: int) -> None:
    if trials < 0 or passes < 0 or passes > trials:
        raise ValueError(f"need 0 <= passes <= trials, got passes={passes} trials={trials}")
