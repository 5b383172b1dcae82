"""Running the suite against each mutant: a temp copy of the repository per mutant, never the
user's tree, and `rubricgate run` in a process of its own (its signal handlers, sandbox probes and
run state are per process), several at once (--jobs).

Each run is an ordinary `rubricgate run` of the copy against the repository's baseline, with the
repository's config (or --config), its agent (or --agent) and its agent.jobs; under the
statistical gate it takes adaptive rounds like any run. Its outcome is classified:
  killed     a case failed (exit 1): the suite sees the edit
  rejected   the suite no longer loads (a case names a deleted rule): the edit cannot pass unseen
  flagged    INCONCLUSIVE (exit 2): no case exercises the changed rule; coverage, not the suite, caught it
  undecided  INCONCLUSIVE (exit 2) otherwise: a noisy reviewer, and the trial budget could not settle it
             (an INCONCLUSIVE for errored trials, a changed gate setting or an edited case is an error)
  survived   the run passed (exit 0)
  error      the run could not judge for another reason (see `detail`)
  not_run    the --max-cost budget was spent before it started, or the mutate was stopped
             (Ctrl-C, SIGTERM) before it or while it ran (mutate/stopping.py)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import rubricgate
from rubricgate import boundary
from rubricgate.isolation.leftovers import owned_folder, remove_owned
from rubricgate.mutate.mutants import Mutant
from rubricgate.mutate.progress import Progress
from rubricgate.mutate.stopping import Stop, map_until_stopped

_SKIP_NAMES = {".git", "__pycache__", ".rubricgate-cache", "node_modules", ".pytest_cache", ".mypy_cache",
               ".ruff_cache", ".import_linter_cache", ".benchmarks"}


BLIND = "no case exercises it"  # gating/changes.py: a changed rule the suite cannot see
# The rate tests' and per-case tests' undecided lines (gating/outcome.py, collapse.py).
NOISE = ("INCONCLUSIVE", "collapse suspected")


@dataclass(frozen=True)
class RunSettings:
    """How each mutant's suite run is made (the `run` flags mutate passes on)."""

    agent: str | None = None  # None: the config's agent.name
    config: str | None = None  # --config: repo-relative (mapped into each copy) or an absolute path outside it
    jobs: int = 1  # mutants at once (each run's trials at once: the config's agent.jobs)
    cache_dir: Path | None = None  # --cache into this folder
    max_cost: float | None = None  # USD over all mutants
    timeout_s: float = 1800.0
    reports: str = "reports"  # the repository's reports folder, left out of each copy
    # suite.workspace_exclude: no workspace ever holds these, so no mutant's copy needs them
    exclude: tuple[str, ...] = ()


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed | rejected | flagged | survived | error | not_run
    exit_code: int | None = None
    detail: str = ""
    failed_cases: list[str] = field(default_factory=list)
    cost_usd: float = 0.0
    seconds: float = 0.0
    trials: int = 0  # trials the run recorded
    cached: int = 0  # of those, replayed from the trial cache


def copy_repo(repo: Path, dest: Path, reports: str, exclude: tuple[str, ...] = ()) -> Path:
    """The repository without its git folder, caches, reports and `exclude` (repo-relative paths)."""
    skip_paths = {p.strip("/") for p in (reports, *exclude) if p.strip("/")}

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(repo).as_posix()
        under = "" if rel == "." else rel + "/"
        return {n for n in names if n in _SKIP_NAMES or under + n in skip_paths}

    shutil.copytree(repo, dest, ignore=ignore, symlinks=True)
    return dest


def apply(mutant: Mutant | None, repo: Path) -> None:
    """Write the mutant's edited file into a copy (None: the unmutated control run)."""
    if mutant is not None:
        (repo / mutant.file).write_text(mutant.text, encoding="utf-8")


def run_one(repo: Path, mutant: Mutant | None, settings: RunSettings, budget: float | None,
            stop: Stop | None = None) -> Outcome:
    """Copy, mutate, run the suite in its own process, classify; the copy is removed after."""
    started = time.monotonic()
    tmp = owned_folder("rubricgate-mutant-")  # a killed mutate's copy goes with a later run's sweep
    try:
        copy = copy_repo(repo, tmp / "repo", settings.reports, settings.exclude)
        apply(mutant, copy)
        proc = _run(copy, settings, budget, stop)
        outcome = classify(mutant, proc.returncode, proc.stdout + proc.stderr, _summary(copy, settings.reports))
        if stop is not None and stop.event.is_set():  # interrupted with the mutate: no outcome of the mutant
            outcome = Outcome(mutant, "not_run", proc.returncode,  # type: ignore[arg-type]  # as classify's
                              "the mutate was stopped while it ran")
    finally:
        remove_owned(tmp)
    outcome.seconds = time.monotonic() - started
    return outcome


def reported(run: Callable[[], Outcome], label: str, progress: Progress | None) -> Outcome:
    """One run, with its start and end on the progress lines."""
    if progress is not None:
        progress.start(label)
    out = run()
    if progress is not None:
        progress.finish(label, out.status, out.seconds)
    return out


def _run(copy: Path, settings: RunSettings, budget: float | None, stop: Stop | None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "rubricgate", "run", "--repo", str(copy)]
    argv += ["--config", str(copy / settings.config if not Path(settings.config).is_absolute() else settings.config)
             ] if settings.config else []
    argv += ["--agent", settings.agent] if settings.agent else []
    argv += ["--cache", "--cache-dir", str(settings.cache_dir)] if settings.cache_dir else []
    argv += ["--max-cost", f"{budget:.6f}"] if budget is not None else []
    env = dict(os.environ)
    # The child imports this same rubricgate, wherever it was imported from.
    root = str(Path(rubricgate.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.Popen(argv, cwd=copy, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if stop is not None:
        stop.started(proc)
    try:
        out, err = awaited(proc, settings.timeout_s)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, -1, "", f"timed out after {settings.timeout_s:.0f} s")
    finally:
        if stop is not None:
            stop.ended(proc)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


GRACE_S = 30.0  # for an interrupted suite run to write its partial report and stop its agents


def awaited(proc: subprocess.Popen, timeout_s: float) -> tuple[str, str]:
    """The suite run's output once it exits. Past `timeout_s` it is killed (TimeoutExpired); when
    this process is interrupted meanwhile (Ctrl-C, SIGTERM: the control run has no Stop), the
    suite run is interrupted too, given GRACE_S to end, then killed: it outlived the mutate,
    its agents spending on."""
    try:
        return proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    except BaseException:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise


def _summary(copy: Path, reports: str) -> dict | None:
    runs = sorted((copy / reports).glob("*/summary.json")) if (copy / reports).is_dir() else []
    if not runs:
        return None
    try:
        return boundary.loads(runs[-1].read_bytes())
    except (OSError, ValueError):
        return None


def classify(mutant: Mutant | None, code: int, output: str, summary: dict | None) -> Outcome:
    """The run's exit code and summary -> killed / rejected / flagged / survived / error."""
    decision = (summary or {}).get("decision") or {}
    failed = [c["id"] for c in (summary or {}).get("cases", [])
              if any(not g.get("passed", True) for t in c.get("trials", []) for g in t.get("grades", {}).values())]
    cost = float(((summary or {}).get("cost") or {}).get("cost_usd") or 0.0)
    trials = [t for c in (summary or {}).get("cases", []) for t in c.get("trials", [])]
    last = next((line for line in reversed(output.strip().splitlines()) if line.startswith("error:")), "")
    # Exit 1 is a kill only with the REGRESSION its summary decided: a Python traceback (an
    # internal error under RUBRICGATE_DEBUG=1, an interpreter that cannot start) exits 1 too.
    if code == 1 and decision.get("status") == "regression":
        status, detail = "killed", f"{len(failed)} case(s) failed: " + ", ".join(failed[:5])
    elif code == 0:
        status, detail = "survived", "the suite passed"
    elif decision.get("status") == "inconclusive":
        reasons = decision.get("reasons", [])
        status = "flagged" if any(BLIND in r for r in reasons) else "undecided" if noise(reasons, trials) else "error"
        detail = "; ".join(reasons[:2])
    elif summary is None and "unknown rule id" in output:
        status, detail = "rejected", last or "a case names the changed rule"
    else:
        status, detail = "error", last or "; ".join(decision.get("reasons", [])[:2]) or _last_line(output, code)
    return Outcome(mutant, status, code, detail, failed, cost,  # type: ignore[arg-type]
                   trials=len(trials), cached=sum(bool(t.get("cached")) for t in trials))


def _last_line(output: str, code: int) -> str:
    """What a run that ended without a decision last said (a traceback's exception line)."""
    lines = output.strip().splitlines()
    return f"exit {code}: {lines[-1]}" if lines else f"exit {code}"


def noise(reasons: list[str], trials: list[dict]) -> bool:
    """Is this INCONCLUSIVE only the gate's tests short of evidence (a noisy reviewer, which more
    trials settle)? An errored trial, a gate setting changed since the baseline or an edited case
    is no noise: that run could not judge, and counting it undecided let mutate exit 0."""
    if not reasons or any(t.get("errored") for t in trials):
        return False
    return all(any(n in r for n in NOISE) and "errored" not in r for r in reasons)


def run_all(repo: Path, mutants: list[Mutant], settings: RunSettings,
            progress: Progress | None = None) -> tuple[list[Outcome], bool]:
    """Every mutant's outcome, in the given order, and whether the mutate was stopped (Ctrl-C,
    SIGTERM: what finished is kept, mutate/stopping.py); --max-cost stops new runs once spent."""
    budget, stop = SharedBudget(settings.max_cost, settings.jobs), Stop()

    def one(m: Mutant) -> Outcome:
        left = budget.take()
        if stop.event.is_set():
            out = Outcome(m, "not_run", None, "the mutate was stopped before it started")
        elif left is not None and left <= 0:
            out = Outcome(m, "not_run", None, f"--max-cost {settings.max_cost} spent")
        else:
            out = reported(lambda: run_one(repo, m, settings, left, stop), m.id, progress)
        budget.settle(left, out.cost_usd)
        return out

    return map_until_stopped(one, mutants, settings.jobs, stop), stop.event.is_set()


class SharedBudget:
    """--max-cost over all mutants, `jobs` of them running at once. Each running mutant holds a
    share of what is neither spent nor held by another: handing each the whole remainder let
    `jobs` runs started together spend it `jobs` times over."""

    def __init__(self, max_cost: float | None, jobs: int) -> None:
        self.max_cost, self.jobs = max_cost, max(jobs, 1)
        self.spent = self.held = 0.0
        self.running = 0
        self._lock = threading.Lock()

    def take(self) -> float | None:
        """This mutant's allowance (None: no --max-cost), an equal share among the free slots."""
        if self.max_cost is None:
            return None
        with self._lock:
            share = (self.max_cost - self.spent - self.held) / max(self.jobs - self.running, 1)
            self.running += 1
            self.held += max(share, 0.0)
            return share

    def settle(self, share: float | None, cost: float) -> None:
        """The mutant is done: its share released, what it cost spent."""
        with self._lock:
            if share is not None:
                self.running -= 1
                self.held -= max(share, 0.0)
            self.spent += cost
