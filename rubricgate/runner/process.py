"""Run one agent process with hygiene: own process group, stdin from /dev/null,
hard wall-clock timeout that kills the whole group, stdout streamed to a file under a byte cap.

The agent's stdout can be arbitrarily large (a runaway model loop) and its children can outlive
it (a tool that spawned a server). So: stdout goes to disk through a pump thread that stops
writing at the cap but keeps draining the pipe (a blocked pipe would hang the child), stderr is
kept as a bounded tail for the one-line error, and the group is killed on timeout and once more
after exit so no grandchild survives the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

STDERR_TAIL_BYTES = 8192
KILL_GRACE_S = 2.0
_CHUNK = 65536


@dataclass
class ProcessResult:
    """What happened to one process. exit_code is None when it never started or was killed."""

    exit_code: int | None
    timed_out: bool
    stdout_truncated: bool
    stderr_tail: str
    duration_s: float
    stdout_bytes: int = 0
    start_error: str = ""  # non-empty when the executable could not be started
    stopped: str = ""  # non-empty when the harness's watch callback ended the run


Watch = Callable[[bytes], "str | None"]


class _CappedPump(threading.Thread):
    """Copy a pipe to a file up to `cap` bytes, then keep reading and discard the rest.

    With a `watch` callback every complete line is shown to it; a non-empty return value
    is a reason to stop the run (the harness enforcing a limit the CLI does not have).
    """

    def __init__(self, src: IO[bytes], dst: IO[bytes], cap: int, watch: Watch | None = None) -> None:
        super().__init__(daemon=True)
        self.src, self.dst, self.cap, self.watch = src, dst, cap, watch
        self.written = 0
        self.truncated = False
        self.stop_reason = ""
        self._partial = b""

    def run(self) -> None:
        for chunk in iter(lambda: self.src.read1(_CHUNK), b""):
            room = self.cap - self.written
            if room > 0:
                self.dst.write(chunk[:room])
                self.written += min(room, len(chunk))
            if len(chunk) > max(room, 0):
                self.truncated = True
            if self.watch is not None and not self.stop_reason:
                self._feed(chunk)
        self.dst.flush()

    def _feed(self, chunk: bytes) -> None:
        lines = (self._partial + chunk).split(b"\n")
        # Keep the unfinished tail, bounded so one endless line cannot grow memory.
        self._partial = lines.pop()[-self.cap:]
        for line in lines:
            reason = self.watch(line) if self.watch else None
            if reason:
                self.stop_reason = reason
                return


class _TailPump(threading.Thread):
    """Keep the last `cap` bytes of a pipe (stderr): enough for an error line, bounded memory."""

    def __init__(self, src: IO[bytes], cap: int = STDERR_TAIL_BYTES) -> None:
        super().__init__(daemon=True)
        self.src, self.cap = src, cap
        self.chunks: deque[bytes] = deque()
        self.size = 0

    def run(self) -> None:
        for chunk in iter(lambda: self.src.read1(_CHUNK), b""):
            self.chunks.append(chunk)
            self.size += len(chunk)
            while self.size - len(self.chunks[0]) >= self.cap:
                self.size -= len(self.chunks.popleft())

    def text(self) -> str:
        data = b"".join(self.chunks)[-self.cap:]
        return data.decode("utf-8", errors="replace")


def kill_group(pgid: int, grace_s: float = KILL_GRACE_S,
               reap: Callable[[], object] | None = None) -> None:
    """SIGTERM the process group, wait up to grace_s for it to empty, then SIGKILL it.

    `reap` (e.g. Popen.poll) is called while waiting: an unreaped zombie leader still
    counts as a group member, so without it we would always wait the full grace period.
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
    # Signal 0 probes existence without delivering anything.
    return _signal_group(pgid, 0)


def run_process(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float,
                output_cap_bytes: int, stdout_path: Path, watch: Watch | None = None) -> ProcessResult:
    """Run argv in its own session; never raises for a failing or missing executable.

    `watch(line)` (optional) sees each stdout line; returning a reason kills the group.
    """
    started = time.monotonic()
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    with open(stdout_path, "wb") as out:
        try:
            proc = _spawn(argv, cwd, env)
        except OSError as exc:
            return ProcessResult(None, False, False, "", time.monotonic() - started,
                                 start_error=f"cannot start {argv[0]!r}: {exc.strerror or exc}")
        pump = _CappedPump(proc.stdout, out, output_cap_bytes, watch)  # type: ignore[arg-type]
        return _supervise(proc, pump, timeout_s, started)


def _spawn(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv), cwd=str(cwd), env=dict(env), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
    )


def _supervise(proc: subprocess.Popen[bytes], pump: _CappedPump, timeout_s: float,
               started: float) -> ProcessResult:
    """Wait with a deadline, kill the group on timeout, and always sweep the group at the end."""
    tail = _TailPump(proc.stderr)  # type: ignore[arg-type]
    pump.start()
    tail.start()
    timed_out = _wait(proc, pump, started + timeout_s)
    # A clean leader exit can still leave background children holding the pipes open;
    # sweeping the group is what guarantees no orphans.
    kill_group(proc.pid, reap=proc.poll)
    exit_code = proc.wait()
    pump.join(timeout=5)
    tail.join(timeout=5)
    return ProcessResult(
        exit_code=None if timed_out or pump.stop_reason else exit_code, timed_out=timed_out,
        stdout_truncated=pump.truncated, stderr_tail=tail.text(),
        duration_s=time.monotonic() - started, stdout_bytes=pump.written, stopped=pump.stop_reason,
    )


def _wait(proc: subprocess.Popen[bytes], pump: _CappedPump, deadline: float) -> bool:
    """Block until exit, a watch stop, or the deadline; True when the deadline hit first."""
    while True:
        try:
            proc.wait(timeout=min(0.1, max(deadline - time.monotonic(), 0.001)))
            return False
        except subprocess.TimeoutExpired:
            if pump.stop_reason:
                return False
            if time.monotonic() >= deadline:
                return True
