"""A case's `files:` never replace the reviewer inside its workspace.

A task's overlays are written over the copy of the tree the reviewer runs in. One that names a
file of the reviewer itself (its closure, suite/closure.py: the prompt, skill, rubric and what
they reference; a script the agent command runs from the workspace; the changed-files list the
harness writes) would make the case test that text instead of the reviewer: a canned answer that
passes whatever the PR does to the real one. Such a key is an input error naming the task.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.case import CaseSpec
from rubricgate.models.config import Config
from rubricgate.suite.closure import command_scripts, reviewer_closure
from rubricgate.suite.trees import WorkTree


def reviewer_overlay_errors(repo: Path, config: Config, cases: Sequence[CaseSpec]) -> list[GateInputError]:
    """An error for every overlay key that is one of the reviewer's own files."""
    keyed = [(case, key) for case in cases for key in case.files]
    if not keyed:  # the closure is read only when some case overlays anything
        return []
    own = {_canonical(rel): why for rel, why in reviewer_files(repo, config).items()}
    return [GateInputError(case.origin, f"files.{key}", f"replaces the reviewer's own {key!r} "
                           f"({own[_canonical(key)]}) in the workspace: the case would test that text, not the "
                           "reviewer", "overlay another path; the reviewer runs as it is in the repository")
            for case, key in keyed if _canonical(key) in own]


def _canonical(rel: str) -> str:
    """The file a key names, however it is spelled: `./`, `//` and case (on a file system that
    folds case, `Reviewer/` is the same folder) make no other file."""
    return posixpath.normpath(rel.strip()).lstrip("/").casefold()


def reviewer_files(repo: Path, config: Config) -> dict[str, str]:
    """Repository-relative path -> why it is the reviewer's."""
    own = dict(reviewer_closure(WorkTree(repo), config).reasons)
    for rel in command_scripts(config):  # in the closure when there; named here even when not
        own.setdefault(rel, "run by agent.command")
    own.setdefault(config.reviewer.changed_files.strip("/"), "the changed-files list rubricgate writes")
    return own
