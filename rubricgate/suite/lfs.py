"""Git LFS pointer files: what a checkout without LFS content (actions/checkout's default,
`lfs: false`; a machine without git-lfs) writes in place of each file LFS stores.

A reviewer whose rubric is a pointer reviews with three lines of hash instead of its rules. In
`compare --base` both sides do, so a pull request that changes a rubric LFS stores compared one
pointer with another and passed, whatever the rubric now said. A pointer among the reviewer's
files is an input error (exit 2), never reviewed; so is one among the files a case hands the
reviewer to review, or that one of them references (suite/reviewed_lfs.py), whose grade was of a
hash, not the artifact.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from rubricgate.errors import GateInputError

# The first line of every pointer (the git-lfs pointer specification): nothing else starts so.
POINTER_START = b"version https://git-lfs.github.com/spec/v1\n"
FIX = "check out the LFS content (actions/checkout with lfs: true, or git lfs install && git lfs pull)"
# A task's `files:` holding a pointer was recorded from one: `record --head REF` reads git's
# stored blobs, which are the pointers whatever the checkout holds.
RECORDED_FIX = ("put the file's content in the task's files: (record it again with --head WORKTREE, in a checkout "
                "with the LFS content)")


def is_lfs_pointer(data: bytes) -> bool:
    """Are these a file's bytes (or its first bytes) a git LFS pointer?"""
    return data.startswith(POINTER_START)


def lfs_pointer_error(display: str, field: str = "") -> GateInputError:
    """The one line for a reviewer file checked out as its LFS pointer."""
    return GateInputError(display, field, "a git LFS pointer, not the file's content: the reviewer would read "
                          "a hash instead of its rules", FIX)


def refuse_lfs_pointers(root: Path, files: Iterable[str], side: str) -> None:
    """Raise for the first of `files` (relative to `root`) that is an LFS pointer; `side` names
    the tree in the error (`main's reviewer`)."""
    for rel in files:
        if is_pointer_file(os.path.join(root, rel)):
            raise lfs_pointer_error(rel, side)


def is_pointer_file(path: str | Path) -> bool:
    """Does the file at `path` hold an LFS pointer? A file gone or unreadable does not: what
    reads it says so."""
    try:
        with open(path, "rb") as handle:
            return is_lfs_pointer(handle.read(len(POINTER_START)))
    except OSError:
        return False
