"""P(PASS | a drop of exactly the margin) of fixed designs, computed exactly on each suite's composition.

A fixed design's verdict PASSes when its bound, taken at the score calibrated for these sizes
(gating/passbound.py), is within the margin; with the same trials a case on both sides the bound
reads the pooled counts only, so the chance is a sum over the baseline's and the run's pooled
passes, each the exact convolution of its cases' binomials (the suite's expected composition:
bench/gate_sim.py's suites with their random parts at evenly spaced quantiles; "one-flaky" is
perfect cases beside one that passes half the time). The run PASSes only when every dimension
does and no case is suspected, so this is an upper bound on the run's PASS error;
bench/gate_power.py simulates the whole procedure beside it.

The promise is over the baseline's sampling too: a new baseline is measured as `baseline update`
measures it, and the run's PASS chance is averaged over what that baseline could have been.
`--given-baseline` prints the chance with the baseline held at its most likely pooled count
instead (what every run against one such stored baseline meets), which is not bounded by alpha.

Usage: python bench/gate_exact.py [--given-baseline]  (a table of suite x trials)
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
    if suite == "one-flaky":
        return [1.0] * (cases - 1) + [0.5]
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


def _design(suite: str, cases: int, trials: int):
    """(n0, n1, the baseline's pooled pmf, the run's pooled pmf, the band scores) of a fixed design
    of `trials` a case, the drop spread over the cases in proportion to their rates."""
    base = composition(suite, cases)
    mean = sum(base) / len(base)
    now = [b * (1 - MARGIN / mean) for b in base]
    sessions, per = baseline_measure(cases, 3, GATE, 1)
    n0, n1 = sessions * per * cases, trials * cases
    return n0, n1, _pooled(base, sessions * per), _pooled(now, trials), fixed_scores(n0, n1, ALPHA, MARGIN)


def _pass_given(n0: int, n1: int, x0: int, p1: np.ndarray, scores) -> float:
    """P(PASS) with the baseline's pooled passes at x0."""
    z = scores[band(x0 / n0)]
    if z >= Z_NONE:
        return 0.0
    ok = np.array([pass_upper(x0 / n0, n0, x1, n1, z) <= MARGIN for x1 in range(n1 + 1)])
    return float(p1[ok].sum())


def pass_error(suite: str, cases: int, trials: int) -> float:
    """Exact P(the verdict PASSes) for a fixed design of `trials` a case, over the baseline's sampling."""
    n0, n1, p0, p1, scores = _design(suite, cases, trials)
    return float(sum(p0[x0] * _pass_given(n0, n1, x0, p1, scores) for x0 in np.nonzero(p0 > 1e-14)[0]))


def pass_error_given_baseline(suite: str, cases: int, trials: int) -> float:
    """Exact P(the verdict PASSes) with the baseline held at its most likely pooled passes."""
    n0, n1, p0, p1, scores = _design(suite, cases, trials)
    return _pass_given(n0, n1, int(np.argmax(p0)), p1, scores)


if __name__ == "__main__":
    error = pass_error_given_baseline if "--given-baseline" in sys.argv[1:] else pass_error
    print("| suite | " + " | ".join(f"fixed {k}" for k in range(1, 11)) + " |")
    print("| --- " * 11 + "|")
    for suite, cases in (("perfect", 30), ("stable", 30), ("near-stable", 30), ("mixed", 30), ("one-flaky", 31)):
        print(f"| {suite} | " + " | ".join(f"{error(suite, cases, k):.2%}" for k in range(1, 11)) + " |", flush=True)
