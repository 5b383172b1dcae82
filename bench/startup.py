"""Start-up cost of the commands that run nothing: wall time and peak RSS, against baselines
measured in the same run.

Baselines: a bare interpreter (`python -c pass`), the floor of any click + pydantic + PyYAML CLI
(importing the three), the floor plus one pydantic model (pydantic loads BaseModel's machinery
lazily, so the floor alone does not include it), and, when both are installed, what importing
pandas + matplotlib.pyplot costs on top of the floor (what an eager import would add to every
command; both are imported only where used). Each command runs in a fresh process, medians of --reps rounds after
one warm-up round, the rows interleaved; peak RSS is the child's ru_maxrss from wait4. `agents`
asks every agent CLI on PATH for its version (those are other programs' start-ups), so it is
measured twice: with the CLIs hidden (rubricgate's own cost) and with the real PATH.

Bytecode: the libraries of the floor are byte-compiled (pip compiles on install), and so is an
installed rubricgate, so the rows run with a private PYTHONPYCACHEPREFIX (a temp folder: the tree
stays clean) even when PYTHONDONTWRITEBYTECODE is set. One extra row shows `validate` with no
bytecode cache at all (every rubricgate module compiled from source on every start), as a machine
with PYTHONDONTWRITEBYTECODE=1 and an editable install runs it.

    python bench/startup.py [--reps 5]

Targets: `--help`, `validate`, `agents`, `changed` under 0.5 s
and 60 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
TARGET_S, TARGET_MB = 0.5, 60.0
MODEL = "import click, pydantic, yaml\nclass M(pydantic.BaseModel):\n    x: int = 0\nM(x=1)"


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS MB, exit code) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def round_robin(table: list, reps: int) -> list[tuple[float, float, float, int]]:
    """Medians per row, the rows interleaved so a load change on a shared machine hits all alike.

    A first, unmeasured round fills the bytecode cache and the OS file cache."""
    runs: list[list[tuple[float, float, float, int]]] = [[] for _ in table]
    for _, argv, env, _ in table:
        measure(argv, env, ROOT)
    for _ in range(reps):
        for i, (_, argv, env, _) in enumerate(table):
            runs[i].append(measure(argv, env, ROOT))
    return [(*(statistics.median(r[k] for r in row) for k in range(3)), row[-1][3]) for row in runs]


def hidden_clis_path() -> str:
    """A PATH with git and the shell tools but none of the agent CLIs (a folder of symlinks)."""
    folder = Path(tempfile.mkdtemp(prefix="rubricgate-bench-path-"))
    for tool in ("git", "sh", "env"):
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if (Path(d) / tool).is_file():
                (folder / tool).symlink_to(Path(d) / tool)
                break
    return str(folder)


def rows(env: dict[str, str], bare: dict[str, str], cold: dict[str, str]) \
        -> list[tuple[str, list[str], dict[str, str], bool]]:
    """(label, argv, env, is a target row)."""
    cli = [PY, "-m", "rubricgate"]
    return [
        ("python -c pass (baseline)", [PY, "-c", "pass"], env, False),
        ("import click+pydantic+yaml (floor)", [PY, "-c", "import click, pydantic, yaml"], env, False),
        # What any pydantic CLI pays before its own code: BaseModel's machinery (the floor imports
        # pydantic lazily, without it) and building one small model.
        ("floor + one pydantic model", [PY, "-c", MODEL], env, False),
        *([("floor + pandas + matplotlib.pyplot", [PY, "-c", "import click, pydantic, yaml, pandas, matplotlib.pyplot"],
            env, False)] if find_spec("pandas") and find_spec("matplotlib") else []),
        ("rubricgate --help", [*cli, "--help"], env, True),
        ("rubricgate validate", [*cli, "validate"], env, True),
        ("rubricgate validate (no bytecode cache)", [*cli, "validate"], cold, False),
        ("rubricgate changed --base HEAD", [*cli, "changed", "--base", "HEAD"], env, True),
        ("rubricgate agents (CLIs hidden)", [*cli, "agents"], bare, True),
        ("rubricgate agents (real PATH)", [*cli, "agents"], env, False),
    ]


def environments(pyc: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(bytecode cached in `pyc`, the same with the agent CLIs hidden, no bytecode cache at all)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env = {**base, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": pyc}
    return env, {**env, "PATH": hidden_clis_path()}, {**base, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    print(f"start-up, median of {reps} fresh processes (target < {TARGET_S} s and < {TARGET_MB:.0f} MB)")
    print(f"{'command':40} {'wall s':>7} {'CPU s':>6} {'RSS MB':>7} {'x floor':>8}  verdict")
    with tempfile.TemporaryDirectory(prefix="rubricgate-bench-pyc-") as pyc:
        table = rows(*environments(pyc))
        results = round_robin(table, reps)
    floor = None
    misses = 0
    for (label, _, _, target), (wall, cpu, rss, code) in zip(table, results):
        floor = wall if "floor)" in label else floor
        ratio = f"{wall / floor:7.2f}x" if floor else "       -"
        verdict = ""
        if target:
            ok = wall < TARGET_S and rss < TARGET_MB and code == 0
            misses += not ok
            verdict = "ok" if ok else f"MISS (exit {code})" if code else "MISS"
        print(f"{label:40} {wall:7.3f} {cpu:6.3f} {rss:7.1f} {ratio}  {verdict}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
