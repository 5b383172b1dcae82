"""The sandbox's /etc staged as one folder (isolation/etc_folder.py) against one bind per entry.

One sandbox after another through rubricgate's own `run_process` (its mounts and flags, the
shared network so no proxy runs), each running `/bin/true`, the two ways interleaved round by
round: CPU ms per launch of the whole machine (`/proc/stat`, so bubblewrap's processes count:
wait4 never sees what ran in its PID namespace) and wall ms per launch, medians over the rounds
with their range, and the ratio. Also the number of mounts each way makes, from the sandbox's
own /proc/self/mountinfo.

    python bench/etc_binds.py                 # 7 rounds of 100 launches each way
    python bench/etc_binds.py --rounds 3 --launches 50
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.copy_only import spread  # noqa: E402
from bench.peers import machine_busy  # noqa: E402
from rubricgate.isolation.etc_folder import stage_etc  # noqa: E402
from rubricgate.isolation.netaccess import NetworkAccess  # noqa: E402
from rubricgate.isolation.process import run_process  # noqa: E402
from rubricgate.isolation.sandbox import SandboxPolicy, probe_bwrap  # noqa: E402


def launches(policy: SandboxPolicy, work: Path, count: int, argv: list[str]) -> tuple[float, float]:
    """(machine CPU ms, wall ms) per launch of `count` sandboxes one after another."""
    busy, began = machine_busy(), time.perf_counter()
    for _ in range(count):
        res = run_process(argv, cwd=work, env={"PATH": "/usr/bin:/bin"}, timeout_s=30, output_cap_bytes=100_000,
                          stdout_path=work.parent / "out.txt", sandbox=policy)
        if res.exit_code != 0:
            raise SystemExit(f"a sandbox failed: {res.stderr_tail or res.start_error}")
    return (machine_busy() - busy) * 1000 / count, (time.perf_counter() - began) * 1000 / count


def mounts(policy: SandboxPolicy, work: Path) -> int:
    launches(policy, work, 1, ["/bin/sh", "-c", "cat /proc/self/mountinfo"])
    return len((work.parent / "out.txt").read_text().splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--launches", type=int, default=100)
    args = parser.parse_args()
    if problem := probe_bwrap():
        print(f"skipped: {problem}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-etc-") as tmp:
        work = Path(tmp) / "ws"
        work.mkdir()
        shared = SandboxPolicy("bwrap", network=NetworkAccess(mode="shared"))
        ways = {"a bind per entry": shared, "one staged folder": replace(shared, etc=stage_etc(Path(tmp)))}
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, policy in ways.items():
                figures[name].append(launches(policy, work, args.launches, ["/bin/true"]))
        print(f"{args.rounds} rounds of {args.launches} launches each way, interleaved")
        print(f"{'/etc':<20} {'mounts':>6}  {'machine CPU ms a launch':<26} {'wall ms a launch':<24}")
        for name, policy in ways.items():
            cpu, wall = [f[0] for f in figures[name]], [f[1] for f in figures[name]]
            print(f"{name:<20} {mounts(policy, work):>6}  {spread(cpu):<26} {spread(wall):<24}")
        base, staged = (statistics.median(f[0] for f in figures[n]) for n in ways)
        print(f"ratio, machine CPU: {staged / base:.2f}x ({base - staged:+.2f} ms a launch saved)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
