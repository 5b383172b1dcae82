"""Peak memory of a big run, against the code at a baseline ref measured in the same run.

The suite of `bench/peers.py`'s 2,000-case row (its stub reviewer printing a 39-line Claude
transcript in the sandbox, a 50-file tree, one trial a case, the strict gate) is run with
`rubricgate run --jobs 4` by this code and by the code at each --baseline-ref (a git worktree),
the rounds interleaved. Per run: the peak RSS of the harness process (ru_maxrss from wait4: the
sandboxes are other processes) and its RSS by phase, sampled every 20 ms and placed by the run's
own events: once the suite is loaded (run_started), at the last trial's result, and the most after
it ("after trials": aggregation and the reports). Medians of --reps rounds, the spread beside them.

    python bench/run_memory.py [--cases 2000] [--reps 3] [--baseline-ref REF ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.peers import event_stamps, make_suite, write_stubs  # noqa: E402
from bench.startup import worktree  # noqa: E402

TARGET_MB = 60.0  # a 2,000-case run (issue 42)
PHASES = ("loaded", "last trial", "after trials")


def sampled_run(code: Path, repo: Path) -> dict[str, float]:
    """One `rubricgate run` by the code in `code`: its peak RSS and the RSS at each phase (MB)."""
    shutil.rmtree(repo / "reports", ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code)
    proc = subprocess.Popen([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--jobs", "4"],
                            cwd=repo.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples: list[tuple[float, float]] = []
    sampler = threading.Thread(target=_sample, args=(proc.pid, samples), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"the run by {code} exited {proc.returncode}")
    return {"rss": usage.ru_maxrss / 1024, **_phases(repo, samples)}


def _sample(pid: int, samples: list[tuple[float, float]]) -> None:
    """(time, RSS MB) every 20 ms until the process is gone (its /proc entry stays until reaped)."""
    status = Path(f"/proc/{pid}/status")
    while True:
        try:
            text = status.read_text()
        except OSError:
            return
        rss = next((line.split()[1] for line in text.splitlines() if line.startswith("VmRSS")), None)
        if rss is None:  # a zombie: exited, not yet reaped
            return
        samples.append((time.time(), int(rss) / 1024))
        time.sleep(0.02)


def _phases(repo: Path, samples: list[tuple[float, float]]) -> dict[str, float]:
    """The RSS when the run started its trials, at its last trial's result, and the most after it."""
    stamps = event_stamps(repo / "reports")
    started, last = stamps["run_started"][0], max(stamps["trial_result"])

    def at(moment: float) -> float:
        before = [rss for when, rss in samples if when <= moment]
        return before[-1] if before else 0.0

    after = [rss for when, rss in samples if when >= last] or [0.0]
    return {"loaded": at(started), "last trial": at(last), "after trials": max(after)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline-ref", action="append", default=[], metavar="REF")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rubricgate-bench-memory-") as tmp:
        work = Path(tmp)
        stub, _ = write_stubs(work / "stubs")
        repo = make_suite(work / "suite", args.cases, 50, 50_000, stub)
        codes = {"this code": ROOT}
        try:
            for i, ref in enumerate(dict.fromkeys(args.baseline_ref)):
                codes[ref] = _checked_out(ref, work / f"ref-{i}" / "code")
            runs: dict[str, list[dict[str, float]]] = {label: [] for label in codes}
            for _ in range(args.reps):
                for label, code in codes.items():
                    runs[label].append(sampled_run(code, repo))
        finally:
            for code in codes.values():
                if code != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(code)],
                                   capture_output=True)
    return report(runs, args.cases, args.reps)


def _checked_out(ref: str, tree: Path) -> Path:
    """The code at `ref` in a worktree; a ref git does not know ends the bench with one line."""
    known = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                           capture_output=True)
    if known.returncode:
        raise SystemExit(f"--baseline-ref {ref}: no such commit in {ROOT} (fix: name a commit, e.g. HEAD~1)")
    return worktree(ref, tree)


def report(runs: dict[str, list[dict[str, float]]], cases: int, reps: int) -> int:
    """The table: medians (min-max) per code, and this code's peak against each baseline's."""
    target = f"; target peak <= {TARGET_MB:.0f} MB" if cases >= 2000 else " (the target is set for 2,000 cases)"
    print(f"{cases} cases, `run --jobs 4`, medians of {reps} (min-max), MB{target}")
    print(f"{'code':24} {'peak RSS':>18} " + " ".join(f"{p:>18}" for p in PHASES))
    for label, measured in runs.items():
        cells = [_cell([m[key] for m in measured]) for key in ("rss", *PHASES)]
        print(f"{label:24} " + " ".join(f"{c:>18}" for c in cells))
    ours = statistics.median(m["rss"] for m in runs["this code"])
    for label, measured in runs.items():
        if label != "this code":
            print(f"this code against {label}: {ours / statistics.median(m['rss'] for m in measured):.2f}x")
    if cases < 2000:  # the target is set for 2,000 cases
        return 0
    print(f"target: {'met' if ours <= TARGET_MB else 'not met'} ({ours:.1f} MB)")
    return 0 if ours <= TARGET_MB else 1


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


if __name__ == "__main__":
    sys.exit(main())
