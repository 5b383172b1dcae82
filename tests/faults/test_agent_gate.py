"""isolation/admission.py + process.py: a sandbox built ahead holds its agent at a gate.

`--jobs N` bounds the agents running at once. A sandboxed trial builds its sandbox before it holds
a slot; what must never happen: its agent starts before it holds one, starts after Ctrl-C, starts
after the harness died, or is charged the time it waited.

Needs bubblewrap (the bwrap_ready fixture: under .ci/run a missing one fails).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rubricgate.isolation.admission import CANCEL, AgentSlots
from rubricgate.isolation.netaccess import NetworkAccess
from rubricgate.isolation.process import ProcessResult, run_process
from rubricgate.isolation.sandbox import SandboxPolicy, agent_start, wrap
from tests.faults.reviewers import live_pids_with
from tests.timing import HANG_S

pytestmark = pytest.mark.usefixtures("bwrap_ready")
ROOT = Path(__file__).resolve().parents[2]
# The gate alone (no network), and with the network allowlist's forwarder in the same shell.
OFFLINE = SandboxPolicy("bwrap", network=NetworkAccess("none"))


def _marker_script(folder: Path) -> list[str]:
    """An agent that leaves a file behind the moment it starts."""
    return ["/bin/sh", "-c", f"touch {folder}/started; echo ran"]


def _run_gated(folder: Path, slots: AgentSlots, timeout_s: float = 20) -> ProcessResult:
    return run_process(_marker_script(folder), cwd=folder, env={"PATH": "/usr/bin:/bin"}, timeout_s=timeout_s,
                       output_cap_bytes=10000, stdout_path=folder.parent / f"{folder.name}.out",
                       sandbox=SandboxPolicy("bwrap"), slots=slots)


def _in_thread(fn) -> tuple[threading.Thread, list]:
    box: list = []
    thread = threading.Thread(target=lambda: box.append(fn()))
    thread.start()
    return thread, box


# -- failure paths first ------------------------------------------------------------------------

def test_the_agent_does_not_start_before_it_holds_a_slot(tmp_path: Path) -> None:
    slots = AgentSlots(1)
    assert slots.acquire()  # another agent is running
    thread, box = _in_thread(lambda: _run_gated(tmp_path, slots))
    time.sleep(1.0)  # long enough for the sandbox to be built and to reach the gate
    assert not (tmp_path / "started").exists()
    slots.release()
    thread.join(HANG_S)
    assert (tmp_path / "started").exists() and box[0].exit_code == 0, box
    assert slots.running == 0  # given back once the agent is dead


def test_after_ctrl_c_an_agent_at_the_gate_never_starts(tmp_path: Path) -> None:
    slots = AgentSlots(1)
    assert slots.acquire()
    thread, box = _in_thread(lambda: _run_gated(tmp_path, slots))
    time.sleep(1.0)
    try:
        CANCEL.trip()
        thread.join(HANG_S)
    finally:
        CANCEL.reset()
    assert not thread.is_alive()
    assert box[0].stopped.startswith("interrupted") and box[0].exit_code is None
    time.sleep(0.3)
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("said", [b"", b"nope\n"], ids=["end-of-file", "another-word"])
def test_without_go_at_the_gate_the_sandbox_ends_and_the_agent_never_runs(tmp_path: Path, said: bytes) -> None:
    args_read, args_write = os.pipe()
    argv, payload = wrap(OFFLINE, _marker_script(tmp_path), cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin"}, args_fd=args_read, gated=True)
    assert argv[-7:-3] == list(agent_start(OFFLINE.limits, gated=True))
    os.write(args_write, payload)
    os.close(args_write)
    gate_read, gate_write = os.pipe()
    os.write(gate_write, said)
    os.close(gate_write)  # the harness is gone (or said something else): nobody says go
    try:
        res = subprocess.run(argv, stdin=gate_read, capture_output=True, pass_fds=(args_read,), timeout=20)
    finally:
        os.close(args_read)
        os.close(gate_read)
    assert res.returncode != 0 and b"ran" not in res.stdout, res
    assert not (tmp_path / "started").exists()


HARNESS = textwrap.dedent('''
    import os, sys, time
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from rubricgate.isolation.admission import AgentSlots
    from rubricgate.isolation.process import run_process
    from rubricgate.isolation.sandbox import SandboxPolicy
    folder = Path({folder!r})
    slots = AgentSlots(1)
    slots.acquire()  # the only slot is taken: the agent below waits at its gate
    import threading
    threading.Thread(target=lambda: run_process(
        ["/bin/sh", "-c", "touch {folder}/started; sleep 30"], cwd=folder, env={{"PATH": "/usr/bin:/bin"}},
        timeout_s=60, output_cap_bytes=1000, stdout_path=folder.parent / "h.out",
        sandbox=SandboxPolicy("bwrap"), slots=slots), daemon=True).start()
    time.sleep(1.0)
    print("ready", flush=True)
    time.sleep(60)
''')


def test_an_agent_at_the_gate_never_starts_once_the_harness_is_killed(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    harness = subprocess.Popen([sys.executable, "-c", HARNESS.format(root=str(ROOT), folder=str(folder))],
                               stdout=subprocess.PIPE, start_new_session=True)
    assert harness.stdout.readline() == b"ready\n"  # type: ignore[union-attr]
    harness.stdout.close()  # type: ignore[union-attr]
    before = _sandbox_processes(folder)
    assert before, "the gated sandbox should be up and waiting"
    os.kill(harness.pid, signal.SIGKILL)  # no finally, no atexit: the kernel closes the gate's pipe
    harness.wait()
    deadline = time.monotonic() + HANG_S  # without the fix they wait on the gate for ever
    while _sandbox_processes(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _sandbox_processes(folder)  # nothing of the sandbox outlives the harness
    assert not (folder / "started").exists()  # and its agent never ran


def _sandbox_processes(folder: Path) -> list[int]:
    """The sandbox's processes (bwrap, its gate): their command lines name the folder."""
    return live_pids_with(str(folder), unless=b"python")


# -- what a gate is for -------------------------------------------------------------------------

def test_the_agents_time_starts_at_the_gate_not_while_it_waited(tmp_path: Path) -> None:
    slots = AgentSlots(1)
    assert slots.acquire()
    thread, box = _in_thread(lambda: _run_gated(tmp_path, slots, timeout_s=HANG_S))
    queued = time.monotonic()
    time.sleep(3.0)  # the trial waits at the gate: its agent's time must not count this
    opened = time.monotonic()  # before the release: the waiting thread may take the slot before this one runs again
    slots.release()
    thread.join(HANG_S)
    returned = time.monotonic()
    res = box[0]
    assert not res.timed_out and res.exit_code == 0, res
    # Instants, not a speed: the agent's clock began at or after the gate opened (a clock started
    # at the queue would begin 3 s before it), however long the agent then took on a busy machine.
    began = returned - res.duration_s
    assert began >= opened > queued, (began, opened, queued)


@pytest.mark.parametrize("network", ["none", "allowlist"])
def test_the_gate_leaves_the_agent_its_stdin_at_dev_null_and_its_environment(tmp_path: Path, network: str) -> None:
    script = 'read -r line; echo "stdin=[$line]"; env | sort'
    res = run_process(["/bin/sh", "-c", script], cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "ONLY": "this"},
                      timeout_s=20, output_cap_bytes=10000, stdout_path=tmp_path.parent / "env.out",
                      sandbox=SandboxPolicy("bwrap", network=NetworkAccess(network)), slots=AgentSlots(1))  # type: ignore[arg-type]
    out = (tmp_path.parent / "env.out").read_text().splitlines()
    assert res.exit_code == 0 and out[0] == "stdin=[]"
    names = {line.split("=", 1)[0] for line in out[1:]}
    proxy = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NODE_USE_ENV_PROXY"}
    assert names <= {"PATH", "ONLY", "PWD", "RUBRICGATE_RUN_TOKEN", "OLDPWD"} | (proxy if network == "allowlist" else set()), names


SPAN = r'''
import time
start = time.time()
time.sleep(0.4)
note = f"SPAN:{start}:{time.time()}:SPAN"
'''


def test_a_run_never_has_more_agents_at_once_than_jobs_though_trials_run_ahead(tmp_path: Path) -> None:
    from rubricgate.pipeline import RunOptions, run_suite
    from tests.faults.test_sandbox_attacks import repo_for

    out = run_suite(RunOptions(repo=repo_for(tmp_path, SPAN), jobs=2, trials=4))
    texts = [p.read_text() for p in sorted((out.run_dir / "transcripts").glob("*.json"))]
    spans = [tuple(float(x) for x in t.split("SPAN:")[1].split(":SPAN")[0].split(":")) for t in texts]
    assert len(spans) >= 8, len(texts)
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert peak == 2  # two at once (the run is parallel), never three (the look-ahead waits at its gate)
