"""`rubricgate export` over a year of weekly runs: peak RSS and CPU against the number of runs.

Generates RUNS summary files of CASES cases x TRIALS trials through the real models and writer
(bench/view_history.py's runs, without their transcripts: export reads summaries only), then runs
`python -m rubricgate export` in a fresh process over the first 5, then all RUNS of them, for each
format, and prints the child's peak RSS (wait4) and CPU seconds. Export streams run by run, so the
peak is flat in the number of runs; the ratio of the two peaks is the figure (target: 50 runs x
2,000 cases x 3 trials <= 300 MB, issue 42). `--frames` adds the frames built at once
(analysis.trials_df over every run, what export did before it streamed) for scale.

    python bench/export_history.py [--runs 50] [--cases 2000] [--trials 3] [--formats parquet,csv] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.view_history import _summary, _trial  # noqa: E402
from rubricgate.models.results import CaseSummary  # noqa: E402
from rubricgate.records.files import write_summary  # noqa: E402

DIMS = ("verdict", "tool_use", "trajectory")


def make_summaries(reports: Path, runs: int, cases: int, trials: int) -> list[Path]:
    """RUNS run folders holding a summary.json each (outcomes as bench/view_history.py makes them)."""
    import random

    folders = []
    for week in range(runs):
        rng = random.Random(week)
        out, counts = [], {d: [0, 0] for d in DIMS}
        for i in range(cases):
            cid = f"case-{i:05d}"
            ts = [_trial(rng, cid, n, 0.0 if i % 40 else 0.1) for n in range(1, trials + 1)]
            for t in ts:
                for d in DIMS:
                    counts[d][0] += t.grades[d].passed
                    counts[d][1] += 1
            out.append(CaseSummary(id=cid, source="task", expected_tier="BLOCK", trials=ts,
                                   flaky=len({t.outcome for t in ts}) > 1,
                                   rates={d: sum(t.grades[d].passed for t in ts) / trials for d in DIMS}))
        summary = _summary(f"2026{1 + week // 5:02d}{1 + (week % 5) * 6:02d}T051700Z-{week:06x}", week, out, counts)
        folder = reports / summary.run_id
        folder.mkdir(parents=True)
        write_summary(folder, summary)
        folders.append(folder)
    return folders


FRAMES = """
import sys
from rubricgate.analysis import cases_df, runs_df, trials_df
runs = sys.argv[1:]
frames = [trials_df(runs), cases_df(runs), runs_df(runs)]
"""


def measured(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s of the process tree, peak RSS MB) of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(argv[:4])} failed: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--formats", default="parquet,csv,jsonl")
    ap.add_argument("--frames", action="store_true", help="also the three frames built at once, for scale")
    ap.add_argument("--keep", type=Path, help="generate here (or reuse what is there) and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="rubricgate-export-bench-"))
    try:
        _bench(base, args)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


def _bench(base: Path, args) -> None:
    reports = base / "reports"
    if not reports.is_dir():
        start = time.perf_counter()
        make_summaries(reports, args.runs, args.cases, args.trials)
        print(f"generated {args.runs} summaries of {args.cases} cases x {args.trials} trials "
              f"in {time.perf_counter() - start:.0f} s")
    runs = sorted(str(p) for p in reports.iterdir())
    sizes = sorted({min(5, len(runs)), len(runs)})
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; median of {args.reps} "
          f"(range); summary.json {os.path.getsize(Path(runs[0]) / 'summary.json') / 1e6:.1f} MB each")
    print(f"{'what':<16} {'runs':>5} {'wall s':>8} {'CPU s':>16} {'peak RSS MB':>22}")
    for fmt in args.formats.split(","):
        peaks = {}
        for n in sizes:
            argv = [sys.executable, "-m", "rubricgate", "export", *runs[:n], "--format", fmt, "--out", str(base / "out")]
            got = [measured(argv) for _ in range(args.reps)]
            peaks[n] = _row(f"export {fmt}", n, got)
        print(f"  export {fmt}: peak RSS at {sizes[-1]} runs / at {sizes[0]}: {peaks[sizes[-1]] / peaks[sizes[0]]:.2f}x "
              f"({'met' if peaks[sizes[-1]] <= 300 else 'NOT met'}: <= 300 MB)")
    if args.frames:
        for n in sizes:
            _row("frames at once", n, [measured([sys.executable, "-c", FRAMES, *runs[:n]]) for _ in range(args.reps)])


def _row(what: str, n: int, got: list[tuple[float, float, float]]) -> float:
    cols = []
    for i in range(3):
        vals = sorted(g[i] for g in got)
        spread = f"({vals[0]:.1f}-{vals[-1]:.1f})" if len(vals) > 1 else ""
        cols.append((statistics.median(vals), spread))
    print(f"{what:<16} {n:>5} {cols[0][0]:8.1f} {cols[1][0]:7.1f} {cols[1][1]:>8} {cols[2][0]:10.0f} {cols[2][1]:>11}")
    return cols[2][0]


if __name__ == "__main__":
    main()
