"""Gate power: false alarms, power and trials spent, fixed design against adaptive, with MC errors.

Each simulated CI run draws a baseline (per-case counts, as `rubricgate baseline update` writes
them) from a suite of per-case pass probabilities, then runs the suite again through the
project's own code: rubricgate.gating.adaptive.AdaptiveRun (the rounds, looks and stopping the
pipeline uses) for the adaptive design, and rubricgate.gating.gate.decide once at a fixed number
of trials per case for the fixed design. The three dimensions of a trial are drawn independently
with the case's probability (the hardest case for family-wise control). A drop hits the verdict
dimension only.

Suites (heterogeneous, as real reviewers are): "stable" every case at .995-1; "mixed" 70% of cases
at .99, 20% flaky at .3-.8, 10% at .9; 20 to 300 cases; the baseline has 10 trials per case.
Shapes: unchanged; a spread drop (every case proportionally worse); flaky cases getting worse
(the drop made only by the flaky cases); one stable case collapsing to always-fail; drift (the
whole run 2 points worse than the baseline's day, nothing changed in the reviewer: counted as
a false alarm when it exits 1, since the margin is 5), with gate.drift_allowance off (the
default) and at 2 points, and what that allowance costs on the 10-point drop; an --only subset
(the flaky cases alone); new cases (5 cases the baseline does not have); a drop of exactly the
margin (what a PASS must not be claimed on more than alpha of the time); the PR workflow under the
same drift (`compare --base`: head against base in the same job, K trials a side, through
rubricgate.gating.compare).

Every design of a row runs on the same simulated suites, baselines and trial outcomes (the n-th
trial of a case is the same draw in each: Streams), so the designs are compared paired.

Targets: "fixed design reaching the same power" is interpolated linearly in power between the
two fixed designs of the row that bracket the adaptive power.

Each figure is a share of runs with its Monte Carlo standard error sqrt(p(1-p)/runs).

Usage: python bench/gate_power.py [--quick] [--sims N] [--seed S] [--out bench/out]
--quick: fewer runs and scenarios, for CI (about a minute on one core).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rubricgate.gating.adaptive import AdaptiveRun, _rates  # noqa: E402
from rubricgate.gating.compare import decide_comparison, dimension_tests  # noqa: E402
from rubricgate.gating.gate import decide  # noqa: E402
from rubricgate.models.base import DIMENSIONS  # noqa: E402
from rubricgate.models.baseline import Baseline, CaseCount  # noqa: E402
from rubricgate.models.config import GateConfig  # noqa: E402

GATE = GateConfig(method="statistical")  # confidence .95, margin .05, max_trials_per_case 10
BASE_TRIALS = 10


def perfect_suite(cases: int, rng: random.Random) -> list[float]:
    return [1.0] * cases


def stable_suite(cases: int, rng: random.Random) -> list[float]:
    return [1.0 if rng.random() < 0.7 else 0.995 for _ in range(cases)]


def mixed_suite(cases: int, rng: random.Random) -> list[float]:
    out = []
    for i in range(cases):
        u = i / cases
        out.append(0.99 if u < 0.7 else rng.uniform(0.3, 0.8) if u < 0.9 else 0.9)
    return out


@dataclass
class Scenario:
    name: str
    suite: str  # perfect | stable | mixed
    cases: int
    drop: float = 0.0  # points off the verdict dimension's mean over the shared cases
    how: str = "spread"  # spread | flaky | collapse | drift | subset | new | interleaved (compare --base)
    fixed_trials: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    allowance: float = 0.0  # gate.drift_allowance
    more: int = 1  # runs for this row: `more` x the table's (the rows a target is judged on at its limit)

    def gate(self) -> GateConfig:
        return GateConfig(method="statistical", drift_allowance=self.allowance)


def scenarios(quick: bool) -> list[Scenario]:
    """The table's rows; --quick keeps one of each kind that a target is checked on."""
    rows = [Scenario("unchanged", "perfect", 30), Scenario("unchanged", "perfect", 300),
            Scenario("unchanged", "stable", 30, more=5), Scenario("unchanged", "stable", 300),
            Scenario("unchanged", "mixed", 30), Scenario("unchanged", "mixed", 100),
            Scenario("drop margin+5 (10 pts), spread", "mixed", 30, 0.10, fixed_trials=[1, 3, 5, 7, 8, 9, 10], more=5),
            Scenario("drop margin+5 (10 pts), spread", "stable", 30, 0.10),
            Scenario("flaky cases 10 pts worse", "mixed", 100, 0.10, "flaky"),
            Scenario("one stable case collapses", "stable", 30, how="collapse"),
            Scenario("one stable case collapses", "stable", 300, how="collapse"),
            Scenario("drift: run 2 pts worse, reviewer unchanged", "mixed", 30, 0.02, "drift"),
            Scenario("drift: run 2 pts worse, reviewer unchanged, allowance 2 pts", "mixed", 30, 0.02, "drift",
                     allowance=0.02),
            Scenario("drop margin+5 (10 pts), spread, allowance 2 pts", "mixed", 30, 0.10,
                     fixed_trials=[1, 3, 5, 7, 10], allowance=0.02),
            Scenario("--only the flaky cases, unchanged", "mixed", 100, how="subset"),
            Scenario("5 new cases, unchanged", "mixed", 30, how="new"),
            Scenario("unchanged", "mixed", 20),
            Scenario("drop exactly the margin (5 pts), spread", "perfect", 30, 0.05, more=5),
            Scenario("drop exactly the margin (5 pts), spread", "stable", 30, 0.05),
            Scenario("drop exactly the margin (5 pts), spread", "mixed", 30, 0.05),
            Scenario("drift: both sides 2 pts worse, PR workflow (compare --base)", "mixed", 30, 0.02,
                     "interleaved", fixed_trials=[3, 5, 10])]
    if quick:
        keep = {0, 2, 6, 9, 17, 18}
        rows = [r for i, r in enumerate(rows) if i in keep]
    return rows


def draw_baseline(probs: dict[str, float], rng: random.Random) -> Baseline:
    cases = {c: {d: CaseCount(passes=sum(rng.random() < p for _ in range(BASE_TRIALS)), trials=BASE_TRIALS)
                 for d in DIMENSIONS} for c, p in probs.items()}
    return Baseline(rates={d: 1.0 for d in DIMENSIONS}, trials=BASE_TRIALS, cases=cases)


def current_probs(s: Scenario, probs: dict[str, float], rng: random.Random) -> dict[str, dict[str, float]]:
    """Per case and dimension, the run's pass probability under the scenario."""
    verdict = dict(probs)
    if s.how in ("spread", "drift", "interleaved") and s.drop:
        mean = sum(probs.values()) / len(probs)
        verdict = {c: p * (1 - s.drop / mean) for c, p in probs.items()}
    elif s.how == "flaky":
        flaky = [c for c, p in probs.items() if p < 0.85]
        share = s.drop * len(probs) / len(flaky)  # the suite mean drops by s.drop
        verdict = {c: max(0.0, p - share) if c in flaky else p for c, p in probs.items()}
    elif s.how == "collapse":
        victim = next(c for c, p in probs.items() if p >= 0.99)
        verdict = {**probs, victim: 0.0}
    return {c: {d: (verdict[c] if d == "verdict" else p) for d in DIMENSIONS} for c, p in probs.items()}


def one_run(s: Scenario, rng: random.Random, fixed: int | None) -> tuple[int, int]:
    """(exit code, trials spent) of one simulated run; fixed=None is the adaptive design."""
    make = {"perfect": perfect_suite, "stable": stable_suite, "mixed": mixed_suite}[s.suite]
    probs = {f"c{i}": p for i, p in enumerate(make(s.cases, rng))}
    baseline = draw_baseline(probs, rng)
    run_probs = dict(probs)
    if s.how == "subset":
        run_probs = {c: p for c, p in probs.items() if p < 0.85}
    if s.how == "new":
        run_probs.update({f"new{i}": rng.uniform(0.3, 0.9) for i in range(5)})
    now = current_probs(s, run_probs, rng)
    streams = Streams(rng.getrandbits(64))
    if s.how == "interleaved":
        return interleaved_run(now, fixed or 1, streams, s.gate())
    if fixed is not None:
        return fixed_run(baseline, now, fixed, streams, s.gate())
    return adaptive_run(baseline, now, streams, s.gate())


class Streams:
    """The run's trial outcomes: per case, one random stream for its design trials and one for its
    confirmations. The n-th design trial of a case is then the same draw in every design of a
    row (same seed) and whatever the confirmations ran, so designs and versions of the code are
    compared on the same trials (paired), not on independent noise."""

    def __init__(self, seed: int):
        self.seed, self.rngs = seed, {}

    def trial(self, case: str, confirm: bool, p: dict[str, float]) -> dict[str, bool]:
        rng = self.rngs.get((case, confirm))
        if rng is None:
            rng = self.rngs[(case, confirm)] = random.Random(f"{self.seed}/{case}/{confirm}")
        return {d: rng.random() < p[d] for d in DIMENSIONS}


def adaptive_run(baseline: Baseline, now: dict[str, dict[str, float]], streams: Streams,
                 gate: GateConfig = GATE) -> tuple[int, int]:
    run = AdaptiveRun(baseline, gate, list(now), first=1)
    while True:
        for case, _, confirm in run.next_batch():
            run.record(case, streams.trial(case, confirm, now[case]), confirm)
        result = run.look()
        if result.stop:
            return result.decision.exit_code, result.trials


def fixed_run(baseline: Baseline, now: dict[str, dict[str, float]], trials: int, streams: Streams,
              gate: GateConfig = GATE) -> tuple[int, int]:
    per_case = draw_counts(now, trials, streams)
    decision, _ = decide(_rates(per_case), baseline, gate, per_case)
    return decision.exit_code, trials * len(now)


def interleaved_run(now: dict[str, dict[str, float]], trials: int, streams: Streams,
                    gate: GateConfig = GATE) -> tuple[int, int]:
    """`rubricgate compare --base` on an unchanged reviewer: base and head run the same cases in
    the same job, so both see the day's model (here 2 points worse than the stored baseline's)."""
    base, head = (draw_counts(now, trials, streams, side) for side in ("base/", "head/"))
    decision = decide_comparison(dimension_tests(base, head, gate), gate)
    return decision.exit_code, 2 * trials * len(now)


def draw_counts(now: dict[str, dict[str, float]], trials: int, streams: Streams,
                stream: str = "") -> dict[str, dict[str, tuple[int, int]]]:
    """Per case and dimension, (passes, trials) of `trials` design trials drawn from the case's
    stream (`stream` names another set of streams: a side of an interleaved comparison)."""
    per_case = {}
    for case, p in now.items():
        outs = [streams.trial(stream + case, False, p) for _ in range(trials)]
        per_case[case] = {d: (sum(o[d] for o in outs), trials) for d in DIMENSIONS}
    return per_case


def share(hits: int, runs: int) -> str:
    p = hits / runs
    return f"{p:.1%} ± {math.sqrt(p * (1 - p) / runs):.1%}"


def measure(s: Scenario, sims: int, seed: int, fixed: int | None) -> dict:
    rng = random.Random(seed)
    codes, spent = [], []
    for _ in range(sims):
        code, trials = one_run(s, rng, fixed)
        codes.append(code)
        spent.append(trials)
    return {"exit0": sum(c == 0 for c in codes), "exit1": sum(c == 1 for c in codes),
            "exit2": sum(c == 2 for c in codes), "runs": sims, "trials": sum(spent) / sims,
            "trials_se": statistics.stdev(spent) / math.sqrt(sims) if sims > 1 else 0.0}


def row(s: Scenario, design: str, m: dict) -> str:
    n = m["runs"]
    trials = f"{m['trials']:.1f} ± {m['trials_se']:.1f}" if m["trials_se"] else f"{m['trials']:.0f}"
    return (f"| {s.name} | {s.suite} | {s.cases} | {design} | {n} | {share(m['exit0'], n)} | {share(m['exit1'], n)} | "
            f"{share(m['exit2'], n)} | {trials} |")


def targets(results: dict, margin: float = 0.05) -> list[str]:
    """The targets, each met or not with the figure it rests on."""
    out = []
    for what, kinds in (("exit 1 with nothing changed <= 5%, adaptive and fixed", ("unchanged", "--only", "5 new")),
                        ("exit 1 with a 2-point drift against the stored baseline (reviewer unchanged) <= 5%, "
                         "adaptive and fixed", ("drift: run",)),
                        ("exit 1 with a 2-point drift in the PR workflow (head against base, interleaved) <= 5%",
                         ("drift: both",))):
        rows = {k: m for k, m in results.items() if k[0].startswith(kinds)}
        if rows:
            worst = max(rows.items(), key=lambda kv: kv[1]["exit1"] / kv[1]["runs"])
            out.append(_target(what, worst[1]["exit1"] / worst[1]["runs"] <= 0.05,
                               f"worst {share(worst[1]['exit1'], worst[1]['runs'])} ({', '.join(map(str, worst[0]))})"))
    at_margin = {k: m for k, m in results.items() if k[0].startswith("drop exactly the margin")}
    if at_margin:
        worst = max(at_margin.items(), key=lambda kv: kv[1]["exit0"] / kv[1]["runs"])
        out.append(_target("exit 0 (PASS) with a drop of exactly the margin <= 5%, adaptive and fixed",
                           worst[1]["exit0"] / worst[1]["runs"] <= 0.05,
                           f"worst {share(worst[1]['exit0'], worst[1]['runs'])} ({', '.join(map(str, worst[0]))})"))
    drop = results.get(("drop margin+5 (10 pts), spread", "mixed", 30, "adaptive"))
    if drop:
        out.append(_target("exit 0 with a drop of margin + 5 points <= 20% on 30 cases (adaptive)",
                           drop["exit0"] / drop["runs"] <= 0.20, share(drop["exit0"], drop["runs"])))
    for suite, cases in (("perfect", 30), ("perfect", 300), ("stable", 30), ("stable", 300)):
        m = results.get(("unchanged", suite, cases, "adaptive"))
        if m:
            limit = max(cases, math.ceil(3 / margin))
            ok = m["exit0"] / m["runs"] >= 0.95 and m["trials"] <= 1.25 * limit
            out.append(_target(f"{suite} suite of {cases}: >= 95% PASS within 1.25x the information limit "
                               f"({limit} trials)", ok,
                               f"PASS {share(m['exit0'], m['runs'])}, {m['trials']:.1f} ± {m['trials_se']:.1f} trials "
                               f"({m['trials'] / limit:.2f}x)"))
    for key in [k for k in results if k[3] == "adaptive" and k[0].startswith(("drop margin+5", "flaky"))]:
        out.append(_efficiency(results, key))
    for cases in (30, 300):
        m = results.get(("one stable case collapses", "stable", cases, "adaptive"))
        if m:
            out.append(_target(f"one stable case collapsing caught in >= 95% of runs on {cases} cases",
                               m["exit1"] / m["runs"] >= 0.95, share(m["exit1"], m["runs"])))
    return out


def _efficiency(results: dict, key: tuple) -> str:
    """Adaptive trials against what a fixed design needs for the adaptive power: interpolated
    linearly in power between the two fixed designs of the row that bracket it."""
    what = f"adaptive <= 60% of the trials of the fixed design reaching the same power ({key[0]}, {key[1]} {key[2]})"
    m = results[key]
    power = m["exit1"] / m["runs"]
    fixed = sorted(((v["exit1"] / v["runs"], v["trials"]) for k, v in results.items()
                    if k[:3] == key[:3] and k[3].startswith("fixed")), key=lambda pv: pv[1])
    need = fixed_trials_for(power, fixed)
    if need is None:
        return _target(what, True, f"no fixed design here reaches the adaptive power {power:.1%} ({m['trials']:.0f} trials)")
    ratio = m["trials"] / need
    return _target(what, ratio <= 0.6, f"{m['trials']:.0f} vs {need:.0f} trials ({ratio:.0%}) at power {power:.1%}")


def fixed_trials_for(power: float, fixed: list[tuple[float, float]]) -> float | None:
    """Trials a fixed design needs for `power`, from (power, trials) rows sorted by trials."""
    below = (0.0, 0.0)
    for p, trials in fixed:
        if p >= power:
            return trials if p == below[0] else below[1] + (trials - below[1]) * (power - below[0]) / (p - below[0])
        below = max(below, (p, trials))
    return None


def _target(what: str, met: bool, figure: str) -> str:
    return f"- {what}: {'met' if met else 'NOT met'} ({figure})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sims", type=int, default=None)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    sims = args.sims or (100 if args.quick else 400)
    start = time.monotonic()
    lines = ["| scenario | suite | cases | design | runs | exit 0 (PASS) | exit 1 (REGRESSION) | exit 2 (INCONCLUSIVE) "
             "| mean trials |", "| --- " * 9 + "|"]
    results = {}
    for i, s in enumerate(scenarios(args.quick)):
        sizes = s.fixed_trials if not args.quick else [3]
        designs = ([(f"interleaved {k} a side", k) for k in sizes] if s.how == "interleaved"
                   else [("adaptive", None)] + [(f"fixed {k}", k) for k in sizes])
        for name, fixed in designs:
            m = measure(s, sims * (1 if args.quick else s.more), args.seed + i, fixed)
            results[(s.name, s.suite, s.cases, name)] = m
            lines.append(row(s, name, m))
            print(lines[-1], flush=True)
    lines += ["", "Targets:", *targets(results), "",
              f"seed {args.seed}, {time.monotonic() - start:.0f} s"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gate_power.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-(len(targets(results)) + 3):]))


if __name__ == "__main__":
    main()
