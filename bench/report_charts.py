"""The HTML report's fixed cost, its charts apart: building it for a 200- and a 2,000-case summary.

Each figure is a fresh process that imports the report module and renders the report once
(3 trials per case, one failing case in 7, with a 5-run trend), so import cost and peak RSS
count; "charts s" is drawing the three charts again in that process, imports paid. The
baseline, measured in the same run, swaps in the charts module of --baseline-ref, whose charts are
SVG written by hand with no plotting library: the difference is what matplotlib costs a report.
Median of --reps processes per row.

    python bench/report_charts.py [--sizes 200,2000] [--reps 3] [--baseline-ref REF]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE_REF = "1419fef"  # rubricgate/reports/charts.py drew its SVG by hand here


def _summary(cases: int, run: int = 0):
    """A synthetic summary: `cases` cases of 3 trials, every 7th trial failing its verdict."""
    from rubricgate.models.results import CaseSummary, Decision, Grade, RateRow, Summary, TrialResult

    def trial(case: str, n: int, ok: bool) -> TrialResult:
        return TrialResult(case_id=case, trial=n, outcome="PASS", duration_s=1.0,
                           grades={"verdict": Grade(passed=ok), "tool_use": Grade(passed=True)})
    rows = [CaseSummary(id=f"case-{i:05d}", source="fixture",
                        trials=[trial(f"case-{i:05d}", n, (3 * i + n + run) % 7 != 0) for n in (1, 2, 3)])
            for i in range(cases)]
    rates = {"verdict": RateRow(rate=6 / 7, passes=6 * cases, trials=7 * cases, low=0.8, high=0.9, baseline=0.95,
                                status="regression"),
             "tool_use": RateRow(rate=1.0, passes=3 * cases, trials=3 * cases, low=0.97, high=1.0, baseline=1.0)}
    return Summary(run_id=f"bench-{run}", started_at=f"2026-12-0{run + 1}T10:00:00+00:00", agent="builtin",
                   decision=Decision(status="regression", exit_code=1), rates=rates, cases=rows)


def _swap_in_baseline(ref: str) -> None:
    """Load --baseline-ref's charts module in place of today's before the report imports it."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:rubricgate/reports/charts.py"],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("rubricgate.reports.charts")
    module.__file__ = f"{ref}:rubricgate/reports/charts.py"
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)


def child(variant: str, cases: int) -> None:
    """One measurement: import the report module (and its charts), render once, print JSON."""
    sys.path.insert(0, str(ROOT))
    history = [_summary(cases, run) for run in range(4)]
    summary = _summary(cases, 4)
    start = time.perf_counter()
    if variant == "baseline":
        _swap_in_baseline(os.environ["BENCH_REF"])
    from rubricgate.reports import html
    page = html.render_html(summary, None, history)
    wall = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    html._charts(summary, history)  # the three charts again, imports already paid
    charts = time.perf_counter() - start
    print(json.dumps({"wall": wall, "charts": charts, "rss_mb": rss, "kb": len(page) / 1024}))


def measure(variant: str, cases: int, reps: int, ref: str) -> dict[str, float]:
    """Median over `reps` fresh processes."""
    runs = []
    for _ in range(reps):
        got = subprocess.run([sys.executable, __file__, "--child", variant, "--cases", str(cases)], capture_output=True,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "BENCH_REF": ref}, check=True)
        runs.append(json.loads(got.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def baseline_available(ref: str) -> str:
    """'' when the baseline can run, else why not."""
    probe = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{ref}:rubricgate/reports/charts.py"],
                           capture_output=True)
    return "" if probe.returncode == 0 else f"{ref} is not in this clone"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,2000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--child", choices=["svg", "baseline"], help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.cases)
    missing = baseline_available(args.baseline_ref)
    print(f"HTML report build (import + render_html with a 5-run trend), median of {args.reps} fresh processes")
    print(f"{'cases':>6} {'charts':26} {'wall s':>7} {'charts s':>9} {'peak RSS MB':>12} {'HTML KB':>8}  x baseline")
    for n in (int(s) for s in args.sizes.split(",")):
        base = None if missing else measure("baseline", n, args.reps, args.baseline_ref)
        if base:
            _row(n, f"hand-drawn SVG ({args.baseline_ref})", base, base)
        else:
            print(f"{n:>6} {'hand-drawn SVG':26} baseline skipped: {missing}")
        _row(n, "matplotlib SVG", measure("svg", n, args.reps, args.baseline_ref), base)


def _row(n: int, label: str, got: dict[str, float], base: dict[str, float] | None) -> None:
    """One size and variant; the ratios are of the whole build's wall and of the charts' time."""
    ratio = f"{got['wall'] / base['wall']:.2f}x wall, {got['charts'] / base['charts']:.3f}x charts" if base else "-"
    print(f"{n:>6} {label:26} {got['wall']:7.2f} {got['charts']:9.3f} {got['rss_mb']:12.1f} {got['kb']:8.0f}  {ratio}")

if __name__ == "__main__":
    main()
