"""One run of a design at a time: two runs of one design at once are two chances to PASS.

A plain rerun of an INCONCLUSIVE run continues it (gating/continuation.py), so rerunning until
it passes spends the error once. But two fresh runs of one design started together (two
terminals, two CI jobs) could not see each other's result: each began afresh, each a chance to
PASS, and the user kept whichever passed; a plain rerun started while a fresh run of the design
was under way began afresh beside it too. So a statistical run holds its design's mark under the
reports folder (`design_mark_path`: by its design key and rubricgate.yaml's judging settings, the
two halves of "the same design"), from before it looks for a run to continue until its report is
written: a second run of the design meanwhile is refused (one line, exit 2) and, once the first
has ended, a rerun continues it when it was INCONCLUSIVE. Runs of other designs (`--only`, another
agent, the copy of a mutant with its own reports folder) hold other marks and run at once freely.

A mark left by a killed run names a process that is gone and is taken over (open_mark, as a
continuation's); so is an empty one older than EMPTY_MARK_AGE, left by a run killed between
making its mark and writing it. A mark removed or replaced during the run (a copy-only reviewer runs unsandboxed
and can reach it) let another run start beside this one: this run then cannot judge (`lost`), so
at most one of the two can PASS.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.gating.continuation_marks import open_mark, running_mark, same_file

DESIGN_MARK = ".design"  # under the reports folder: one mark per design while a run of it is under way
WAIT = "wait for it to end, then run again (it will continue that run if INCONCLUSIVE)"
LOST = "this design's run mark"  # how a run whose mark was lost says so (regrade carries it over)
MARK_BYTES = 400  # a mark is a line: the process and the run folder it names
EMPTY_MARK_AGE = 60.0  # seconds: an empty mark this old was cut short as it was made (a live run writes at once)


def design_mark_path(reports: Path, key: str, settings: dict[str, str]) -> Path:
    """Where a run of the design (`key`, and the judging `settings` the key leaves out) is marked."""
    ident = json.dumps([key, sorted(settings.items())])
    return reports / f"{DESIGN_MARK}-{hashlib.sha256(ident.encode()).hexdigest()[:32]}"  # a file: no run folder


@dataclass
class DesignMark:
    """This run's hold on its design, from before it looks for a run to continue to its report."""

    path: Path
    fd: int | None = None  # the mark, held open; None: the reports folder cannot be written, nothing held

    def __enter__(self) -> DesignMark:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def name_run(self, run_dir: Path) -> None:
        """The mark names the run once its folder exists, so a run refused knows which to wait
        for. Written over the first line, which it extends: never an empty mark meanwhile."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.pwrite(self.fd, f"{running_mark()} in {run_dir}\n".encode(), 0)

    def lost(self) -> str:
        """Why this run cannot judge ('' when it can): its mark was removed or replaced meanwhile,
        so another run of the design could have started beside it, a second chance to PASS."""
        if self.fd is None or same_file(self.fd, self.path):
            return ""
        return (f"{LOST}: {self.path} was removed or replaced during the run, so another run of it could "
                "have run beside this one; run again")

    def release(self) -> None:
        """Lift the mark when it is still this run's (a mark that replaced it is another run's)."""
        if self.fd is None:
            return
        if same_file(self.fd, self.path):
            self.path.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = None


def hold_design(path: Path) -> DesignMark:
    """This run's mark on its design at `path` (design_mark_path); a one-line GateInputError when a
    run of the design is under way, or something not a mark stands in its place. A reports folder
    that cannot be written holds nothing: the run folder cannot be made there either."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return DesignMark(path)
    try:
        fd = open_mark(path, empty_after=EMPTY_MARK_AGE)
    except FileExistsError:
        raise _under_way(path) from None
    except OSError:
        if os.path.lexists(path):  # a link or a folder in its place: whether a run is under way is not known
            raise GateInputError(str(path), "", "is not a mark rubricgate wrote (a link or a folder)",
                                 "remove it, then run again") from None
        return DesignMark(path)
    os.write(fd, (running_mark() + "\n").encode())
    return DesignMark(path, fd)


_RUN = re.compile(r"\(pid (\d+)[^)]*\)(?: in (.+))?$")


def _under_way(path: Path) -> GateInputError:
    """The refusal, naming the run under way: its folder once it has one, else its mark."""
    try:
        text = path.read_text(errors="replace")[:MARK_BYTES].strip()
    except OSError:
        text = ""
    found = _RUN.search(text)
    pid, run = (found.group(1), found.group(2)) if found else (None, None)
    # A mark naming no process is taken over once EMPTY_MARK_AGE old when empty (cut short as it was
    # made); until then, or holding something else, the user is told where it is.
    who = f"pid {pid}" if pid else f"no process named: if none is under way, remove {path}"
    # A pid another process has taken since (no start time where the mark was written) is never
    # taken over either: the fix names the mark, which the run folder named first does not.
    fix = f"{WAIT}; if no run of it is under way, remove {path}" if pid else WAIT
    return GateInputError(run or str(path), "", f"a run of this same design is under way ({who}): another "
                          "beside it would be a second chance to PASS", fix)
