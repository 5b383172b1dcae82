"""The plan before the first trial: what this suite, at this budget, can show.

Per dimension, from the baseline's per-case counts over the cases the run shares with it:
  * the smallest drop the gate detects with 80% power (REGRESSION: the stratified test rejects
    at its share of alpha AND the observed drop exceeds gate.margin), at the first look and by
    the full budget (any look up to it);
  * the bound an unchanged reviewer is expected to reach, and after how many trials per case it
    is expected to PASS (the planned look, rubricgate/gating/sequential.py);
  * what would reach a target drop: trials per case (a design that looks once), or cases at the
    same mix of rates.
The chances are rubricgate/gating/plan_power.py's (simulated runs of the current side against
this baseline); bench/gate_power.py and the tests check each figure against the gate itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from rubricgate.gating.evidence import TRIAL, Unit, effective_baseline, fixed_scores, pass_bound
from rubricgate.gating.outcome import ALPHA_SHARES
from rubricgate.gating.plan_power import can_reject, level, regression_chance, smallest_drop, smallest_size
from rubricgate.gating.sequential import CONTINUATIONS, PASS_RESERVE, Schedule, schedule

# The planned look is where an unchanged reviewer PASSes in about 80% of runs: its median counts,
# the observed drop moved up by this many standard deviations of its noise (a suite of flaky
# cases PASSes at its median counts in only about half of its runs).
PLANNED_QUANTILE = 0.84
TARGET_OVER = 0.05  # the default target drop: this far over gate.margin (capped at 100 points)
UNLIMITED = 1000  # run trials per case that stand for a run without limit (the PASS bound has levelled off)
MOST_BASELINE = 1000  # the most baseline trials per case `baseline update --trials` takes
Counts = Sequence[tuple[int, int]]  # per shared case: baseline (passes, trials)
Expected = Sequence[tuple[float, float]]  # the same, expected counts allowed (a baseline scaled up)


def expected_bound(base: Expected, trials: Sequence[float], z: tuple[float, ...], unit: Unit = TRIAL,
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


def drop_sd(base: Expected, trials: Sequence[float], unit: Unit = TRIAL,
            sessions: Sequence[int] | None = None) -> float:
    """The standard deviation of the observed drop of an unchanged reviewer (each case at its
    baseline rate, the run's trials and the baseline's at their design effects)."""
    total = sum(t for t in trials if t) or 1.0
    var = 0.0
    for t, (x, n), s in zip(trials, base, sessions or [1] * len(base)):
        if t and n:
            p = x / n
            var += (t / total) ** 2 * p * (1 - p) * (unit.effect(t) / t + unit.effect(n / max(s, 1)) / n)
    return math.sqrt(var)


@dataclass(frozen=True)
class DimensionPlan:
    dimension: str
    cases: int
    detectable_first: float | None  # at the first look
    detectable_budget: float | None  # by the last look of the budget (any look up to it)
    unchanged_bound: float | None  # an unchanged reviewer's expected bound at the whole budget
    reach_trials: int | None  # trials per case (a design that looks once) that detect the target
    reach_cases: int | None  # cases (same mix, first-look trials, looking once) that detect the target
    pass_trials: int | None = None  # trials per case after which an unchanged reviewer is expected to PASS
    pass_cases: int | None = None  # cases like these with which it is expected to PASS within the budget
    run_limited: bool = False  # not even an unlimited run is expected to PASS: the baseline's own trials bound it
    baseline_trials: int | None = None  # run_limited: baseline trials per case that would let it PASS (None: > 1000)
    baseline_run: int | None = None  # ... after this many run trials per case (the budget, else with continuations)
    largest_drop: float | None = None  # the baseline's mean rate, the largest drop a run can show (None: not known)


@dataclass(frozen=True)
class Plan:
    margin: float
    target: float
    first_trials: int
    max_trials: int
    looks: list[int]
    dimensions: list[DimensionPlan]
    collapse_need: int | None = None  # baseline trials per case a single collapse needs at this size
    dependence: str = ""  # the within-run dependence check's warning ('' when trials count one by one)
    note: str = ""  # what the plan assumes, said after its first line (a plan before any baseline)

    def budget(self) -> int:
        """Design trials per case: a first round at or past gate.max_trials_per_case is the whole
        budget, as in `run` (gating/adaptive.py)."""
        return max(self.max_trials, self.first_trials)

    def as_json(self) -> dict:
        """The plan as summary.json keeps it (gate.plan)."""
        return asdict(self)

    def lines(self) -> list[str]:
        """What `rubricgate plan` and the start of a run print."""
        budget = (f"up to {self.max_trials} (gate.max_trials_per_case)" if self.first_trials < self.max_trials
                  else f"the whole budget (at or past gate.max_trials_per_case={self.max_trials})")
        head = (f"plan: {self.dimensions[0].cases if self.dimensions else 0} shared case(s), {self.first_trials} "
                f"trial(s) per case first, {budget}, {_looks(self.looks)}; margin {_pts(self.margin)}")
        tail = [f"  a single collapsing case needs {self.collapse_need} baseline trials per case at this size"] \
            if self.collapse_need else []
        tail += [f"  {self.dependence}"] if self.dependence else []
        groups: dict[DimensionPlan, list[str]] = {}  # dimensions with the same figures share their lines
        for d in self.dimensions:
            groups.setdefault(replace(d, dimension=""), []).append(d.dimension)
        body = [line for d, names in groups.items()
                for line in _dimension_lines(replace(d, dimension=", ".join(names)), self)]
        return [head] + ([f"  {self.note}"] if self.note else []) + body + tail


def _dimension_lines(d: DimensionPlan, plan: Plan) -> list[str]:
    bound = "never" if d.unchanged_bound is None else _pts(max(d.unchanged_bound, 0.0))
    if d.unchanged_bound is not None and d.unchanged_bound > plan.margin and bound == _pts(plan.margin):
        bound = f"{d.unchanged_bound * 100:.2f} points"  # just above: say by how much
    out = [f"  {d.dimension}: smallest drop detectable with 80% power: {_pts(d.detectable_first)} at the first look, "
           f"{_pts(d.detectable_budget)} by the full budget; an unchanged reviewer's bound reaches {bound}"
           + ("" if d.unchanged_bound is not None and d.unchanged_bound <= plan.margin
              else f" (above the {_pts(plan.margin)} margin: it cannot PASS within the budget)")]
    if (add := to_pass(d, plan.budget())) is not None:
        out.append(f"    to PASS an unchanged reviewer within the budget: {add}")
    out.append(_target_line(d, plan))
    return out


def _target_line(d: DimensionPlan, plan: Plan) -> str:
    """What reaches the target drop, or why none can: a drop past the baseline's mean rate is no
    drop a run can show (every case's rate is at 0 by then)."""
    if d.largest_drop is not None and plan.target > d.largest_drop + 1e-9:
        return (f"    {_pts(plan.target)} cannot be shown: no drop is larger than the baseline's mean rate, "
                f"{_pts(d.largest_drop)} (`rubricgate plan --target` asks about a smaller one)")
    trials = ("more than 100 trials per case (the baseline's own trials limit it: re-measure it with more)"
              if d.reach_trials is None else f"{d.reach_trials} trial{'s' * (d.reach_trials > 1)} per case")
    cases = "more than 20x the cases" if d.reach_cases is None else f"{d.reach_cases} cases"
    return f"    {_pts(plan.target)} needs {trials}, or {cases}"


def default_target(margin: float) -> float:
    """The drop a plan asks what reaches when not told: gate.margin + TARGET_OVER, at most 100
    points (every trial that passed failing); a margin near 1 asked about a 104-point drop."""
    return min(margin + TARGET_OVER, 1.0)


def to_pass(d: DimensionPlan, max_trials: int) -> str | None:
    """What an unchanged reviewer needs to PASS within the budget, when it is expected not to:
    cases to add, or the trials per case (None when it is expected to PASS already)."""
    if d.pass_trials is not None and d.pass_trials <= max_trials:
        return None
    cases = (f"about {d.pass_cases} cases like these (now {d.cases})" if d.pass_cases is not None
             else f"more than {20 * d.cases} cases like these")
    if d.run_limited:
        return f"{cases}, or {baseline_fix(d)}"
    trials = (f"gate.max_trials_per_case {d.pass_trials}" if d.pass_trials is not None
              else f"more than {max_trials * (1 + CONTINUATIONS)} trials per case")
    return f"{cases}, or {trials}"


def baseline_fix(d: DimensionPlan) -> str:
    """What a baseline that keeps every run's bound above the margin needs: more trials a case."""
    if d.baseline_trials is None:  # "more than 1000 baseline trials per case" read as a fix to try
        return (f"not a larger baseline either (none of up to {MOST_BASELINE} trials per case would do): add "
                "cases, or widen gate.margin; against this baseline the bound stays above the margin however "
                "many trials a run adds")
    size = f"`rubricgate baseline update --trials {d.baseline_trials}`, then about {d.baseline_run} trials per case"
    return (f"a larger baseline ({size}): against this one the bound stays above the margin however many "
            "trials a run adds")


def _looks(rounds: list[int]) -> str:
    if len(rounds) > 2 and rounds == list(range(rounds[0], rounds[-1] + 1)):
        return f"a look after every round from {rounds[0]} to {rounds[-1]}"
    if len(rounds) == 1:
        return f"one look, after round {rounds[0]}"
    return f"looks after rounds {', '.join(map(str, rounds))}"


def _pts(value: float | None) -> str:
    return "none within the budget" if value is None else f"{value * 100:.1f} points"


def plan_dimension(dim: str, base: Counts, first: int, sched: Schedule, alpha: float, margin: float,
                   target: float, dims: int, unit: Unit = TRIAL,
                   sessions: Sequence[int] | None = None) -> DimensionPlan:
    """One dimension's plan under the schedule (`base` in the schedule's case order)."""
    end = sched.budget_looks - 1
    share = ALPHA_SHARES["dimensions"]
    rounds = sched.looks[:sched.budget_looks]
    budget = [level(alpha, share, dims, s) for s in sched.spend[:sched.budget_looks]]

    def by_budget(d: float) -> float:
        return regression_chance(base, rounds, budget, d, margin, unit, sessions)

    def at_first(d: float) -> float:
        return regression_chance(base, rounds[:1], budget[:1], d, margin, unit, sessions)

    once = level(alpha, share, dims, 1.0)
    reach_t = smallest_size(lambda t: regression_chance(base, [t], [once], target, margin, unit, sessions), 1, 100)
    reach_c = smallest_size(lambda c: regression_chance([base[i % len(base)] for i in range(c)], [first], [once],
                                                        target, margin, unit), len(base), 20 * len(base))
    largest = sum(x / n for x, n in base) / len(base) if base and all(n for _, n in base) else None
    planned = sched.looks[sched.planned] if sched.planned < len(sched.looks) - 1 else None
    past_budget = planned is None or planned > rounds[-1]  # an unchanged reviewer is not expected to PASS in the budget
    # A run the schedule expects to PASS at some look (continuations included) is not limited by the
    # baseline: only when none is (planned is None) is an unlimited run worth a calibration.
    limited = planned is None and not expected_pass(base, UNLIMITED, alpha, margin, unit, sessions)
    need = baseline_trials(base, rounds[-1], alpha, margin, unit, sessions) if limited else (None, None)
    return DimensionPlan(dim, len(base), smallest_drop(at_first), smallest_drop(by_budget),
                         _unchanged_bound(base, sched, end, unit, sessions), reach_t, reach_c,
                         planned, pass_cases(base, rounds[-1], alpha, margin, unit, sessions) if past_budget else None,
                         limited, *need, largest)


def _unchanged_bound(base: Counts, sched: Schedule, end: int, unit: Unit,
                     sessions: Sequence[int] | None) -> float | None:
    """An unchanged reviewer's expected bound at the budget's last look that has a PASS region for
    it. Near gate.margin 1 the earlier looks may spend all of alpha, leaving the last none: its
    bound read as "never", and validate refused a margin of 0.99 that a reviewer which never fails
    shows at the first look, while 0.9 passed."""
    for look in range(end, -1, -1):
        at = [float(sched.trials_after(c, sched.looks[look])) for c in sched.caps]
        bound = expected_bound(base, at, sched.pass_score(look), unit, sessions)
        if bound is not None:
            return bound
    return None


def expected_pass(base: Expected, trials: float, alpha: float, margin: float, unit: Unit = TRIAL,
                  sessions: Sequence[int] | None = None) -> bool:
    """Whether an unchanged reviewer is expected to PASS (in about 80% of runs: PLANNED_QUANTILE)
    after `trials` trials per case against this baseline, at the score calibrated for that size
    as a look that takes 1 - PASS_RESERVE of alpha."""
    runs = list(sessions) if sessions else [1] * len(base)
    n0 = effective_baseline([n for _, n in base], runs, unit)
    z = fixed_scores(n0, len(base) * unit.effective(trials), alpha * (1 - PASS_RESERVE), margin)
    bound = expected_bound(base, [float(trials)] * len(base), z, unit, runs, PLANNED_QUANTILE)
    return bound is not None and bound <= margin


def baseline_trials(base: Counts, trials: int, alpha: float, margin: float, unit: Unit = TRIAL,
                    sessions: Sequence[int] | None = None) -> tuple[int | None, int | None]:
    """The fewest baseline trials per case (each case at its measured rate, in as many sessions)
    with which an unchanged reviewer is expected to PASS after `trials` trials per case (the
    budget), else after the budget and its continuations, else after UNLIMITED; and that run
    size ((None, None): not within MOST_BASELINE)."""
    low = max((n for _, n in base), default=1)
    if low >= MOST_BASELINE:
        return None, None
    for run in (trials, trials * (1 + CONTINUATIONS), UNLIMITED):
        def passes(size: int, run: int = run) -> float:
            scaled = [(x / n * size if n else 0.0, float(size) if n else 0.0) for x, n in base]
            return 1.0 if expected_pass(scaled, run, alpha, margin, unit, sessions) else 0.0
        found = smallest_size(passes, low + 1, MOST_BASELINE)
        if found is not None:
            return found, run
    return None, None


def pass_cases(base: Counts, trials: int, alpha: float, margin: float, unit: Unit = TRIAL,
               sessions: Sequence[int] | None = None, most: int | None = None) -> int | None:
    """The fewest cases at this mix (the baseline's cases repeated, each measured alike) with which an
    unchanged reviewer is expected to PASS after `trials` trials per case in about 80% of runs (the
    planned look's rule: PLANNED_QUANTILE, at the score calibrated for that size as a look that
    takes 1 - PASS_RESERVE of alpha); None beyond `most` (default 20x the cases)."""
    size = len(base)
    runs = list(sessions) if sessions else [1] * size

    def passes(cases: int) -> float:
        rep, reps = [base[i % size] for i in range(cases)], [runs[i % size] for i in range(cases)]
        n0 = effective_baseline([n for _, n in rep], reps, unit)
        z = fixed_scores(n0, cases * unit.effective(trials), alpha * (1 - PASS_RESERVE), margin)
        bound = expected_bound(rep, [float(trials)] * cases, z, unit, reps, PLANNED_QUANTILE)
        return 1.0 if bound is not None and bound <= margin else 0.0

    return smallest_size(passes, size, most or 20 * size)


def make_plan(baseline: Mapping[str, Mapping[str, tuple[int, int]]], dims: Sequence[str], confidence: float,
              margin: float, first: int, max_trials: int, target: float | None = None, unit: Unit = TRIAL,
              sessions: Mapping[str, int] | None = None, collapse_need: int | None = None,
              dependence: str = "") -> Plan:
    """The plan for these shared cases (case -> dimension -> baseline passes, trials)."""
    alpha, target = 1 - confidence, target if target is not None else default_target(margin)
    sched = design(baseline, dims, confidence, margin, first, max_trials, unit, sessions)
    order = list(sched.caps)
    runs = [(sessions or {}).get(c, 1) for c in order]
    by_dim = {d: [baseline[c][d] for c in order] for d in dims}
    seen: dict = {}  # dimensions with the same counts have the same plan
    out = []
    for d in dims:
        key = (tuple(by_dim[d]), can_reject([by_dim[o] for o in dims if o != d]))
        if key not in seen:
            seen[key] = plan_dimension(d, by_dim[d], first, sched, alpha, margin, target, key[1], unit, runs)
        out.append(replace(seen[key], dimension=d))
    return Plan(margin, target, first, max_trials, sched.looks[:sched.budget_looks], out, collapse_need, dependence)


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
    return schedule(worst, max_trials, first, passes, 1 - confidence, margin, unit, n0, len(dims))
