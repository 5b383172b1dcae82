"""Copy-only agents die with the harness, even when it is killed with SIGKILL.

Outside bubblewrap nothing ties an agent to the harness: the agent runs in a session of its
own (so the harness can kill its whole process group), and a harness killed outright leaves it
running, and every child it started, for as long as they like. (A sandboxed agent dies with its
sandbox: bubblewrap's `--die-with-parent`, and the PID namespace takes every process in it.)

So a copy-only run starts one small guardian process: a bare interpreter (`-I -S`, no
rubricgate, a session of its own so a signal to the harness's group does not reach it) that
reads one line per agent start and end from a pipe only the harness holds. When the pipe closes
without the harness's last line (`end`), the harness is dead: the guardian SIGKILLs every agent
group still registered, then every process carrying a registered run token in its environment
(descendants that left the group with setsid), and removes the temp folders the run named to it.
What it cannot find: a descendant that both left the group and cleared its environment
(`env -i` + setsid) after its parent died; while the harness lives it is reaped by the harness,
which adopts orphans (isolation/reaping.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from rubricgate.isolation.reaping import RUN_TOKEN_VAR, end_helper, start_helper

GUARD = r'''
import os, shutil, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
groups, folders, ended = {}, [], False
for line in sys.stdin.buffer:
    op, _, arg = line.rstrip(b"\n").partition(b" ")
    if op == b"+":
        pgid, _, token = arg.partition(b" ")
        groups[int(pgid)] = token
    elif op == b"-":
        groups.pop(int(arg), None)
    elif op == b"dir":
        folders.append(arg)
    elif op == b"end":
        ended = True
        break
if ended:
    sys.exit(0)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
marks = {b"TOKEN_VAR=" + t for t in groups.values()}
for _ in range(3 if marks else 0):
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    if marks & set(fh.read().split(b"\0")):
                        found.append(int(name))
            except OSError:
                pass
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if not found:
        break
for folder in folders:
    shutil.rmtree(folder, ignore_errors=True)
'''.replace("TOKEN_VAR", RUN_TOKEN_VAR)


class Guardian:
    """The guardian of one copy-only run (see the module docstring). Never raises: a guardian
    that could not start, or died, only loses the cleanup after a SIGKILL of the harness."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.exit_status: int | None = None
        try:
            self._proc: subprocess.Popen[bytes] | None = start_helper(
                [sys.executable, "-I", "-S", "-c", GUARD], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        except OSError:
            self._proc = None

    def watch(self, pgid: int, token: str) -> None:
        """An agent started in process group `pgid` with this run token."""
        self._say(f"+ {pgid} {token}\n")

    def release(self, pgid: int) -> None:
        """The agent of group `pgid` and its group are gone."""
        self._say(f"- {pgid}\n")

    def remove_on_death(self, folder: Path) -> None:
        """A temp folder of the run, removed if the harness dies before it could."""
        self._say(f"dir {os.fspath(folder)}\n")

    def close(self) -> None:
        """The run is over and left nothing: the guardian exits without killing anything (its
        exit status, 0 after the `end` line, stays in `exit_status`)."""
        self._say("end\n")
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            self.exit_status = end_helper(proc)

    def _say(self, line: str) -> None:
        with self._lock:
            if self._proc is None:
                return
            try:
                self._proc.stdin.write(line.encode("utf-8", "surrogateescape"))  # type: ignore[union-attr]
                self._proc.stdin.flush()  # type: ignore[union-attr]
            except OSError:  # the guardian died: nothing more to tell it
                proc, self._proc = self._proc, None
                self.exit_status = end_helper(proc)


_CURRENT: list[Guardian] = []  # the running copy-only run's guardian, if any


def start_guardian() -> Guardian:
    """Start this process's guardian (one copy-only run at a time uses it)."""
    guardian = Guardian()
    _CURRENT[:] = [guardian]
    return guardian


def stop_guardian() -> None:
    """The run ended normally: its guardian exits without killing anything."""
    while _CURRENT:
        _CURRENT.pop().close()


def current() -> Guardian | None:
    """The guardian agents started now should register with, or None (sandboxed, or no run)."""
    return _CURRENT[0] if _CURRENT else None
