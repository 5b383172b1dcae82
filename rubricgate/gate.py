"""Rates vs baseline -> decision and exit code."""

from __future__ import annotations

from rubricgate import exitcodes
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline
from rubricgate.models.config import GateConfig
from rubricgate.models.results import Decision, RateRow
from rubricgate.stats import compare_statistical

# Rates are ratios of small integers; compare with a tolerance so 2/3 vs 0.6667 is not a regression.
EPS = 1e-6


def compare_strict(rates: dict[str, RateRow], baseline: Baseline) -> list[str]:
    """The seeds' rule: any rate below its baseline is a regression. Fills baseline/delta/status."""
    reasons = []
    for dim in DIMENSIONS:
        row, base = rates[dim], baseline.rates[dim]
        row.baseline = base
        row.delta = None if row.rate is None else row.rate - base
        if row.rate is not None and row.rate < base - EPS:
            row.status = "regression"
            reasons.append(f"{dim} rate {row.rate:.1%} is below baseline {base:.1%}")
    return reasons


def decide(rates: dict[str, RateRow], baseline: Baseline, gate: GateConfig,
           n_cases: int = 0, case_trials: int = 1) -> Decision:
    """Exit 0 when every rate holds, 1 on a regression, 2 when nothing was measured.

    n_cases / case_trials (cases run, fewest trials any case ran) feed the statistical method.
    """
    if all(rates[d].trials == 0 for d in DIMENSIONS):
        return Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, method=gate.method,
                        reasons=["no trial was graded"])
    warnings: list[str] = []
    if gate.method == "statistical":
        reasons, warnings = compare_statistical(rates, baseline, gate, n_cases, case_trials)
    else:
        reasons = compare_strict(rates, baseline)
    if reasons:
        return Decision(status="regression", exit_code=exitcodes.REGRESSION, method=gate.method,
                        reasons=reasons, warnings=warnings)
    return Decision(status="pass", exit_code=exitcodes.OK, method=gate.method, warnings=warnings)


def cannot_judge(reasons: list[str], method: str = "strict") -> Decision:
    """A decision for runs the gate could not judge (bad input, interrupted, budget spent)."""
    return Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, method=method, reasons=reasons)
