"""run_process: timeouts kill the whole group, output is capped, stdin is /dev/null."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from rubricgate.isolation.process import run_process

# What a stopped agent was in the middle of (its sleep, its loop, its timeout): a run that took
# this long was not stopped, whatever the load. How fast a stop comes is bench/'s figure.
RAN_ON_S = 60.0

PY = sys.executable


def _run(tmp_path: Path, code: str, *, timeout_s: float = 10, cap: int = 1_000_000,
         env: dict[str, str] | None = None, idle_timeout_s: float = 0.0):
    out = tmp_path / "out" / "stdout.txt"
    res = run_process([PY, "-c", code], cwd=tmp_path, env=env or {"PATH": os.environ["PATH"]},
                      timeout_s=timeout_s, output_cap_bytes=cap, stdout_path=out, idle_timeout_s=idle_timeout_s)
    return res, out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie reparented to init is not running; /proc tells us.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_missing_executable_is_reported_not_raised(tmp_path: Path) -> None:
    res = run_process(["/nonexistent/agent-cli"], cwd=tmp_path, env={}, timeout_s=5,
                      output_cap_bytes=100, stdout_path=tmp_path / "s.txt")
    assert res.exit_code is None
    assert "cannot start" in res.start_error and "/nonexistent/agent-cli" in res.start_error


def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    code = (
        "import subprocess,sys,time\n"
        f"p=subprocess.Popen([sys.executable,'-c','import time; time.sleep({2 * RAN_ON_S})'])\n"
        f"open({str(pidfile)!r},'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    res, _ = _run(tmp_path, code, timeout_s=1.0)
    assert res.timed_out and res.exit_code is None
    assert time.monotonic() - started < RAN_ON_S
    assert _gone_within(int(pidfile.read_text()), RAN_ON_S), "grandchild survived the timeout"


def test_an_agent_silent_for_the_idle_timeout_is_stopped_not_timed_out(tmp_path: Path) -> None:
    pidfile = tmp_path / "agent.pid"
    code = f"import os,time\nopen({str(pidfile)!r},'w').write(str(os.getpid()))\nprint('started',flush=True)\ntime.sleep(60)"
    res, out = _run(tmp_path, code, timeout_s=60, idle_timeout_s=0.5)
    assert res.stopped.startswith("idle_timeout:") and "agent.idle_timeout_s" in res.stopped, res
    assert not res.timed_out and res.exit_code is None
    assert out.read_text() == "started\n"  # what it printed before going silent is kept
    assert not _alive(int(pidfile.read_text()))


def test_output_on_either_pipe_keeps_an_agent_alive_past_the_idle_timeout(tmp_path: Path) -> None:
    # Eight lines 0.2 s apart, alternating pipes: every gap is under the idle timeout, the run is not.
    code = ("import sys,time\nfor i in range(8):\n"
            "    (sys.stdout if i % 2 else sys.stderr).write(f'{i}\\n'); sys.stdout.flush(); sys.stderr.flush()\n"
            "    time.sleep(0.2)\n")
    res, out = _run(tmp_path, code, timeout_s=60, idle_timeout_s=0.6)
    assert res.exit_code == 0 and not res.stopped and not res.timed_out, res
    assert out.read_text() == "1\n3\n5\n7\n"


def test_no_idle_timeout_by_default(tmp_path: Path) -> None:
    res, _ = _run(tmp_path, "import time\ntime.sleep(0.3)", timeout_s=60)
    assert res.exit_code == 0 and not res.stopped


def test_sigterm_ignoring_process_is_sigkilled(tmp_path: Path) -> None:
    code = "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('x',flush=True)\ntime.sleep(60)"
    started = time.monotonic()
    res, _ = _run(tmp_path, code, timeout_s=0.5)
    assert res.timed_out
    assert time.monotonic() - started < RAN_ON_S


def test_background_child_left_after_clean_exit_is_swept(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    code = (
        "import subprocess,sys\n"
        f"p=subprocess.Popen([sys.executable,'-c','import time; time.sleep({2 * RAN_ON_S})'],"
        "stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)\n"
        f"open({str(pidfile)!r},'w').write(str(p.pid))\n"
    )
    res, _ = _run(tmp_path, code)
    assert res.exit_code == 0 and not res.timed_out
    assert _gone_within(int(pidfile.read_text()), RAN_ON_S)


def test_output_cap_truncates_reports_and_stops_the_run(tmp_path: Path) -> None:
    code = "import sys\nfor _ in range(2000): sys.stdout.write('y'*1000+'\\n')"
    res, out = _run(tmp_path, code, cap=10_000)
    assert res.stdout_truncated
    assert out.stat().st_size == 10_000 == res.stdout_bytes
    assert res.stopped.startswith("output_cap") and res.exit_code is None and not res.timed_out


def test_runaway_writer_is_stopped_at_the_cap_not_at_the_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    res, out = _run(tmp_path, "import sys\nwhile True: sys.stdout.write('x'*4096)", timeout_s=RAN_ON_S, cap=200_000)
    assert time.monotonic() - started < RAN_ON_S, "a runaway agent ran on until the timeout"
    assert res.stdout_truncated and not res.timed_out and out.stat().st_size == 200_000


def _escapee_code(pidfile: Path, tail: str) -> str:
    """A child that leaves the process group with setsid() and holds stdout open, like a daemon."""
    return ("import subprocess,sys,time\n"
            f"p=subprocess.Popen([sys.executable,'-c','import time; time.sleep({2 * RAN_ON_S})'],\n"
            "                   start_new_session=True)\n"
            f"open({str(pidfile)!r},'w').write(str(p.pid))\n" + tail)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_setsid_escapee_is_killed_after_a_clean_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "escapee.pid"
    started = time.monotonic()
    res, _ = _run(tmp_path, _escapee_code(pidfile, "print('done')\n"))
    assert res.exit_code == 0
    assert _gone_within(int(pidfile.read_text()), RAN_ON_S), "a setsid() grandchild survived the run"
    assert time.monotonic() - started < RAN_ON_S, "the run waited on a pipe held open by an escapee"


def test_setsid_escapee_is_killed_on_timeout_within_the_deadline(tmp_path: Path) -> None:
    pidfile = tmp_path / "escapee.pid"
    started = time.monotonic()
    res, _ = _run(tmp_path, _escapee_code(pidfile, "time.sleep(60)\n"), timeout_s=1.0)
    assert res.timed_out
    assert _gone_within(int(pidfile.read_text()), RAN_ON_S), "a setsid() grandchild survived the timeout"
    assert time.monotonic() - started < RAN_ON_S


def test_missing_executable_says_not_found(tmp_path: Path) -> None:
    res = run_process(["no-such-agent-cli-xyz"], cwd=tmp_path, env={"PATH": str(tmp_path)}, timeout_s=5,
                      output_cap_bytes=100, stdout_path=tmp_path / "s.txt")
    assert "not found" in res.start_error and "PATH" in res.start_error


def test_under_cap_is_not_truncated(tmp_path: Path) -> None:
    res, out = _run(tmp_path, "print('hello')")
    assert not res.stdout_truncated and out.read_text() == "hello\n"


def test_stdin_is_dev_null_and_exit_code_and_stderr_tail(tmp_path: Path) -> None:
    code = "import sys\nd=sys.stdin.read()\nsys.stderr.write('E'*20000+'boom')\nprint(repr(d))\nsys.exit(3)"
    res, out = _run(tmp_path, code)
    assert out.read_text().strip() == "''"
    assert res.exit_code == 3
    assert res.stderr_tail.endswith("boom") and len(res.stderr_tail) <= 8192


def test_own_session_and_env_only_what_was_passed(tmp_path: Path) -> None:
    code = "import os\nprint(os.getsid(0)==os.getpid(), sorted(k for k in os.environ if k!='LC_CTYPE'))"
    res, out = _run(tmp_path, code, env={"PATH": os.environ["PATH"], "ONLY_ME": "1"})
    assert out.read_text().strip() == "True ['ONLY_ME', 'PATH', 'RUBRICGATE_RUN_TOKEN']"


def test_watch_stops_the_run_on_a_line_and_kills_the_group(tmp_path: Path) -> None:
    code = "import time\nfor i in range(1200):\n    print('step', i, flush=True)\n    time.sleep(0.05)"  # 60 s
    out = tmp_path / "s.txt"
    seen: list[bytes] = []

    def watch(line: bytes) -> str | None:
        seen.append(line)
        return "too many steps" if line == b"step 3" else None

    started = time.monotonic()
    res = run_process([PY, "-c", code], cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                      timeout_s=2 * RAN_ON_S, output_cap_bytes=100_000, stdout_path=out, watch=watch)
    assert res.stopped == "too many steps" and not res.timed_out and res.exit_code is None
    assert time.monotonic() - started < RAN_ON_S
    assert seen[:4] == [b"step 0", b"step 1", b"step 2", b"step 3"]
    assert "step 20" not in out.read_text()


def test_waiting_for_a_pipe_an_untraceable_grandchild_holds_burns_no_cpu(tmp_path: Path) -> None:
    # A grandchild in its own session without the run token (env -i) is out of the group kill's
    # and the token sweep's reach; it holds stdout for 2 s. The harness waits for the pipe's end
    # (up to its drain timeout): asleep, not spinning on the exited process's pidfd.
    # The child ends only once the grandchild runs without the token (its `ready` file): until
    # `env -i` has exec'd Python, it still carries it, and on a busy machine the sweep after the
    # child's exit found it there and killed it (the test then waited 0.04 s). /proc's environ
    # is no such sign: it also reads empty while `env` itself is being exec'd.
    code = ("import os,subprocess,sys,time\n"
            f"subprocess.Popen(['env','-i',{PY!r},'-c','import pathlib,time; pathlib.Path(\"ready\").touch(); "
            "time.sleep(2)'], start_new_session=True)\n"
            "while not os.path.exists('ready'): time.sleep(0.005)\n"
            "print('done', flush=True)")
    cpu = time.thread_time()
    start = time.monotonic()
    res, out = _run(tmp_path, code)
    waited, burned = time.monotonic() - start, time.thread_time() - cpu
    assert res.exit_code == 0 and out.read_text().strip() == "done"
    assert waited >= 1.5  # it did wait for the pipe, or this proves nothing
    assert burned < 0.3, f"{burned:.2f} s of CPU while waiting {waited:.1f} s"


def test_a_failing_stdout_sink_kills_the_agent_before_the_error_propagates(tmp_path: Path) -> None:
    # A watch that raises stands in for any failure while reading (a full disk under the stdout
    # file): the error reaches the caller, the agent does not live on until its timeout.
    pids: list[int] = []

    def watch(line: bytes) -> None:
        pids.append(int(line))
        raise RuntimeError("the sink failed")

    code = "import os,time\nprint(os.getpid(), flush=True)\ntime.sleep(60)"
    started = time.monotonic()
    try:
        run_process([PY, "-c", code], cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout_s=60,
                    output_cap_bytes=1_000_000, stdout_path=tmp_path / "out.txt", watch=watch)
    except RuntimeError as exc:
        assert "the sink failed" in str(exc)
    else:
        raise AssertionError("the sink's error was swallowed")
    assert pids and not _alive(pids[0])
    assert time.monotonic() - started < RAN_ON_S


def test_a_stderr_watch_stops_the_run_at_its_line(tmp_path: Path) -> None:
    """A CLI that announces its retries on stderr only (Codex's log, OpenCode's --print-logs)."""
    code = ("import sys, time\nfor i in range(100):\n"
            "    print('notice', i, file=sys.stderr, flush=True)\n    time.sleep(0.05)")
    seen: list[bytes] = []

    def stderr_watch(line: bytes) -> str | None:
        seen.append(line)
        return "endpoint_error: retrying" if line == b"notice 2" else None

    res = run_process([PY, "-c", code], cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout_s=20,
                      output_cap_bytes=10_000, stdout_path=tmp_path / "s.txt", stderr_watch=stderr_watch)
    assert res.stopped == "endpoint_error: retrying" and res.exit_code is None and not res.timed_out
    assert seen == [b"notice 0", b"notice 1", b"notice 2"]
    assert "notice 30" not in res.stderr_tail


def _side_fifo(tmp_path: Path) -> tuple[Path, int]:
    fifo = tmp_path / "debug.log"
    os.mkfifo(fifo)
    return fifo, os.open(fifo, os.O_RDWR | os.O_NONBLOCK)


def test_a_side_log_stops_the_run_at_its_line_and_is_not_output(tmp_path: Path) -> None:
    """A CLI that announces its retries only in a log file (Qwen Code's debug log): the file is a
    FIFO the harness reads, appended to line by line (opened and closed each time, as the CLI does)."""
    from rubricgate.isolation.streams import SideLog

    fifo, fd = _side_fifo(tmp_path)
    code = (f"import time\nfor i in range(100):\n"
            f"    with open({str(fifo)!r}, 'a') as log: log.write(f'notice {{i}}\\n')\n    time.sleep(0.05)")
    seen: list[bytes] = []

    def watch(line: bytes) -> str | None:
        seen.append(line)
        return "endpoint_error: retrying" if line == b"notice 2" else None

    try:
        res = run_process([PY, "-c", code], cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout_s=20,
                          output_cap_bytes=10_000, stdout_path=tmp_path / "s.txt", side_log=SideLog(fd, watch))
    finally:
        os.close(fd)
    assert res.stopped == "endpoint_error: retrying" and res.exit_code is None and not res.timed_out, res
    assert seen == [b"notice 0", b"notice 1", b"notice 2"]
    assert res.stderr_tail == "" and res.stdout_bytes == 0  # never the CLI's output


def test_a_side_log_keeps_no_silent_agent_alive(tmp_path: Path) -> None:
    """Lines in the side log are not output: an agent that writes only there is idle."""
    from rubricgate.isolation.streams import SideLog

    fifo, fd = _side_fifo(tmp_path)
    code = (f"import time\nfor i in range(200):\n"
            f"    with open({str(fifo)!r}, 'a') as log: log.write('debug\\n')\n    time.sleep(0.05)")
    try:
        res = run_process([PY, "-c", code], cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout_s=30,
                          output_cap_bytes=10_000, stdout_path=tmp_path / "s.txt", idle_timeout_s=0.5,
                          side_log=SideLog(fd, lambda line: None))
    finally:
        os.close(fd)
    assert res.stopped.startswith("idle_timeout:"), res


@pytest.mark.usefixtures("bwrap_ready")
def test_the_sandboxs_init_names_nothing_of_the_harnesss_path(tmp_path: Path, monkeypatch) -> None:
    """bwrap's environment is its sandbox init's (a fork of bwrap), which an ordinary user's agent
    reads in /proc/1/environ: the harness's PATH there named its HOME and user name."""
    import subprocess

    from rubricgate.isolation import process
    from rubricgate.isolation.sandbox import SandboxPolicy

    monkeypatch.setenv("PATH", f"/home/alice/.local/bin:{os.environ['PATH']}")
    launched: list[dict[str, str]] = []
    real_popen = subprocess.Popen

    def popen(argv, **kwargs):
        launched.append(dict(kwargs.get("env") or {}))
        return real_popen(argv, **kwargs)

    monkeypatch.setattr(process.subprocess, "Popen", popen)
    out = tmp_path / "out.txt"
    res = run_process(["/bin/sh", "-c", "tr '\\0' '\\n' < /proc/1/environ || true"], cwd=tmp_path,
                      env={"PATH": "/usr/bin:/bin"}, timeout_s=30, output_cap_bytes=10_000, stdout_path=out,
                      sandbox=SandboxPolicy("bwrap"))
    assert res.exit_code == 0, res.stderr_tail
    assert launched and all("alice" not in env.get("PATH", "") for env in launched)
    assert "alice" not in out.read_text()  # as root, /proc/1/environ is not the agent's to read


def test_ending_a_reaped_sandbox_signals_no_process_that_took_its_pid(tmp_path: Path) -> None:
    # A bwrap whose exit was already collected leaves no namespace behind; its pid may name an
    # unrelated process by then, whose children must not be killed as the sandbox's.
    import subprocess

    from rubricgate.isolation import process

    other = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    child = int(other.stdout.readline())  # type: ignore[union-attr]
    try:
        reaped = subprocess.Popen(["true"])
        reaped.wait()
        reaped.pid = other.pid  # what a reused pid looks like to the trial that held it
        assert process._end(reaped, "", sandboxed=True) == 0
        assert _alive(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        other.kill()
        other.wait()
