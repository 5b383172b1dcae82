"""Paired comparison of two runs: per-case flips, McNemar on discordant pairs, a decision.

Two sources, one computation:
  * two stored runs (`rubricgate compare RUN_A RUN_B`): base = RUN_A, head = RUN_B;
  * a paired run (`rubricgate compare --base REF`): the same cases and trials run twice, once
    with the reviewer files as they are at REF and once as they are in the working tree.

Trials are paired by (case, trial index). Under "nothing changed" each pair that disagrees is
as likely to be a regression as a fix, which is what the exact McNemar test checks. The base run
plays the baseline's part, so the decision follows the configured gate method:
  strict       a dimension with more regressed pairs than fixed pairs (its rate went down) fails;
  statistical  it fails when McNemar's one-sided p-value is below 1 - confidence, and a
               non-significant drop with fewer than gate.min_trials trials per case warns.
A side with trials that did not run (interrupted, budget spent) cannot be judged: exit 2.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from rubricgate import exitcodes
from rubricgate.config import CONFIG_NAME, load_config
from rubricgate.cost import is_not_run
from rubricgate.errors import GateInputError
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.config import GateConfig, ReviewerConfig
from rubricgate.models.results import CaseSummary, Decision, Summary, TrialResult
from rubricgate.pipeline import RunOptions, new_run_id, run_suite
from rubricgate.runner.cache import resolve_cache_dir
from rubricgate.runner.workspace import list_tree
from rubricgate.stats import mcnemar_exact, trial_passed

FlipKind = Literal["regressed", "fixed", "unchanged", "added", "removed"]
KINDS: tuple[FlipKind, ...] = ("regressed", "fixed", "unchanged", "added", "removed")


@dataclass
class CaseFlip:
    """How one case moved from base to head (a trial passes when every dimension passes)."""

    case_id: str
    kind: FlipKind
    base: str  # "passes/trials" or "-" when the case is absent
    head: str
    reasons: list[str] = field(default_factory=list)


@dataclass
class DimensionTest:
    """Paired counts and the exact test for one dimension."""

    dimension: str
    pairs: int
    base_passes: int
    head_passes: int
    regressed: int  # discordant pairs: base passed, head failed
    fixed: int  # discordant pairs: base failed, head passed
    p_value: float
    status: Literal["ok", "regression", "inconclusive"] = "ok"


@dataclass
class Comparison:
    base_label: str
    head_label: str
    flips: list[CaseFlip]
    tests: list[DimensionTest]
    decision: Decision

    def counts(self) -> dict[str, int]:
        """Cases per flip kind."""
        return {kind: sum(f.kind == kind for f in self.flips) for kind in KINDS}


def compare_summaries(base: Summary, head: Summary, gate: GateConfig,
                      base_label: str = "base", head_label: str = "head") -> Comparison:
    """Flips, paired tests and the decision for two runs of the same suite."""
    flips = case_flips(base, head)
    tests = paired_tests(base, head)
    decision = decide_comparison(base, head, tests, gate)
    return Comparison(base_label, head_label, flips, tests, decision)


def case_flips(base: Summary, head: Summary) -> list[CaseFlip]:
    """One flip per case id in either run, in head order then base-only cases."""
    base_cases, head_cases = _by_id(base), _by_id(head)
    ids = list(head_cases) + [cid for cid in base_cases if cid not in head_cases]
    return [_flip(cid, base_cases.get(cid), head_cases.get(cid)) for cid in ids]


def _flip(cid: str, base: CaseSummary | None, head: CaseSummary | None) -> CaseFlip:
    if base is None or head is None:
        present = head or base
        kind: FlipKind = "added" if base is None else "removed"
        return CaseFlip(cid, kind, _score(base), _score(head), _failures(present.trials) if present else [])
    b, h = _ran(base.trials), _ran(head.trials)
    b_rate = sum(map(trial_passed, b)) / len(b) if b else None
    h_rate = sum(map(trial_passed, h)) / len(h) if h else None
    if b_rate is None or h_rate is None or b_rate == h_rate:
        still = _failures(h)
        return CaseFlip(cid, "unchanged", _score(base), _score(head), [f"still failing: {r}" for r in still])
    if h_rate < b_rate:
        return CaseFlip(cid, "regressed", _score(base), _score(head), _failures(h))
    return CaseFlip(cid, "fixed", _score(base), _score(head), [f"was: {r}" for r in _failures(b)])


def paired_tests(base: Summary, head: Summary) -> list[DimensionTest]:
    """Per dimension: counts over (case, trial) pairs that ran on both sides, and McNemar.

    Inference is conditional on the suite: the question is whether this reviewer passes *these*
    cases less often, and given a case its trials are independent draws of the agent's
    nondeterminism. (Generalizing to unseen cases would need cases as the unit instead; a gate on
    a fixed suite does not, and a case that goes from 5/5 to 0/5 is then rightly significant.)
    """
    pairs = _pairs(base, head)
    seen = {d for b, h in pairs for d in (*b.grades, *h.grades)}
    dims = [d for d in DIMENSIONS if d in seen] + sorted(seen - set(DIMENSIONS))
    out = []
    for dim in dims:
        both = [(b.grades[dim].passed, h.grades[dim].passed) for b, h in pairs
                if dim in b.grades and dim in h.grades]
        regressed = sum(bp and not hp for bp, hp in both)
        fixed = sum(hp and not bp for bp, hp in both)
        out.append(DimensionTest(dim, len(both), sum(bp for bp, _ in both), sum(hp for _, hp in both),
                                 regressed, fixed, mcnemar_exact(regressed, fixed)))
    return out


def decide_comparison(base: Summary, head: Summary, tests: list[DimensionTest], gate: GateConfig) -> Decision:
    """Exit 1 when head is worse than base by the configured method, 2 when it cannot be told."""
    problems = _unjudgeable(base, head, tests)
    if problems:
        return Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, method=gate.method, reasons=problems)
    reasons, warnings = [], []
    enough = _min_trials(base, head) >= gate.min_trials
    for t in tests:
        t.status = _status(t, gate, enough)
        line = (f"{t.dimension}: {t.regressed} regressed vs {t.fixed} fixed pairs, "
                f"rate {t.base_passes}/{t.pairs} -> {t.head_passes}/{t.pairs}, McNemar p={t.p_value:.3g}")
        if t.status == "regression":
            reasons.append(line)
        elif t.status == "inconclusive":
            warnings.append(f"{line}; too few trials to tell, run --trials {gate.min_trials} or more")
        elif t.regressed > t.fixed:  # not significant, but never silent
            warnings.append(f"{line}; within noise at confidence {gate.confidence}")
    if reasons:
        return Decision(status="regression", exit_code=exitcodes.REGRESSION, method=gate.method,
                        reasons=reasons, warnings=warnings)
    return Decision(status="pass", exit_code=exitcodes.OK, method=gate.method, warnings=warnings)


def _status(t: DimensionTest, gate: GateConfig, enough_trials: bool) -> str:
    if t.regressed <= t.fixed:
        return "ok"
    if gate.method == "strict" or t.p_value < 1 - gate.confidence:
        return "regression"
    return "ok" if enough_trials else "inconclusive"


def _unjudgeable(base: Summary, head: Summary, tests: list[DimensionTest]) -> list[str]:
    problems = []
    for label, summary in (("base", base), ("head", head)):
        missing = _not_run_count(summary)
        if missing or not summary.complete:
            problems.append(f"{label} run {summary.run_id} is incomplete ({missing} trials did not run)")
        if summary.errored:  # infrastructure failures: neither side's reviewer was judged there
            problems.append(f"{label} run {summary.run_id}: {len(summary.errored)} trial(s) errored (infrastructure)")
    if not problems and not any(t.pairs for t in tests):
        problems.append("the two runs share no case and trial that ran on both sides")
    return problems


def _pairs(base: Summary, head: Summary) -> list[tuple[TrialResult, TrialResult]]:
    head_trials = {(c.id, t.trial): t for c in head.cases for t in _ran(c.trials)}
    return [(t, head_trials[(c.id, t.trial)]) for c in base.cases for t in _ran(c.trials)
            if (c.id, t.trial) in head_trials]


def _min_trials(base: Summary, head: Summary) -> int:
    counts = [len(_ran(c.trials)) for s in (base, head) for c in s.cases]
    return min(counts, default=0)


def _not_run_count(summary: Summary) -> int:
    return sum(is_not_run(t) for c in summary.cases for t in c.trials)


def _ran(trials: list[TrialResult]) -> list[TrialResult]:
    return [t for t in trials if not is_not_run(t) and not t.errored]


def _by_id(summary: Summary) -> dict[str, CaseSummary]:
    return {c.id: c for c in summary.cases}


def _score(case: CaseSummary | None) -> str:
    if case is None:
        return "-"
    ran = _ran(case.trials)
    return f"{sum(map(trial_passed, ran))}/{len(ran)}"


def _failures(trials: list[TrialResult]) -> list[str]:
    """Distinct failure reasons, each with the trials it happened in."""
    seen: dict[str, list[int]] = {}
    for t in trials:
        for dim, g in t.grades.items():
            if not g.passed:
                seen.setdefault(f"{dim}: {g.category or 'failed'}: {g.reason}".rstrip(": "), []).append(t.trial)
    return [f"{reason} (trial {', '.join(map(str, ts))})" for reason, ts in seen.items()]


# -- the paired run: reviewer at REF vs the working tree --------------------------------------

@contextmanager
def ref_worktree(repo: Path, ref: str) -> Iterator[Path]:
    """A throwaway `git worktree` of REF, removed afterwards; bad REF -> GateInputError."""
    sha = resolve_ref(repo, ref)
    holder = Path(tempfile.mkdtemp(prefix="rubricgate-base-"))
    tree = holder / "tree"
    _git(repo, "worktree", "add", "--detach", "--quiet", str(tree), sha, what="git worktree add")
    try:
        yield tree
    finally:
        # --force: the worktree is ours and throwaway; prune keeps .git/worktrees tidy.
        _git(repo, "worktree", "remove", "--force", str(tree), what="git worktree remove", check=False)
        shutil.rmtree(holder, ignore_errors=True)


def resolve_ref(repo: Path, ref: str) -> str:
    """The commit REF names, or a one-line error naming the flag and the fix."""
    if not ref or ref.startswith("-"):
        raise GateInputError("--base", "", f"invalid git ref {ref!r}", "pass a branch, tag or commit")
    if _git(repo, "rev-parse", "--is-inside-work-tree", what="git", check=False).returncode != 0:
        raise GateInputError("--base", "", f"{repo} is not a git repository",
                             "run `compare --base` inside a git checkout")
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", what="git", check=False)
    if proc.returncode != 0:
        raise GateInputError("--base", "", f"unknown git ref {ref!r}",
                             "use a branch, tag or commit that exists here (git fetch it first)")
    return proc.stdout.strip()


def reviewer_paths(reviewer: ReviewerConfig) -> list[str]:
    """What "the reviewer" is: the prompt, and the folders of the evaluator skill and rubric."""
    folders = sorted({str(PurePosixPath(reviewer.skill).parent), str(PurePosixPath(reviewer.rubric).parent)})
    return [reviewer.prompt, *folders]


@contextmanager
def base_checkout(repo: Path, ref_tree: Path, reviewer: ReviewerConfig, ref: str,
                  exclude: set[str], folders: tuple[str, ...] = ()) -> Iterator[Path]:
    """A temp copy of the working tree whose reviewer files are replaced by those at REF.

    `folders` (the suite's tasks and fixtures folders) are created even when empty: a copy of
    files alone would drop an empty folder the config names, and loading would then fail.
    """
    for rel in (reviewer.prompt, reviewer.skill, reviewer.rubric):
        if not (ref_tree / rel).is_file():
            raise GateInputError("--base", "reviewer", f"{ref} has no {rel}",
                                 "pick a ref where the reviewer files exist")
    root = Path(tempfile.mkdtemp(prefix="rubricgate-basecopy-"))
    try:
        _copy_files(repo, root, [f for f in list_tree(repo, exclude) if not _in_reviewer(f, reviewer)])
        _copy_files(ref_tree, root, [f for f in list_tree(ref_tree) if _in_reviewer(f, reviewer)])
        for folder in (f for f in folders if (repo / f).is_dir()):
            (root / folder).mkdir(parents=True, exist_ok=True)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class PairedOutcome:
    comparison: Comparison
    base_run_dir: Path
    head_run_dir: Path


def paired_run(options: RunOptions, ref: str, method: str | None = None,
               listeners: Callable[[str], list] | None = None) -> PairedOutcome:
    """Run the suite with the reviewer at REF and as in the working tree; compare the two.

    `method` overrides gate.method from rubricgate.yaml; `listeners(label)` makes fresh progress
    listeners for each of the two runs (a listener counts one run's trials).
    """
    repo = options.repo
    config_path = (options.config_path or repo / CONFIG_NAME).resolve()
    config = load_config(repo, config_path)
    out = options.reports_dir or repo / config.reports / f"compare-{new_run_id()}"
    common = dict(config_path=config_path, require_baseline=False,
                  cache_dir=resolve_cache_dir(repo, config.cache_dir, options.cache_dir) if options.cache else None)
    fresh = listeners or (lambda label: list(options.listeners))
    with ref_worktree(repo, ref) as ref_tree:
        with base_checkout(repo, ref_tree, config.reviewer, ref, {config.reports.split("/")[0]},
                           (config.suite.tasks, config.suite.fixtures)) as base_repo:
            base = run_suite(replace(options, repo=base_repo, reports_dir=out / "base",
                                     listeners=fresh(f"reviewer at {ref}"), **common))
    head = run_suite(replace(options, repo=repo, reports_dir=out / "head", listeners=fresh("working tree"), **common))
    gate = config.gate.model_copy(update={"method": method}) if method else config.gate
    comparison = compare_summaries(base.summary, head.summary, gate, f"reviewer at {ref}", "working tree")
    return PairedOutcome(comparison, base.run_dir, head.run_dir)


def _in_reviewer(rel: str, reviewer: ReviewerConfig) -> bool:
    if rel == reviewer.changed_files:
        return False
    return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in reviewer_paths(reviewer))


def _copy_files(src: Path, dst: Path, files: list[str]) -> None:
    for rel in files:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)


def _git(repo: Path, *args: str, what: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise GateInputError("--base", "", f"{what} failed: {last}", "check the ref and the repository state")
    return proc
