"""A run's temp folder (TMPDIR, else /tmp; /dev/shm for the private side) that has no room.

The snapshot of the repository, the sandbox's probes and each trial's workspace are made there
(runner/workspace.py, runner/startup.py). A full one is the machine's problem, not the reviewer's
and not rubricgate's: before the first trial the run stops with one line naming the folder;
during the run the trial is an infrastructure failure (errored: left out of every rate, and no
PASS rests on it), so the run still ends with its report. Once reported as an internal error, or
as "its output could not be written" (a full disk's OSError names no file when a write, not an
open, fails).
"""

from __future__ import annotations

import errno
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.transcript import Transcript

FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
FIX = "free space there, or point TMPDIR at a folder with room"


def no_room(folder: Path, exc: BaseException) -> GateInputError | None:
    """The one line for a run whose temp folder had no room to start in (the snapshot, the
    sandbox's probes); None for any other failure."""
    if not isinstance(exc, OSError) or exc.errno not in FULL:
        return None
    return GateInputError(str(folder), "", f"the run's temp folder has no room to start the run ({exc.strerror})", FIX)


def no_workspace(agent: str, folders: tuple[Path, ...], exc: OSError) -> Transcript:
    """The errored transcript of a trial whose workspace could not be made in the run's temp
    folders (the shown one and the private one, when they differ)."""
    where = " and ".join(dict.fromkeys(map(str, folders)))
    return Transcript(agent=agent, termination="crashed", exit_code=None, failure="harness",
                      error=f"the trial's workspace could not be made in the run's temp folder {where}: "
                            f"{exc.strerror or exc} (fix: {FIX})",
                      evidence="no agent ran: rubricgate could not make the trial's workspace")
