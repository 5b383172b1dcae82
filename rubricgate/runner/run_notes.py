"""A copy-only run's cache folder thrown away (`retire_unsafe_cache`, with the default folder's
rendering caches: `retire_unsafe_renders`), and this user's run notes, continuation marks and
compiled report templates carried across it.

A copy-only run throws its cache folder away once its trials end (runner/cache.py
`retire_cache`): its reviewer could read the signing key. The notes that this user started
earlier runs (`runs/`, one empty file a run: `remember_run`), the marks of continued runs
(`continued/`) and report.html's compiled templates (`templates/`, reports/render_cache.py) live
in that folder too, so they are read before the run's first agent and put back in the fresh
folder, none that the folder gained meanwhile (its reviewer could plant them: compiled code the
next sandboxed run's harness would execute). Without the templates every copy-only run compiled
report.html's page after the retirement (47-61 ms of CPU, 0.3 ms a trial at 200 cases).

The notes grow by one a run, forever. Written back one by one, 2,800 of them cost a copy-only
run's end 0.4-1.8 s of CPU, mostly the kernel making the files (and, the next run, freeing
them: on this project's shared disk, an ext4 without a journal, every new inode is searched for
past those freed in the last seconds). So a notes folder that holds what was read goes back
whole, by one rename, once any other file in it is removed (a note another run of this user's
made meanwhile, which the folder written afresh would leave out as well: on a machine where
one user runs several suites at once, nearly every copy-only run's folder gained one); anything
else, and it is written afresh as before.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

from rubricgate.isolation.untrusted import UntrustedPath, opened_folder, read_under_fd, write_fresh_in
from rubricgate.runner.cache import (
    MARKS_DIR,
    NOTE_BYTES,
    RUNNING_MARK,
    RUNS_DIR,
    TEMPLATES,
    default_cache_dir,
    retire_cache,
    retire_rendered,
)

# What is carried over, and the most a file of it holds (larger: not one of ours, left out).
KEPT = {RUNS_DIR: NOTE_BYTES, MARKS_DIR: NOTE_BYTES, TEMPLATES: 4_000_000}


def read_notes(cache_dir: Path | None) -> dict[str, bytes]:
    """This user's run notes and continuation marks as they are now (before a copy-only run's
    reviewer can touch them), for `restore_notes` once that run has retired the cache folder:
    moving them out of use with it made the next plain rerun start afresh and let a copy of a
    continued run be continued again. Regular files only, read without following a link."""
    notes: dict[str, bytes] = {}
    if cache_dir is None:
        return notes
    for folder, cap in KEPT.items():
        with contextlib.suppress(OSError):  # none yet
            with opened_folder(cache_dir / folder) as fd:
                notes.update((f"{folder}/{name}", data) for name, data in _notes_in(fd, cap))
    return notes


def _notes_in(fd: int, cap: int) -> Iterator[tuple[str, bytes]]:
    # A run note is an empty file: its listing says it all, no open and read (2,800 notes were
    # 60 ms of every copy-only run's start).
    for entry in list(os.scandir(fd)):
        # Gone since listed (another copy-only run of this user retired the folder), or a link
        # meanwhile: not kept.
        with contextlib.suppress(OSError, UntrustedPath):
            size = entry.stat(follow_symlinks=False).st_size if entry.is_file(follow_symlinks=False) else -1
            if 0 <= size <= cap:
                yield entry.name, read_under_fd(fd, entry.name, cap) if size else b""


def with_marks_since(notes: dict[str, bytes], retired: Path) -> dict[str, bytes]:
    """`notes` (read_notes before a copy-only run's first agent) with the continuation marks the
    `retired` cache folder gained meanwhile: another continuation of this user's, started while
    the run ran, marked its run there, and the folder took the mark away with it, so a copy of that
    run under another reports folder was continued again. Such a mark can only refuse a
    continuation, whoever wrote it (the run's reviewer could have), so it is kept; but a running
    one never replaces one from before (a stale one, its process gone, is taken over)."""
    kept = dict(notes)
    with contextlib.suppress(OSError), opened_folder(retired / MARKS_DIR) as fd:
        for name, data in _notes_in(fd, NOTE_BYTES):
            rel = f"{MARKS_DIR}/{name}"
            if rel not in kept or not data.startswith(RUNNING_MARK.encode()):
                kept[rel] = data
    return kept


def restore_notes(cache_dir: Path, notes: dict[str, bytes], retired: Path) -> None:
    """Put `notes` (read_notes, and this run's own) into the fresh cache folder `cache_dir`, from
    the `retired` one: a notes folder still holding them as read is moved back whole, whatever
    else it gained removed first; any other is written afresh. A note that cannot be written is
    left out (a run not continued unasked: the safe side)."""
    for folder, cap in KEPT.items():
        named = {rel.partition("/")[2]: data for rel, data in notes.items() if rel.partition("/")[0] == folder}
        if named and not _moved_back(retired / folder, cache_dir / folder, named, cap):
            _write_notes(cache_dir / folder, named)


def _moved_back(old: Path, new: Path, named: dict[str, bytes], cap: int) -> bool:
    try:
        with opened_folder(old) as fd:
            if not _holds_only(fd, named, cap):
                return False
            new.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.rename(old, new)  # refused where the fresh folder has one already (another run's)
            # What was renamed is the folder checked, not one put in its place meanwhile.
            return os.path.samestat(os.lstat(new), os.fstat(fd))
    except (OSError, UntrustedPath):
        return False


def _holds_only(fd: int, named: dict[str, bytes], cap: int) -> bool:
    """The folder is ours alone and holds `named`, each a regular file of its own (one link: no
    other file written through it), writable by no one else, as read; anything else in it is
    removed first, and then it holds `named` and nothing else."""
    folder = os.fstat(fd)
    if folder.st_uid != os.getuid() or folder.st_mode & 0o077:
        return False
    entries = {entry.name: entry for entry in os.scandir(fd)}
    if not named.keys() <= entries.keys():
        return False
    for name, data in named.items():
        info = entries[name].stat(follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_mode & 0o022 or info.st_size != len(data):
            return False
        if data and read_under_fd(fd, name, cap) != data:
            return False
    return _without_others(fd, entries.keys() - named.keys(), named.keys())


def _without_others(fd: int, others: AbstractSet[str], named: AbstractSet[str]) -> bool:
    """Remove `others` from the opened folder (a link is removed, never followed; a folder is
    not removed: False); True when it then lists `named` alone."""
    for name in others:
        os.unlink(name, dir_fd=fd)  # a folder raises: the notes are written afresh
    return not others or set(os.listdir(fd)) == named  # none added since it was listed


def _write_notes(folder: Path, named: dict[str, bytes]) -> None:
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with opened_folder(folder) as fd:
            for name, data in named.items():
                with contextlib.suppress(OSError, UntrustedPath):
                    write_fresh_in(fd, name, data)


def retire_unsafe_cache(cache_dir: Path | None) -> tuple[str, Path | None]:
    """Move the cache folder out of use after a copy-only run (its reviewer could read the signing
    key): what happened, as the run's warning says it, and where the folder went."""
    if cache_dir is None:
        return "", None
    try:
        retired = retire_cache(cache_dir)
    except OSError as exc:
        return (f"the cache folder {cache_dir} could not be cleared ({exc.strerror}): "
                "delete it before the next --cache run"), None
    return "the cache folder was cleared with its signing key, which the reviewer could read", retired


def retire_unsafe_renders(cache_dir: Path | None) -> tuple[list[Path], str]:
    """The user's default cache folder's rendering folders moved out of use after a copy-only run
    that retired another cache folder (runner/cache.py retire_rendered): where they went, and the
    warning when one could not be moved."""
    if cache_dir is None:
        return [], ""
    try:
        return retire_rendered(cache_dir), ""
    except OSError as exc:
        return [], (f"the rendering cache in {default_cache_dir()} could not be cleared ({exc.strerror}): "
                    "delete its templates and charts folders")
