"""Ctrl-C and SIGTERM end the whole run: no agent, workspace, HOME or traceback left behind.

Load-proof: the agents would sleep 10 minutes, and a run still going 5 minutes after the signal
fails (with every thread's stack); so a pass means the run stopped its agents instead of waiting
for them, on any machine, without a wall-clock bound on how fast it did so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT, make_repo
from tests.faults.reviewers import live_pids_with, use_reviewer, write_reviewer

pytestmark = pytest.mark.usefixtures("bwrap_ready")
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "warn/oncall-handoff", "pass/ab-test-readout"]

SLOW = r'''
import subprocess, time
subprocess.Popen(["setsid", "sh", "-c", "sleep 600 # MARKER"])
subprocess.Popen(["env", "-i", "sh", "-c", "(sh -c 'sleep 600 # MARKER' &); exit 0"])
time.sleep(600)
'''


def start_run(tmp_path: Path, jobs: int, sandbox: str) -> tuple[subprocess.Popen, str, Path]:
    marker = f"rg-int-{uuid.uuid4().hex[:8]}"
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    use_reviewer(repo, write_reviewer(tmp_path / "agents", SLOW.replace("MARKER", marker)), sandbox=sandbox)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # PYTHONFAULTHANDLER: a run that hangs after the signal is aborted with every thread's stack
    # (communicate_or_dump), so a rare hang says where it sits.
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"}
    # SIGINT as a terminal would deliver it, even when this test runs in a background job (`pytest &`
    # from a script starts its children with SIGINT ignored, and a process keeps that across exec).
    proc = subprocess.Popen([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--jobs", str(jobs)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    want = min(jobs, len(FIXTURES))
    deadline, counts = time.monotonic() + 300, [0]
    # Twice in a row: the shell that starts a reviewer's second escape names the marker too, briefly.
    while min(counts[-2:]) < 2 * want and time.monotonic() < deadline:
        time.sleep(0.1)
        counts.append(len(live_pids_with(marker)))
    assert min(counts[-2:]) >= 2 * want, f"the agents never started: {counts[-5:]}"
    return proc, marker, tmpdir


def communicate_or_dump(proc: subprocess.Popen, timeout: float = 300) -> tuple[str, str]:
    """The run's output once it exited; a run still going after `timeout` is aborted (SIGABRT,
    which the fault handler answers with every thread's stack) and the test fails showing them."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"the run did not end within {timeout:.0f}s of the signal; its threads:\n{err[-6000:]}")


@pytest.mark.parametrize("jobs, signals, sandbox", [
    (1, [signal.SIGINT], "bwrap"),
    (4, [signal.SIGINT, signal.SIGINT, signal.SIGINT], "bwrap"),
    (4, [signal.SIGTERM], "bwrap"),
    (2, [signal.SIGHUP], "bwrap"),  # a closed terminal or ssh session: it died by the signal, no report
    (2, [signal.SIGINT, signal.SIGINT], "none"),
])
def test_interrupt_leaves_nothing_behind(tmp_path: Path, jobs: int, signals: list, sandbox: str) -> None:
    proc, marker, tmpdir = start_run(tmp_path, jobs, sandbox)
    for sig in signals:
        proc.send_signal(sig)
        time.sleep(0.15)
    out, err = communicate_or_dump(proc)
    assert proc.returncode == 2, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    assert live_pids_with(marker) == []
    assert list(tmpdir.iterdir()) == []  # no workspace, HOME or snapshot left
    run_dir = next((tmp_path / "repo" / "reports").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False and summary["decision"]["exit_code"] == 2
    assert "interrupted" in summary["decision"]["reasons"][0]
