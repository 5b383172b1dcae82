"""Where a continued run is marked, so that it is continued once (gating/continuation.py).

A run is marked before its continuation's first trial (RUNNING, with the continuing process's
id), and once that continuation ends, with the run that continued it: under the reports folder
by run id (`mark_path`: a copy of the run's folder is the same run), in the run's own folder
(CONTINUED_BY) and in this user's cache folder (`user_mark`), so a config pointing `reports:`
elsewhere, or a copy of the folder made before, still finds it. A RUNNING mark whose process is
gone (killed outright: it never ended, so it spent nothing) is taken over.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from rubricgate.runner.cache import MARKS_DIR

CONTINUED_BY = "continued-by"  # in a continued run's folder: the run that continued it (before MARKS)
MARKS = ".continued"  # under the reports folder: a mark file per continued run, by run id
RUNNING = "a run in progress"  # the mark while that run is under way, with its process id


def mark_path(reports: Path, run_id: str) -> Path:
    """Where a continued run is marked: under this repository's reports folder, by its run id, so
    a copy of its folder (elsewhere, or under another name) is the same run, continued once."""
    return reports / f"{MARKS}-{hashlib.sha256(run_id.encode()).hexdigest()[:32]}"  # a file: no run folder


def open_mark(marker: Path) -> int:
    """A new mark, opened for writing; a mark left by a continuation whose process is gone
    (killed outright: it never ended, so it spent nothing) is taken over."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        return os.open(marker, flags, 0o644)
    except FileExistsError:
        if continued_by(marker) is not None:
            raise
    marker.unlink(missing_ok=True)
    return os.open(marker, flags, 0o644)


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
    try:
        by = marker.read_text(errors="replace").strip()[:80] or "another run"
    except OSError:
        return None
    return None if by.startswith(RUNNING) and not _alive(by) else by


def _alive(mark: str) -> bool:
    """Is the process a RUNNING mark names still there (on this machine)?"""
    try:
        os.kill(int(mark.rsplit("pid ", 1)[1].rstrip(")")), 0)
    except (IndexError, ValueError, OverflowError):
        return True  # a mark that names no process is not known to be stale
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
