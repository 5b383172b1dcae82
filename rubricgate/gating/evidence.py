"""One seam for the evidence: the tests and bounds of one dimension (or one case) at one look.

The gate's dimensions (rubricgate/gating/gate.py), the per-case family
(rubricgate/gating/collapse.py), `compare` (rubricgate/gating/compare.py) and `trend`
(rubricgate/reports/trend.py) all weigh their counts here and get the `Evidence` that
rubricgate/gating/outcome.py classifies; `family` then adjusts the p-values of a family of
such evidence (Holm with Tarone's count). So every label, bound and p-value a report shows is
computed one way.

Per dimension, over the cases both sides ran (strata: current passes, trials, reference passes,
trials):
  * the drop: the reference rate (standardized to the current run's trial mix) minus the current;
  * the exact stratified one-sided tests both ways (rubricgate/gating/exact.py), raw (a family
    adjusts them), with the smallest p each could reach on these margins (Tarone's count);
  * the PASS bound: Newcombe's hybrid upper bound on the drop at a calibrated score
    (rubricgate/gating/passbound.py), with every errored trial counted as a failure: an
    errored trial is missing data, and a PASS must hold whatever it would have been;
  * the drop's lower bound at the tests' level (what a REGRESSION states, and the drift
    allowance's check), from the trials that ran.

With within-run dependence the unit changes: a case's session
of n trials counts as n / (1 + (n - 1) rho) trials (Rao and Scott 1992, Biometrics 48, 577-585),
the test becomes the score (Cochran-Mantel-Haenszel) statistic with each case's variance
inflated by its design effects, and the bounds are taken at the effective sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

from rubricgate.gating.exact import Stratum, holm, lower_p, smallest_p, upper_p
from rubricgate.gating.outcome import Evidence
from rubricgate.gating.passbound import Z_NONE, band, calibrate, pass_upper
from rubricgate.gating.stats import wilson_bounds

_N = NormalDist()
Row = tuple[float, float, float, float]  # a stratum whose counts may be expected ones (planning)


@dataclass(frozen=True)
class Unit:
    """How the trials of one session of a case count. rho 0: independently (the exact tests);
    rho > 0: correlated within a session with intra-class correlation rho (design effects)."""

    rho: float = 0.0

    def effect(self, trials: float) -> float:
        """The design effect of a session of `trials` trials: 1 + (n - 1) rho."""
        return 1.0 + max(0.0, trials - 1) * self.rho

    def effective(self, trials: float) -> float:
        return trials / self.effect(trials) if trials else 0.0

    def p_name(self) -> str:
        """What a line calls the p-value weighed at this unit: the exact test's, or under
        within-run dependence the score statistic's at the design effect."""
        return "exact p" if not self.rho else f"score p at intra-run correlation {self.rho:.2f}"


TRIAL = Unit()


@dataclass(frozen=True)
class Bounds:
    """At what the bounds are taken: the PASS bound's scores per reference-rate band
    (rubricgate/gating/passbound.py; None: calibrated here as a design that looks once, at these
    sizes and `alpha`), and the lower bound's one-sided confidence."""

    alpha: float  # alpha of the PASS bound (1 - gate.confidence)
    margin: float
    lower_confidence: float
    pass_scores: tuple[float, ...] | None = None


def weigh(strata: Sequence[Stratum], level: float, bounds: Bounds | None, errored: Sequence[int] | None = None,
          unit: Unit = TRIAL, reference_sessions: Sequence[int] | None = None) -> Evidence | None:
    """The evidence of these strata (None when no case with a reference ran or errored). `errored` (per stratum,
    the current side's errored trials) count as failures in the PASS bound; `reference_sessions`
    (per stratum, the reference's sessions) sets its design effect under dependence. Without
    `bounds` only the tests are computed (the bounds are left infinite)."""
    lost = list(errored) if errored else [0] * len(strata)
    runs = list(reference_sessions) if reference_sessions else [1] * len(strata)
    # A case whose every trial errored has no judged trial: in the worst case each of them failed.
    worst_at = [i for i, s in enumerate(strata) if (s[1] + lost[i]) and s[3]]
    if not worst_at:
        return None
    worst = [(x1, n1 + lost[i], x0, n0) for i in worst_at for x1, n1, x0, n0 in (strata[i],)]
    upper = math.inf if bounds is None else _pass_bound(worst, bounds, unit, [runs[i] for i in worst_at])
    judged = [i for i, s in enumerate(strata) if s[1] and s[3]]
    if not judged:  # nothing to test: the bound alone, every errored trial counted as failed
        return Evidence(0.0, upper, 1.0, 1.0, level, -math.inf, 1.0, 1.0)
    tests = _tests([strata[i] for i in judged], level, bounds, unit, [runs[i] for i in judged])
    return replace(tests, upper=upper)


def _tests(used: Sequence[Stratum], level: float, bounds: Bounds | None, unit: Unit,
           sessions: Sequence[int]) -> Evidence:
    """The drop, the tests both ways and the drop's lower bound, over the judged trials alone."""
    drop = observed_drop(used)
    if unit.rho > 0:
        p_drop, p_rise = _score_p(used, unit, sessions)
        floors = (0.0, 0.0)
    else:
        p_drop, p_rise = lower_p(used), upper_p(used)
        floors = (smallest_p(used, lower=True), smallest_p(used, lower=False))
    lower = -math.inf if bounds is None else _lower_bound(used, bounds.lower_confidence, unit, sessions)
    return Evidence(drop, math.inf, p_drop, p_rise, level, lower, floors[0], floors[1])


def family(evidence: Mapping[str, Evidence], spend: float = 1.0) -> dict[str, Evidence]:
    """Each p divided by the look's nominal fraction `spend`, then Holm across the family with
    Tarone's count (a test that cannot reach the level costs the others nothing)."""
    if not evidence:
        return {}
    level = next(iter(evidence.values())).level
    drops = holm({k: min(1.0, e.p_drop / spend) for k, e in evidence.items()}, level,
                 {k: min(1.0, e.floor_drop / spend) for k, e in evidence.items()})
    rises = holm({k: min(1.0, e.p_rise / spend) for k, e in evidence.items()}, level,
                 {k: min(1.0, e.floor_rise / spend) for k, e in evidence.items()})
    return {k: replace(e, p_drop=drops[k], p_rise=rises[k]) for k, e in evidence.items()}


def _weights(rows: Sequence[Row]) -> tuple[list[float], float]:
    n1 = sum(r[1] for r in rows)
    return [r[1] / n1 for r in rows], n1


def observed_drop(rows: Sequence[Row]) -> float:
    """Reference rate standardized to the current trial mix, minus the current rate (the drop
    REGRESSION compares with the margin; plan_power takes it from here, rounding included)."""
    weights, n1 = _weights(rows)
    reference = sum(w * x0 / n0 for w, (_, _, x0, n0) in zip(weights, rows))
    return reference - sum(r[0] for r in rows) / n1


def _sizes(rows: Sequence[Row], unit: Unit, sessions: Sequence[int]) -> tuple[float, float, float, float]:
    """(reference rate, its effective size (Kish, with design effects), current passes, current
    effective trials) of the pooled comparison."""
    weights, n1 = _weights(rows)
    reference = sum(w * x0 / n0 for w, (_, _, x0, n0) in zip(weights, rows))
    n0_eff = 1 / sum(w * w * unit.effect(n0 / s) / n0 for w, (_, _, _, n0), s in zip(weights, rows, sessions))
    deff1 = sum(r[1] * unit.effect(r[1]) for r in rows) / n1  # trial-weighted design effect of the run
    passes = sum(r[0] for r in rows)
    return reference, n0_eff, passes / deff1, n1 / deff1


def pass_bound(strata: Sequence[Row], scores: tuple[float, ...], unit: Unit = TRIAL,
               sessions: Sequence[int] | None = None) -> float:
    """The PASS bound of these strata (float counts allowed: planning passes expected ones) at
    these band scores (`sessions`: per stratum, the reference's sessions, for their design effect)."""
    keep = [i for i, s in enumerate(strata) if s[1] and s[3]]
    rows = [strata[i] for i in keep]
    runs = [(sessions[i] if sessions else 1) for i in keep]
    return _pass_bound(rows, Bounds(0.05, 0.05, 0.5, scores), unit, runs) if rows else math.inf


def effective_baseline(trials: Sequence[float], sessions: Sequence[int], unit: Unit) -> float:
    """The baseline's pooled trials at their design effect, each case's split evenly in its sessions."""
    return sum(t / unit.effect(t / max(s, 1)) for t, s in zip(trials, sessions) if t)


def _pass_bound(rows: Sequence[Row], bounds: Bounds, unit: Unit, sessions: Sequence[int]) -> float:
    reference, n0, passes, n1 = _sizes(rows, unit, sessions)
    scores = bounds.pass_scores
    if scores is None:
        scores = fixed_scores(n0, n1, bounds.alpha, bounds.margin)
    z = scores[band(reference)]
    return math.inf if z >= Z_NONE else pass_upper(reference, n0, passes, n1, z)


def fixed_scores(n0: float, n1: float, alpha: float, margin: float) -> tuple[float, ...]:
    """The calibrated band scores of a design that looks once, at these (effective) sizes."""
    return calibrate(max(1, round(n0)), [max(1, round(n1))], [1.0], alpha, margin).z[0]


def _lower_bound(rows: Sequence[Row], confidence: float, unit: Unit, sessions: Sequence[int]) -> float:
    """Newcombe's hybrid lower bound on the drop (the mirror of the PASS bound) at `confidence`."""
    reference, n0, passes, n1 = _sizes(rows, unit, sessions)
    z = _N.inv_cdf(min(max(confidence, 0.5), 1 - 1e-15))
    cur = passes / n1
    ref_half = reference - wilson_bounds(reference, n0, z)[0]
    cur_half = wilson_bounds(cur, n1, z)[1] - cur
    return reference - cur - math.hypot(ref_half, cur_half)


def _score_p(rows: Sequence[Row], unit: Unit, sessions: Sequence[int]) -> tuple[float, float]:
    """One-sided p-values (drop, rise) of the stratified score statistic with each case's
    variance inflated by its design effects (Rao-Scott): sum over cases of x1 - E[x1 | total]
    against its variance n0 n1 pi (1 - pi) (n0 deff1 + n1 deff0) / (n0 + n1)^2."""
    shift = var = 0.0
    for (x1, n1, x0, n0), s in zip(rows, sessions):
        total, big = x1 + x0, n1 + n0
        pi = total / big
        shift += x1 - n1 * total / big
        var += n0 * n1 * pi * (1 - pi) * (n0 * unit.effect(n1) + n1 * unit.effect(n0 / s)) / (big * big)
    if var <= 0:
        return 1.0, 1.0
    z = shift / math.sqrt(var)
    return _N.cdf(z), 1 - _N.cdf(z)
