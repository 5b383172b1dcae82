"""Reading what a reviewer or a shard wrote, without trusting its shape.

A reviewer can write into its scratch folder (HOME, the last-message file) and a shard folder
comes from another machine. Either can hold a symbolic link where the harness expects a file:
`last-message.txt -> /etc/shadow`, `transcripts -> ../../.git/hooks`. The harness runs outside
the sandbox, so following such a link reads (or writes) what the sandbox hid. Here every path
is opened component by component from a trusted folder with O_NOFOLLOW, only a regular file is
read, a FIFO cannot block the read (O_NONBLOCK), and at most `cap` bytes are taken. What the
harness writes there (a CLI's settings before each attempt: a retry runs in the same scratch
folder, which the failed attempt could fill with links) is written the same way: a link or a file
where a folder goes, or a link where the file goes, is removed, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

DEFAULT_CAP = 8_000_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class UntrustedPath(ValueError):
    """A path that leaves its folder, passes through a link, or is not a regular file."""


def relative_parts(rel: str | os.PathLike[str]) -> tuple[str, ...]:
    """The components of a relative path that stays inside its folder; raises UntrustedPath for
    an absolute path, an empty one, or any `..` or `.` component."""
    text = os.fspath(rel)
    parts = PurePosixPath(text).parts
    if not text or text.startswith("/") or "\\" in text or "\0" in text:
        raise UntrustedPath(f"{text!r} is not a relative path inside its folder")
    if not parts or any(p in ("..", ".") for p in parts) or "/./" in f"/{text}/" or "/../" in f"/{text}/":
        raise UntrustedPath(f"{text!r} leaves its folder")
    return parts


def open_under(root: Path, rel: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file `root/rel`, no link followed below `root`."""
    parts = relative_parts(rel)
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        try:
            leaf = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == 40:  # ELOOP: the last component is a link
                raise UntrustedPath(f"{rel} is a symbolic link") from exc
            raise
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(leaf).st_mode):
        os.close(leaf)
        raise UntrustedPath(f"{rel} is not a regular file")
    return leaf


def read_under(root: Path, rel: str | os.PathLike[str], cap: int = DEFAULT_CAP) -> bytes:
    """At most `cap` bytes of the regular file `root/rel`, opened without following links.
    Raises OSError when it is absent and UntrustedPath when it is a link or not a file."""
    fd = open_under(root, rel)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(cap)


def read_under_fd(folder: int, name: str, cap: int = DEFAULT_CAP) -> bytes:
    """read_under of the entry `name` of an opened folder (opened_folder): no walk from a root."""
    leaf = os.open(name, _FILE_FLAGS, dir_fd=folder)
    with os.fdopen(leaf, "rb") as fh:
        if not stat.S_ISREG(os.fstat(leaf).st_mode):
            raise UntrustedPath(f"{name} is not a regular file")
        return fh.read(cap)


@contextlib.contextmanager
def opened_folder(path: Path) -> Iterator[int]:
    """A descriptor of the folder `path` itself (a link there is refused: OSError), closed after."""
    fd = os.open(path, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


def read_reviewer_text(path: Path, cap: int = DEFAULT_CAP) -> str:
    """The text of a file the reviewer wrote beside its run (last message): '' when it is
    absent, a link, not a regular file, or unreadable; at most `cap` bytes."""
    try:
        data = read_under(path.parent, path.name, cap)
    except (OSError, UntrustedPath):
        return ""
    return data.decode("utf-8", errors="replace")


def regular_file(path: Path) -> bool:
    """path itself (not what a link names) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def write_fresh(path: Path, data: bytes) -> None:
    """Write `data` to a new regular file at `path`, first removing whatever the reviewer left
    there (a link to a host file must be replaced, never written through)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise UntrustedPath(f"{path} is a folder") from None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def write_fresh_in(folder: int, name: str, data: bytes) -> None:
    """write_fresh of the entry `name` of an opened folder (opened_folder). Created exclusively,
    so whatever stands there (a link, a file) is removed first, never written through; in a
    fresh folder that costs no unlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o600, dir_fd=folder)
    except FileExistsError:
        try:
            os.unlink(name, dir_fd=folder)
        except IsADirectoryError:
            raise UntrustedPath(f"{name} is a folder") from None
        fd = os.open(name, flags, 0o600, dir_fd=folder)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def folder_under(root: Path, rel: str | os.PathLike[str]) -> int:
    """A descriptor of the folder `root/rel`, made where missing. A link or anything but a folder
    on the way is removed first and a folder made in its place: nothing below `root` is followed
    (`home/.qwen -> /etc` left by an earlier attempt would have the harness write into /etc).
    `root` is the harness's own folder, made when missing."""
    os.makedirs(root, exist_ok=True)
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in relative_parts(rel) if os.fspath(rel) not in ("", ".") else ():
            nxt = _enter_or_make(fd, part)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_folders(root: Path, rels: list[str]) -> None:
    """`folder_under(root, rel)` for each of `rels`, the root opened once and a folder shared by
    several (`.local` of `.local/share` and `.local/state`) entered once: a trial's HOME and XDG
    folders were six walks from the root (19 opens a trial, isolation/environment.py)."""
    os.makedirs(root, exist_ok=True)
    opened: dict[tuple[str, ...], int] = {(): os.open(root, _DIR_FLAGS)}
    try:
        for rel in rels:
            parts = relative_parts(rel) if os.fspath(rel) not in ("", ".") else ()
            for depth in range(1, len(parts) + 1):
                if parts[:depth] not in opened:
                    opened[parts[:depth]] = _enter_or_make(opened[parts[:depth - 1]], parts[depth - 1])
    finally:
        for fd in opened.values():
            os.close(fd)


def _enter_or_make(fd: int, part: str) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            raise
        if exc.errno != errno.ENOENT:  # a link or a file where the folder goes: the reviewer's
            os.unlink(part, dir_fd=fd)
    os.mkdir(part, dir_fd=fd)
    return os.open(part, _DIR_FLAGS, dir_fd=fd)


def write_under(root: Path, rel: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` as a new regular file at `root/rel` (folders made on the way), replacing a
    link or file found there, never writing through one (folder_under). Mode 0o666 less the
    umask, as Path.write_text gives: the sandbox user must read what a root harness writes."""
    parts = relative_parts(rel)
    folder = folder_under(root, os.path.join(*parts[:-1]) if len(parts) > 1 else "")
    try:
        try:
            os.unlink(parts[-1], dir_fd=folder)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            raise UntrustedPath(f"{rel} is a folder") from None
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                     dir_fd=folder)
    finally:
        os.close(folder)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
