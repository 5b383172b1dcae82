"""Reading files under a folder the viewer was given, never through a link.

Every path is walked from the folder's own descriptor one component at a time with O_NOFOLLOW:
a symlink anywhere below the folder (to a file or to another folder), or the folder itself
turned into one, is refused, and `..`,
absolute paths and empty components are refused before anything is opened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

MAX_FILE = 256 * 1024 * 1024  # a summary of a very large run is tens of MB; nothing here is larger


class Refused(Exception):
    """A path outside the folder, through a link, or not a regular file."""


class Unreadable(Refused):
    """A file or folder the user may not read (permission denied): said, never taken for absent."""


def _refused(what: str, exc: OSError) -> Refused:
    kind = Unreadable if isinstance(exc, PermissionError) else Refused
    return kind(f"{what}: {exc.strerror}")


def parts(rel: str) -> list[str]:
    """The components of a relative POSIX path; Refused for absolute, `..`, `.` or empty ones."""
    if not rel or "\x00" in rel or "\\" in rel or PurePosixPath(rel).is_absolute():
        raise Refused(f"not a relative path: {rel!r}")
    out = rel.split("/")
    if any(p in ("", ".", "..") for p in out):
        raise Refused(f"not a plain path below the folder: {rel!r}")
    return out


def _open_dir(root: Path) -> int:
    # O_NOFOLLOW: a run folder found real and replaced by a link while the viewer serves is
    # refused as it was when runs were found (roots are resolved folders or such run folders).
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def open_below(root: Path, rel: str) -> int:
    """A read-only descriptor of `root/rel`, refusing links and anything but a regular file."""
    names = parts(rel)
    try:
        fd = _open_dir(root)
    except OSError as exc:  # the run folder was removed while the viewer serves
        raise _refused(str(root), exc) from exc
    try:
        for name in names[:-1]:
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        leaf = os.open(names[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError as exc:
        raise _refused(rel, exc) from exc
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(leaf).st_mode):
        os.close(leaf)
        raise Refused(f"{rel}: not a regular file")
    return leaf


def read_bytes(root: Path, rel: str, limit: int = MAX_FILE) -> bytes:
    """The bytes of `root/rel` (see open_below); Refused when larger than `limit`."""
    fd = open_below(root, rel)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{rel}: larger than {limit} bytes")
    return data


def read_text(root: Path, rel: str) -> str:
    """`root/rel` as UTF-8 text (undecodable bytes replaced)."""
    return read_bytes(root, rel).decode("utf-8", errors="replace")


def file_stamp(root: Path, rel: str, strict: bool = False) -> str | None:
    """"size:mtime_ns" of a regular file below `root` (not through a link), None when absent;
    `strict`: Unreadable when the user may not read it."""
    try:
        fd = open_below(root, rel)
    except Unreadable:
        if strict:
            raise
        return None
    except Refused:
        return None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return f"{st.st_size}:{st.st_mtime_ns}"


def is_plain_dir(path: Path, strict: bool = False) -> bool:
    """A real folder, not a link to one; `strict`: PermissionError when its folder may not be looked into."""
    return _is_kind(path, stat.S_ISDIR, strict)


def is_plain_file(path: Path, strict: bool = False) -> bool:
    """A regular file, not a link to one; `strict` as in is_plain_dir."""
    return _is_kind(path, stat.S_ISREG, strict)


def _is_kind(path: Path, kind, strict: bool) -> bool:
    try:
        return kind(os.lstat(path).st_mode)
    except PermissionError:
        if strict:
            raise
        return False
    except OSError:
        return False
