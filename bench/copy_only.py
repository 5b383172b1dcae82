"""Copy-only runs (`agent.sandbox: none`) against the `cp -r` floor, measured side by side.

The suite and stub reviewer are bench/peers.py's (200 tasks, a 50-file 1 MB tree, a shell
script printing a 39-line Claude-format stream). Rows, interleaved and repeated:
  floor       a Python thread pool; per case `cp -r` of the tree, the stub in the copy, `rm -r`
  copy-only   `python -m rubricgate run --jobs J` with `agent.sandbox: none` (a copy per trial,
              grading, the tree check, every report)
  REF         the same with the code at each --baseline-ref (a git worktree), in the same reps
Printed: wall and CPU seconds of the process tree (median of --reps, with the range), the
harness's own CPU (its process alone: `cp`, `rm` and the reviewer left out, so the disk's mood
moves it less), the ratio of the medians, and CPU milliseconds a trial above the floor's; with a
baseline, this code's CPU a trial less the baseline's, paired per rep. Target: copy-only <= 1.5x
the floor at --jobs 4 (issue 42).

    python bench/copy_only.py                     # 200 cases, --jobs 4, 5 reps
    python bench/copy_only.py --cases 50 --reps 3
    python bench/copy_only.py --reps 7 --baseline-ref HEAD~1
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
from bench.peers import Measure, copy_source, floor_row, make_suite, write_stubs  # noqa: E402
from bench.run_memory import _checked_out  # noqa: E402

# The harness's own CPU, printed as its process ends (the CLI leaves by os._exit): the tree's
# figure from wait4 holds every `cp`, `rm` and reviewer too.
OWN_CPU = """import os, resource, runpy, sys
def _exit(code, _real=os._exit):
    own = resource.getrusage(resource.RUSAGE_SELF)
    os.write(2, f"\\nown-cpu {own.ru_utime} {own.ru_stime}\\n".encode())
    _real(code)
os._exit = _exit
sys.argv = ["rubricgate", *sys.argv[1:]]
runpy.run_module("rubricgate", run_name="__main__")
"""


def copy_only_run(code: Path, repo: Path, jobs: int) -> tuple[Measure, float]:
    """One run by the code at `code`: the tree's Measure and the harness's own CPU seconds."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", OWN_CPU, "run", "--repo", str(repo), "--jobs", str(jobs)],
                                cwd=repo.parent, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        own = [line.split() for line in err.read().decode(errors="replace").splitlines() if line.startswith("own-cpu ")]
    shutil.rmtree(repo / "reports", ignore_errors=True)
    measure = Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))
    return measure, (float(own[-1][1]) + float(own[-1][2])) if own else float("nan")


def copy_only(repo: Path) -> None:
    """Switch the suite's agent to copy-only isolation."""
    config = repo / "rubricgate.yaml"
    text = config.read_text()
    if "sandbox: none" not in text:
        config.write_text(text.replace("timeout_s: 60}", "timeout_s: 60, sandbox: none}"))


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--baseline-ref", action="append", default=[], metavar="REF")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rg-bench-copy-only-") as tmp:
        stub, _ = write_stubs(Path(tmp) / "stubs")
        repo = make_suite(Path(tmp) / "suite", args.cases, 50, 1_000_000, stub)
        copy_only(repo)
        source = copy_source(repo)  # what a workspace holds: no .git, no suite
        codes = {"copy-only": ROOT}
        try:
            for i, ref in enumerate(dict.fromkeys(args.baseline_ref)):
                codes[ref] = _checked_out(ref, Path(tmp) / f"ref-{i}" / "code")
            rows, own = measure_rows(codes, repo, source, stub, args)
        finally:
            for code in codes.values():
                if code != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(code)],
                                   capture_output=True)
    print(f"# {args.cases} cases, --jobs {args.jobs}, {args.reps} interleaved reps; median (min-max); "
          f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
    return report(rows, own, args.cases)


def measure_rows(codes: dict[str, Path], repo: Path, source: Path, stub: Path,
                 args) -> tuple[dict[str, list[Measure]], dict[str, list[float]]]:
    """Every row once a rep, the runs of the codes in turns (each rep the other way round)."""
    rows: dict[str, list[Measure]] = {"floor": [], **{label: [] for label in codes}}
    own: dict[str, list[float]] = {label: [] for label in codes}
    for code in codes.values():  # a worktree's first run compiles its bytecode: not measured
        subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--only", "t00000"],
                       cwd=repo.parent, env={**os.environ, "PYTHONPATH": str(code)}, capture_output=True)
        shutil.rmtree(repo / "reports", ignore_errors=True)
    for rep in range(args.reps):  # interleaved: the machine's load drifts over every row alike
        rows["floor"].append(floor_row(source, args.cases, args.jobs, stub))
        for label in list(codes)[:: 1 if rep % 2 == 0 else -1]:
            measure, cpu = copy_only_run(codes[label], repo, args.jobs)
            rows[label].append(measure)
            own[label].append(cpu)
    return rows, own


def report(rows: dict[str, list[Measure]], own: dict[str, list[float]], cases: int) -> int:
    """The table, each run's ratios to the floor of its rep, and this code against each baseline."""
    print("| row | wall s | CPU s | harness's own CPU s | peak RSS MB |\n|---|---|---|---|---|")
    for name, measured in rows.items():
        mine = spread(own[name]) if name in own else "-"
        print(f"| {name} | {spread([m.wall for m in measured])} | {spread([m.cpu for m in measured])} | {mine} | "
              f"{statistics.median(m.rss_mb for m in measured):.0f} |")
    floor = rows["floor"]
    for name in own:
        cpu = statistics.median(m.cpu for m in rows[name])
        print(f"\n{name} / floor: CPU a trial {1000 * cpu / cases:.1f} ms (the harness's own "
              f"{1000 * statistics.median(own[name]) / cases:.1f}) against the floor's "
              f"{1000 * statistics.median(m.cpu for m in floor) / cases:.1f} ms")
        # Each rep ran the rows back to back: their ratio cancels most of the machine's drift.
        for what in ("wall", "cpu"):
            paired = [getattr(c, what) / getattr(f, what) for f, c in zip(floor, rows[name], strict=True)]
            print(f"  paired per rep, {what}: median {statistics.median(paired):.2f}x "
                  f"(range {min(paired):.2f}-{max(paired):.2f}): {', '.join(f'{r:.2f}' for r in paired)}")
    for ref in list(own)[1:]:
        tree = [1000 * (c.cpu - b.cpu) / cases for c, b in zip(rows["copy-only"], rows[ref], strict=True)]
        mine = [1000 * (c - b) / cases for c, b in zip(own["copy-only"], own[ref], strict=True)]
        print(f"\nthis code less {ref}, ms of CPU a trial, paired per rep: the tree {spread(tree)}, "
              f"the harness's own {spread(mine)}")
    bad = [m.code for name in own for m in rows[name] if m.code != 0]
    if bad:
        print(f"copy-only runs exited {bad} (expected 0)")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
