"""The plan before the first trial: what this suite, at this budget, can show.

Per dimension, from the baseline's per-case counts over the cases the run shares with it:
  * the smallest drop the gate detects with 80% power (REGRESSION: the stratified exact test
    rejects at its share of alpha AND the observed drop exceeds gate.margin), at the first look
    and at the full budget;
  * the bound an unchanged reviewer is expected to reach (PASS needs it at or under the margin);
  * what would reach a target drop: trials per case, or cases at the same mix of rates.

The drop is spread over the cases in proportion to their rates (every case a little worse, as a
vaguer prompt makes it): p_i = b_i (1 - d / mean b). Power uses the normal approximation of the
stratified statistic (its exact conditional mean and variance per case) at the level the gate
uses at that look (alpha x the dimensions' share / the dimensions x the look's spending fraction,
Holm's first step); bench/gate_power.py measures the real thing by simulation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

from rubricgate.gating.evidence import TRIAL, Unit, effective_baseline, pass_bound
from rubricgate.gating.outcome import ALPHA_SHARES
from rubricgate.gating.sequential import Schedule, schedule

POWER = 0.8
# The planned look is where an unchanged reviewer PASSes in about 80% of runs: its median counts,
# the observed drop moved up by this many standard deviations of its noise (a suite of flaky
# cases PASSes at its median counts in only about half of its runs).
PLANNED_QUANTILE = 0.84
Counts = Sequence[tuple[int, int]]  # per shared case: baseline (passes, trials)
_N = NormalDist()


def power(base: Counts, trials: Sequence[float], drop: float, level: float, margin: float) -> float:
    """Approximate chance of a REGRESSION when the true drop is `drop`, at `trials` per case."""
    n1_all = sum(trials)
    mean_b = sum(t * x / n for t, (x, n) in zip(trials, base)) / n1_all if n1_all else 0.0
    if not n1_all or mean_b <= 0 or drop <= 0:
        return 0.0
    shift = var0 = var1 = spread = 0.0
    for t, (x0, n0) in zip(trials, base):
        b = x0 / n0
        p = max(0.0, b * (1 - drop / mean_b))
        big_n = t + n0
        shift += t * n0 / big_n * (p - b)
        m = t * p + x0
        var0 += t * n0 * m * (big_n - m) / (big_n * big_n * max(big_n - 1, 1))
        var1 += (n0 / big_n) ** 2 * t * p * (1 - p)
        spread += t * p * (1 - p)
    z_test = _z_margin(-shift - _N.inv_cdf(1 - level) * math.sqrt(var0), var1)
    z_matter = _z_margin(drop - margin, spread / n1_all ** 2)
    return _N.cdf(min(z_test, z_matter))


def _z_margin(distance: float, variance: float) -> float:
    if variance <= 0:
        return math.inf if distance > 0 else -math.inf
    return distance / math.sqrt(variance)


def detectable(base: Counts, trials: Sequence[float], level: float, margin: float) -> float | None:
    """Smallest drop (half-point steps) detected with 80% power; None when none is."""
    for half_points in range(1, 201):
        if power(base, trials, half_points / 200, level, margin) >= POWER:
            return half_points / 200
    return None


def expected_bound(base: Counts, trials: Sequence[float], z: tuple[float, ...], unit: Unit = TRIAL,
                   sessions: Sequence[int] | None = None, quantile: float = 0.0) -> float | None:
    """The PASS bound an unchanged reviewer is expected to reach at these band scores (each case's
    passes at their expected count, a case that never failed at its median: every trial), the observed drop then
    moved up by `quantile` standard deviations of its own noise (the bound a run reaches or beats
    with that probability: 0.84 for 80%)."""
    # A case that never failed in the baseline passes every trial most of the time (its median);
    # the others at their expected passes (a median would round 0.9 x 2 up to 2 of 2).
    rows = [(t if x == n else t * x / n, t, x, n) for t, (x, n) in zip(trials, base) if t]
    runs = [s for s, t in zip(sessions or [1] * len(base), trials) if t]
    bound = pass_bound(rows, z, unit, runs)
    if bound == math.inf:
        return None
    return bound + quantile * drop_sd(base, trials, unit, runs)


def drop_sd(base: Counts, trials: Sequence[float], unit: Unit = TRIAL, sessions: Sequence[int] | None = None) -> float:
    """The standard deviation of the observed drop of an unchanged reviewer (each case at its
    baseline rate, the run's trials and the baseline's at their design effects)."""
    total = sum(t for t in trials if t) or 1.0
    var = 0.0
    for t, (x, n), s in zip(trials, base, sessions or [1] * len(base)):
        if t and n:
            p = x / n
            var += (t / total) ** 2 * p * (1 - p) * (unit.effect(t) / t + unit.effect(n / max(s, 1)) / n)
    return math.sqrt(var)


def dimension_level(alpha: float, dims: int, spend: float) -> float:
    """The level one dimension's test is compared with when the others did not move."""
    return alpha * ALPHA_SHARES["dimensions"] / max(dims, 1) * spend


@dataclass(frozen=True)
class DimensionPlan:
    dimension: str
    cases: int
    detectable_first: float | None  # at the first look
    detectable_budget: float | None  # at the last look (the whole budget)
    unchanged_bound: float | None  # an unchanged reviewer's expected bound at the whole budget
    reach_trials: int | None  # trials per case (fixed design) that detect the target
    reach_cases: int | None  # cases (same mix, first-look trials) that detect the target


@dataclass(frozen=True)
class Plan:
    margin: float
    target: float
    first_trials: int
    max_trials: int
    looks: list[int]
    dimensions: list[DimensionPlan]

    def as_json(self) -> dict:
        """The plan as summary.json keeps it (gate.plan)."""
        return asdict(self)

    def lines(self) -> list[str]:
        """What `rubricgate plan` and the start of a run print."""
        head = (f"plan: {self.dimensions[0].cases if self.dimensions else 0} shared case(s), {self.first_trials} "
                f"trial(s) per case first, up to {self.max_trials} (gate.max_trials_per_case), {_looks(self.looks)}; "
                f"margin {_pts(self.margin)}")
        return [head] + [line for d in self.dimensions for line in _dimension_lines(d, self)]


def _dimension_lines(d: DimensionPlan, plan: Plan) -> list[str]:
    bound = "never" if d.unchanged_bound is None else _pts(max(d.unchanged_bound, 0.0))
    out = [f"  {d.dimension}: smallest drop detectable with 80% power: {_pts(d.detectable_first)} at the first look, "
           f"{_pts(d.detectable_budget)} at the full budget; an unchanged reviewer's bound reaches {bound}"
           + ("" if d.unchanged_bound is not None and d.unchanged_bound <= plan.margin
              else f" (above the {_pts(plan.margin)} margin: it cannot PASS within the budget)")]
    trials = ("more than 1000 trials per case (the baseline's own trials limit it: re-measure it with more)"
              if d.reach_trials is None else f"{d.reach_trials} trial{'s' * (d.reach_trials > 1)} per case")
    cases = "more than 20x the cases" if d.reach_cases is None else f"{d.reach_cases} cases"
    out.append(f"    {_pts(plan.target)} needs {trials}, or {cases}")
    return out


def _looks(rounds: list[int]) -> str:
    if len(rounds) > 2 and rounds == list(range(rounds[0], rounds[-1] + 1)):
        return f"a look after every round from {rounds[0]} to {rounds[-1]}"
    if len(rounds) == 1:
        return f"one look, after round {rounds[0]}"
    return f"looks after rounds {', '.join(map(str, rounds))}"


def _pts(value: float | None) -> str:
    return "none within the budget" if value is None else f"{value * 100:.1f} points"


def plan_dimension(dim: str, base: Counts, first: int, sched: Schedule, order: list[str],
                   alpha: float, margin: float, target: float, dims: int) -> DimensionPlan:
    """One dimension's plan under the schedule (cases in `order`, the schedule's keys)."""
    end = sched.budget_looks - 1
    at_first = [float(sched.trials_after(c, sched.looks[0])) for c in order]
    at_last = [float(sched.trials_after(c, sched.looks[end])) for c in order]
    level_first = dimension_level(alpha, dims, sched.spend[0])
    level_last = dimension_level(alpha, dims, sched.spend[end])
    fixed = dimension_level(alpha, dims, 1.0)
    reach_t = next((t for t in range(1, 1001) if power(base, [t] * len(base), target, fixed, margin) >= POWER), None)
    reach_c = next((c for c in range(len(base), 20 * len(base) + 1)
                    if power([base[i % len(base)] for i in range(c)], [first] * c, target, fixed, margin) >= POWER), None)
    return DimensionPlan(dim, len(base), detectable(base, at_first, level_first, margin),
                         detectable(base, at_last, level_last, margin),
                         expected_bound(base, at_last, sched.pass_score(end)), reach_t, reach_c)


def make_plan(baseline: Mapping[str, Mapping[str, tuple[int, int]]], dims: Sequence[str], confidence: float,
              margin: float, first: int, max_trials: int, target: float | None = None) -> Plan:
    """The plan for these shared cases (case -> dimension -> baseline passes, trials)."""
    alpha, target = 1 - confidence, target if target is not None else margin + 0.05
    sched = design(baseline, dims, confidence, margin, first, max_trials)
    order = list(sched.caps)
    out = [plan_dimension(d, [baseline[c][d] for c in order], first, sched, order, alpha, margin, target, len(dims))
           for d in dims]
    return Plan(margin, target, first, max_trials, sched.looks[:sched.budget_looks], out)


def design(baseline: Mapping[str, Mapping[str, tuple[int, int]]], dims: Sequence[str], confidence: float,
           margin: float, first: int, max_trials: int, unit: Unit = TRIAL,
           sessions: Mapping[str, int] | None = None) -> Schedule:
    """The run's fixed design: every case every round, and the planned look where every
    dimension of an unchanged reviewer is expected to PASS in about 80% of runs (PLANNED_QUANTILE;
    under within-run dependence, `unit`, with its trials at their design effect)."""
    worst = {c: counts[dims[0]] for c, counts in baseline.items()}  # the allocation reads the cases only
    runs = [(sessions or {}).get(c, 1) for c in baseline]

    def passes(rounds: int, z: tuple[float, ...]) -> bool:
        for d in dims:
            bound = expected_bound([baseline[c][d] for c in baseline], [float(rounds)] * len(baseline), z, unit, runs,
                                   PLANNED_QUANTILE)
            if bound is None or bound > margin:
                return False
        return True

    n0 = effective_baseline([n for _, n in worst.values()], runs, unit) if unit.rho else None
    return schedule(worst, max_trials, first, passes, 1 - confidence, margin, unit, n0)
