"""Fault: a report that cannot be written never leaves a run looking like a pass.

Issue 8: with the reports folder on a full disk only report.html failed to write, and the
summary.json left behind said pass / exit 0. The reviewer here is right on every case (the run
would pass); one file of the run folder cannot be written each time, and the run must exit 2
with a summary.json (written last) that says so, or no summary.json at all.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.records import writing
from rubricgate.records.events import read_events
from tests.faults.helpers import PASS, RIGHT_BLOCK, fake_repo, sandbox_modes, tree_bytes

RIGHT = {"data-loader": RIGHT_BLOCK, "forecast-notebook-runner": RIGHT_BLOCK, "*": PASS}


def _in_the_way(relative: str):
    """A listener that, as the run starts, puts a directory where `relative` is to be written."""
    def listener(event: dict) -> None:
        if event["event"] == "run_started":
            (listener.reports / event["run_id"] / relative.format(case=next(iter(event["case_trials"])))).mkdir(parents=True)
    return listener


def _no_space_for(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Writing any file called `name` fails as on a full disk."""
    real = writing._create

    def full(path: Path):
        if path.name.lstrip(".").startswith(f"{name}."):  # its staging name too (reports/bundle.py)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path)
    monkeypatch.setattr(writing, "_create", full)


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.parametrize("sandbox", sandbox_modes())
def test_the_fake_reviewer_passes_when_every_report_can_be_written(tmp_path: Path, sandbox: str) -> None:
    repo = fake_repo(tmp_path, RIGHT, sandbox)
    assert run_suite(RunOptions(repo=repo)).exit_code == 0  # so the exit 2 below is the write failure


@pytest.mark.parametrize("sandbox", sandbox_modes())
@pytest.mark.parametrize("blocked", ["report.html", "junit.xml", "transcripts/{case}-1.json"])
def test_a_directory_in_the_way_makes_the_run_exit_2(tmp_path: Path, blocked: str, sandbox: str) -> None:
    repo = fake_repo(tmp_path, RIGHT, sandbox)
    baseline = (repo / "baseline.json").read_bytes()
    listener = _in_the_way(blocked)
    listener.reports = repo / "reports"
    done = run_suite(RunOptions(repo=repo, listeners=[listener]))
    assert done.exit_code == 2
    summary = _summary(done.run_dir)
    assert summary["decision"]["status"] == "error" and summary["decision"]["exit_code"] == 2
    assert any(r.startswith("could not write") and blocked.split("/")[0].split("{")[0] in r
               for r in summary["decision"]["reasons"])
    completed = [e for e in read_events(done.run_dir / "events.jsonl") if e["event"] == "run_completed"]
    assert completed[0]["decision"]["exit_code"] == 2
    assert "could not write" in (done.run_dir / "comment.md").read_text()  # rewritten with the final decision
    assert (repo / "baseline.json").read_bytes() == baseline


@pytest.mark.parametrize("name", ["report.html", "junit.xml", "comment.md"])
def test_a_full_disk_through_the_cli_exits_2_and_the_summary_says_so(tmp_path: Path, monkeypatch, name: str) -> None:
    repo = fake_repo(tmp_path, RIGHT)
    _no_space_for(monkeypatch, name)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    assert "could not write" in result.output and "No space left on device" in result.output
    [run_dir] = list((repo / "reports").iterdir())
    assert _summary(run_dir)["decision"]["exit_code"] == 2
    assert not list(run_dir.rglob(".*.tmp"))  # no half-written file left behind


def test_summary_that_cannot_be_written_is_absent_and_the_run_exits_2(tmp_path: Path, monkeypatch) -> None:
    repo = fake_repo(tmp_path, RIGHT)
    _no_space_for(monkeypatch, "summary.json")
    before = tree_bytes(repo, skip=("reports",))
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2 and "could not write" in result.output and "summary.json" in result.output
    [run_dir] = list((repo / "reports").iterdir())
    assert not (run_dir / "summary.json").exists() and not list(run_dir.rglob(".*.tmp"))
    assert tree_bytes(repo, skip=("reports",)) == before


def test_regrade_with_a_report_that_cannot_be_written_exits_2_and_says_so(tmp_path: Path, monkeypatch) -> None:
    repo = fake_repo(tmp_path, RIGHT)
    first = run_suite(RunOptions(repo=repo))
    assert first.exit_code == 0
    _no_space_for(monkeypatch, "report.html")
    result = CliRunner().invoke(main, ["regrade", str(first.run_dir), "--repo", str(repo)])
    assert result.exit_code == 2 and "No space left on device" in result.output
    [regraded] = [p for p in (repo / "reports").iterdir() if p != first.run_dir]
    assert _summary(regraded)["decision"]["exit_code"] == 2
    assert _summary(first.run_dir)["decision"]["exit_code"] == 0  # the original run is left alone
