"""The harness's own helper processes are not the agents' orphans.

At the end of the trials a run kills every child it did not have before the run (what agents
left behind). That took the copy-only guardian too, which then never read the run's `end` line
(its pipe broke), a batch `rm -rf` of trial copies still at work (Python removed the rest), and
the user namespaces' holders, so every run in one process made them again. Now the harness
starts them as helpers (isolation/reaping.py start_helper), which the sweep spares.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from rubricgate.isolation import guardian
from rubricgate.isolation.identity import NAMESPACES
from rubricgate.isolation.reaping import child_pids, sweep_orphans
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.runner import startup, trials
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]


def _repo(tmp_path: Path, sandbox: str) -> Path:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    use_reviewer(repo, write_reviewer(tmp_path / "agents"), sandbox=sandbox)
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    return repo


def test_the_copy_only_guardian_outlives_the_trials_and_leaves_on_the_runs_end_line(tmp_path, monkeypatch) -> None:
    started: list[guardian.Guardian] = []
    swept: list[int] = []
    swept_what: list = []

    def recorded() -> guardian.Guardian:
        started.append(guardian.start_guardian())
        return started[-1]

    def sweep(known: set[int]) -> list[int]:
        for pid in child_pids() - known:  # named in the failure: what the sweep would take
            with contextlib.suppress(OSError):
                swept_what.append(Path(f"/proc/{pid}/cmdline").read_bytes())
        swept.extend(sweep_orphans(known))
        return swept

    monkeypatch.setattr(startup, "start_guardian", recorded)
    monkeypatch.setattr(trials, "sweep_orphans", sweep)
    outcome = run_suite(RunOptions(repo=_repo(tmp_path, "none")))
    assert outcome.exit_code == 0 and outcome.summary.isolation == "copy-only"
    assert len(started) == 1 and started[0].exit_status == 0
    assert started[0]._proc is None and swept == [], swept_what  # told `end` and reaped by the run, not killed


@pytest.mark.skipif(os.geteuid() != 0, reason="a root harness lends user namespaces")
@pytest.mark.usefixtures("bwrap_ready")
def test_the_namespace_holders_outlive_the_run_and_serve_the_next_one(tmp_path) -> None:
    repo = _repo(tmp_path, "bwrap")
    assert run_suite(RunOptions(repo=repo)).exit_code == 0
    kept = NAMESPACES.holder_pids()
    assert kept, "the run gave its namespaces back"
    assert run_suite(RunOptions(repo=repo)).exit_code == 0
    assert NAMESPACES.holder_pids() == kept  # the same holders, alive, lent again
