"""regrade: stored transcripts graded again under today's expectations, never an old grade kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1]))
from conftest import make_repo, write_task  # noqa: E402

from rubricgate.cli import main  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402

TASK = {"id": "data-loader-needs-description", "why": "protects fm-description-required",
        "review": ["fixtures/block/data-loader/SKILL.md"],
        "expect": {"tier": "BLOCK", "rules": ["fm-description-required"]}}


def _run(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", commit=False)
    write_task(repo, TASK)
    outcome = run_suite(RunOptions(repo=repo))
    assert outcome.exit_code == 0, outcome.summary.decision
    return repo, outcome.run_dir


def test_a_graded_trial_whose_transcript_was_not_written_is_not_passed_on_its_old_grade(tmp_path):
    # A transcript that could not be written (a full disk) leaves the trial's grades and no
    # transcript: under an expectation that now fails it, the regrade said PASS from the old grade.
    repo, run_dir = _run(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    trial = next(t for c in summary["cases"] if c["id"] == TASK["id"] for t in c["trials"])
    trial["transcript"] = ""
    (run_dir / "summary.json").write_text(json.dumps(summary))
    write_task(repo, TASK | {"expect": {"tier": "PASS"}})
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert got.output.strip().splitlines() == [
        f"error: {run_dir / 'summary.json'}: trial {TASK['id']}#1: has grades but no transcript to grade again "
        "(fix: regrade a run whose graded trials kept their transcripts, or run the suite again)"]
