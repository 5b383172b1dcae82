"""Sandboxes a harness killed outright left waiting for it, found and ended by a later run.

bubblewrap's outer process clones the sandbox's init and then tells it to go on through an
eventfd. When the harness is killed with SIGKILL (a CI job cancelled hard, an OOM kill) at that
moment, the outer process dies by `--die-with-parent` before it writes, and the init, whose own
parent-death signal is not set yet, waits on the eventfd for good: a `bwrap` process with parent
1 and nothing inside (11 of about 40 kills of a 20-case run near its trials' starts). Nothing
else would ever end it.

So each sandbox's bwrap carries in its own environment (never the agent's: bwrap is told
`--clearenv`) the harness that started it, as `pid namespace:pid:start time`. A run's sweep of a dead run's
temp folders (isolation/leftovers.py) then SIGKILLs every process of this user whose harness is
provably dead: no process with that id and start time lives. A process id reused since has
another start time, so a live harness's sandbox is never taken for a stranded one; a harness
of another PID namespace (a container's, whose ids mean other processes here) is never judged.
"""

from __future__ import annotations

import os
import signal

HARNESS_VAR = "RUBRICGATE_HARNESS"
_PROC = "/proc"
_marks: dict[int, str] = {}  # by pid: a forked child is another harness


def harness_mark() -> str:
    """This process as `pid namespace:pid:start time` (clock ticks after boot, /proc/PID/stat's
    field 22)."""
    pid = os.getpid()
    if pid not in _marks:
        _marks[pid] = f"{_pid_namespace()}:{pid}:{_start_time(pid)}"
    return _marks[pid]


def end_stranded_sandboxes() -> list[int]:
    """SIGKILL each process of this user whose environment names a dead harness; their ids."""
    ended = []
    for pid in _own_pids():
        mark = _harness_of(pid)
        if mark is not None and not _alive(mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone meanwhile, or not ours to signal: nothing of ours left there
                continue
            ended.append(pid)
    return ended


def _own_pids() -> list[int]:
    me, uid = os.getpid(), os.geteuid()
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    found = []
    for name in names:
        try:
            if name.isdigit() and int(name) != me and os.stat(f"{_PROC}/{name}").st_uid == uid:
                found.append(int(name))
        except OSError:  # ended while listed
            continue
    return found


def _harness_of(pid: int) -> str | None:
    """The harness mark in the process's environment, None without one (or unreadable)."""
    environ = _read(pid, "environ")
    if environ is None:
        return None
    prefix = f"{HARNESS_VAR}=".encode()
    mark = next((e[len(prefix):] for e in environ.split(b"\0") if e.startswith(prefix)), None)
    return mark.decode("ascii", "replace") if mark is not None else None


def _alive(mark: str) -> bool:
    """Does the harness `mark` names still run? A mark not of our form, or of another PID
    namespace, counts as alive: never kill on a guess."""
    namespace, pid, start = (mark.split(":") + ["", ""])[:3]
    if not pid.isdigit() or not start.isdigit() or namespace != _pid_namespace():
        return True
    return _start_time(int(pid)) == start


def _pid_namespace() -> str:
    try:
        return os.readlink(f"{_PROC}/self/ns/pid").removeprefix("pid:[").removesuffix("]")
    except OSError:
        return "unknown"


def _start_time(pid: int) -> str | None:
    stat = _read(pid, "stat")
    if stat is None:
        return None
    # After the command name (which may hold spaces and parentheses): field 3 on, 22 is index 19.
    return stat.rsplit(b")", 1)[1].split()[19].decode()


def _read(pid: int, name: str) -> bytes | None:
    """/proc/PID/name, None once the process is gone (or is not ours to read)."""
    try:
        with open(f"{_PROC}/{pid}/{name}", "rb") as fh:
            return fh.read()
    except OSError:
        return None
