"""Run one agent process with hygiene: own process group, stdin from /dev/null,
hard wall-clock timeout that kills the whole group, stdout streamed to a file under a byte cap.

The agent's stdout can be arbitrarily large (a runaway model loop) and its children can outlive
it (a tool that spawned a server). So: stdout goes to disk and stops being written at the cap
but is still drained (a blocked pipe would hang the child), stderr is kept as a bounded tail for
the one-line error (both read by the trial's own thread: isolation/streams.py), and the group is
killed on timeout and once more after exit so no grandchild survives the run. A descendant that
left the group with setsid() (a daemonizing tool server) is found by a per-run token in its
inherited environment and killed too (isolation/reaping.py). The output cap stops the run: past it nothing more can be
kept, so running on only burns time and tokens. So does silence: an agent that printed nothing on
either pipe for the idle timeout is stalled (a hung connection, a CLI waiting on nothing) and is
stopped long before the wall-clock timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rubricgate.isolation.admission import CANCEL, AgentSlots
from rubricgate.isolation.guardian import current as current_guardian
from rubricgate.isolation.identity import NAMESPACES, HeldNamespace, give_to_sandbox_user, root_harness
from rubricgate.isolation.limits import Limits, limit_reached
from rubricgate.isolation.netns import NamespaceGone, listen_in
from rubricgate.isolation.proxy import Connection, TrialDoor, open_door
from rubricgate.isolation.reaping import (
    KILL_GRACE_S,
    RUN_TOKEN_VAR,
    kill_escapees,
    kill_group,
    kill_sandbox,
    reap_sandbox_inits,
)
from rubricgate.isolation.rootfs import identity_pipes
from rubricgate.isolation.sandbox import LAUNCH_PATH, SandboxPolicy, Writable, find_program, wrap
from rubricgate.isolation.seccomp import filter_pipe, filter_program
from rubricgate.isolation.stranded import HARNESS_VAR, harness_mark
from rubricgate.isolation.streams import CappedSink, SideLog, StderrTail, Streams, Wake, Watch

DRAIN_TIMEOUT_S = 5.0


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
    limit: str = ""  # the sandbox limit the agent reached (isolation/limits.py), if any
    network: list[Connection] = field(default_factory=list)  # what it connected to through the proxy
    network_omitted: int = 0  # connections past proxy.MAX_LOGGED, counted only


def run_process(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float,
                output_cap_bytes: int, stdout_path: Path, watch: Watch | None = None,
                sandbox: SandboxPolicy | None = None, writable: Sequence[Writable] = (),
                slots: AgentSlots | None = None, idle_timeout_s: float = 0.0,
                stderr_watch: Watch | None = None, side_log: SideLog | None = None) -> ProcessResult:
    """Run argv in its own session (inside bubblewrap when `sandbox` enforces one); never raises
    for a failing or missing executable. `watch(line)` sees each stdout line, `stderr_watch(line)`
    each stderr line, `side_log` each line of a log the agent writes elsewhere (streams.SideLog);
    a reason kills it.

    `idle_timeout_s` (0: off) stops an agent that printed nothing on stdout or stderr for that
    long: `stopped` then starts with streams.IDLE_STOP.

    `slots` bounds the agents running at once. A sandboxed agent is launched before it holds one:
    its sandbox is built while other agents run, and the agent waits at a gate inside it until a
    slot is free (isolation/admission.py); its time and its timeout start at the gate."""
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    if CANCEL.event.is_set():
        return _interrupted()
    gated = slots is not None and sandbox is not None and sandbox.enforced
    if slots is not None and not gated and not slots.acquire():
        return _interrupted()
    try:
        with open(stdout_path, "wb") as out:
            sink = CappedSink(out, output_cap_bytes, watch, stderr_watch, side_log)
            return _launch(argv, cwd, env, (timeout_s, idle_timeout_s), sink, sandbox, writable,
                           slots if gated else None)
    finally:
        if slots is not None and not gated:
            slots.release()


@dataclass
class _Lent:
    """What a sandboxed trial holds until its sandbox is gone: its proxy door (a network by
    allowlist: isolation/proxy.py) and, under a root harness, its user namespace."""

    door: TrialDoor | None = None
    namespace: HeldNamespace | None = None


def _launch(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeouts: tuple[float, float],
            sink: CappedSink, sandbox: SandboxPolicy | None, writable: Sequence[Writable],
            gate_slots: AgentSlots | None) -> ProcessResult:
    """The door's log becomes the result's `network`; the namespace goes back to the pool."""
    lent = _Lent(open_door(sandbox.network) if sandbox is not None and sandbox.enforced and sandbox.network.proxied
                 else None)
    try:
        result = _launch_in(argv, cwd, env, timeouts, sink, sandbox, writable, gate_slots, lent)
    finally:
        if lent.namespace is not None:
            NAMESPACES.give_back(lent.namespace)
        log, omitted = lent.door.close() if lent.door is not None else ([], 0)
    return replace(result, network=log, network_omitted=omitted) if lent.door is not None else result


def _launch_in(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeouts: tuple[float, float],
               sink: CappedSink, sandbox: SandboxPolicy | None, writable: Sequence[Writable],
               gate_slots: AgentSlots | None, lent: _Lent) -> ProcessResult:
    (timeout_s, idle_s), token = timeouts, uuid.uuid4().hex
    started = time.monotonic()
    sandboxed = sandbox is not None and sandbox.enforced
    limits = sandbox.limits if sandbox is not None and sandboxed else None
    try:
        proc, gate = _spawn(argv, cwd, {**env, RUN_TOKEN_VAR: token}, sandbox, writable,
                            gated=gate_slots is not None or lent.door is not None, lent=lent)
    except OSError as exc:
        return ProcessResult(None, False, False, "", time.monotonic() - started, start_error=_start_error(argv[0], exc))
    finally:
        if gate_slots is not None:
            gate_slots.end_launch_turn()  # launched (or failed to): the next trial may launch
    if not sandboxed and (guardian := current_guardian()) is not None:
        guardian.watch(proc.pid, token)  # killed with its group if the harness dies (isolation/guardian.py)
    if gate is not None and gate_slots is None:  # gated only until its proxy listened: go at once
        _open_gate(gate)
    if gate is None or gate_slots is None:
        return _supervise(proc, sink, (started + timeout_s, idle_s), started, token, sandboxed, limits)
    opened = gate_slots.take(lambda: _open_gate(gate))  # possibly by the thread whose agent just ended
    if opened is None:  # stopped while its sandbox waited: the agent never ran
        _discard(proc, gate, token)
        return _interrupted()
    try:
        return _supervise(proc, sink, (opened + timeout_s, idle_s), opened, token, sandboxed, limits)
    finally:
        gate_slots.ran(time.monotonic() - opened)
        gate_slots.release()  # the agent is dead (`_supervise` made sure): the next one may start


def _interrupted() -> ProcessResult:
    return ProcessResult(None, False, False, "", 0.0, stopped="interrupted: the run was stopped")


def _open_gate(gate: int) -> None:
    """Let the agent held at the gate start (its `read` gets the line)."""
    try:
        os.write(gate, b"go\n")
    except OSError:  # the sandbox died while it was being built: its exit status says why
        return
    finally:
        os.close(gate)


def _discard(proc: subprocess.Popen[bytes], gate: int, token: str) -> None:
    """A launched sandbox whose agent must not start: closing the gate ends it (its `read` sees
    end of file, so `exec` never runs); it is killed and reaped all the same."""
    os.close(gate)
    try:
        _end(proc, token, sandboxed=True)
    finally:
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def _start_error(program: str, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"cannot start {program!r}: not found (is the CLI installed and on the agent's PATH?)"
    return f"cannot start {program!r}: {exc.strerror or exc}"


def _spawn(argv: Sequence[str], cwd: Path, env: Mapping[str, str], sandbox: SandboxPolicy | None,
           writable: Sequence[Writable], gated: bool, lent: _Lent) -> tuple[subprocess.Popen[bytes], int | None]:
    """(process, write end of its gate or None). A gated agent reads its gate on stdin; `lent`:
    the trial's door (a sandbox whose network is by allowlist: listening in the sandbox's
    namespace before this returns) and, under a root harness, the user namespace lent to it."""
    if sandbox is None or not sandbox.enforced:
        return subprocess.Popen(
            list(argv), cwd=str(cwd), env=dict(env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True), None
    program = find_program(argv[0], env.get("PATH")) or argv[0]
    if not Path(program).exists():
        raise FileNotFoundError(2, "not found", argv[0])
    lent.namespace = _trial_identity(writable, None if sandbox.overlay is not None else cwd)
    door = lent.door
    identity = identity_pipes() if not sandbox.etc else {}  # a staged /etc holds passwd and group
    read_fd, write_fd = os.pipe()
    gate_read, gate = os.pipe() if gated else (subprocess.DEVNULL, None)
    info_read, info_write = os.pipe() if door is not None else (None, None)
    program_filter = filter_program() if sandbox.seccomp else None
    seccomp = filter_pipe(program_filter) if program_filter is not None else None
    passed = tuple(fd for fd in (read_fd, *identity.values(), info_write, seccomp) if fd is not None)
    try:
        wrapped, payload = wrap(sandbox, [program, *argv[1:]], cwd=cwd, env=env, writable=writable,
                                args_fd=read_fd, gated=gated, identity=identity, info_fd=info_write, seccomp_fd=seccomp,
                                userns=lent.namespace.path if lent.namespace is not None else None)
        # bwrap itself gets no secrets: they travel in the pipe, not in its argv or environment.
        # Its environment names this harness, so a later run ends a sandbox a hard kill of this
        # one stranded (isolation/stranded.py), and nothing of the host (LAUNCH_PATH): the
        # sandbox's init, a fork of bwrap, shows it to the agent; the agent's is built afresh.
        proc = subprocess.Popen(
            wrapped, cwd="/", env={"PATH": LAUNCH_PATH, HARNESS_VAR: harness_mark()},
            stdin=gate_read,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, pass_fds=passed)
    except BaseException:
        for fd in (gate, write_fd, info_read):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in passed:
            os.close(fd)
        if gate is not None:
            os.close(gate_read)
    _feed_args(write_fd, payload)
    if door is not None and info_read is not None:
        _open_door(door, info_read, proc, gate)
    return proc, gate


def _open_door(door: TrialDoor, info_read: int, proc: subprocess.Popen[bytes], gate: int | None) -> None:
    """The proxy listens in the sandbox's namespace (its process's pid from bwrap's --info-fd),
    before the gate opens. A sandbox that died first is left to its exit status; one whose
    namespace cannot be entered is ended (OSError: the trial cannot start)."""
    pid = _sandbox_pid(info_read)
    if pid is None:
        return  # bwrap stopped before its sandbox existed: its exit status and stderr say why
    try:
        door.listen(listen_in(pid, door.access.ports))
    except NamespaceGone:
        return
    except OSError as exc:
        if gate is not None:
            os.close(gate)
        _end(proc, "", sandboxed=True)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
        raise OSError(exc.errno,
                      f"the sandbox's network proxy cannot listen in its namespace: {exc.strerror}") from None


def _sandbox_pid(info_read: int) -> int | None:
    """The sandbox process's pid bwrap wrote to --info-fd (it closes the pipe after), or None."""
    data = b""
    try:
        while chunk := os.read(info_read, 4096):
            data += chunk
    finally:
        os.close(info_read)
    try:
        pid = json.loads(data)["child-pid"]
    except (ValueError, KeyError, TypeError):
        return None
    return pid if isinstance(pid, int) and pid > 0 else None


def _trial_identity(writable: Sequence[Writable], cwd: Path | None) -> HeldNamespace | None:
    """A root harness: a user namespace lent to the trial (isolation/identity.py), the folders the
    agent writes given to the sandbox user first (the scratch folder with what the harness put
    in it; the workspace folder itself, whose copied files the sandbox user owns already:
    runner/workspace.py). An ordinary user: None (bwrap maps the sandbox user onto it)."""
    if not root_harness():
        return None
    for item in writable:
        give_to_sandbox_user(item[0] if isinstance(item, tuple) else item)
    if cwd is not None and cwd.is_dir():
        give_to_sandbox_user(cwd, recursive=False)
    return NAMESPACES.lend()


def _feed_args(fd: int, payload: bytes) -> None:
    """Hand bwrap its arguments: at once when they fit the pipe (the usual few KB), else from a
    thread, as bwrap reads them only after it started."""
    os.set_blocking(fd, False)
    try:
        sent = os.write(fd, payload)
    except BlockingIOError:
        sent = 0
    except OSError:  # bwrap died before reading: its exit status reports that
        os.close(fd)
        return
    if sent == len(payload):
        os.close(fd)
        return
    os.set_blocking(fd, True)
    threading.Thread(target=_write_rest, args=(fd, payload[sent:]), daemon=True).start()


def _write_rest(fd: int, payload: bytes) -> None:
    try:
        _write_all(fd, payload)
    except OSError:  # bwrap died before reading: its exit status reports that
        return
    finally:
        os.close(fd)


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def _supervise(proc: subprocess.Popen[bytes], sink: CappedSink, deadlines: tuple[float, float],
               started: float, token: str, sandboxed: bool, limits: Limits | None = None) -> ProcessResult:
    """Wait with a deadline, kill on timeout / a watch or idle stop / Ctrl-C, always sweep at the end.
    `deadlines`: (the monotonic wall-clock deadline, the idle timeout in seconds or 0)."""
    (deadline, idle_s), tail, wake = deadlines, StderrTail(sink=sink), Wake()
    streams = Streams(proc, sink, tail, wake, idle_s)
    try:
        timed_out, exit_code = _wait_and_end(proc, streams, wake, deadline, token, sandboxed)
        streams.drain(DRAIN_TIMEOUT_S)
    finally:
        streams.close()
        wake.close()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    sink.dst.flush()
    stderr = tail.text()
    return ProcessResult(
        exit_code=None if timed_out or sink.stop_reason else exit_code, timed_out=timed_out,
        stdout_truncated=sink.truncated, stderr_tail=stderr,
        duration_s=time.monotonic() - started, stdout_bytes=sink.written, stopped=sink.stop_reason,
        limit=(limit_reached(exit_code, stderr, limits)
               if limits is not None and exit_code != 0 and not timed_out else ""),
    )


def _wait_and_end(proc: subprocess.Popen[bytes], streams: Streams, wake: Wake, deadline: float, token: str,
                  sandboxed: bool) -> tuple[bool, int]:
    """(timed out?, exit code) once the agent exited, stopped, timed out or was interrupted, and
    nothing of it is left."""
    CANCEL.register(wake)
    try:
        streams.wait(deadline)
    except BaseException:  # the stdout file failed (a full disk) or a watch raised: the agent must not live on
        _end(proc, token, sandboxed)
        raise
    finally:
        CANCEL.unregister(wake)
    timed_out = proc.poll() is None and not streams.out.stop_reason and not CANCEL.event.is_set()
    if CANCEL.event.is_set() and proc.poll() is None:
        streams.out.stop_reason = "interrupted: the run was stopped"
    return timed_out, _end(proc, token, sandboxed)


def _end(proc: subprocess.Popen[bytes], token: str, sandboxed: bool) -> int:
    """Kill whatever is left of the agent and reap it; its exit code."""
    # The sandbox ends with its PID namespace; without one, the group and the token sweep
    # make sure no background child outlives the trial. A bwrap already reaped (the usual end:
    # its init exited first, and with it the namespace) is not looked up again: its pid may be
    # another process's by now, whose children are no sandbox of ours.
    if sandboxed and proc.returncode is None:
        kill_sandbox(proc.pid)
    kill_group(proc.pid, grace_s=0 if sandboxed else KILL_GRACE_S, reap=proc.poll)
    exit_code = proc.wait()
    if sandboxed:
        reap_sandbox_inits()  # bwrap has exited: its init is this process's where it adopts orphans
    else:
        kill_escapees(token)
        if (guardian := current_guardian()) is not None:
            guardian.release(proc.pid)
    return exit_code
