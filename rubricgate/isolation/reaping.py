"""Ending what an agent left behind: its process group, a sandbox's PID namespace, descendants
that left the group (found by a per-run token in their environment) and orphans this process
adopted. Every kill here is by process id, group or token: never by name.

A copy-only agent's group is done once only zombies are left in it: an orphaned child is
reparented to this process (when it adopts orphans) or to an init that may never reap it, and
the kernel keeps a zombie in its group until then. So the group is read from /proc and the
zombies that are ours are reaped, rather than waiting out the kill grace for a dead process.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

KILL_GRACE_S = 2.0
RUN_TOKEN_VAR = "RUBRICGATE_RUN_TOKEN"  # inherited by every descendant; finds setsid() escapees
_PROC = Path("/proc")
# Children the harness started for itself (the copy-only guardian, the user namespaces' holders,
# a batch `rm -rf` of trial copies): a run's sweep of its orphans spares them. Started and
# counted under the lock the sweep takes, so none is seen before it is counted.
_HELPERS: set[int] = set()
_HELPERS_LOCK = threading.Lock()

def kill_group(pgid: int, grace_s: float = KILL_GRACE_S,
               reap: Callable[[], object] | None = None) -> None:
    """SIGTERM the process group, wait up to grace_s for it to empty, then SIGKILL it.

    `reap` (e.g. Popen.poll) is called while waiting: an unreaped zombie leader still
    counts as a group member for the kernel. So do the agent's other children once it has
    exited: they are reparented to this process when it adopts orphans (`adopt_orphans`), or to
    an init that may never reap them. So the group counts as empty once every member left is a
    zombie, and the zombies that are ours are reaped on the way.
    """
    if not _signal_group(pgid, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if reap is not None:
            reap()
        if not _group_alive(pgid):
            return
        time.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    """Send sig to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def _group_alive(pgid: int) -> bool:
    """Some member of the group still runs. Signal 0 probes existence without delivering anything;
    when the kernel still knows the group, /proc says whether any member is more than a zombie."""
    if not _signal_group(pgid, 0):
        return False
    if not _PROC.is_dir():
        return True
    return any(not _reaped_zombie(pid, pgid, state) for pid, state in _group_members(pgid))


def _group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state letter) of every process in the group, from /proc/PID/stat."""
    members = []
    for pid in _pids():
        try:
            stat = (_PROC / str(pid) / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after "(comm)", which may hold spaces
        if len(fields) > 2 and fields[2] == str(pgid):
            members.append((pid, fields[0]))
    return members


def _reaped_zombie(pid: int, pgid: int, state: str) -> bool:
    """True for a zombie (dead, whoever reaps it); one of ours is reaped here. The leader is left
    to its Popen, whose exit code it is."""
    if state != "Z":
        return False
    if pid != pgid:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # another parent's zombie: dead all the same
            return True
    return True


def kill_sandbox(bwrap_pid: int, timeout_s: float = 5.0) -> None:
    """SIGKILL the sandbox's init and return once it is gone.

    Killing a PID namespace's init makes the kernel kill every process in it and the init only
    exits after they all have, so when its pidfd turns readable nothing of the agent is left and
    its workspace may be removed.
    """
    for pid in _children(bwrap_pid):
        try:
            fd = os.pidfd_open(pid)
        except OSError:  # already gone
            continue
        try:
            _signal_pid(pid, signal.SIGKILL)
            select.select([fd], [], [], timeout_s)
        finally:
            os.close(fd)


def _children(pid: int) -> list[int]:
    try:
        text = (_PROC / str(pid) / "task" / str(pid) / "children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux prctl), so a child that
    double-forked with `env -i` (no run token to find it by) is still ours to kill."""
    try:
        return _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def stop_adopting_orphans() -> None:
    """Orphans of this process's descendants go to the system's reaper again (Linux prctl)."""
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


class _Runs:
    """Runs under way in this process: the first looks whether it adopted already, the last ends."""

    running = 0
    adopting_before = False
    lock = threading.Lock()


@contextlib.contextmanager
def adopting_for_the_run() -> Iterator[None]:
    """What a run makes this process adopt (`adopt_orphans`), it adopts for the run only. Left
    adopting, the caller's process became the parent of every later orphan of anything it ran (a
    daemonizing tool, a `rubricgate` subprocess's sandbox inits and namespace holders): a zombie
    of its own each, never reaped. A process that adopted before its first run goes on to."""
    with _Runs.lock:
        if _Runs.running == 0:
            _Runs.adopting_before = adopting_orphans()
        _Runs.running += 1
    try:
        yield
    finally:
        with _Runs.lock:
            _Runs.running -= 1
            if _Runs.running == 0 and not _Runs.adopting_before:
                stop_adopting_orphans()


def child_pids() -> set[int]:
    """Every live child of this process, across its threads. Read with plain descriptors, not
    Path objects: a copy-only run reads it after every trial (`_kill_adopted`), one file a
    thread of the harness (0.10 ms against 0.23 for 13 threads)."""
    out: set[int] = set()
    task_dir = os.path.join(_PROC, "self", "task")
    try:
        tasks = os.listdir(task_dir)
    except OSError:  # no /proc
        return out
    for task in tasks:
        with contextlib.suppress(OSError):  # the thread ended since listed
            out.update(map(int, _read_all(f"{task_dir}/{task}/children").split()))
    return out


def _read_all(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def start_helper(argv: list[str], **popen: object) -> subprocess.Popen[bytes]:
    """Start a process of the harness's own, which the sweep of a run's orphans spares until
    `end_helper`."""
    with _HELPERS_LOCK:
        proc: subprocess.Popen[bytes] = subprocess.Popen(argv, **popen)  # type: ignore[call-overload]
        _HELPERS.add(proc.pid)
    return proc


def end_helper(proc: subprocess.Popen[bytes]) -> int:
    """Close a helper's input (a holder's `cat`, the guardian, end on it), reap it and stop
    sparing it; its exit status. One that died cannot take lines still buffered for it: io
    closes the pipe all the same."""
    if proc.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    status = proc.wait()
    with _HELPERS_LOCK:
        _HELPERS.discard(proc.pid)
    return status


def sweep_orphans(known: set[int]) -> list[int]:
    """Kill and reap the children this run left behind (reparented orphans) with everything
    below them, sparing `known` (children that existed before the run) and the harness's own
    helpers. Returns the pids killed. A process forked while its parent was being killed is
    adopted and found by the next pass."""
    killed: list[int] = []
    for _ in range(3):
        with _HELPERS_LOCK:
            tops = child_pids() - known - _HELPERS
            found = [pid for top in tops for pid in (top, *_descendants(top))]
            for pid in found:
                _signal_pid(pid, signal.SIGKILL)
        for pid in tops:
            _reap(pid)
        killed += found
        if not found:
            break
    return killed


def kill_escapees(token: str, passes: int = 3) -> list[int]:
    """SIGKILL every process whose environment carries this run's token; the pids killed.

    These are descendants that left the process group with setsid() (a daemonized tool
    server): the group kill cannot reach them, but they inherited the token. Several passes
    catch a child forked while its parent was being killed. Without /proc this does nothing.

    Called once the agent's group is dead. When this process adopts orphans, every escapee
    still alive is then its child or a descendant of one (its parents died with the group, or
    escaped too), so only its children are read, and the subtrees of those that carry the
    token: a handful of reads, never the whole process table. Otherwise every process is read.
    """
    if adopting_orphans():
        return _kill_adopted(token, passes)
    killed: list[int] = []
    for _ in range(passes):
        found = [pid for pid in _pids() if _has_token(pid, token)]
        for pid in found:
            _signal_pid(pid, signal.SIGKILL)
        killed += found
        if not found:
            break
    return killed


def _kill_adopted(token: str, passes: int) -> list[int]:
    """Kill the children of this process that carry the token, with everything below them, and
    reap them (they are ours). A grandchild whose parent died meanwhile is adopted too: the
    next pass finds it."""
    killed: list[int] = []
    for _ in range(passes):
        tops = [pid for pid in child_pids() if _has_token(pid, token)]
        found = [pid for top in tops for pid in (top, *_descendants(top))]
        for pid in found:
            _signal_pid(pid, signal.SIGKILL)
        for pid in tops:
            _reap(pid)
        killed += found
        if not found:
            break
    return killed


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, from the children lists of its threads (and theirs)."""
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        try:
            tasks = os.listdir(_PROC / str(parent) / "task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(p) for p in (_PROC / str(parent) / "task" / task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            queue += children
    return found


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped already (the run's end sweep, or it was not ours)
        return


INIT_EXIT_WAIT_S = 1.0  # an adopted init is dying already (--die-with-parent): a moment at most


def reap_sandbox_inits(wait_s: float = INIT_EXIT_WAIT_S) -> int:
    """Reap the sandboxes' inits this process adopted; how many.

    bwrap exits on its init's word that the agent ended, without reaping that init, which then
    dies of --die-with-parent. In a process that adopts orphans (a copy-only run in it) each such
    init is then a zombie of this process's: one per sandbox, held until a run's end sweep, and
    for ever where none follows. Only a child in a deeper PID namespace than this process is
    taken, and by its pidfd: no child this process started is one (a fork stays in its
    namespace), so no Popen loses its exit status to this."""
    if not adopting_orphans():
        return 0  # orphans go to another reaper: no init is ever this process's child
    return sum(_reap_init(pid, wait_s) for pid in child_pids())


def _reap_init(pid: int, wait_s: float) -> bool:
    """Reap `pid` if it is a process in a deeper PID namespace, waiting up to wait_s for it to
    exit; the pidfd names that very process, whatever its pid becomes meanwhile."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # gone (another thread's reap)
        return False
    try:
        if not _in_deeper_namespace(fd):
            return False
        select.select([fd], [], [], wait_s)
        return os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG) is not None
    except ChildProcessError:  # reaped meanwhile, or not ours
        return False
    finally:
        os.close(fd)


def _in_deeper_namespace(pidfd: int) -> bool:
    """The pidfd's process has more PID namespace levels than this one (NSpid in /proc)."""
    try:
        theirs = _nspid(Path(f"/proc/self/fdinfo/{pidfd}").read_text())
        ours = _nspid((_PROC / "self" / "status").read_text())
    except OSError:
        return False
    return bool(ours) and len(theirs) > len(ours)


def _nspid(text: str) -> list[str]:
    """The NSpid line's pids, outermost namespace first ([] without one: a kernel before 5.10)."""
    return next((line.split()[1:] for line in text.splitlines() if line.startswith("NSpid:")), [])


PR_GET_CHILD_SUBREAPER = 37


def adopting_orphans() -> bool:
    """Is this process the reaper of its orphaned descendants (`adopt_orphans` ran)?"""
    try:
        flag = ctypes.c_int(0)
        return _libc().prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value == 1
    except (OSError, AttributeError):
        return False


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _pids() -> list[int]:
    if not _PROC.is_dir():
        return []
    me = os.getpid()
    return [int(p.name) for p in _PROC.iterdir() if p.name.isdigit() and int(p.name) != me]


def _has_token(pid: int, token: str) -> bool:
    try:
        environ = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:  # gone, or another user's process: not ours either way
        return False
    return f"{RUN_TOKEN_VAR}={token}".encode() in environ.split(b"\0")


def _signal_pid(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
