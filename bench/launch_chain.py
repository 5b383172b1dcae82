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

With --run-cases N, whole runs instead: `rubricgate run --jobs J` of bench/peers.py's N-case
small suite (its stub reviewer), each side's code in turn, every run's whole process tree in a
cpuacct cgroup of its own: its CPU, the machine's busy CPU and wall per run.

    python bench/launch_chain.py --baseline-ref HEAD~1 [--rounds 7] [--launches 60]
    python bench/launch_chain.py --baseline-ref HEAD~1 --run-cases 200 [--rounds 7] [--jobs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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


def run_figures(tree: Path, repo: Path, jobs: int) -> dict[str, float]:
    """One `rubricgate run` with the code in `tree`: its tree's CPU s (it joins a cpuacct group
    of its own before it execs the interpreter), the machine's busy CPU s and wall s."""
    from bench.peers import machine_busy

    group = CPUACCT / f"rg-bench-run-{os.getpid()}"
    group.mkdir()
    join = (f"import os, sys; open({str(group / 'cgroup.procs')!r}, 'w').write(str(os.getpid())); "
            f"os.execv(sys.executable, [sys.executable, '-m', 'rubricgate', 'run', '--repo', {str(repo)!r}, "
            f"'--jobs', '{jobs}'])")
    busy, began = machine_busy(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", join], cwd=repo.parent, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    figures = {"cpu": machine_busy() - busy, "wall": time.perf_counter() - began}
    for _ in range(100):  # what the run left (its namespace holders) ends with it
        for pid in (group / "cgroup.procs").read_text().split():
            (CPUACCT / "cgroup.procs").write_text(pid)
        try:
            figures["own"] = int((group / "cpuacct.usage").read_text()) / 1e9
            group.rmdir()
            break
        except OSError:
            time.sleep(0.05)
    shutil.rmtree(repo / "reports", ignore_errors=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-800:]}")
    return figures


def run_sides(sides: dict[str, Path], cases: int, jobs: int, rounds: int) -> dict[str, list[dict[str, float]]]:
    """Whole runs of the `cases`-case suite, the sides alternating run by run."""
    from bench.peers import TREES, bench_folders, make_suite, write_stubs

    figures: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    with bench_folders("rubricgate-chain-") as (work, stubs):
        repo = make_suite(work / "suite" / "repo", cases, *TREES["small"], write_stubs(stubs)[0])
        for rnd in range(rounds):
            for name in (list(sides) if rnd % 2 else list(sides)[::-1]):
                figures[name].append(run_figures(sides[name], repo, jobs))
    return figures


def worktree(ref: str, dest: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(dest), ref], check=True)
    return dest


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def report(figures: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    unit, what = (("s", f"runs of {args.run_cases} cases at --jobs {args.jobs}") if args.run_cases
                  else ("ms", f"rounds of {args.launches} launches"))
    print(f"{args.rounds} {what} each side, interleaved; uid {os.geteuid()}, load {os.getloadavg()[0]:.2f} at the end")
    for name, rows in figures.items():
        print(f"  {name:<16} its tree's CPU {unit} {spread([r['own'] for r in rows]):<20} machine CPU {unit} "
              f"{spread([r['cpu'] for r in rows]):<22} wall {unit} {spread([r['wall'] for r in rows])}")
    for key, label in (("own", "its tree's CPU"), ("cpu", "machine CPU")):
        new, old = (statistics.median(r[key] for r in figures[n]) for n in figures)
        if old:
            print(f"  ratio, {label}: {new / old:.2f}x ({old - new:+.2f} {unit} saved)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--launches", type=int, default=60)
    parser.add_argument("--run-cases", type=int, default=0, help="whole runs of this many cases instead")
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    if args.run_cases and not os.access(CPUACCT, os.W_OK):
        raise SystemExit(f"--run-cases needs a writable {CPUACCT} (cgroup v1's cpuacct, as root)")
    with tempfile.TemporaryDirectory(prefix="bench-chain-ref-") as tmp:
        sides = {"this code": ROOT, args.baseline_ref: worktree(args.baseline_ref, Path(tmp) / "code")}
        try:
            figures: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
            if args.run_cases:
                figures = run_sides(sides, args.run_cases, args.jobs, args.rounds)
            for rnd in range(0 if args.run_cases else args.rounds):
                for name in (list(sides) if rnd % 2 else list(sides)[::-1]):
                    figures[name].append(side(sides[name], args.launches))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(sides[args.baseline_ref])])
    report(figures, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
