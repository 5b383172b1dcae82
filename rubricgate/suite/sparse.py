"""Suite and reviewer files git's sparse checkout leaves off disk.

A sparse checkout (`git sparse-checkout set`, a CI job checking out part of a monorepo) writes
only the files its patterns name. A fixture folder left out was no case at all: `run` stopped on
the baseline's "no task or fixture has this case id", whose fix (`baseline update`) would drop
the case for good, and `compare --base` judged the cases on disk only, so a reviewer change only
the missing cases would catch passed. A `git worktree` of the base shares the patterns. Either
is an input error (exit 2) naming a missing file and the fix.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.config import Config


def sparse_checkout(repo: Path) -> bool:
    """Is git's sparse checkout on for the work tree `repo` lies in (False outside git)?"""
    got = _git(repo, "config", "--bool", "core.sparseCheckout")
    return got is not None and got.strip() == "true"


def off_disk(repo: Path, paths: list[str]) -> list[str]:
    """The tracked files under `paths` (named from `repo`) that the sparse checkout keeps off disk:
    marked skip-worktree (`ls-files -t`: "S") and not there."""
    got = _git(repo, "--literal-pathspecs", "ls-files", "-t", "-z", "--", *paths) or ""
    named = [entry[2:] for entry in got.split("\0") if entry.startswith("S ")]
    return [rel for rel in named if not os.path.lexists(repo / rel)]


def sparse_errors(repo: Path, config: Config, where: str = "") -> list[GateInputError]:
    """The suite's tasks and fixtures and the reviewer's folders, all on disk: else one line
    naming the first missing file. `where` names the tree (`main's checkout`) when not the repo."""
    if not sparse_checkout(repo):
        return []
    paths = suite_paths(config)
    gone = off_disk(repo, paths)
    if not gone:
        return []
    folder = next(p for p in paths if gone[0] == p or gone[0].startswith(p + "/"))
    more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
    return [GateInputError(gone[0], where, f"not on disk: git's sparse checkout leaves out this file{more} of the "
                           "suite or the reviewer, so no case there would run and no reviewer file there be read",
                           f"check them out: git sparse-checkout add {folder} (or git sparse-checkout disable)")]


def suite_paths(config: Config) -> list[str]:
    """The suite's folders and the folders of the reviewer's three files (the file itself when it
    lies at the top: its folder is the whole repository)."""
    r = config.reviewer
    files = [posixpath.normpath(f) for f in (r.prompt, r.skill, r.rubric)]
    reviewer = [posixpath.dirname(f) or f for f in files]
    return list(dict.fromkeys([posixpath.normpath(config.suite.tasks), posixpath.normpath(config.suite.fixtures),
                               *reviewer]))


def _git(repo: Path, *args: str) -> str | None:
    """git's output as text, None when git cannot answer (no repository, no git)."""
    try:
        got = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, stdin=subprocess.DEVNULL,
                             env={**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    except OSError:
        return None
    return got.stdout.decode("utf-8", "surrogateescape") if got.returncode == 0 else None
