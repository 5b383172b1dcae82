"""Where a continued run is marked, so that it is continued once (gating/continuation.py).

A run is marked before its continuation's first trial (RUNNING, with the continuing process's
id), and once that continuation ends, with the run that continued it: under the reports folder
by run id (`mark_path`: a copy of the run's folder is the same run), in the run's own folder
(CONTINUED_BY) and in this user's cache folder (`user_mark`), so a config pointing `reports:`
elsewhere, or a copy of the folder made before, still finds it, while it runs and after. A RUNNING mark whose process is
gone (killed outright: it never ended, so it spent nothing) is taken over.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import time
from pathlib import Path

from rubricgate.isolation.untrusted import UntrustedPath, read_under
from rubricgate.runner.cache import MARKS_DIR, RUNNING_MARK

CONTINUED_BY = "continued-by"  # in a continued run's folder: the run that continued it (before MARKS)
MARK_BYTES = 4096  # a mark names one run or one process: far less
MARKS = ".continued"  # under the reports folder: a mark file per continued run, by run id
RUNNING = RUNNING_MARK  # the mark while that run is under way, with its process id
TAKEOVER_TRIES = 3  # a mark another process keeps making and removing meanwhile is left to it


def mark_path(reports: Path, run_id: str) -> Path:
    """Where a continued run is marked: under this repository's reports folder, by its run id, so
    a copy of its folder (elsewhere, or under another name) is the same run, continued once."""
    return reports / f"{MARKS}-{hashlib.sha256(run_id.encode()).hexdigest()[:32]}"  # a file: no run folder


def open_mark(marker: Path, empty_after: float | None = None) -> int:
    """A new mark, opened for writing; a mark left by a continuation whose process is gone
    (killed outright: it never ended, so it spent nothing) is taken over, by one process only.
    With `empty_after`, so is an empty mark untouched that many seconds: one whose maker was killed
    between making it and its first write (microseconds apart in a live one), for a mark that is
    never emptied otherwise (a design mark: never rewritten, only written over)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for _ in range(TAKEOVER_TRIES):
        try:
            return os.open(marker, flags, 0o644)
        except FileExistsError:
            if not _stale(marker, empty_after):
                raise
        _remove_if_stale(marker, empty_after)
    raise FileExistsError(errno.EEXIST, "taken over by another run meanwhile", str(marker))


def _stale(marker: Path, empty_after: float | None) -> bool:
    """Is the mark at `marker` one to take over: naming a process that is gone, or (`empty_after`)
    empty and untouched that long?"""
    if empty_after is not None:
        try:
            found = os.stat(marker, follow_symlinks=False)
        except OSError:
            return True  # gone meanwhile: the O_EXCL create decides
        if found.st_size == 0:
            return time.time() - found.st_mtime >= empty_after
    return continued_by(marker) is None


def _remove_if_stale(marker: Path, empty_after: float | None = None) -> None:
    """Remove the stale mark at `marker` under its own lock, when it is still that mark and still
    stale: two processes taking over one dead mark at once each removed it and made their own,
    the later removing the earlier's new mark, and both continued the run. FileExistsError when
    the mark is live by then."""
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return  # another took it over: the O_EXCL create decides
    try:
        with contextlib.suppress(OSError):  # a file system without flock: checked all the same
            fcntl.flock(fd, fcntl.LOCK_EX)  # held for the moment of one takeover
        if not same_file(fd, marker):
            return  # removed and made again by another: looked at afresh
        if not _stale(marker, empty_after):
            raise FileExistsError(errno.EEXIST, "marked meanwhile", str(marker))
        marker.unlink(missing_ok=True)
    finally:
        os.close(fd)


def same_file(fd: int, path: Path) -> bool:
    """Does `path` still name the file open at `fd`?"""
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def user_mark(cache_dir: Path | None, run_id: str) -> Path | None:
    """Where this user's cache folder names a run's continuation (beside runner/cache.py's note
    that this user started it): a `reports:` setting or a copy of the folder does not move it."""
    return cache_dir / MARKS_DIR / mark_path(Path(), run_id).name if cache_dir is not None else None


def write_mark(path: Path, text: str) -> bool:
    """`text` into the mark file at `path` (created, or rewritten; no link followed): written?"""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    except OSError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(text + "\n")
    return True


def why_not_again(by: str) -> str:
    """Why a run marked continued by `by` is not continued again."""
    if by.startswith(RUNNING):
        return f"it is being continued (by {by}): continuing it at the same time would spend the error twice"
    return f"it was continued already (by {by}): continuing it again would spend the error again"


def continued_by(marker: Path) -> str | None:
    """The run that continued the run `marker` marks, or the one continuing it; None when unmarked,
    or marked by a continuation whose process is gone (killed: it never ended, nothing was spent)."""
    # Read as untrusted, as little as a mark holds: beside a run folder planted under reports/, a
    # mark linked to /dev/zero was read until memory ran out (every plain rerun looks at it).
    try:
        data = read_under(marker.parent, marker.name, MARK_BYTES)
    except (OSError, UntrustedPath):
        return None
    by = data.decode(errors="replace").strip()[:80] or "another run"
    return None if by.startswith(RUNNING) and not _alive(by) else by


_PROCESS = re.compile(r"pid (\d+)(?:, started (\d+))?\)")


def running_mark() -> str:
    """What a continuation in progress writes in its mark: its pid and when that process started
    (a pid alone was taken for alive when another process had it since, after a reboot)."""
    started = process_start(os.getpid())
    return f"{RUNNING} (pid {os.getpid()}" + (f", started {started})" if started is not None else ")")


def process_start(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (/proc/PID/stat's 22nd field); None unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _alive(mark: str) -> bool:
    """Is the process a RUNNING mark names still there (on this machine), the same process?"""
    found = _PROCESS.search(mark)
    if found is None:
        return True  # a mark that names no process is not known to be stale
    pid, started = int(found.group(1)), found.group(2)
    try:
        os.kill(pid, 0)
    except (ValueError, OverflowError):
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: there, and its start time says whether it is the one
    now = process_start(pid)
    return started is None or now is None or now == int(started)
