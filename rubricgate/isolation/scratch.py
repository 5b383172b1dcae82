"""Where a run's throwaway folders live: the harness's own in memory when there is room.

Every trial makes and deletes a dozen folders and files (its overlay layers, the case files, the
raw stream) and the run keeps a snapshot of the tree. On a disk file system each of those is a
journaled metadata write (a mkdir costs 0.13 ms on this project's ext4 CI disk, 2 us on tmpfs)
and trials running at once queue on the same directory lock.

So the folders only the harness reads (the snapshot, the case layers, the overlay's upper and
work folders, the raw stream) go to /dev/shm when it is a writable tmpfs with room for the
snapshot and a margin. A copy of the tree the agent is shown (copy-only, --keep-workspaces), its
HOME and output folder stay in the system temp folder: a CLI that sandboxes its own tools
(Codex, Claude Code) mounts a fresh /dev, where a workspace under /dev/shm would vanish. An
overlay workspace's upper layer and the trial's HOME beside it are on the private side (the
sandbox mounts them at the shown paths), so what a sandboxed reviewer writes there is memory
when that side is /dev/shm (docs/isolation.md, Limits).
TMPDIR, when set, is the user's choice for both and always wins. The sandbox covers both
folders: no agent sees another trial's folders or the snapshot.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SHM = Path("/dev/shm")
MARGIN_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Scratch:
    """Parent folders of the run's temp roots: `shown` for what the agent sees, `private` for
    what only the harness reads; `reason` says why `private` is where it is (run_started)."""

    shown: Path
    private: Path
    reason: str


def choose_scratch(tree_bytes: int, env: Mapping[str, str] | None = None, shm: Path = SHM,
                   mounts: Path = Path("/proc/self/mounts")) -> Scratch:
    """Private folders on /dev/shm when it is a writable tmpfs with room for the snapshot
    (`tree_bytes`) and MARGIN_BYTES; everything in the system temp folder otherwise, or when
    the user set TMPDIR."""
    env = os.environ if env is None else env
    temp = Path(tempfile.gettempdir())
    if env.get("TMPDIR"):
        return Scratch(temp, temp, "TMPDIR is set")
    problem = _tmpfs_problem(shm, tree_bytes + MARGIN_BYTES, mounts)
    return Scratch(temp, temp, problem) if problem else Scratch(temp, shm, "tmpfs")


def _tmpfs_problem(folder: Path, need: int, mounts: Path) -> str:
    """'' when folder is a writable tmpfs with `need` bytes free; else why it is not used."""
    if not _is_tmpfs(folder, mounts):
        return f"{folder} is not a tmpfs"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    if free < need:
        return f"{folder} has {free // 2**20} MiB free, the run needs {need // 2**20} MiB"
    return ""


def _is_tmpfs(folder: Path, mounts: Path) -> bool:
    try:
        lines = mounts.read_text().splitlines()
    except OSError:
        return False
    target = os.fspath(folder)
    return any(len(f) > 2 and f[1] == target and f[2] == "tmpfs" for f in (line.split() for line in lines))

