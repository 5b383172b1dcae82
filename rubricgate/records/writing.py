"""Writing report files: scrubbed, atomic, and failures collected rather than lost.

Every file rubricgate writes goes through `write_text_atomic` (or `write_pieces_atomic`, for
text made piece by piece: summary.json, report.html, junit.xml): secrets are scrubbed from the
final text (from JSON text its string values only: its keys are field names, ours, and a
reader validates them), lone surrogates are made writable, and the bytes land through a temp file and a
rename, so a full disk leaves either the old file or none, never half a file. A run collects the
files it could not write (`WriteFailure`); any failure makes the run's decision exit 2.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rubricgate.secrets import encoded, scrub, scrub_json

# `.<name>.<pid>.tmp`, beside the file it becomes: what a process killed mid-write leaves behind.
_TEMP_NAME = re.compile(r"\..+\.[0-9]+\.tmp")


@dataclass(frozen=True)
class WriteFailure:
    """A report file that could not be written, and why (one line); `verb` "read" when what
    failed was reading a file of the run the report is made from (a damaged transcript)."""

    path: str
    reason: str
    verb: str = "write"

    def line(self) -> str:
        return f"could not {self.verb} {self.path}: {self.reason}"


def is_failure_line(reason: str) -> bool:
    """Is this decision reason a WriteFailure's line (a record not written, or one a report could
    not read)? A run holding one lost records."""
    return reason.startswith(("could not write ", "could not read "))


def failure(path: Path | str, exc: BaseException) -> WriteFailure:
    """The WriteFailure for an exception raised while writing `path`."""
    if isinstance(exc, OSError):
        return WriteFailure(str(path), exc.strerror or str(exc))
    return WriteFailure(str(path), f"{type(exc).__name__}: {exc}")


def write_text_atomic(path: Path, text: str, secrets: list[str] | None = None, as_json: bool = False) -> Path:
    """Scrub `text`, write it to `path` via a temp file and rename; OSError propagates. JSON text
    (`as_json`) keeps its object keys, the field names a reader validates (`scrub_json`)."""
    return write_pieces_atomic(path, (text,), secrets, as_json)


def write_pieces_atomic(path: Path, pieces: Iterable[str], secrets: list[str] | None = None,
                        as_json: bool = False) -> Path:
    """`write_text_atomic` for text made piece by piece, so the whole is never held in memory:
    each piece is scrubbed on its own, so a piece must not end inside a string (JSON split between
    its values is). Anything raised while the pieces are made leaves no file and propagates."""
    tmp = path.with_name(temp_name(path.name))
    scrubbed = scrub_json if as_json else scrub
    try:
        with _create(tmp) as handle:
            for piece in pieces:
                handle.write(encoded(scrubbed(piece, secrets or [])))
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    return path


def temp_name(name: str) -> str:
    """The name of the temp file a file called `name` is written into before its rename."""
    return f".{name}.{os.getpid()}.tmp"


def is_temp_name(name: str) -> bool:
    """Is `name` one of `temp_name`'s, of this process or any other?"""
    return _TEMP_NAME.fullmatch(name) is not None


def _create(path: Path) -> BinaryIO:
    """The temp file a report is written into (where the tests' full disk is simulated)."""
    return open(path, "wb")


def _discard(tmp: Path) -> None:
    # A leftover temp file is harmless; failing to remove it must not hide the real error.
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        return
