"""A run's temp folder with no room: one line before the first trial, errored trials after it."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from rubricgate.errors import GateInputError
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.runner import workspace
from rubricgate.runner.workspace import RunTree
from tests.conftest import make_repo

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "block/forecast-notebook-runner"]


def _full(*_args: object, **_kw: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # a write's error: it names no file


def test_a_snapshot_with_no_room_is_one_line_naming_the_temp_folder(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "_copy_files", _full)
    with pytest.raises(GateInputError) as err:
        RunTree(tmp_path, ["a.md"], [])
    line = str(err.value)
    assert "\n" not in line and "temp folder has no room" in line and "TMPDIR" in line


def test_a_probe_with_no_room_is_one_line_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rubricgate.runner.startup.sandbox_policy", _full)
    with pytest.raises(GateInputError, match="temp folder has no room"):
        run_suite(RunOptions(repo=make_repo(tmp_path / "repo", fixtures=FIXTURES)))


def test_a_trial_whose_workspace_finds_no_room_is_errored_and_the_run_keeps_its_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    real, calls = RunTree.workspace, []

    def second_full(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return _full() if len(calls) == 2 else real(self, *args, **kwargs)

    monkeypatch.setattr(RunTree, "workspace", second_full)
    outcome = run_suite(RunOptions(repo=repo))
    summary = json.loads((outcome.run_dir / "summary.json").read_text())
    assert outcome.exit_code == 2 and len(summary["errored"]) == 1
    assert "workspace could not be made in the run's temp folder" in summary["errored"][0]
