"""Errors that end a run with exit code 2 (the gate could not judge)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rubricgate.boundary import printable

T = TypeVar("T")


class GateInputError(Exception):
    """Bad input: one line naming the file, the field and the fix."""

    def __init__(self, file: str, field: str, problem: str, fix: str = "") -> None:
        self.file, self.field, self.problem, self.fix = str(file), field, problem, fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """`file: field: problem (fix: ...)`, with control characters and line separators a
        file's key or value may hold shown escaped: it is one line, and no terminal escape."""
        where = f"{self.file}: {self.field}: " if self.field else f"{self.file}: "
        tail = f" (fix: {self.fix})" if self.fix else ""
        return printable(f"{where}{self.problem}{tail}")


class GateInputErrors(Exception):
    """Several load problems, reported together by `validate` and `run`."""

    def __init__(self, errors: list[GateInputError]) -> None:
        self.errors = errors
        super().__init__("\n".join(e.one_line() for e in errors))


def collect(errors: list[GateInputError], check: Callable[[], T]) -> T | None:
    """Run a check that raises; keep its problem(s) in `errors` and carry on (None then)."""
    try:
        return check()
    except GateInputErrors as exc:
        errors.extend(exc.errors)
    except GateInputError as exc:
        errors.append(exc)
    return None


READ_FIX = "make it readable by this user (chmod/chown), or run as the user who owns it"


def unreadable(path: object, fix: str = READ_FIX) -> GateInputError:
    """`path: cannot be read: permission denied (fix: ...)`: a file or folder the user may not read
    (a PermissionError, which pathlib raises from inside a folder the user may not look into)."""
    return GateInputError(str(path), "", "cannot be read: permission denied", fix)
