"""Who mounts a trial's overlay, measured: bubblewrap itself (>= 0.11) against `unshare` + `mount`.

Two figures, each against the other way measured in the same run:
  launch   one sandbox after another, as a trial starts it (the overlay of a 50-file snapshot
           with a case layer, rubricgate's mounts and flags), running `test -f`: wall per launch
  run      `python -m rubricgate run --jobs J` on a generated suite, the two ways interleaved
           round by round; each run's first event is checked for the mount it used

bubblewrap 0.8 (Debian 12) has no `--overlay`; point --bwrap at a folder holding one that does
(`.ci/build-bwrap.sh` builds 0.12 into /opt/rubricgate-bwrap-0.12).

    python bench/overlay_mounts.py --bwrap /opt/rubricgate-bwrap-0.12 [--cases 200] [--reps 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.peers import TREES, bench_folders, make_suite, write_stubs  # noqa: E402
from rubricgate.isolation.netaccess import NetworkAccess  # noqa: E402
from rubricgate.isolation.overlay import Overlay, layer_folders, remove_tree  # noqa: E402
from rubricgate.isolation.sandbox import SandboxPolicy, probe_layers, wrap  # noqa: E402

MOUNTS = ("unshare", "bwrap")


def launch_ms(by: str, folder: Path, base: Path, launches: int) -> float:
    """Mean wall ms of `launches` sandboxes started one after another, overlays mounted `by`."""
    started = time.perf_counter()
    for i in range(launches):
        trial = folder / f"t{i}"
        overlay = Overlay((layer_folders(trial, trial / "m")[0], base), trial / "upper", trial / "work", trial / "m")
        policy = SandboxPolicy("bwrap", layers=True, layers_by=by, overlay=overlay,  # type: ignore[arg-type]
                               network=NetworkAccess("shared"))  # the mounts alone
        cwd = folder / "view" / "repo"
        read_fd, write_fd = os.pipe()
        argv, payload = wrap(policy, ["/usr/bin/test", "-f", str(cwd / "f0")], cwd=cwd,
                             env={"PATH": "/usr/bin:/bin"}, args_fd=read_fd)
        os.write(write_fd, payload)
        os.close(write_fd)
        done = subprocess.run(argv, pass_fds=(read_fd,), capture_output=True)
        os.close(read_fd)
        if done.returncode:
            raise SystemExit(f"{by}: the sandbox failed: {done.stderr.decode(errors='replace')[-300:]}")
        remove_tree(trial)
    return (time.perf_counter() - started) / launches * 1000


def run_s(repo: Path, jobs: int, env: dict[str, str], by: str) -> float:
    """Wall seconds of one `rubricgate run`, after checking it mounted its overlays `by`."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--jobs", str(jobs)],
                          cwd=repo.parent, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    run_dir = next((repo / "reports").iterdir())
    used = json.loads((run_dir / "events.jsonl").read_text().splitlines()[0])["workspaces"]
    shutil.rmtree(repo / "reports")
    if done.returncode or used != f"overlay (mounted by {by})":
        raise SystemExit(f"{by}: exit {done.returncode}, workspaces {used!r}\n{done.stderr[-500:]}")
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bwrap", required=True, help="folder holding a bubblewrap >= 0.11")
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--launches", type=int, default=60)
    args = parser.parse_args()
    paths = {"unshare": os.environ.get("PATH", "/usr/bin:/bin"),
             "bwrap": f"{args.bwrap}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"}
    with bench_folders("rubricgate-mounts-") as (work, stubs):
        os.environ["PATH"] = paths["bwrap"]
        if probe_layers()[0] != "bwrap":
            raise SystemExit(f"no bubblewrap with --overlay in {args.bwrap}")
        base = work / "base"
        base.mkdir()
        for i in range(50):
            (base / f"f{i}").write_text("x" * 20_000)
        launches: dict[str, list[float]] = {by: [] for by in MOUNTS}
        for _ in range(3):
            for by in MOUNTS:
                os.environ["PATH"] = paths[by]
                launches[by].append(launch_ms(by, work / f"launch-{by}", base, args.launches))
        print(f"overlay mounts: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, bubblewrap with --overlay "
              f"in {args.bwrap}")
        for by in MOUNTS:
            print(f"  launch, mounted by {by:8} {statistics.median(launches[by]):6.2f} ms (median of 3 x "
                  f"{args.launches})")
        repo = make_suite(work / "suite" / "repo", args.cases, *TREES["small"], write_stubs(stubs)[0])
        runs: dict[str, list[float]] = {by: [] for by in MOUNTS}
        for rep in range(args.reps):
            for by in (MOUNTS if rep % 2 == 0 else MOUNTS[::-1]):
                env = {**os.environ, "PATH": paths[by], "PYTHONPATH": str(ROOT)}
                runs[by].append(run_s(repo, args.jobs, env, by))
        for by in MOUNTS:
            print(f"  run, {args.cases} cases, --jobs {args.jobs}, mounted by {by:8} "
                  f"{statistics.median(runs[by]):6.2f} s (median of {args.reps}, range "
                  f"{min(runs[by]):.2f}-{max(runs[by]):.2f})")
        launch_ratio = statistics.median(launches["bwrap"]) / statistics.median(launches["unshare"])
        run_ratio = statistics.median(runs["bwrap"]) / statistics.median(runs["unshare"])
        print(f"  bwrap's own / unshare: launch {launch_ratio:.2f}x, run {run_ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
