"""An agent's stdout and stderr, read in the thread that runs its trial: one epoll loop, no pumps.

Helper threads per trial (a stdout pump, a stderr pump, an exit waiter and the sandbox's argument
feeder) would each cost a thread start and, worse, GIL hand-offs on every chunk: with 16 trials at
once the interpreter spends more time passing the lock around than parsing. So the trial's own
thread waits on the two pipes, the process's pidfd (readable once it
exits) and a wake pipe (Ctrl-C) with one `select`, and the deadline is the select's timeout.

The contract: stdout goes to a file up to a byte cap and is drained (never left to
block the agent) past it; every complete stdout line is shown to a `watch` callback whose
reason stops the run; stderr keeps a bounded tail for the one-line error; silence on both
pipes for the idle timeout stops it too. A `SideLog` (a FIFO a CLI writes its debug log to, for
a CLI that reports its retries nowhere else) is read in the same loop and shown to its own
watch; it is not output (no tail, no effect on the idle timeout).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import IO

STDERR_TAIL_BYTES = 8192
_CHUNK = 65536

Watch = Callable[[bytes], "str | None"]
# How the stop reason of an agent that went silent starts: a stall of the CLI or its connection,
# which the transcript reports as an infrastructure failure (agents/ending.py).
IDLE_STOP = "idle_timeout"


class CappedSink:
    """stdout: written to `dst` up to `cap` bytes, the rest read and discarded; each complete
    line shown to `watch`, whose non-empty answer is a reason to stop the run. `stderr_watch` is
    the same for stderr's lines (StderrTail shows them), for a CLI that reports its retries there;
    `side` a SideLog read beside both."""

    def __init__(self, dst: IO[bytes], cap: int, watch: Watch | None = None,
                 stderr_watch: Watch | None = None, side: SideLog | None = None) -> None:
        self.dst, self.cap, self.watch, self.stderr_watch, self.side = dst, cap, watch, stderr_watch, side
        self.written = 0
        self.truncated = False
        self.stop_reason = ""
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        room = self.cap - self.written
        if room > 0:
            self.dst.write(chunk[:room])
            self.written += min(room, len(chunk))
        if self.watch is not None and not self.stop_reason:
            self._lines(chunk[:max(room, 0)])
        if len(chunk) > max(room, 0) and not self.truncated:
            self.truncated = True
            self.stop_reason = self.stop_reason or f"output_cap: stdout exceeded the cap of {self.cap} bytes"

    def _lines(self, chunk: bytes) -> None:
        lines = (self._partial + chunk).split(b"\n")
        # Keep the unfinished tail, bounded so one endless line cannot grow memory.
        self._partial = lines.pop()[-self.cap:]
        for line in lines:
            reason = self.watch(line) if self.watch else None
            if reason:
                self.stop_reason = reason
                return


class StderrTail:
    """The last `cap` bytes of stderr: enough for an error line, bounded memory. With a `sink`
    whose `stderr_watch` is set, each complete line is shown to it; its reason stops the run."""

    def __init__(self, cap: int = STDERR_TAIL_BYTES, sink: CappedSink | None = None) -> None:
        self.cap = cap
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.sink = sink if sink is not None and sink.stderr_watch is not None else None
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        while self.size - len(self.chunks[0]) >= self.cap:
            self.size -= len(self.chunks.popleft())
        if self.sink is not None and not self.sink.stop_reason:
            self._lines(chunk, self.sink)

    def _lines(self, chunk: bytes, sink: CappedSink) -> None:
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()[-self.cap:]  # an endless line cannot grow memory
        for line in lines:
            reason = sink.stderr_watch(line) if sink.stderr_watch else None
            if reason:
                sink.stop_reason = reason
                return

    def text(self) -> str:
        return b"".join(self.chunks)[-self.cap:].decode("utf-8", errors="replace")


class SideLog:
    """A log the agent writes beside its pipes: `fd` is the read end the harness holds (a FIFO
    opened read-write, so it never reads end of file while the agent opens and closes it), each
    complete line shown to `watch`, whose reason stops the run. Its owner opens and closes `fd`."""

    def __init__(self, fd: int, watch: Watch, cap: int = STDERR_TAIL_BYTES) -> None:
        self.fd, self.watch, self.cap = fd, watch, cap
        self._partial = b""

    def feed(self, chunk: bytes, sink: CappedSink) -> None:
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()[-self.cap:]  # an endless line cannot grow memory
        for line in lines:
            if sink.stop_reason:
                return
            sink.stop_reason = self.watch(line) or ""


class Wake:
    """A settable event that a `select` can wait on (a non-blocking self-pipe); `set` is what
    the process-wide Ctrl-C switch calls on every running trial."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def fileno(self) -> int:
        return self._read

    def set(self) -> None:
        try:
            os.write(self._write, b"x")
        except BlockingIOError:  # the pipe is full: a wake-up is already pending
            return

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


class Streams:
    """The select loop over one process: its stdout and stderr pipes, its exit, a wake pipe."""

    def __init__(self, proc: subprocess.Popen[bytes], out: CappedSink, err: StderrTail, wake: Wake,
                 idle_s: float = 0.0) -> None:
        self.out = out  # its stop reason ends the wait
        self.idle_s, self.last_output = idle_s, time.monotonic()
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout.fileno(), selectors.EVENT_READ, out.feed)  # type: ignore[union-attr]
        self.sel.register(proc.stderr.fileno(), selectors.EVENT_READ, err.feed)  # type: ignore[union-attr]
        self.sel.register(wake.fileno(), selectors.EVENT_READ, "wake")
        self._pidfd = _exit_fd(proc, wake)
        if self._pidfd is not None:
            self.sel.register(self._pidfd, selectors.EVENT_READ, "exit")
        if out.side is not None:  # not a pipe (callable): never drained, never output
            self.sel.register(out.side.fd, selectors.EVENT_READ, out.side)

    def wait(self, deadline: float) -> None:
        """Read until the process exits, a stop reason appears, the wake pipe fires or the
        (monotonic) deadline passes, whichever comes first. Silence on both pipes for idle_s
        (when set) is a stop reason of its own."""
        while not self.out.stop_reason:
            timeout = self._until(deadline)
            if timeout <= 0:
                return
            events = self.sel.select(timeout)
            pipes = [key for key, _ in events if callable(key.data)]
            for key in pipes:  # output before the exit notice: nothing read late is lost
                self._read(key)
            for key in (key for key, _ in events if isinstance(key.data, SideLog)):
                self._read_side(key.data)
            if any(key.data in ("exit", "wake") for key, _ in events):
                return

    def _until(self, deadline: float) -> float:
        """Seconds to wait for the next event: to the deadline, or to the end of the allowed silence
        (0 once it has ended, with the stop reason set)."""
        now = time.monotonic()
        if not self.idle_s:
            return deadline - now
        quiet = self.last_output + self.idle_s - now
        if quiet <= 0 < deadline - now:
            self.out.stop_reason = (f"{IDLE_STOP}: the agent printed nothing on stdout or stderr for "
                                    f"{self.idle_s:g} s (agent.idle_timeout_s)")
            return 0.0
        return min(deadline - now, quiet)

    def drain(self, timeout_s: float) -> None:
        """After the process is gone: read both pipes to their end (a killed group closes them),
        giving up after timeout_s when something outside our reach still holds one open."""
        deadline = time.monotonic() + timeout_s
        for key in list(self.sel.get_map().values()):
            if not callable(key.data):  # the exit pidfd and the wake pipe stay readable: a busy loop
                self.sel.unregister(key.fd)
        while self._open_pipes() and (left := deadline - time.monotonic()) > 0:
            for key, _ in self.sel.select(left):
                if callable(key.data):
                    self._read(key)

    def close(self) -> None:
        self.sel.close()
        if self._pidfd is not None:
            os.close(self._pidfd)

    def _read(self, key: selectors.SelectorKey) -> None:
        chunk = os.read(key.fd, _CHUNK)
        if chunk:
            self.last_output = time.monotonic()
            key.data(chunk)
        else:
            self.sel.unregister(key.fd)

    def _read_side(self, side: SideLog) -> None:
        chunk = os.read(side.fd, _CHUNK)
        if chunk:
            side.feed(chunk, self.out)
        else:  # its writer end is gone after all: nothing more will come
            self.sel.unregister(side.fd)

    def _open_pipes(self) -> bool:
        return any(callable(key.data) for key in self.sel.get_map().values())


def _exit_fd(proc: subprocess.Popen[bytes], wake: Wake) -> int | None:
    """A pidfd that turns readable when the process exits; where the kernel has none (before
    Linux 5.3), a thread that waits for it and sets the wake pipe instead."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        def wait_then_wake() -> None:
            proc.wait()
            wake.set()

        threading.Thread(target=wait_then_wake, daemon=True).start()
        return None
