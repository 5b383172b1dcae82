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

A 1-case `run` (the builtin reviewer on one case of a copy of this repository, committed in a
temp git repository, its reports folder emptied before every round so no history grows) is
measured the same way, CPU of the whole process tree (user + system of the run and every process
it waited for: git, bubblewrap) and its peak RSS: what a run costs before its trials, the fixed
part of every run. Its `import` row beside it is what the run loads (`python -X importtime`
sums the self times of every module) and the `jinja2 templates` row what rendering its
report.html costs on its own (the template compile a bytecode cache saves). The whole shipped
suite run the same way is the README's first command (no target: it follows the suite's size).

    python bench/startup.py [--reps 5] [--baseline-ref REF ...]

With --baseline-ref, the 1-case and whole-suite runs are measured again with the code at each REF (a git worktree
of it on PYTHONPATH), in the same rounds: e.g. 656987e^ (2026-12-02, before the run drew matplotlib
charts) and 75c5671 (before they were taken off the run).

Targets: `--help`, `validate`, `agents`, `changed` under 0.5 s and 60 MB; a 1-case `run` under
0.35 s CPU and 45 MB.
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
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
TARGET_S, TARGET_MB = 0.5, 60.0
RUN_CPU_S, RUN_MB = 0.35, 45.0  # a 1-case run (issue 42): CPU of the process tree, peak RSS
ONE_CASE = "block-missing-description"
MODEL = "import click, pydantic, yaml\nclass M(pydantic.BaseModel):\n    x: int = 0\nM(x=1)"
_emptied: list[Path] = []  # reports folders emptied before every measured process


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS MB, exit code) of one fresh process; CPU includes
    every process it waited for (wait4 reports a child's tree)."""
    for reports in _emptied:  # a run's history must not grow between rounds
        shutil.rmtree(reports, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def round_robin(table: list, reps: int) -> list[tuple[float, float, float, int, str]]:
    """Medians per row (and the CPU's spread, min-max), the rows interleaved so a load change on a
    shared machine hits all alike.

    A first, unmeasured round fills the bytecode cache and the OS file cache."""
    runs: list[list[tuple[float, float, float, int]]] = [[] for _ in table]
    for _, argv, env, _ in table:
        measure(argv, env, _cwd(env))
    for _ in range(reps):
        for i, (_, argv, env, _) in enumerate(table):
            runs[i].append(measure(argv, env, _cwd(env)))
    return [(*(statistics.median(r[k] for r in row) for k in range(3)), row[-1][3],
             f"{min(r[1] for r in row):.3f}-{max(r[1] for r in row):.3f}") for row in runs]


def _cwd(env: dict[str, str]) -> Path:
    """Where a row runs: the code it measures (`python -m` puts the working folder first on sys.path)."""
    return Path(env.get("PYTHONPATH") or ROOT)


def hidden_clis_path() -> str:
    """A PATH with git and the shell tools but none of the agent CLIs (a folder of symlinks)."""
    folder = Path(tempfile.mkdtemp(prefix="rubricgate-bench-path-"))
    for tool in ("git", "sh", "env"):
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if (Path(d) / tool).is_file():
                (folder / tool).symlink_to(Path(d) / tool)
                break
    return str(folder)


def worktree(ref: str, tree: Path) -> Path:
    """The code at `ref`, checked out beside (removed at the end)."""
    tree.parent.mkdir(parents=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), ref], check=True)
    return tree


def repo_copy(into: Path, source: Path = ROOT) -> Path:
    """`source`'s tracked files (this repository, or the code at a baseline ref with its own suite
    and config), committed in a fresh git repository (a run's start digests the tree and lists
    it with git)."""
    repo = into / "repo"
    listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if (source / rel).is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, repo / rel)
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    _emptied.append(repo / "reports")
    return repo


def rows(env: dict[str, str], bare: dict[str, str], cold: dict[str, str], repo: Path,
         baselines: dict[str, Path] | None = None) -> list[tuple[str, list[str], dict[str, str], bool]]:
    """(label, argv, env, is a target row)."""
    cli = [PY, "-m", "rubricgate"]
    one_case = [*cli, "run", "--repo", str(repo), "--only", ONE_CASE]
    earlier = []
    for ref, tree in (baselines or {}).items():
        suite, at_ref = repo_copy(tree.parent / "suite", tree), {**env, "PYTHONPATH": str(tree)}
        earlier += [(f"run, 1 case, at {ref}", [*cli, "run", "--repo", str(suite), "--only", ONE_CASE], at_ref, False),
                    (f"run, whole suite, at {ref}", [*cli, "run", "--repo", str(suite)], at_ref, False)]
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
        *earlier,
        ("rubricgate run, 1 case (builtin)", one_case, env, True),
        # The README's first command: the builtin reviewer on every case of the shipped suite.
        ("rubricgate run, whole suite (builtin)", [*cli, "run", "--repo", str(repo)], env, False),
    ]


def environments(pyc: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(bytecode cached in `pyc`, the same with the agent CLIs hidden, no bytecode cache at all)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env = {**base, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": pyc}
    return env, {**env, "PATH": hidden_clis_path()}, {**base, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--baseline-ref", action="append", default=[], metavar="REF")
    args = parser.parse_args()
    reps = args.reps
    print(f"start-up, median of {reps} fresh processes (target < {TARGET_S} s and < {TARGET_MB:.0f} MB)")
    print(f"{'command':40} {'wall s':>7} {'CPU s':>6} {'RSS MB':>7} {'x floor':>8}  verdict")
    with tempfile.TemporaryDirectory(prefix="rubricgate-bench-pyc-") as pyc:
        env = environments(pyc)
        trees = {ref: worktree(ref, Path(pyc) / f"ref-{i}" / "code") for i, ref in enumerate(args.baseline_ref)}
        table = rows(*env, repo_copy(Path(pyc)), trees)
        try:
            results = round_robin(table, reps)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
        floor = None
        misses = 0
        for (label, _, _, target), (wall, cpu, rss, code, spread) in zip(table, results):
            floor = wall if "floor)" in label else floor
            ratio = f"{wall / floor:7.2f}x" if floor else "       -"
            verdict = ""
            if target:
                ok = _met(label, wall, cpu, rss) and code == 0
                misses += not ok
                verdict = "ok" if ok else f"MISS (exit {code})" if code else "MISS"
            note = f" (exit {code})" if code and not target else ""
            print(f"{label:40} {wall:7.3f} {cpu:6.3f} {rss:7.1f} {ratio}  {verdict:5} CPU {spread}{note}")
        print(one_case_costs(table[-1][1], env[0]))
    return 1 if misses else 0


def _met(label: str, wall: float, cpu: float, rss: float) -> bool:
    if label.startswith("rubricgate run"):
        return cpu < RUN_CPU_S and rss < RUN_MB
    return wall < TARGET_S and rss < TARGET_MB


def one_case_costs(argv: list[str], env: dict[str, str]) -> str:
    """Where a 1-case run's time goes: the modules it imports (self times of -X importtime, the
    heaviest named) and its report's template compile (jinja2 with and without its bytecode cache)."""
    got = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=ROOT, capture_output=True, text=True)
    rows_ = [line.split("|") for line in got.stderr.splitlines() if line.startswith("import time:") and "self" not in line]
    mods = [(int(r[0].split(":")[1]), r[2].strip()) for r in rows_]
    heavy = ", ".join(f"{name} {us / 1000:.0f} ms" for us, name in sorted(mods, reverse=True)[:6])
    libs = {top: sum(us for us, name in mods if name.split(".")[0] == top) / 1000
            for top in ("rubricgate", "pydantic", "pydantic_core", "click", "yaml", "jinja2", "markupsafe",
                        "numpy", "matplotlib", "pandas")}
    loaded = ", ".join(f"{k} {v:.0f} ms" for k, v in libs.items() if v)
    return (f"1-case run imports (-X importtime self times, inflated by the timing itself): {len(mods)} modules, "
            f"{sum(us for us, _ in mods) / 1000:.0f} ms; by package: {loaded}; heaviest: {heavy}")


if __name__ == "__main__":
    sys.exit(main())
