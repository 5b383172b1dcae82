"""Statistics for noisy reviewers: intervals, pass@k / pass^k, exact tails.

Everything here is exact or a closed form (math.lgamma, statistics.NormalDist; numpy only for
the convolution in rubricgate/gating/exact.py): the sample sizes are small (tens of cases, a few
trials), where normal approximations mislead. The gate's test lives in rubricgate/gating/exact.py.

Two kinds of interval, because they answer two questions:
  * per case, Wilson: trials of one case are independent draws of the agent's nondeterminism;
  * per suite, Wilson at the design-effect-adjusted sample size: trials of one case are not
    independent of each other when the question is "how often does this reviewer pass cases
    like these", so cases are treated as clusters (Kish's design effect from the between-case
    variance, with the C/(C-1) small-sample factor). With one trial per case the effective size
    is n (C-1)/C: the plain Wilson interval, a little wider.
Every interval has low <= rate <= high, with exactly 0 at 0 passes and exactly 1 when all pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from statistics import NormalDist

from rubricgate.models.results import RateRow, TrialResult

Count = tuple[int, int]  # (passes, trials)


def wilson(passes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval for passes/trials; (0, 1) when there are no trials."""
    _check_counts(passes, trials)
    if trials == 0:
        return 0.0, 1.0
    low, high = wilson_bounds(passes / trials, trials, _z(0.5 + confidence / 2))
    return (0.0 if passes == 0 else low), (1.0 if passes == trials else high)


def wilson_bounds(rate: float, n: float, z: float) -> tuple[float, float]:
    """Wilson bounds at score z for a rate over n (n may be fractional: an effective size).

    Clamped so that low <= rate <= high whatever the float rounding.
    """
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(max(0.0, rate * (1 - rate)) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, min(rate, centre - half)), min(1.0, max(rate, centre + half))


def cluster_interval(counts: Sequence[Count], confidence: float = 0.95) -> tuple[float, float, float]:
    """(low, high, effective n): a suite rate's interval with cases as clusters.

    The design effect is the ratio of the between-case (cluster) variance of the pooled rate to
    the binomial one, at least 1; Wilson is then taken at n / deff. When every trial agrees
    (all pass or all fail) there is no variance to measure and each case counts once.
    """
    counts = [(x, n) for x, n in counts if n]
    for x, n in counts:
        _check_counts(x, n)
    passes, trials = sum(x for x, _ in counts), sum(n for _, n in counts)
    if not trials:
        return 0.0, 1.0, 0.0
    n_eff = _effective_n(counts, passes, trials)
    low, high = wilson_bounds(passes / trials, n_eff, _z(0.5 + confidence / 2))
    return (0.0 if passes == 0 else low), (1.0 if passes == trials else high), n_eff


def _effective_n(counts: Sequence[Count], passes: int, trials: int) -> float:
    cases, rate = len(counts), passes / trials
    if cases < 2:
        return float(trials)
    if passes in (0, trials):
        return float(cases)
    # Design effect: the ratio estimator's between-case variance, with the usual C/(C-1)
    # small-sample factor of a cluster-robust variance (without it 5 clusters understate the
    # variance by 20%), over the binomial one; at least 1.
    between = sum((x - rate * n) ** 2 for x, n in counts) * cases / (cases - 1)
    deff = max(1.0, between / (trials * rate * (1 - rate)))
    return trials / deff


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k trials drawn from n (c passing) passes: 1 - C(n-c,k)/C(n,k)."""
    _check_k(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k (tau-bench): chance that all k trials drawn from n (c passing) pass: C(c,k)/C(n,k)."""
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def suite_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k over cases given (trials, passes) per case; None for an empty suite."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    return sum(values) / len(values) if values else None


def suite_pass_hat_k(counts: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean pass^k over cases given (trials, passes) per case; None for an empty suite."""
    values = [pass_hat_k(n, c, k) for n, c in counts]
    return sum(values) / len(values) if values else None


def is_flaky(outcomes: Iterable[bool]) -> bool:
    """A case is flaky when its trials disagree: at least one pass and at least one fail."""
    seen = set(outcomes)
    return len(seen) == 2


def binom_cdf(x: int, n: int, p: float) -> float:
    """P(X <= x) for X ~ Binomial(n, p), summed exactly in log space (no overflow for big n)."""
    if x < 0:
        return 0.0
    if x >= n:
        return 1.0
    return min(1.0, sum(_binom_pmf(i, n, p) for i in range(x + 1)))


def binom_sf(x: int, n: int, p: float) -> float:
    """P(X >= x) for X ~ Binomial(n, p), summed over the upper terms: never 1 - cdf, which
    rounds a tail below 1e-16 to 0 (60 regressions vs 0 fixes would read p = 0)."""
    if x <= 0:
        return 1.0
    if x > n:
        return 0.0
    return min(1.0, sum(_binom_pmf(i, n, p) for i in range(x, n + 1)))


def mcnemar_exact(regressed: int, fixed: int) -> float:
    """One-sided exact McNemar p-value that regressions outnumber fixes by more than chance.

    Under "nothing changed" each discordant pair is a regression or a fix with probability 1/2,
    so the p-value is P(X >= regressed) for X ~ Binomial(regressed + fixed, 1/2).
    """
    _check_counts(regressed, regressed + fixed)
    if regressed + fixed == 0:
        return 1.0
    return binom_sf(regressed, regressed + fixed, 0.5)


def fisher_less(x1: int, n1: int, x0: int, n0: int) -> float:
    """One-sided Fisher exact p-value that rate x1/n1 is below rate x0/n0.

    Conditional on the total passes, x1 is hypergeometric; the p-value is P(X <= x1).
    """
    _check_counts(x1, n1)
    _check_counts(x0, n0)
    total, drawn, successes = n1 + n0, n1, x1 + x0
    low = max(0, drawn - (total - successes))
    return min(1.0, sum(_hypergeom_pmf(i, total, successes, drawn) for i in range(low, x1 + 1)))


def add_intervals(rates: dict[str, RateRow], per_case: dict[str, dict[str, Count]],
                  confidence: float = 0.95) -> None:
    """Fill low/high of every suite rate with its cluster-aware interval (cases as clusters)."""
    for dim, row in rates.items():
        if row.trials:
            counts = [dims[dim] for dims in per_case.values() if dim in dims]
            row.low, row.high, _ = cluster_interval(counts or [(row.passes, row.trials)], confidence)


def counted(result: TrialResult) -> bool:
    """Does this trial count in a rate? Not when it never ran (budget, interruption) or when
    it is `errored` (the agent failed for infrastructure reasons: it says nothing about the
    reviewer). Every rate, per-case count and test goes through this one predicate."""
    if result.errored:
        return False
    return not any(g.category == "not_run" for g in result.grades.values())


def compared(result: TrialResult) -> bool:
    """Is this trial one the gate compared with the baseline? A counted trial that is no
    confirmation: confirmations run only for a case that failed and stop at its first pass, so
    they are kept apart from the rates (gating/adaptive.py). What a run's counts are read back
    for (a baseline, another run, a table) counts these, as its rates did."""
    return counted(result) and not result.confirmation


def trial_passed(trial: TrialResult) -> bool:
    """A trial passes when every dimension passed (what pass@k and flakiness are counted on)."""
    return bool(trial.grades) and all(g.passed for g in trial.grades.values())


def case_consistency(trials: list[TrialResult]) -> tuple[float | None, float | None, bool]:
    """(pass@k, pass^k, flaky) for one case, with k = its number of trials."""
    if not trials:
        return None, None, False
    outcomes = [trial_passed(t) for t in trials]
    n, c = len(outcomes), sum(outcomes)
    return pass_at_k(n, c, n), pass_hat_k(n, c, n), is_flaky(outcomes)


def suite_consistency(per_case: list[list[TrialResult]]) -> dict:
    """pass@k / pass^k per k (each case at its own trials, averaged over cases with that k).

    The headline group is the k most cases ran (ties: the larger k). `all_pass` is the rate
    pass@k and pass^k are built from: trials that passed every dimension, over all trials.
    """
    counts = [(len(ts), sum(trial_passed(t) for t in ts)) for ts in per_case if ts]
    groups: dict[int, list[Count]] = {}
    for n, c in counts:
        groups.setdefault(n, []).append((n, c))
    by_k = [{"k": k, "cases": len(g), "pass_at_k": suite_pass_at_k(g, k), "pass_hat_k": suite_pass_hat_k(g, k)}
            for k, g in sorted(groups.items())]
    passes, trials = sum(c for _, c in counts), sum(n for n, _ in counts)
    top = max(by_k, key=lambda g: (g["cases"], g["k"]), default={"k": None, "cases": 0, "pass_at_k": None,
                                                                  "pass_hat_k": None})
    return {**top, "by_k": by_k, "all_pass": {"passes": passes, "trials": trials,
                                              "rate": passes / trials if trials else None}}


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _binom_pmf(i: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 1.0 if i == 0 else 0.0
    if p >= 1.0:
        return 1.0 if i == n else 0.0
    return math.exp(_log_comb(n, i) + i * math.log(p) + (n - i) * math.log1p(-p))


def _hypergeom_pmf(i: int, total: int, successes: int, drawn: int) -> float:
    log_p = (_log_comb(successes, i) + _log_comb(total - successes, drawn - i)
             - _log_comb(total, drawn))
    return math.exp(log_p)


def _z(level: float) -> float:
    return NormalDist().inv_cdf(level)


def _check_counts(passes: int, trials: int) -> None:
    if trials < 0 or passes < 0 or passes > trials:
        raise ValueError(f"need 0 <= passes <= trials, got passes={passes} trials={trials}")


def _check_k(n: int, c: int, k: int) -> None:
    _check_counts(c, n)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= trials, got k={k} trials={n}")
