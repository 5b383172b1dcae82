"""The trees `compare --base REF` runs on: throwaway `git worktree`s of REF's tip and of the merge
base of REF and HEAD (base_trees), and a temp copy of the working tree whose reviewer is the
merge base's (its whole closure, suite/closure.py, so a policy the prompt links to is at the
base on the base side too)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.isolation.leftovers import owned_folder, remove_owned
from rubricgate.models.config import Config
from rubricgate.runner.workspace import GitListing, excluded, list_tree
from rubricgate.suite.answer_key import answer_key_paths
from rubricgate.suite.closure import closure_skip, reviewer_closure
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.lfs import refuse_lfs_pointers
from rubricgate.suite.paths import real_rel
from rubricgate.suite.sparse import sparse_errors
from rubricgate.suite.submodules import refuse_submodule_files, unheld_link_errors
from rubricgate.suite.trees import FULL_HISTORY, WorkTree, git_prefix, merge_base, shallow_clone


@dataclass(frozen=True)
class BaseTrees:
    """What `compare --base REF` reads at the base. `fork`, the merge base of REF and HEAD (what
    `changed` diffs against): the reviewer, cases and grading the pull request started from, so
    a change REF made after it forked is not read as the PR's. `tip`, REF itself: the gate and
    the baseline's citations that judge the PR, which it can neither edit nor choose (a branch
    forked from an old commit would otherwise pick that commit's gate). One tree when they are
    the same commit (a `refs/pull/N/merge` checkout, whose merge base is REF's tip)."""

    tip: Path
    fork: Path
    tip_sha: str
    fork_sha: str

    def name(self, ref: str) -> str:
        """The base side's commit in words: REF, or the merge base with REF named."""
        return ref if self.fork_sha == self.tip_sha else f"{self.fork_sha[:12]} (the merge base of {ref} and HEAD)"

    def label(self, ref: str) -> str:
        """The base side's label, naming its commit."""
        return f"reviewer at {ref} ({self.tip_sha[:12]})" if self.fork_sha == self.tip_sha else \
            f"reviewer at {self.name(ref)}"


@contextmanager
def base_trees(repo: Path, ref: str) -> Iterator[BaseTrees]:
    """Worktrees of REF's tip and of its merge base with HEAD (see BaseTrees), removed afterwards."""
    tip = resolve_ref(repo, ref)
    fork = merge_base(repo, ref, tip)
    with ExitStack() as stack:
        tip_tree = stack.enter_context(ref_worktree(repo, tip))
        fork_tree = tip_tree if fork == tip else stack.enter_context(ref_worktree(repo, fork))
        yield BaseTrees(tip_tree, fork_tree, tip, fork)


@contextmanager
def ref_worktree(repo: Path, ref: str) -> Iterator[Path]:
    """A throwaway `git worktree` of REF, removed afterwards: its copy of `repo`'s folder (the
    whole tree when `repo` is the top of its work tree); bad REF -> GateInputError."""
    sha = resolve_ref(repo, ref)
    # A worktree whose folder a killed compare left (and a later run's sweep removed) is pruned.
    _git(repo, "worktree", "prune", what="git worktree prune", check=False)
    holder = owned_folder("rubricgate-base-")
    tree = holder / "tree"
    try:
        _git(repo, "worktree", "add", "--detach", "--quiet", str(tree), sha, what="git worktree add")
        # The worktree holds the whole work tree: REF's copy of this folder (a monorepo's) is the base.
        yield tree / git_prefix(repo)
    finally:
        # --force: the worktree is ours and throwaway; prune keeps .git/worktrees tidy.
        _git(repo, "worktree", "remove", "--force", str(tree), what="git worktree remove", check=False)
        remove_owned(holder)


def resolve_ref(repo: Path, ref: str) -> str:
    """The commit REF names, or a one-line error naming the flag and the fix."""
    if not ref or ref.startswith("-"):
        raise GateInputError("--base", "", f"invalid git ref {ref!r}", "pass a branch, tag or commit")
    if _git(repo, "rev-parse", "--is-inside-work-tree", what="git", check=False).returncode != 0:
        raise GateInputError("--base", "", f"{repo} is not a git repository",
                             "run `compare --base` inside a git checkout")
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", what="git", check=False)
    if proc.returncode != 0 and shallow_clone(repo):  # CI's default checkout: the base was never fetched
        raise GateInputError("--base", "", f"unknown git ref {ref!r} (this is a shallow clone)", FULL_HISTORY)
    if proc.returncode != 0:
        raise GateInputError("--base", "", f"unknown git ref {ref!r}",
                             "use a branch, tag or commit that exists here (git fetch it first)")
    return proc.stdout.strip()


@contextmanager
def base_checkout(repo: Path, ref_tree: Path, configs: dict[str, Config], ref: str,
                  exclude: set[str], folders: tuple[str, ...] = (), config_rel: str | None = None,
                  ref_config: Config | None = None) -> Iterator[Path]:
    """A temp copy of the working tree whose reviewer is the one at REF: its whole closure
    (suite/closure.py) under the base side's config, and the working tree's under the head's. A
    closure file that exists at REF is copied from there; one that exists only in the working tree
    (added since) is left out, so the base side has exactly REF's reviewer. Never a file of REF's
    answer key (by `ref_config`, REF's own rubricgate.yaml; unset, the default paths): a PR that
    moved the baseline and linked its old path from the prompt got REF's real baseline shown to
    the base side (the working tree's file at that path is copied instead).

    `folders` (the suite's tasks and fixtures folders) are created even when empty: a copy of
    files alone would drop an empty folder the config names, and loading would then fail.
    """
    reviewer = configs["base"].reviewer
    for rel in (reviewer.prompt, reviewer.skill, reviewer.rubric):
        if not (ref_tree / rel).is_file():
            raise GateInputError("--base", "reviewer", f"{ref} has no {rel}",
                                 "pick a ref where the reviewer files exist")
    if off := sparse_errors(ref_tree, configs["base"], f"{ref}'s checkout"):  # its worktree shares the patterns
        raise off[0]
    at_ref = reviewer_closure(WorkTree(ref_tree), configs["base"])
    kept_out = answer_key_paths(configs["base"], config_rel, repo)
    if hidden := [f for f in at_ref.files if excluded(f, kept_out)]:
        # This checkout's suite settings apply to both sides: they must not take REF's reviewer apart
        # (suite.workspace_exclude, or the baseline, reports or suite folders pointed at its files).
        raise GateInputError("--base", "suite", f"this checkout's config keeps {hidden[0]}, a file of {ref}'s "
                             "reviewer, out of the base side's workspaces (suite.workspace_exclude, baseline, "
                             "reports or a suite folder names it)", "leave out no file the base's reviewer reads")
    at_head = reviewer_closure(WorkTree(repo), configs["head"])
    # A checkout without LFS content holds pointers on both sides: one compared with another passed.
    refuse_lfs_pointers(ref_tree, at_ref.files, f"{ref}'s reviewer")
    refuse_lfs_pointers(repo, at_head.files, "this checkout's reviewer")
    # Neither side's workspaces hold a submodule's files: both ran the same reviewer and passed.
    refuse_submodule_files(ref_tree, at_ref.files, f"{ref}'s reviewer")
    refuse_submodule_files(repo, at_head.files, "this checkout's reviewer")
    # What run and validate refuse too (a policy linked from the prompt that git ignores), before
    # any trial: the head side's run refused it only after the base side had run the whole suite.
    # REF's side needs no check: its worktree holds only files git tracks, which it never ignores.
    if unheld := unheld_link_errors(repo, at_head.linked_reasons(), config_rel or CONFIG_NAME):
        raise GateInputErrors(unheld)
    closure = set(at_ref.files) | set(at_head.files)
    if at_ref.capped or at_head.capped:  # past the cap no one can say which file is the reviewer's: REF's all
        skip = {*closure_skip(configs["base"]), *closure_skip(configs["head"])}
        closure |= {f for tree in (ref_tree, repo) for f in list_tree(tree, exclude) if not excluded(f, skip)}
    ref_key = answer_key_paths(ref_config or Config(), config_rel, ref_tree)
    from_ref = sorted(f for f in closure if (ref_tree / f).is_file() and not excluded(f, ref_key))
    owned = owned_folder("rubricgate-basecopy-")
    # The copy in a folder of its own, named as the working tree: its owner's lock file beside it
    # was a file of the base side's workspaces only. Its config is left out: both sides read the
    # working tree's (flows/compare_run.py), and the copy's was shown to the base side's reviewer.
    root = owned / (repo.resolve().name or "repo")
    try:
        _link_folders(repo, root, exclude | closure)  # a reviewer's folder link is REF's (below)
        shown = list_tree(repo, exclude | ({config_rel} if config_rel else set()))
        _copy_files(repo, root, [f for f in shown if f not in closure or excluded(f, ref_key)], kept_out)
        _copy_files(ref_tree, root, from_ref, kept_out)
        _link_folders(ref_tree, root, exclude, only=closure)
        for folder in (f for f in folders if (repo / f).is_dir()):
            (root / folder).mkdir(parents=True, exist_ok=True)
        yield root
    finally:
        remove_owned(owned)


def _link_folders(src: Path, dst: Path, exclude: set[str], only: set[str] | None = None) -> None:
    """The working tree's links to its own folders, as relative links: `evals -> realevals` was
    dropped, so the base side found no tasks under evals/ and showed realevals/ (every task file)
    to its reviewer. `only`: just these links (a reviewer's own, taken from REF)."""
    for rel in GitListing(src).names() or [] if only is None else sorted(only):
        link = src / rel
        if excluded(rel, exclude) or not link.is_symlink() or not link.is_dir() or os.path.lexists(dst / rel):
            continue
        if real := real_rel(src, rel):  # a folder of the tree (one outside it is left out)
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(real, os.path.dirname(rel) or "."), dst / rel)


def _copy_files(src: Path, dst: Path, files: list[str], kept_out: set[str]) -> None:
    """Copy files as the head side's snapshot shows them: a link into the answer key (`kept_out`)
    as the link it is, so the base side's snapshot leaves it out too (followed, `notes/key.json ->
    ../baseline.json` became a plain file it showed the reviewer); any other file by its content
    (kept as a link, one to `/abs/repo/LICENSE` pointed out of the copy and was left out)."""
    root = os.path.realpath(src)
    for rel in files:
        folder = os.path.join(root, os.path.dirname(rel)).rstrip(os.sep)
        if os.path.realpath(folder) != folder:
            continue  # reached through a linked folder (_link_folders): copied under its real path
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (src / rel).is_symlink() and excluded(real_rel(src, rel), kept_out):
            os.symlink(os.readlink(src / rel), target)
        else:
            shutil.copyfile(src / rel, target)


def _git(repo: Path, *args: str, what: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise GateInputError("--base", "", f"{what} failed: {last}", "check the ref and the repository state")
    return proc
