"""A trial's sandbox launch as a run makes it, against the code at --baseline-ref, interleaved.

One sandbox after another through `run_process`, each with what a default run gives a trial:
an overlay workspace over a 50-file snapshot with a case layer (mounted by bwrap itself where it
can, else by `unshare` + `mount`), a scratch folder, the run's staged /etc, the seccomp filter,
the network by allowlist (its own namespace, the proxy's door, the gate), a user namespace lent
from the pool under a root harness; the agent `/bin/true`. Each side runs in a process of its
own with that side's code, the sides alternating round by round. Figures per launch: the CPU of
the side's process and everything it started (a cpuacct cgroup of its own, where cgroup v1's
cpuacct is writable here: bubblewrap's processes are not the harness's children, so wait4 misses
them, and on a shared machine the machine's busy CPU counts the neighbours too), the machine's
busy CPU (`/proc/stat`, which also counts the kernel threads freeing namespaces) and wall,
medians over the rounds with their range.

    python bench/launch_chain.py --baseline-ref HEAD~1 [--rounds 7] [--launches 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def own_group(name: str) -> Path | None:
    """A cpuacct cgroup holding this process (and what it starts from now on), or None."""
    group = CPUACCT / name
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        return None
    return group


def leave_group(group: Path | None) -> None:
    """Back to the top group, with what is left in it (the pool's namespace holders, ended)."""
    if group is None:
        return
    from rubricgate.isolation.identity import NAMESPACES

    NAMESPACES.close()
    for _ in range(100):
        for pid in (group / "cgroup.procs").read_text().split():
            (CPUACCT / "cgroup.procs").write_text(pid)
        try:
            return group.rmdir()
        except OSError:
            time.sleep(0.05)


def group_ms(group: Path | None) -> float:
    return int((group / "cpuacct.usage").read_text()) / 1e6 if group is not None else 0.0


def worker(launches: int, folder: Path) -> dict[str, float]:
    """(run inside a side's process) CPU ms of its cgroup, machine CPU ms and wall ms per launch."""
    from bench.peers import machine_busy
    from rubricgate.isolation.etc_folder import stage_etc
    from rubricgate.isolation.netaccess import network_access
    from rubricgate.isolation.overlay import Overlay, layer_folders, remove_tree
    from rubricgate.isolation.process import run_process
    from rubricgate.isolation.sandbox import SandboxPolicy, probe_layers

    base = folder / "base"
    base.mkdir()
    for i in range(50):
        (base / f"f{i}").write_text("x" * 2000)
    layers_by, _ = probe_layers(folder)
    policy = SandboxPolicy("bwrap", network=network_access("allowlist", [], {}), etc=stage_etc(folder / "run"),
                           layers=True, layers_by=layers_by)
    group = own_group(f"rg-bench-chain-{os.getpid()}")
    own, busy, began = group_ms(group), machine_busy(), time.perf_counter()
    for i in range(launches):
        trial = folder / f"t{i}"
        case, upper, work, target = layer_folders(trial / "layers", trial / "mnt")
        (scratch := trial / "scratch").mkdir()
        trial_policy = replace(policy, overlay=Overlay((case, base), upper, work, target))
        res = run_process(["/bin/true"], cwd=folder / "view" / "ws", env={"PATH": "/usr/bin:/bin"}, timeout_s=30,
                          output_cap_bytes=100_000, stdout_path=trial / "out.txt", sandbox=trial_policy,
                          writable=[scratch])
        if res.exit_code != 0:
            raise SystemExit(f"a sandbox failed: {res.stderr_tail or res.start_error}")
        remove_tree(trial)
    figures = {"own": (group_ms(group) - own) / launches, "cpu": (machine_busy() - busy) * 1000 / launches,
               "wall": (time.perf_counter() - began) * 1000 / launches}
    leave_group(group)
    return figures


def side(tree: Path, launches: int) -> dict[str, float]:
    """One side's figures, from a process running the code in `tree`."""
    with tempfile.TemporaryDirectory(prefix="bench-chain-") as tmp:
        code = (f"import sys, json; sys.path[:0] = [{str(tree)!r}, {str(ROOT)!r}]; from pathlib import Path; "
                f"import runpy; w = runpy.run_path({str(Path(__file__))!r})['worker']; "
                f"print(json.dumps(w({launches}, Path({tmp!r}))))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp,
                              env={**os.environ, "PYTHONPATH": str(tree)})
    if done.returncode:
        raise SystemExit(f"{tree}: {done.stderr[-800:]}")
    return json.loads(done.stdout.splitlines()[-1])


def worktree(ref: str, dest: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(dest), ref], check=True)
    return dest


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--launches", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-chain-ref-") as tmp:
        sides = {"this code": ROOT, args.baseline_ref: worktree(args.baseline_ref, Path(tmp) / "code")}
        try:
            figures: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
            for rnd in range(args.rounds):
                for name in (list(sides) if rnd % 2 else list(sides)[::-1]):
                    figures[name].append(side(sides[name], args.launches))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(sides[args.baseline_ref])])
    print(f"{args.rounds} rounds of {args.launches} launches each side, interleaved; uid {os.geteuid()}, "
          f"load {os.getloadavg()[0]:.2f} at the end")
    for name, rows in figures.items():
        print(f"  {name:<16} own CPU ms a launch {spread([r['own'] for r in rows]):<20} machine CPU ms "
              f"{spread([r['cpu'] for r in rows]):<22} wall ms {spread([r['wall'] for r in rows])}")
    for key, label in (("own", "own CPU"), ("cpu", "machine CPU")):
        new, old = (statistics.median(r[key] for r in figures[n]) for n in sides)
        if old:
            print(f"  ratio, {label}: {new / old:.2f}x ({old - new:+.2f} ms a launch saved)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
