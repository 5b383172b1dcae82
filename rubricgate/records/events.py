"""events.jsonl: appended and flushed as things happen, so an interrupted run keeps them.

The run holds an exclusive `flock` on the file while it writes: the kernel drops it however the
run ends, so a reader tells a run still going from one killed before its summary (`writer_alive`).
The file is locked before it gets its name (`open_locked`), so no reader finds it unlocked while
its writer lives.

The log is also where a run keeps the report files it could not write (`write_failures`):
a full disk must not crash the run, but it must make the decision exit 2 at the end.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets as tokens
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rubricgate import boundary
from rubricgate.records.writing import WriteFailure, failure
from rubricgate.secrets import encodable, scrub_data, scrub_json

EventListener = Callable[[dict[str, Any]], None]


class EventLog:
    """Writes one JSON object per line and forwards each (scrubbed) event to listeners."""

    def __init__(self, path: Path, listeners: list[EventListener] | None = None, secrets: list[str] | None = None):
        self.path = path
        self.listeners = listeners or []
        self.secrets = secrets or []
        self.write_failures: list[WriteFailure] = []
        self._file: IO[str] | None = None
        try:
            self._file = open_locked(path)
        except OSError as exc:
            self.failed(path, exc)

    def emit(self, event: str, **fields: Any) -> None:
        """Record an event now (flushed before returning), then tell the listeners."""
        record = {"event": event, "at": datetime.now(UTC).isoformat(timespec="milliseconds"), **fields}
        record = scrub_data(record, self.secrets)  # listeners print to CI logs: they get it scrubbed too
        self._write(scrub_json(json.dumps(record, default=str), self.secrets) + "\n")
        for listener in list(self.listeners):
            try:
                listener(record)
            except OSError:  # its reader left (`run 2>&1 | head`): it shows the run, the log keeps it
                with contextlib.suppress(ValueError):  # another trial's thread dropped it first
                    self.listeners.remove(listener)

    def failed(self, path: Path | str, exc: BaseException) -> None:
        """Remember a report file that could not be written (the run's decision becomes exit 2)."""
        self.write_failures.append(failure(path, exc))

    def _write(self, line: str) -> None:
        if self._file is None:
            return  # already failed once: the first failure is the one reported
        try:
            self._file.write(encodable(line))
            self._file.flush()
        except OSError as exc:
            self.failed(self.path, exc)
            self._close()

    def _close(self) -> None:
        file, self._file = self._file, None
        try:
            if file is not None:
                file.close()
        except OSError as exc:  # close flushes: a full disk can surface only here
            self.failed(self.path, exc)

    def close(self) -> None:
        self._close()


def open_locked(path: Path) -> IO[str]:
    """`path` opened to append, under this process's exclusive lock from before anyone can open it
    by that name: a new file is made under a staging name, locked, then linked into place (made and
    then locked, a viewer looking in between read the live run as stopped)."""
    staged = path.with_name(f".{path.name}.{tokens.token_hex(4)}")
    file = staged.open("x", encoding="utf-8")
    try:
        # A file system without flock: the viewer then reads the run as going until its summary.
        with contextlib.suppress(OSError):
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        _link_into_place(staged, path)
    except OSError:
        file.close()
        raise
    finally:
        staged.unlink(missing_ok=True)
    return file


def _link_into_place(staged: Path, path: Path) -> None:
    """`staged` named `path` too, never over a file there (hard links refused: renamed instead)."""
    try:
        os.link(staged, path)
    except FileExistsError:  # never replaced: not this run's file
        raise
    except OSError:  # no hard links here: a rename is as atomic, and the run folder is new
        os.rename(staged, path)


def writer_alive(fd: int) -> bool:
    """Whether the run writing the events file open at `fd` still holds it (False: it ended,
    with its summary or killed before one). Unknown (flock refused) reads as alive."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError: held; any other: cannot tell
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


EVENTS_FILE = "events.jsonl"


def unfinished_run(folder: Path) -> str:
    """How the run of `folder` ended without a summary.json ('' when the folder has one, or is no
    run's: no events file): still running, or stopped before it (killed outright, or its summary
    removed since). Nothing was gated: a listing of many runs (a shell glob of reports/) leaves
    it out with a note rather than failing on it."""
    try:
        if (folder / "summary.json").exists() or not (folder / EVENTS_FILE).is_file():
            return ""
        fd = os.open(folder / EVENTS_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # not a folder, or one that may not be looked into: read_summary's error says so
        return ""
    try:
        alive = writer_alive(fd)
    finally:
        os.close(fd)
    return "a run still going, no summary.json yet" if alive else \
        "a run that ended without a summary.json, killed outright or its summary removed: nothing was gated"


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every complete line of an events file (a line cut by a crash is skipped)."""
    out = []
    # Bytes that are not UTF-8 (a disk error, a hand edit) cost their line, never the read.
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        try:
            out.append(boundary.loads(line))
        except ValueError:  # cut by a crash, or nested deeper than any event
            continue  # only the last line of a killed run can be partial
    return out
