"""Statistics for noisy reviewers: intervals, pass@k / pass^k, exact tests, the statistical gate.

Everything here is exact and dependency-free (math.lgamma, statistics.NormalDist): the sample
sizes are small (tens of cases, a few trials), where normal approximations mislead.

The statistical gate's question is "does the evidence say this rate is below baseline?". The
baseline is itself a measured rate (baseline.json records the trials it was measured at), so a
one-sample test that treats it as a known constant would fire whenever the baseline run happened
to be lucky: roughly double the nominal false-alarm rate. We therefore compare two samples, the
current passes/trials against the baseline's passes/trials, with a one-sided Fisher exact test.
Pooling all trials of all cases into one binomial count is conservative for a fixed suite whose
cases pass with different probabilities (the pooled variance overstates the real one), so the
false-alarm rate stays at or below 1 - confidence. bench/gate_soundness.py measures both claims.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from rubricgate.models.baseline import Baseline
from rubricgate.models.config import GateConfig
from rubricgate.models.results import RateRow, TrialResult

RateStatus = Literal["ok", "regression", "inconclusive"]


def wilson(passes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval for passes/trials; (0, 1) when there are no trials."""
    _check_counts(passes, trials)
    if trials == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p, n = passes / trials, trials
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At p = 0 or 1 the exact bound is 0 or 1; float dust (300/300 gives 0.9999999999999998) would
    # put the rate outside its own interval, and a negative error bar makes the chart raise.
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == trials else min(1.0, centre + half)
    return low, high


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
    """P(X >= x) for X ~ Binomial(n, p)."""
    return 1.0 - binom_cdf(x - 1, n, p) if x > 0 else 1.0


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


@dataclass(frozen=True)
class RateTest:
    """The statistical gate's verdict on one rate, with the evidence behind it."""

    status: RateStatus
    p_value: float | None
    reason: str


def judge_rate(passes: int, trials: int, baseline_rate: float, baseline_trials: int,
              confidence: float, enough_trials: bool) -> RateTest:
    """Is passes/trials below baseline_rate (measured over baseline_trials) at `confidence`?

    regression: the one-sided Fisher p-value is below 1 - confidence.
    inconclusive: the rate is below baseline, the evidence is too weak, and fewer trials than
    the configured minimum were run, so a real drop could hide in the noise (the gate warns).
    ok: at or above baseline, or below it by no more than noise with enough trials to tell.
    """
    _check_counts(passes, trials)
    if trials == 0 or passes / trials >= baseline_rate:
        return RateTest("ok", None, "at or above baseline")
    base_passes = round(baseline_rate * baseline_trials)
    p = fisher_less(passes, trials, base_passes, baseline_trials)
    if p < 1 - confidence:
        return RateTest("regression", p, f"below baseline (p={p:.3g} < {1 - confidence:.3g})")
    if not enough_trials:
        return RateTest("inconclusive", p, f"below baseline but too few trials to tell (p={p:.3g})")
    return RateTest("ok", p, f"below baseline within noise (p={p:.3g})")


def add_intervals(rates: dict[str, RateRow], confidence: float = 0.95) -> None:
    """Fill low/high of every rate with its Wilson interval (rows without trials stay None)."""
    for row in rates.values():
        if row.trials:
            row.low, row.high = wilson(row.passes, row.trials, confidence)


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


def suite_consistency(per_case: list[list[TrialResult]]) -> dict[str, float | int | None]:
    """Suite pass@k and pass^k at k = the smallest trial count any case ran (defined for all)."""
    counts = [(len(ts), sum(trial_passed(t) for t in ts)) for ts in per_case if ts]
    if not counts:
        return {"k": None, "pass_at_k": None, "pass_hat_k": None}
    k = min(n for n, _ in counts)
    return {"k": k, "pass_at_k": suite_pass_at_k(counts, k), "pass_hat_k": suite_pass_hat_k(counts, k)}


def compare_statistical(rates: dict[str, RateRow], baseline: Baseline, gate: GateConfig,
                        n_cases: int, case_trials: int) -> tuple[list[str], list[str]]:
    """The statistical gate over every baselined rate: (regression reasons, warnings).

    baseline.json records the trials per case it was measured at, so its sample is taken to be
    baseline.trials x the current number of cases. `case_trials` is the fewest trials any case
    ran: below gate.min_trials a non-significant dip is reported as inconclusive (a warning).
    """
    reasons, warnings = [], []
    for dim, row in rates.items():
        if dim not in baseline.rates or row.rate is None:
            continue
        base = baseline.rates[dim]
        row.baseline, row.delta = base, row.rate - base
        result = judge_rate(row.passes, row.trials, base, baseline.trials * max(n_cases, 1),
                            gate.confidence, case_trials >= gate.min_trials)
        row.status = result.status
        line = f"{dim} rate {row.rate:.1%} vs baseline {base:.1%}: {result.reason}"
        if result.status == "regression":
            reasons.append(line)
        elif result.status == "inconclusive":
            warnings.append(f"{line}; run --trials {gate.min_trials} or more to decide")
        elif result.p_value is not None:  # a dip the evidence does not support: say so anyway
            warnings.append(line)
    return reasons, warnings


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


def _check_counts(passes: int, trials: int) -> None:
    if trials < 0 or passes < 0 or passes > trials:
        raise ValueError(f"need 0 <= passes <= trials, got passes={passes} trials={trials}")


def _check_k(n: int, c: int, k: int) -> None:
    _check_counts(c, n)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= trials, got k={k} trials={n}")
