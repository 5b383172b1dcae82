"""Issue 37: what a harness killed outright (SIGKILL: an OOM kill, a CI job cancelled hard) left.

The run's snapshot stayed in /dev/shm (memory, until reboot), also after the next run; a killed
`mutate` left its copy of the repository in /tmp; copy-only agents, and what they started, ran
on. Now a copy-only run's guardian kills its agents' groups and token-carrying escapees and
removes its temp folders the moment the harness dies, and every run removes the left-overs of
earlier runs whose owner is provably dead (their lock file is free), never a live run's.

No wall-clock bound: the agents would sleep 10 minutes; the checks wait up to 5 for an outcome.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from rubricgate.isolation.leftovers import OWNER_FILE
from tests.conftest import ROOT, make_repo
from tests.faults.reviewers import live_pids_with, use_reviewer, write_reviewer

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
SLOW = r'''
import subprocess, time
subprocess.Popen(["setsid", "sh", "-c", "sleep 600 # MARKER"])
subprocess.Popen(["env", "-i", "sh", "-c", "(sh -c 'sleep 600 # MARKER' &); exit 0"])
time.sleep(600)
'''
PATIENCE_S = 300


def _until(check, what: str) -> None:
    """Wait for an outcome (no bound on how fast: a busy machine only makes it slower)."""
    deadline = time.monotonic() + PATIENCE_S
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} still not true after {PATIENCE_S} s")
        time.sleep(0.1)


def _env(tmpdir: Path | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TMPDIR", None)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


def _snapshots(name: str, tmpdir: Path | None) -> list[Path]:
    """The run folders holding the snapshot of repository `name` (in /dev/shm or the temp folder)."""
    parents = [Path("/dev/shm"), tmpdir or Path("/tmp")]
    return [p for parent in parents if parent.is_dir() for p in parent.glob(f"rg-*/base/{name}")]


def _killed_run(tmp_path: Path, sandbox: str, tmpdir: Path | None) -> tuple[str, str]:
    """Start a run of SLOW agents, SIGKILL the harness once they run: (marker, repository name)."""
    marker, name = f"rg-kill-{uuid.uuid4().hex[:8]}", f"repo-{uuid.uuid4().hex[:8]}"
    repo = make_repo(tmp_path / name, fixtures=FIXTURES)
    use_reviewer(repo, write_reviewer(tmp_path / "agents", SLOW.replace("MARKER", marker)), sandbox=sandbox,
                 timeout_s=900)
    proc = subprocess.Popen([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--jobs", "2"],
                            env=_env(tmpdir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _until(lambda: len(live_pids_with(marker)) >= 4, "the agents and their escapes started")
    assert _snapshots(name, tmpdir), "the run's snapshot is not where the test looks for it"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return marker, name


@pytest.mark.parametrize("tmpdir", [False, True], ids=["shm", "TMPDIR"])
def test_a_killed_copy_only_runs_agents_and_folders_go_with_it(tmp_path: Path, tmpdir: bool) -> None:
    folder = tmp_path / "tmp" if tmpdir else None
    if folder is not None:
        folder.mkdir()
    marker, name = _killed_run(tmp_path, "none", folder)
    # Its agent, the child that left the group (setsid, with the run token) and the one that
    # cleared its environment but stayed in the group: all gone, without another run.
    _until(lambda: live_pids_with(marker) == [], f"no process of the killed run's agents ({live_pids_with(marker)})")
    _until(lambda: _snapshots(name, folder) == [], "the killed run's snapshot is removed")


@pytest.mark.usefixtures("bwrap_ready")
def test_the_next_run_removes_a_killed_runs_snapshot_and_never_a_live_ones(tmp_path: Path) -> None:
    # A private temp folder: a run of another test worker would sweep the killed run's folder
    # from the shared ones before this test looked.
    temp = tmp_path / "tmp"
    temp.mkdir()
    marker, name = _killed_run(tmp_path, "bwrap", temp)
    _until(lambda: live_pids_with(marker) == [], "the sandboxed agents died with bubblewrap")
    assert _snapshots(name, temp), "a sandboxed run has no guardian: the snapshot waits for the next run"
    # A live run's folder beside it: locked by its owner (here: this test, holding its lock file).
    from rubricgate.isolation.leftovers import owned_folder, remove_owned

    mine = owned_folder("rg-", temp)
    try:
        next_repo = make_repo(tmp_path / "next", fixtures=FIXTURES[:1])
        done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(next_repo)],
                              env=_env(temp), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        assert _snapshots(name, temp) == [], "the next run left the killed run's snapshot"
        assert (mine / OWNER_FILE).exists(), "the next run removed a live run's folder"
    finally:
        remove_owned(mine)


def test_a_killed_mutates_copy_is_removed_by_the_next_run(tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    proc = subprocess.Popen([sys.executable, "-m", "rubricgate", "mutate", "--repo", str(repo), "--jobs", "1",
                             "--out", str(tmp_path / "out")], env=_env(tmpdir), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    _until(lambda: any(tmpdir.glob("rubricgate-mutant-*/repo")), "mutate made its first copy")
    os.killpg(proc.pid, signal.SIGKILL)  # mutate and the run it started for the mutant
    proc.wait()
    assert any(tmpdir.glob("rubricgate-mutant-*"))
    done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)], env=_env(tmpdir),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(tmpdir.glob("rubricgate-mutant-*")) == [] and list(tmpdir.glob("rg-*")) == []
