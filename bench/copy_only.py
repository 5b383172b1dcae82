"""Copy-only runs (`agent.sandbox: none`) against the `cp -r` floor, measured side by side.

The suite and stub reviewer are bench/peers.py's (200 tasks, a 50-file 1 MB tree, a shell
script printing a 39-line Claude-format stream). Rows, interleaved and repeated:
  floor       a Python thread pool; per case `cp -r` of the tree, the stub in the copy, `rm -r`
  copy-only   `python -m rubricgate run --jobs J` with `agent.sandbox: none` (a copy per trial,
              grading, the tree check, every report)
Printed: wall and CPU seconds of the process tree (median of --reps, with the range), the ratio
of the medians, and CPU milliseconds a trial above the floor's. Target: copy-only <= 1.5x the
floor at --jobs 4 (issue 42).

    python bench/copy_only.py                     # 200 cases, --jobs 4, 5 reps
    python bench/copy_only.py --cases 50 --reps 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.peers import Measure, copy_source, floor_row, make_suite, rubricgate_row, write_stubs  # noqa: E402


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
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rg-bench-copy-only-") as tmp:
        stub, _ = write_stubs(Path(tmp) / "stubs")
        repo = make_suite(Path(tmp) / "suite", args.cases, 50, 1_000_000, stub)
        copy_only(repo)
        source = copy_source(repo)  # what a workspace holds: no .git, no suite
        rows: dict[str, list[Measure]] = {"floor": [], "copy-only": []}
        for _ in range(args.reps):  # interleaved: the machine's load drifts over both rows alike
            rows["floor"].append(floor_row(source, args.cases, args.jobs, stub))
            rows["copy-only"].append(rubricgate_row(repo, args.jobs))
    bad = [m.code for m in rows["copy-only"] if m.code != 0]
    print(f"# {args.cases} cases, --jobs {args.jobs}, {args.reps} interleaved reps; median (min-max); "
          f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
    print("| row | wall s | CPU s | peak RSS MB |\n|---|---|---|---|")
    for name, measured in rows.items():
        print(f"| {name} | {spread([m.wall for m in measured])} | {spread([m.cpu for m in measured])} | "
              f"{statistics.median(m.rss_mb for m in measured):.0f} |")
    wall = {n: statistics.median(m.wall for m in ms) for n, ms in rows.items()}
    cpu = {n: statistics.median(m.cpu for m in ms) for n, ms in rows.items()}
    print(f"\ncopy-only / floor, ratio of the medians: wall {wall['copy-only'] / wall['floor']:.2f}x, "
          f"CPU {cpu['copy-only'] / cpu['floor']:.2f}x; CPU a trial {1000 * cpu['copy-only'] / args.cases:.1f} ms "
          f"against the floor's {1000 * cpu['floor'] / args.cases:.1f} ms")
    # Each rep ran the two rows back to back: their ratio cancels most of the machine's drift.
    for what in ("wall", "cpu"):
        paired = [getattr(c, what) / getattr(f, what) for f, c in zip(rows["floor"], rows["copy-only"], strict=True)]
        print(f"paired per rep, {what}: median {statistics.median(paired):.2f}x "
              f"(range {min(paired):.2f}-{max(paired):.2f}): {', '.join(f'{r:.2f}' for r in paired)}")
    if bad:
        print(f"copy-only runs exited {bad} (expected 0)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
