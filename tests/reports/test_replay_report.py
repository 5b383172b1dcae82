"""Replay artifacts: one per failed trial, complete, loadable; errors when inputs are missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.errors import GateInputError  # noqa: E402
from rubricgate.reports.replay import read_replay, read_replays, trial_failed, write_replay_artifacts  # noqa: E402


def test_failed_case_missing_from_suite_is_an_error(tmp_path):
    run = rf.write_run_dir(tmp_path / "run")
    with pytest.raises(GateInputError, match="failed case is not in the suite"):
        write_replay_artifacts(run, [], rf.summary())


def test_missing_transcript_file_is_an_error(tmp_path):
    run = rf.write_run_dir(tmp_path / "run")
    (run / "transcripts/block-missing-description-1.json").unlink()
    with pytest.raises(GateInputError):
        write_replay_artifacts(run, [rf.case_spec()], rf.summary())


def test_corrupt_replay_names_the_file(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"case": {}, "trial": {}, "transcript": {}}))
    with pytest.raises(GateInputError, match=str(bad)):
        read_replay(bad)


def test_one_artifact_per_failed_trial_only(tmp_path):
    run = rf.write_run_dir(tmp_path / "run")
    paths = write_replay_artifacts(run, [rf.case_spec()], rf.summary())
    assert sorted(p.name for p in paths) == ["block-missing-description-1.json", "block-missing-description-2.json"]
    art = read_replay(paths[0])
    assert art.case.expect.tier == "BLOCK" and art.case.review == ["fixtures/block/data-loader/SKILL.md"]
    assert art.trial.grades["verdict"].category == "wrong_tier" and art.trial.grades["verdict"].reason
    assert art.transcript["tool_calls"][1]["name"] == "bash"
    assert len(read_replays(run)) == 2


def test_secrets_are_scrubbed_from_artifacts(tmp_path):
    run = rf.write_run_dir(tmp_path / "run")
    paths = write_replay_artifacts(run, [rf.case_spec()], rf.summary(), secrets=["fixtures/block"])
    assert "fixtures/block" not in paths[0].read_text()


def test_error_outcome_counts_as_failed():
    t = rf.trial("c", 1, "ERROR")
    assert trial_failed(t) and not trial_failed(rf.trial("c", 1, "PASS"))


def test_not_run_trials_get_no_artifact(tmp_path):
    s = rf.summary()
    not_run = rf.Grade(passed=False, category="not_run", reason="cost budget spent")
    s.cases[0].trials.append(rf.trial("pass-weekly-revenue", 3, "ERROR", verdict=not_run, tool_use=not_run,
                                      trajectory=not_run).model_copy(update={"transcript": ""}))
    run = rf.write_run_dir(tmp_path / "run", s)
    paths = write_replay_artifacts(run, [rf.case_spec(), rf.case_spec("pass-weekly-revenue")], s)
    assert len(paths) == 2
