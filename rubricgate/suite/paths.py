"""Repository-relative paths that cannot escape the repository."""

from __future__ import annotations

import os
import stat
from functools import lru_cache
from pathlib import Path, PurePosixPath

from rubricgate.errors import GateInputError

# What Linux allows (PATH_MAX, NAME_MAX): a longer path is no file anyone has, and asking the
# file system about it raises ENAMETOOLONG where a missing file would simply not exist.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def safe_relpath(repo: Path, rel: str, display: str, field: str) -> PurePosixPath:
    """Validate a repo-relative path: not absolute, no '..', no symlink out of the repo."""
    if not rel or not rel.strip():
        raise GateInputError(display, field, "empty path", "give a repository-relative path")
    if "\x00" in rel:  # no file name holds one, and the file system refuses to be asked about it
        raise GateInputError(display, field, f"path {rel!r} holds a NUL character", "remove it")
    pure = PurePosixPath(rel)
    if pure.is_absolute() or rel.startswith("~") or (len(rel) > 1 and rel[1] == ":"):
        raise GateInputError(display, field, f"absolute path {rel!r}", "use a path relative to the repository root")
    if ".." in pure.parts:
        raise GateInputError(display, field, f"path {rel!r} contains '..'", "keep paths inside the repository")
    if len(rel.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES or \
            any(len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for part in pure.parts):
        raise GateInputError(display, field, f"path {rel[:60]!r}... is longer than a file system allows",
                             f"shorten it (at most {MAX_NAME_BYTES} bytes a name, {MAX_PATH_BYTES} in all)")
    # String paths, not pathlib: `validate` checks every suite path, and building a Path per
    # parent to compare was a measurable part of its start-up (bench/startup.py).
    root = real_root(os.fspath(repo), _identity(repo))
    resolved = resolve_under(root, rel)
    if resolved != root and not resolved.startswith(root.rstrip(os.sep) + os.sep):
        raise GateInputError(display, field, f"path {rel!r} resolves outside the repository (symlink)",
                             "point at a file inside the repository")
    return pure


@lru_cache(maxsize=8)
def real_root(repo: str, identity: tuple[int, int] | None) -> str:
    """The repository's real path, resolved once for a given folder: every task path of a
    suite is checked against it (realpath walks each component from `/` in Python). `identity`
    (device, inode of what `repo` names now) makes a path re-pointed at another folder resolve
    again."""
    return os.path.realpath(repo)


def _identity(repo: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(repo)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def resolve_under(root: str, rel: str) -> str:
    """os.path.realpath(root/rel) for a `root` that is already real: the plain join unless a
    component of `rel` is a symlink. realpath walks every component from `/` in Python; loading
    2,000 task files spent a third of its time there."""
    path = root
    for part in rel.split("/"):
        if part in ("", "."):
            continue
        path = os.path.join(path, part)
        try:
            link = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            break  # missing from here on: nothing below can be a symlink
        if link:
            return os.path.realpath(os.path.join(root, rel))
    return os.path.normpath(os.path.join(root, rel))


def real_rel(repo: Path, rel: str) -> str:
    """`rel` with its links followed, repository-relative ('' when it leaves the repository or is
    the repository itself)."""
    root, real = os.path.realpath(repo), os.path.realpath(os.path.join(repo, rel))
    return real[len(root) + 1:].replace(os.sep, "/") if real.startswith(root + os.sep) else ""
