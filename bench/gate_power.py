"""Gate power: false alarms, power, PASS errors and trials spent, fixed design against adaptive, with MC errors.

The simulation (the reviewer, the baselines `baseline update` measures, within-run dependence,
the designs) is bench/gate_sim.py. Rows: unchanged suites; a spread drop of margin + 5 points;
a drop of exactly the margin (what a PASS must not be claimed on more than alpha of the time),
for fixed designs of 1 to 10 trials and the adaptive one, and continued up to five times after
an INCONCLUSIVE; one stable case collapsing on 30, 300 and 1,000 cases; within-run dependence of
probability 0.1 and 0.3 with nothing changed; drift against the stored baseline and in the PR
workflow (`compare --base`: head against base in the same job).

Each figure is a share of runs with its Monte Carlo standard error sqrt(p(1-p)/runs); an
adaptive design's mean trials carry the standard error of that mean. "fixed design reaching the
same power" is interpolated linearly in power between the two fixed designs that bracket it.

Usage: python bench/gate_power.py [--quick] [--sims N] [--seed S] [--out bench/out] [--only TEXT ...] [--whole]
       [--load TABLE ...]
(each scenario's seed is the run's seed plus its place in the list, so parts run with --only in
parallel and joined with --load give the same table as one run)
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gate_sim import Scenario, one_run  # noqa: E402

ALL_FIXED = list(range(1, 11))


def scenarios(quick: bool) -> list[Scenario]:
    """The table's rows; --quick keeps one of each kind that a target is checked on, at a small size."""
    rows = [Scenario("unchanged", "perfect", 30), Scenario("unchanged", "near-stable", 30, more=5),
            Scenario("unchanged", "stable", 30), Scenario("unchanged", "mixed", 30), Scenario("unchanged", "mixed", 100),
            Scenario("unchanged", "near-stable", 300),
            Scenario("drop margin+5 (10 pts), spread", "mixed", 30, 0.10, fixed_trials=[1, 3, 5, 7, 8, 9, 10], more=5),
            Scenario("drop margin+5 (10 pts), spread", "near-stable", 30, 0.10),
            Scenario("flaky cases 10 pts worse", "mixed", 100, 0.10, "flaky"),
            *[Scenario("drop exactly the margin (5 pts), spread", s, 30, 0.05, fixed_trials=ALL_FIXED, more=5,
                       fixed_more=1) for s in ("perfect", "stable", "near-stable", "mixed")],
            *[Scenario("drop exactly the margin, continued up to 5 times", s, 30, 0.05, fixed_trials=[],
                       more=5 if s == "perfect" else 2, continuations=5) for s in ("perfect", "mixed")],
            *[Scenario("one stable case collapses", "near-stable", n, how="collapse", fixed_trials=[3] if n == 30 else [])
              for n in (30, 300, 1000)],
            *[Scenario(f"unchanged, within-run dependence {rho}", s, n, rho=rho, fixed_trials=[3, 10])
              for rho in (0.1, 0.3) for s in ("mixed", "stable") for n in (30, 100)],
            *[Scenario(f"PR workflow (compare --base), {what}", "mixed", 30, drop, "pr spread", fixed_trials=[3, 10], more=m)
              for what, drop, m in (("unchanged", 0.0, 1), ("drop exactly the margin (5 pts)", 0.05, 5),
                                    ("drop margin+5 (10 pts)", 0.10, 1))],
            Scenario("PR workflow (compare --base), drop exactly the margin (5 pts)", "perfect", 30, 0.05, "pr spread",
                     fixed_trials=[3, 10], more=5),
            Scenario("drift: run 2 pts worse, reviewer unchanged", "mixed", 30, 0.02, "drift"),
            Scenario("drift: both sides 2 pts worse, PR workflow (compare --base)", "mixed", 30, 0.02, "interleaved",
                     fixed_trials=[3, 5, 10], adaptive=False)]
    if quick:
        keep = ("unchanged", "drop margin+5", "drop exactly the margin (5 pts)", "one stable case", "within-run dependence 0.3")
        rows = [r for r in rows if r.name.startswith(keep) and r.cases <= 100][:8]
    return rows


def measure(s: Scenario, sims: int, seed: int, fixed: int | None) -> dict:
    rng = random.Random(seed)
    codes, spent, taken = [], [], []
    for _ in range(sims):
        code, trials, continued = one_run(s, rng, fixed)
        codes.append(code)
        spent.append(trials)
        taken.append(continued)
    return {"exit0": sum(c == 0 for c in codes), "exit1": sum(c == 1 for c in codes),
            "exit2": sum(c == 2 for c in codes), "runs": sims, "trials": sum(spent) / sims,
            "trials_se": statistics.stdev(spent) / math.sqrt(sims) if sims > 1 else 0.0,
            "continued": sum(taken) / sims}


def share(hits: int, runs: int) -> str:
    p = hits / runs
    return f"{p:.1%} ± {math.sqrt(p * (1 - p) / runs):.1%}"


def row(s: Scenario, design: str, m: dict) -> str:
    n = m["runs"]
    trials = f"{m['trials']:.1f} ± {m['trials_se']:.1f}" if m["trials_se"] else f"{m['trials']:.0f}"
    return (f"| {s.name} | {s.suite} | {s.cases} | {design} | {n} | {share(m['exit0'], n)} | {share(m['exit1'], n)} | "
            f"{share(m['exit2'], n)} | {trials} |")


def designs(s: Scenario, quick: bool) -> list[tuple[str, int | None]]:
    sizes = s.fixed_trials if not quick else [k for k in s.fixed_trials if k in (3, 10)][:1]
    if s.how == "interleaved":
        return [(f"interleaved {k} a side", k) for k in sizes]
    if s.how.startswith("pr "):
        return [("adaptive, --trials 3", None)] + [(f"fixed {k} a side", k) for k in sizes]
    name = "adaptive" + (f", up to {s.continuations} continuations" if s.continuations else "")
    return ([(name, None)] if s.adaptive else []) + [(f"fixed {k}", k) for k in sizes]


def exact_table() -> tuple[list[str], dict]:
    """The fixed designs' P(PASS | a drop of exactly the margin), exact (bench/gate_exact.py): the
    table's lines, and (suite, trials) -> the figure."""
    from gate_exact import pass_error

    figures = {(suite, k): pass_error(suite, 30, k) for suite in ("perfect", "stable", "near-stable", "mixed")
               for k in ALL_FIXED}
    out = ["", "Fixed designs at a drop of exactly the margin, P(the verdict PASSes), exact on each suite's "
           "composition (an upper bound on the run's PASS):", "",
           "| suite | " + " | ".join(f"fixed {k}" for k in ALL_FIXED) + " |", "| --- " * (len(ALL_FIXED) + 1) + "|"]
    for suite in ("perfect", "stable", "near-stable", "mixed"):
        out.append(f"| {suite} | " + " | ".join(f"{figures[(suite, k)]:.2%}" for k in ALL_FIXED) + " |")
    return out, figures


def _key(line: str) -> tuple | None:
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 9 or not cells[2].isdigit():
        return None
    return cells[0], cells[1], int(cells[2]), cells[3]


def load_rows(path: Path) -> dict:
    """An earlier table's rows as results (counts from the shares: exact to the table's 0.1%)."""
    out = {}
    for line in path.read_text().splitlines():
        key = _key(line)
        if key is None:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        runs = int(cells[4])
        share = [float(c.split("%")[0]) / 100 for c in cells[5:8]]
        mean, _, se = cells[8].partition(" ± ")
        out[key] = {"exit0": round(share[0] * runs), "exit1": round(share[1] * runs), "exit2": round(share[2] * runs),
                    "runs": runs, "trials": float(mean), "trials_se": float(se or 0), "continued": 0.0}
    return out


def main() -> None:
    from gate_targets import targets

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sims", type=int, default=None)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--only", action="append", default=[],
                        help="Only scenarios whose name contains this text (repeatable: any of them).")
    parser.add_argument("--whole", action="store_true", help="--only names whole scenario names, not parts of them.")
    parser.add_argument("--suite", action="append", default=[],
                        help="Only scenarios on this suite (perfect, stable, near-stable, mixed; repeatable).")
    parser.add_argument("--load", action="append", type=Path, default=[],
                        help="Rows of an earlier run's table (a part run with --only and the same seed) to judge "
                             "the targets with as well (repeatable).")
    args = parser.parse_args()
    sims = args.sims or (40 if args.quick else 400)
    start = time.monotonic()
    lines = ["| scenario | suite | cases | design | runs | exit 0 (PASS) | exit 1 (REGRESSION) | exit 2 (INCONCLUSIVE) "
             "| mean trials |", "| --- " * 9 + "|"]
    results = {}
    for i, s in enumerate(scenarios(args.quick)):
        if args.only and not any(text == s.name if args.whole else text in s.name for text in args.only):
            continue
        if args.suite and s.suite not in args.suite:
            continue
        for name, fixed in designs(s, args.quick):
            more = s.more if fixed is None or s.fixed_more is None else s.fixed_more
            m = measure(s, sims * (1 if args.quick else more), args.seed + i, fixed)
            results[(s.name, s.suite, s.cases, name)] = m
            lines.append(row(s, name, m))
            print(lines[-1], flush=True)
    for path in args.load:
        loaded = load_rows(path)
        results.update(loaded)
        lines += [line for line in path.read_text().splitlines() if _key(line) in loaded]
    exact, figures = exact_table() if not args.quick and (not args.only or args.load) else ([], {})
    found = targets(results, figures)
    lines += [*exact, "", "Targets:", *found, "", f"seed {args.seed}, {time.monotonic() - start:.0f} s"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / ("gate_power_quick.md" if args.quick else "gate_power.md")).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-(len(found) + 3):]))


if __name__ == "__main__":
    main()
