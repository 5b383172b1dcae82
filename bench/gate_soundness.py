"""Gate soundness: family-wise false alarms and power of the gate, through its own code.

A stochastic reviewer is simulated on a 30-case reference suite (21 cases pass each trial
with probability .99, 6 with .85, 3 with .60). Every trial is graded on three dimensions, drawn
independently with the case's probability (independence is the hardest case for a family-wise
guarantee: correlated dimensions make Holm more conservative, not less). Each simulated CI run
measures a baseline (per-case counts, as `rubricgate baseline update` writes them), runs the
suite again at a fixed number of trials per case, and calls the project's own
`rubricgate.gating.gate.decide` once (and, for `compare`, `rubricgate.gating.compare.dimension_tests`)
on the per-case counts: the gate at one look, as a fixed design (`--shard`, strict and baseline
runs) uses it. The adaptive rounds a statistical `run` uses by default, with their looks and
alpha spending, are measured by bench/gate_power.py.

Scenarios:
  unchanged             nothing changed, at 1 / 3 / 5 trials per case
  drop 5/10/15 pts      the verdict dimension gets worse by that many points (every case
                        proportionally: a vaguer prompt), at 1 / 3 / 5 trials
  --only hard           only the 9 hard cases run (.85 and .60), nothing changed
  --only stable         only the 21 stable cases run, their verdict rate falls .99 -> .89
  new cases             3 new hard cases (.60) join the run, nothing changed
  mixed trials          28 cases at 1 trial, 2 at 5 (baseline and run alike), nothing changed
  best of 3             the baseline is the best of 3 runs (most passes) kept by hand, unchanged;
                        and the same 3 runs through `baseline update`, which pools the trials of
                        an unchanged setup (rubricgate.gating.baseline.pool)
  concentrated          -10 pts by 3 stable cases breaking outright (a deleted rule)
  all at .85            every case at .85, unchanged (the hardest case for discreteness)
  compare               `compare` (head vs base runs, no baseline file), unchanged and -15 pts

False alarms are family-wise: the share of unchanged runs failed on any of the three
dimensions. Power is the share of runs that fail on the dropped dimension. "no change" is the
share of runs with a real drop whose row is nevertheless labelled `no change` (it should be
rare: the label needs the drop's upper bound below gate.margin = 5 points).

Usage: python bench/gate_soundness.py [--sims N] [--seed S] [--out bench/out]
Prints a markdown table (also written to --out/gate_soundness.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rubricgate.gating.baseline import pool  # noqa: E402
from rubricgate.gating.compare import dimension_tests  # noqa: E402
from rubricgate.gating.gate import decide  # noqa: E402
from rubricgate.models.base import DIMENSIONS  # noqa: E402
from rubricgate.models.baseline import Baseline, CaseCount  # noqa: E402
from rubricgate.models.config import GateConfig  # noqa: E402
from rubricgate.models.results import RateRow  # noqa: E402

SUITE = np.array([0.99] * 21 + [0.85] * 6 + [0.60] * 3)
FLAT = np.full(30, 0.85)  # every case at .85: the hardest case for a discrete test's false alarms
HARD, STABLE = list(range(21, 30)), list(range(21))
STATISTICAL, STRICT = GateConfig(method="statistical"), GateConfig(method="strict", new_cases="report")
TARGET_FA, TARGET_POWER = 0.05, 0.80


@dataclass
class Scenario:
    name: str
    trials: int | list[int] = 3  # per case: one number, or one per case of the suite
    run_cases: list[int] = field(default_factory=lambda: list(range(30)))
    new_cases: list[float] = field(default_factory=list)  # probabilities of cases only the run has
    drop: float = 0.0  # points off the verdict dimension's mean over the run's cases
    how: str = "spread"  # spread: every case proportionally worse; concentrated: reliable cases break
    best_of: int = 1  # baseline from several runs: the best one kept by hand ...
    pooled: bool = False  # ... or pooled, as `baseline update` does when the setup is unchanged
    compare: bool = False


def scenarios() -> list[Scenario]:
    """Every scenario, in table order."""
    out = [Scenario(f"unchanged, {k} trial{'s' * (k > 1)}", k) for k in (1, 3, 5)]
    out += [Scenario(f"verdict -{d} pts, {k} trial{'s' * (k > 1)}", k, drop=d / 100) for d in (5, 10, 15) for k in (1, 3, 5)]
    out += [Scenario("verdict -10 pts, 7 trials (what the 80% target needs)", 7, drop=0.10)]
    out += [Scenario("--only 9 hard cases, unchanged", 3, run_cases=HARD),
            Scenario("--only 21 stable cases, verdict .99 -> .89", 3, run_cases=STABLE, drop=0.10),
            Scenario("--only 21 stable cases, verdict .99 -> .89", 5, run_cases=STABLE, drop=0.10),
            Scenario("3 new hard cases, unchanged", 3, new_cases=[0.6] * 3),
            Scenario("mixed trials (28 x 1, 2 x 5), unchanged", [1] * 28 + [5] * 2),
            Scenario("baseline = best of 3 runs kept by hand, unchanged", 3, best_of=3),
            Scenario("baseline updated 3 times, same setup (trials pooled), unchanged", 3, best_of=3, pooled=True),
            Scenario("verdict -10 pts concentrated (3 stable cases break)", 3, drop=0.10, how="concentrated"),
            Scenario("all 30 cases at .85, unchanged", 3, run_cases=list(range(30))),
            Scenario("compare, unchanged", 3, compare=True),
            Scenario("compare, unchanged", 5, compare=True),
            Scenario("compare, verdict -15 pts", 3, drop=0.15, compare=True),
            Scenario("compare, verdict -10 pts", 5, drop=0.10, compare=True)]
    return out


def dropped(probs: np.ndarray, drop: float, how: str = "spread") -> np.ndarray:
    """Per-case probabilities whose mean is `drop` lower: every case proportionally worse
    (spread), or the most reliable cases breaking outright, one after the other (concentrated)."""
    if not drop or how == "spread":
        return probs * (1 - drop / probs.mean()) if drop else probs
    out, left = probs.copy(), drop * len(probs)
    for i in np.argsort(-probs, kind="stable"):
        take = min(out[i], left)
        out[i], left = out[i] - take, left - take
    return out


def draw(rng: np.random.Generator, probs: np.ndarray, trials: np.ndarray, verdict: np.ndarray) -> dict:
    """Per case and dimension (passes, trials): verdict at `verdict` probabilities, others at `probs`."""
    out = {}
    for i, (p, n, v) in enumerate(zip(probs, trials, verdict)):
        ps = {"verdict": v, "tool_use": p, "trajectory": p}
        out[i] = {d: (int(rng.binomial(n, ps[d])), int(n)) for d in DIMENSIONS}
    return out


def baseline_of(counts: dict, ids: list[str]) -> Baseline:
    cases = {ids[i]: {d: CaseCount(passes=x, trials=n) for d, (x, n) in dims.items()} for i, dims in counts.items()}
    rates = {d: sum(c[d].passes for c in cases.values()) / sum(c[d].trials for c in cases.values()) for d in DIMENSIONS}
    return Baseline(rates=rates, trials=max(c[d].trials for c in cases.values() for d in DIMENSIONS), cases=cases)


def one_run(rng: np.random.Generator, s: Scenario, gate: GateConfig) -> tuple[set[str], dict[str, str]]:
    """(dimensions failed, label per dimension) of one simulated CI run."""
    trials = np.full(30, s.trials) if isinstance(s.trials, int) else np.array(s.trials)
    suite = FLAT if "at .85" in s.name else SUITE
    base_runs = [draw(rng, suite, trials, suite) for _ in range(s.best_of)]
    base = _pooled(base_runs) if s.pooled else max(base_runs, key=_passes)
    idx = np.array(s.run_cases)
    probs = np.concatenate([suite[idx], s.new_cases])
    run_trials = np.concatenate([trials[idx], np.full(len(s.new_cases), trials.max())]).astype(int)
    current = draw(rng, probs, run_trials, dropped(probs, s.drop, s.how))
    ids = [f"c{i}" for i in idx] + [f"new{j}" for j in range(len(s.new_cases))]
    per_case = {ids[i]: dims for i, dims in current.items()}
    if s.compare:
        tests = dimension_tests({f"c{i}": base[i] for i in idx}, per_case, gate)
        return {t.dimension for t in tests if t.status == "regression"}, {t.dimension: t.label for t in tests}
    rates = {d: _row(per_case, d) for d in DIMENSIONS}
    decide(rates, baseline_of(base, [f"c{i}" for i in range(30)]), gate, per_case)
    return {d for d, r in rates.items() if r.status == "regression"}, {d: r.label for d, r in rates.items()}


def _passes(counts: dict) -> int:
    return sum(x for dims in counts.values() for x, _ in dims.values())


def _pooled(runs: list[dict]) -> dict:
    """Several baseline runs pooled with the library's own rule (rubricgate.gating.baseline.pool)."""
    as_models = lambda c: {i: {d: CaseCount(passes=x, trials=n) for d, (x, n) in dims.items()}  # noqa: E731
                           for i, dims in c.items()}
    total = as_models(runs[0])
    for run in runs[1:]:
        total = pool(total, as_models(run))
    return {i: {d: (c.passes, c.trials) for d, c in dims.items()} for i, dims in total.items()}


def _row(per_case: dict, dim: str) -> RateRow:
    x, n = sum(c[dim][0] for c in per_case.values()), sum(c[dim][1] for c in per_case.values())
    return RateRow(rate=x / n, passes=x, trials=n)


def measure(s: Scenario, sims: int, rng: np.random.Generator) -> dict[str, float]:
    """Failure rates (any dimension, the verdict dimension) and label shares, both methods."""
    row: dict[str, float] = {}
    for name, gate in (("statistical", STATISTICAL), ("strict", STRICT)):
        results = [one_run(rng, s, gate) for _ in range(sims)]
        row[f"{name}_any"] = sum(bool(failed) for failed, _ in results) / sims
        row[f"{name}_verdict"] = sum("verdict" in failed for failed, _ in results) / sims
        if name == "statistical":
            row["no_change"] = sum(labels.get("verdict") == "no change" for _, labels in results) / sims
    return row


def table(rows: list[tuple[Scenario, dict[str, float]]], sims: int) -> str:
    """Markdown: one line per scenario; false alarms for unchanged ones, power for drops."""
    lines = ["| scenario | trials | statistical: false alarms (any dim) | statistical: power (verdict) "
             "| verdict labelled `no change` | strict: fails (any dim) | target |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for s, r in rows:
        trials = s.trials if isinstance(s.trials, int) else "1/5"
        if s.drop:
            target = _power_target(s)
            ok = "" if target is None else ("ok" if r["statistical_verdict"] >= target else "MISSED")
            lines.append(f"| {s.name} | {trials} | | {r['statistical_verdict']:.1%} | {r['no_change']:.1%} "
                         f"| {r['strict_any']:.1%} | {'' if target is None else f'power >= {target:.0%} {ok}'} |")
        else:
            ok = "ok" if r["statistical_any"] <= TARGET_FA else "MISSED"
            lines.append(f"| {s.name} | {trials} | {r['statistical_any']:.1%} | | | {r['strict_any']:.1%} "
                         f"| false alarms <= {TARGET_FA:.0%} {ok} |")
    note = (f"\n{sims} simulated runs per row and method; gate.confidence 0.95, gate.margin 0.05; the "
            "baseline is measured at the same trials per case unless the row says otherwise. "
            "Strict has no false-alarm control: it is for deterministic reviewers.")
    return "\n".join(lines) + "\n" + note


def _power_target(s: Scenario) -> float | None:
    """The power targets: a 15-point drop at 3 trials, a 10-point drop at 5, on the 30 cases."""
    full = len(s.run_cases) == 30
    if full and ((round(s.drop * 100) == 15 and s.trials == 3) or (round(s.drop * 100) == 10 and s.trials == 5)):
        return TARGET_POWER
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    rng, started = np.random.default_rng(args.seed), time.perf_counter()
    rows = [(s, measure(s, args.sims, rng)) for s in scenarios()]
    text = table(rows, args.sims)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gate_soundness.md").write_text(text + "\n", encoding="utf-8")
    print(f"\nwrote {args.out / 'gate_soundness.md'} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
