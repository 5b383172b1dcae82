"""Reviewer files inside a git submodule (or any repository of its own inside the tree).

Workspaces hold the tree as git lists it, and git lists a submodule as one name, never its
files (docs/isolation.md). A rubric there passed `validate` and then every trial failed with
"rubric not found in workspace". In `compare --base` a policy the prompt links to there was in
neither side's workspaces, so both sides ran the same reviewer and a pull request moving the
module passed. Either is an input error (exit 2) naming the file and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.suite.trees import in_git_repository

FIX = "copy the file into the repository"


def nested_repository(root: Path, rel: str) -> str:
    """The folder on `rel`'s way down from `root` that is a git repository of its own (a
    submodule's checkout, a clone inside the tree: it holds `.git`), '' when none. Outside git
    '' always: a tree that is no repository is copied by walking it, nested ones included."""
    parts = rel.split("/")[:-1]
    folders = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    if not folders or not in_git_repository(root):
        return ""
    return next((f for f in folders if os.path.lexists(os.path.join(root, f, ".git"))), "")


def submodule_error(file: str, field: str, rel: str, module: str) -> GateInputError:
    """The one line for a reviewer file no workspace holds: it lies in the submodule `module`."""
    return GateInputError(file, field, f"{rel!r} is inside {module!r}, a git submodule (or a repository of its "
                          "own), whose files git never lists and no workspace holds", FIX)


def refuse_submodule_files(root: Path, files: Iterable[str], side: str) -> None:
    """`compare --base`: raise for the first of `files` (relative to `root`) inside a submodule;
    `side` names the tree in the error (`this checkout's reviewer`)."""
    for rel in files:
        if module := nested_repository(root, rel):
            raise submodule_error("--base", side, rel, module)
