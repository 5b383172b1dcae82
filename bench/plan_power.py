"""The plan's power figures against the gate's, on more suite shapes than the test's three.

`rubricgate plan` prints, per dimension, the smallest drop caught in 80% of runs at the first look
and by the full budget, and the trials per case a design that looks once needs to catch the target
(margin + 5 points). Here the gate itself runs at each figure, --runs simulated runs a shape, with
the helpers of tests/gating/test_plan_power.py (the cases at the baseline's rates less the drop
spread over them, the plan's model): AdaptiveRun for the full budget, `decide` for the first look
(at its share of alpha) and for a fixed design. A plan of one look has one figure for both. Target (issue 39):
every figure within 5 points of 80%, give or take the Monte Carlo error printed beside it. A
`reach` of 1 trial is the least there is, so its power may lie anywhere above 80%.

Shapes: baselines as `init` measures them (one session of 3 trials a case: within-run dependence
cannot be ruled out, so the plan and the gate count a case's trials at their worst-case design
effect) and as `baseline update` measures them (two sessions of 5), 30 to 300 cases; and 20 cases
of which 5 carry the information (they always passed, the rest never did), where the exact test's
sum takes few values and the plan takes its exact p; and 30 cases that never failed.

    python bench/plan_power.py [--runs 400]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rubricgate.gating.planning import suite_plan  # noqa: E402
from rubricgate.gating.power import design  # noqa: E402
from rubricgate.models.dimensions import DIMENSIONS  # noqa: E402
from tests.gating import test_plan_power as sim  # noqa: E402

SHAPES = {  # name: (passes per case, baseline trials per case, sessions)
    "mixed 30, one session of 3": ([3] * 21 + [2] * 6 + [1] * 3, 3, 1),
    "100 cases, one session of 3": (sim.ONE_SESSION, 3, 1),
    "300 cases, one session of 3": (sim.ONE_SESSION * 3, 3, 1),
    "mixed 30, two sessions of 5": (sim.MIXED, 10, 2),
    "stable 100, two sessions of 5": ([10] * 90 + [9] * 10, 10, 2),
    "mixed 100, two sessions of 5": ([10] * 70 + [9] * 10 + [8] * 8 + [7] * 6 + [5] * 6, 10, 2),
    "20 cases, 5 always passed, two sessions of 5": (sim.FEW, 10, 2),
    "perfect 30, two sessions of 5": ([10] * 30, 10, 2),
}


def _cell(power: float, runs: int) -> str:
    return f"{power * 100:.1f}% ± {100 * math.sqrt(power * (1 - power) / runs):.1f}"


def shape_row(name: str, passes: list[int], n0: int, sessions: int, runs: int) -> str:
    """One table row: the plan's figures and the gate's power at each."""
    baseline = sim._baseline(passes, n0, sessions)
    plan = suite_plan(baseline, list(baseline.cases), sim.GATE, 1)
    assert plan is not None
    figures = plan.dimensions[0]
    budget = first = reach = "-"
    if len(plan.looks) > 1 and figures.detectable_first is not None:
        counts = {c: {d: (x.passes, x.trials) for d, x in v.items()} for c, v in baseline.cases.items()}
        spend = design(counts, list(DIMENSIONS), sim.GATE.confidence, sim.GATE.margin, 1,
                       sim.GATE.max_trials_per_case).spend[0]
        power = sim._fixed_power(passes, figures.detectable_first, 1, spend, n0, sessions)
        first = f"{figures.detectable_first * 100:.1f} pts: {_cell(power, runs)}"
    if figures.detectable_budget is not None:
        power = sim._adaptive_power(passes, figures.detectable_budget, n0, sessions)
        budget = f"{figures.detectable_budget * 100:.1f} pts: {_cell(power, runs)}"
    if figures.reach_trials:
        power = sim._fixed_power(passes, plan.target, figures.reach_trials, n0=n0, sessions=sessions)
        reach = f"{figures.reach_trials} trials: {_cell(power, runs)}"
    return f"| {name} | {first} | {budget} | {reach} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    sim.RUNS = args.runs
    start = time.perf_counter()
    print(f"the gate's power at the plan's figures, {args.runs} runs each (target: 80% ± 5 points)")
    print("| suite, baseline | first look: drop, gate's power | full budget: drop, gate's power "
          "| target (margin + 5): trials, gate's power |")
    print("| --- | --- | --- | --- |")
    for name, (passes, n0, sessions) in SHAPES.items():
        print(shape_row(name, passes, n0, sessions, args.runs), flush=True)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
