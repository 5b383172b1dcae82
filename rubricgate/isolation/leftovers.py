"""Temp folders a process owns, and removing the ones whose owner is provably dead.

A run keeps its snapshot in /dev/shm or the temp folder, `mutate` a copy of the repository per
mutant, `compare --base` the reviewer at the base. A process killed with SIGKILL (an OOM kill, a
CI job cancelled hard) removes none of them, and nothing else would: a 100 MB snapshot in
/dev/shm is memory held until reboot.

So each such folder holds a lock file, `.rubricgate-owner`, that its maker holds an exclusive
`flock` on for as long as it lives (the kernel drops the lock when the last descriptor of it
closes: at exit, however the process ends). The file is locked before it gets its name (made
under a staging name, locked, then renamed), so the named file is never unlocked while its
owner lives. At its start a run looks at the temp folders with the names these folders take and
removes each one whose lock file it can lock itself: that proves the owner dead. A folder
without a lock file (another program's, an older rubricgate's, one being made) is never
touched, nor one of another user. One exception: a folder holding nothing but a staged lock file
that nobody holds, older than HALF_CLAIMED_AGE: its maker was killed while claiming it (a live
one holds the staged file's lock and names it within microseconds), and no other sweep took it.
The same age takes an EMPTY folder of exactly the names `owned_folder` makes (a prefix and
mkdtemp's 8 characters): its maker was killed before its staged lock file existed. It goes by
rmdir alone, which removes nothing but an empty folder and follows no link.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from rubricgate.isolation.overlay import remove_tree
from rubricgate.isolation.stranded import end_stranded_sandboxes

OWNER_FILE = ".rubricgate-owner"
PREFIXES = ("rg-", "rubricgate-mutant-", "rubricgate-base-", "rubricgate-basecopy-")
SHM = Path("/dev/shm")
HALF_CLAIMED_AGE = 3600.0  # seconds: a folder whose claim was cut short is left alone this long
# The prefixes owned_folder is called with, each then followed by mkdtemp's 8 random characters:
# an empty folder of another program with a similar name (rg-faults-abc123) is none of these.
MADE_PREFIXES = ("rg-", "rg-probe-", "rg-copilot-", "rubricgate-mutant-", "rubricgate-base-", "rubricgate-basecopy-")
_MADE = re.compile(f"(?:{'|'.join(map(re.escape, MADE_PREFIXES))})[a-z0-9_]{{8}}")

_held: dict[str, int] = {}  # folder -> the descriptor holding its lock
_guard = threading.Lock()


def owned_folder(prefix: str, parent: Path | str | None = None) -> Path:
    """A new temp folder (tempfile.mkdtemp) holding this process's lock file. Without flock
    (a file system that refuses it) the folder is made all the same, just never swept."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        claim(folder)
    except OSError:
        return folder
    except BaseException:  # Ctrl-C, SIGTERM: the folder is nobody's, and empty
        with contextlib.suppress(OSError):
            folder.rmdir()
        raise
    return folder


def claim(folder: Path) -> None:
    """Put a lock file in `folder`, locked by this process until `release` or its exit."""
    staged = folder / f"{OWNER_FILE}.{secrets.token_hex(4)}"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(staged, folder / OWNER_FILE)
    except BaseException:  # Ctrl-C too: a staged file left behind is swept only after HALF_CLAIMED_AGE
        os.close(fd)
        staged.unlink(missing_ok=True)
        raise
    with _guard:
        _held[os.fspath(folder)] = fd


def release(folder: Path) -> None:
    """Drop the lock of a folder this process removed (or never claimed)."""
    with _guard:
        fd = _held.pop(os.fspath(folder), None)
    if fd is not None:
        os.close(fd)


def disown(folder: Path) -> None:
    """Keep `folder` for good (--keep-workspaces): its lock file goes before the lock does, so no
    later run takes it for a dead run's left-over."""
    try:
        (folder / OWNER_FILE).unlink(missing_ok=True)
    except OSError:
        return
    finally:
        release(folder)


def remove_owned(folder: Path) -> None:
    """Remove a folder this process owns, its lock file last, then drop its lock (never raises).
    The lock file goes last so that a removal cut short (SIGTERM while a run cleans up: a
    snapshot of thousands of files) leaves a folder the next run's sweep knows for a dead run's;
    without its lock file none ever removed it."""
    try:
        entries = [e.path for e in os.scandir(folder) if e.name != OWNER_FILE]
    except OSError:  # unreadable or gone: remove_tree below takes it by its careful path
        entries = []
    for path in entries:
        if os.path.isdir(path) and not os.path.islink(path):
            remove_tree(Path(path))
        else:
            with contextlib.suppress(OSError):  # gone already, or the folder's removal below says
                os.unlink(path)
    remove_tree(folder)
    release(folder)


def sweep_dead(parents: Iterable[Path | str] | None = None) -> list[Path]:
    """Remove every left-over of a dead owner in `parents` (the temp folder and /dev/shm);
    the folders removed."""
    found = [folder for parent in (parents if parents is not None else (tempfile.gettempdir(), SHM))
             for folder in _candidates(Path(parent))]
    dead = [(folder, fd) for folder in found if (fd := _dead_owner_lock(folder)) is not None]
    taken = {folder for folder, _ in dead}
    empty = [folder for folder in found if folder not in taken and _MADE.fullmatch(folder.name)]
    if dead:  # a harness died outright: a sandbox it was starting may wait for it for good
        end_stranded_sandboxes()
    for folder, fd in dead:
        try:  # held while removing: a second sweeping run sees it locked, as if alive
            remove_tree(folder)
        finally:
            os.close(fd)
    return [folder for folder, _ in dead] + [folder for folder in empty if _remove_if_empty_and_old(folder)]


def sweep_in_background(parents: Iterable[Path | str] | None = None) -> threading.Thread:
    """sweep_dead on a thread of its own: a run's start does not wait for it."""
    thread = threading.Thread(target=sweep_dead, args=(parents,), name="leftover-sweep", daemon=True)
    thread.start()
    return thread


def _candidates(parent: Path) -> list[Path]:
    """This user's real folders in `parent` named like the ones `owned_folder` makes."""
    found: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return found
    me = os.geteuid()
    for entry in entries:
        if not entry.name.startswith(PREFIXES):
            continue
        try:
            if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == me:
                found.append(Path(entry.path))
        except OSError:
            continue
    return found


def _dead_owner_lock(folder: Path) -> int | None:
    """A descriptor holding the folder's lock when its owner is dead (we could take the lock);
    None while it lives, or when the folder holds no lock file of ours."""
    try:
        fd = os.open(folder / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return _dead_claim_lock(folder)
    except OSError:
        return None
    return _locked_if_ours(fd)


def _dead_claim_lock(folder: Path) -> int | None:
    """The staged lock file's lock of a folder whose maker died claiming it: nothing else in it,
    unlocked, and untouched for HALF_CLAIMED_AGE (a live maker between the file's making and its
    lock is microseconds away from naming it); None for any other folder."""
    try:
        names = os.listdir(folder)
        if len(names) != 1 or not names[0].startswith(f"{OWNER_FILE}."):
            return None
        if time.time() - os.lstat(folder).st_mtime < HALF_CLAIMED_AGE:
            return None
        fd = os.open(folder / names[0], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    return _locked_if_ours(fd)


def _remove_if_empty_and_old(folder: Path) -> bool:
    """rmdir `folder` when it has been untouched for HALF_CLAIMED_AGE: a folder whose maker was
    killed before it held a lock file (a live maker names one within microseconds of mkdtemp).
    rmdir removes an empty folder only, and no link: a folder with anything in it, or swapped
    for a link meanwhile, stays; so does one of this process (its lock files are in it). Only
    mkdtemp's mode 0700 is ours: another program's empty /tmp/rg-projects (0755) is not."""
    try:
        seen = os.lstat(folder)
        if time.time() - seen.st_mtime < HALF_CLAIMED_AGE or stat.S_IMODE(seen.st_mode) != 0o700:
            return False
        os.rmdir(folder)
    except OSError:
        return False
    return True


def _locked_if_ours(fd: int) -> int | None:
    """`fd` once locked by us, when this user's file and no process holds it; else None (closed)."""
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            raise BlockingIOError
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd
