"""The stratified exact conditional test (exact Cochran-Mantel-Haenszel) and Holm's correction.

A gate on a fixed suite asks "does this reviewer pass *these* cases less often than before?".
Cases differ (one passes 99% of the time, another 60%), so pooling every trial of every case
into one binomial count mixes them up, and matching a run against a suite-wide rate breaks as
soon as the two runs do not hold the same cases at the same trials. The answer is to stratify
by case: within a case, given how many of its current + reference trials passed in total, the
number that passed in the current run is hypergeometric under "nothing changed". The test
statistic is the sum of those counts over cases; its exact null distribution is the
convolution of the per-case hypergeometric distributions. Nothing is approximated and no
parameter is estimated, so it is valid at 1 trial per case as at 100.

The p-value is a mid-p (P(S < s) + P(S = s) / 2): with tens of cases the statistic is very
discrete and the plain exact p-value is far more conservative than the nominal level, which
costs power. bench/gate_soundness.py measures the resulting false-alarm rate (with Holm over
the three dimensions) and checks it stays below 1 - confidence.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

# One case: (current passes, current trials, reference passes, reference trials).
Stratum = tuple[int, int, int, int]


@dataclass(frozen=True)
class NullDistribution:
    """The exact null distribution of S = sum of current passes, and the observed S.

    pmf[j] is P(S = offset + j); `current_trials` / `reference_trials` / `total_passes` are
    over the informative cases (both sides ran), which is what the pooled rates are over.
    """

    pmf: np.ndarray
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


def lower_midp(strata: Iterable[Stratum]) -> float:
    """One-sided mid-p that the current passes are below the reference's, stratified by case."""
    below, at, _ = null_distribution(strata).tails()
    return min(1.0, below + at / 2)


def upper_midp(strata: Iterable[Stratum]) -> float:
    """One-sided mid-p that the current passes are above the reference's (a credible fix)."""
    _, at, above = null_distribution(strata).tails()
    return min(1.0, above + at / 2)


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


def holm(p_values: Mapping[str, float], alpha: float) -> dict[str, float]:
    """Holm-adjusted p-values; a hypothesis is rejected when its adjusted p <= alpha.

    Holm controls the family-wise error rate at alpha under any dependence between the tests,
    which matters here: the three dimensions of one trial are strongly correlated.
    """
    order = sorted(p_values, key=lambda key: p_values[key])
    m, running, adjusted = len(order), 0.0, {}
    for i, key in enumerate(order):
        running = max(running, min(1.0, (m - i) * p_values[key]))
        adjusted[key] = running
    return adjusted


@lru_cache(maxsize=4096)
def _hypergeom(n1: int, n0: int, total: int) -> tuple[int, np.ndarray]:
    """(lowest value, pmf) of the current passes given `total` passes over n1 + n0 trials."""
    low, high = max(0, total - n0), min(n1, total)
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
