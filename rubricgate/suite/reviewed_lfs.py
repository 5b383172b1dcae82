"""Git LFS pointers among the files a case hands the reviewer (suite/lfs.py says what a pointer is).

A case whose reviewed file, or a file that one references, is a pointer graded a review of three
lines of hash: a BLOCK case whose secret sits in `references/connection-setup.md`, linked from
the SKILL.md it reviews, read a hash there and passed. Each is an input error (exit 2).

Referenced files are found as the reviewer's own closure finds them (suite/closure.py): links,
includes, `@file` mentions and paths in code spans, beside the reviewed file and from the
workspace's root. Only the files a reviewed file names are opened, one hop: the loader reads no
more than the reviewer is pointed at. A name with a binary-looking suffix (an image, an archive,
a font, a PDF) is left alone: a reviewer cannot read one as text anyway, and LFS most often holds
those.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet

from rubricgate.errors import GateInputError
from rubricgate.models.case import CaseSpec
from rubricgate.suite.closure import CODE_SPAN, LINKING, MAX_SCANNED_BYTES, named_paths, references
from rubricgate.suite.lfs import FIX, POINTER_START, RECORDED_FIX, is_lfs_pointer
from rubricgate.suite.trees import WorkTree

# What the reviewer is pointed at: a name in prose is too often the reviewed artifact's own.
_FOLLOWED = LINKING | {CODE_SPAN}
BINARY_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".pdf", ".zip",
                             ".gz", ".tgz", ".tar", ".bz2", ".xz", ".7z", ".woff", ".woff2", ".ttf", ".otf",
                             ".eot", ".mp3", ".mp4", ".wav", ".mov"})


def reviewed_pointer_errors(tree: WorkTree, cases: Iterable[CaseSpec],
                            hidden: AbstractSet[str] = frozenset()) -> list[GateInputError]:
    """An error for each file a case hands the reviewer that is an LFS pointer: each file it
    reviews (a fixture's file, a repository file a task names, the content a task's `files:`
    gives it) and each file of its workspace one of those references, but a binary-looking one.
    `hidden`: the repository paths no workspace holds (suite/answer_key.py)."""
    return [error for case in cases for error in _CaseFiles(tree, case, hidden).errors()]


class _CaseFiles:
    """The files a case's workspace shows: its `files:` content, the fixture files copied in, and
    the repository's own files but `hidden`."""

    def __init__(self, tree: WorkTree, case: CaseSpec, hidden: AbstractSet[str]) -> None:
        self.tree, self.case, self.hidden = tree, case, hidden

    def errors(self) -> list[GateInputError]:
        """The case's reviewed pointers, and the pointers its reviewed files reference (each once)."""
        case = self.case
        shown = case.workspace_review or case.review
        errors, seen = [], set(shown)  # a reviewed file referenced is named as reviewed
        for i, (rel, path) in enumerate(zip(case.review, shown, strict=False)):
            field = f"review[{i}]" if case.source == "task" else ""
            if self._is_pointer(path):
                errors.append(self._error(field, path, f"{rel!r} is a git LFS pointer, not the file's content: "
                                          "the reviewer would review a hash instead of it"))
                continue
            for target, how in self._referenced_pointers(path):
                if target not in seen:
                    seen.add(target)
                    errors.append(self._error(field, target, f"{self._source(target)!r} ({how} {rel}) is a git "
                                              "LFS pointer, not the file's content: the reviewer would read a "
                                              "hash instead of it"))
        return errors

    def _error(self, field: str, path: str, problem: str) -> GateInputError:
        # `files:` content was recorded from git's blobs (`record --head REF`): record it again.
        return GateInputError(self.case.origin, field, problem, RECORDED_FIX if path in self.case.files else FIX)

    def _referenced_pointers(self, path: str) -> Iterator[tuple[str, str]]:
        """(workspace path, how it is named) for each pointer the file at `path` references."""
        for name, how in references(path, self._read(path, MAX_SCANNED_BYTES), _FOLLOWED):
            for target in named_paths(path, name):
                if posixpath.splitext(target)[1].lower() not in BINARY_SUFFIXES and self._is_pointer(target):
                    yield target, how

    def _is_pointer(self, path: str) -> bool:
        return is_lfs_pointer(self._read(path, len(POINTER_START)))

    def _source(self, path: str) -> str:
        """The name the user fixes: the task's `files:` key, or the repository file copied in."""
        return self.case.workspace_paths.get(path, path)

    def _read(self, path: str, limit: int) -> bytes:
        """The first `limit` bytes the workspace shows at `path`; b'' where it holds no regular file
        (a name leaving the repository, the answer key, a FIFO)."""
        if path in self.case.files:
            return self.case.files[path].encode("utf-8", "surrogateescape")[:limit]
        rel = self._source(path)
        real = self.tree.real(rel)
        if real is None or real[1] != "file" or (path not in self.case.workspace_paths and self._hidden(rel, real[0])):
            return b""
        return self.tree.read(real[0], limit) or b""

    def _hidden(self, *rels: str) -> bool:
        return any(rel == h or rel.startswith(h + "/") for rel in rels for h in self.hidden)
