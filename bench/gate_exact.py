"""P(PASS | a drop of exactly the margin) of fixed designs, computed exactly on each suite's composition.

A fixed design's verdict PASSes when its bound, taken at the score calibrated for these sizes
(gating/passbound.py), is within the margin; with the same trials a case on both sides the bound
reads the pooled counts only, so the chance is a sum over the baseline's and the run's pooled
passes, each the exact convolution of its cases' binomials (the suite's expected composition:
bench/gate_sim.py's suites with their random parts at evenly spaced quantiles). The run PASSes
only when every dimension does and no case is suspected, so this is an upper bound on the run's
PASS error; bench/gate_power.py simulates the whole procedure beside it.

Usage: python bench/gate_exact.py  (a table of suite x trials)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rubricgate.gating.evidence import fixed_scores  # noqa: E402
from rubricgate.gating.passbound import Z_NONE, band, pass_upper  # noqa: E402
from rubricgate.gating.planning import baseline_measure  # noqa: E402
from rubricgate.models.config import GateConfig  # noqa: E402

GATE = GateConfig(method="statistical")
MARGIN, ALPHA = GATE.margin, 1 - GATE.confidence


def composition(suite: str, cases: int) -> list[float]:
    """The suite's per-case rates, its random parts at evenly spaced quantiles."""
    if suite == "perfect":
        return [1.0] * cases
    if suite == "stable":
        return [1.0 if i / cases < 0.9 else 0.99 for i in range(cases)]
    if suite == "near-stable":
        return [1.0] * round(0.7 * cases) + [0.995] * (cases - round(0.7 * cases))
    flaky = [i / cases for i in range(cases) if 0.7 <= i / cases < 0.9]
    spread = {u: 0.3 + 0.5 * (k + 0.5) / len(flaky) for k, u in enumerate(flaky)}
    return [0.99 if i / cases < 0.7 else spread[i / cases] if i / cases < 0.9 else 0.9 for i in range(cases)]


def _pooled(rates: list[float], trials: int) -> np.ndarray:
    """The pmf of the pooled passes of these cases at `trials` each."""
    out = np.ones(1)
    for r in rates:
        out = np.convolve(out, binom.pmf(np.arange(trials + 1), trials, r))
    return out


def pass_error(suite: str, cases: int, trials: int) -> float:
    """Exact P(the verdict PASSes) for a fixed design of `trials` a case, the drop spread over the cases."""
    base = composition(suite, cases)
    mean = sum(base) / len(base)
    now = [b * (1 - MARGIN / mean) for b in base]
    sessions, per = baseline_measure(cases, 3, GATE, 1)
    n0, n1 = sessions * per * cases, trials * cases
    p0, p1 = _pooled(base, sessions * per), _pooled(now, trials)
    scores = fixed_scores(n0, n1, ALPHA, MARGIN)
    total = 0.0
    for x0 in np.nonzero(p0 > 1e-14)[0]:
        z = scores[band(x0 / n0)]
        if z >= Z_NONE:
            continue
        ok = np.array([pass_upper(x0 / n0, n0, x1, n1, z) <= MARGIN for x1 in range(n1 + 1)])
        total += p0[x0] * p1[ok].sum()
    return float(total)


if __name__ == "__main__":
    print("| suite | " + " | ".join(f"fixed {k}" for k in range(1, 11)) + " |")
    print("| --- " * 11 + "|")
    for suite in ("perfect", "stable", "near-stable", "mixed"):
        print(f"| {suite} | " + " | ".join(f"{pass_error(suite, 30, k):.2%}" for k in range(1, 11)) + " |", flush=True)
