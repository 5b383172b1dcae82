"""Interval coverage: does a suite rate's 95% interval cover what it claims?

The claim (README, "Intervals that say what they cover"): the suite interval covers the
reviewer's pass rate on cases like these. Cases are drawn from a population (the reference
suite of bench/gate_soundness.py: 70% of cases pass each trial with probability .99, 20% with
.85, 10% with .60; population rate .923), each run K trials; we count how often the interval contains .923. The cluster-aware
interval (rubricgate.gating.stats.cluster_interval) is compared with a plain Wilson interval over all
trials, which treats the trials of one case as independent.

Usage: python bench/interval_coverage.py [--sims N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rubricgate.gating.stats import cluster_interval, wilson  # noqa: E402

LEVELS, WEIGHTS = np.array([0.99, 0.85, 0.60]), np.array([0.7, 0.2, 0.1])
TRUTH = float(LEVELS @ WEIGHTS)


def coverage(rng: np.random.Generator, cases: int, trials: int, sims: int) -> tuple[float, float]:
    """(cluster-aware, plain Wilson) coverage of TRUTH over `sims` simulated suites."""
    hits = np.zeros(2)
    for _ in range(sims):
        probs = rng.choice(LEVELS, size=cases, p=WEIGHTS)
        passes = rng.binomial(trials, probs)
        low, high, _ = cluster_interval([(int(x), trials) for x in passes])
        w_low, w_high = wilson(int(passes.sum()), cases * trials)
        hits += [low <= TRUTH <= high, w_low <= TRUTH <= w_high]
    return hits[0] / sims, hits[1] / sims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print("| cases | trials | cluster-aware (rubricgate) | plain Wilson over trials |\n| --- | --- | --- | --- |")
    for cases in (30, 100):
        for trials in (1, 3, 5):
            ours, plain = coverage(rng, cases, trials, args.sims)
            print(f"| {cases} | {trials} | {ours:.1%} | {plain:.1%} |")
    print(f"\n{args.sims} simulated suites per row; nominal 95%; target rate {TRUTH:.3f}.")


if __name__ == "__main__":
    main()
