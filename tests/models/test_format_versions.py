"""A file written by a newer rubricgate (a format_version past what this one writes) is refused with
one line saying so and what to do; the older formats it migrates are still read."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.errors import GateInputError
from rubricgate.fleet.shard import read_shard_record
from rubricgate.models.baseline import Baseline
from rubricgate.models.comparison import COMPARISON_FORMAT
from rubricgate.models.config import Config
from rubricgate.models.transcript import TRANSCRIPT_FORMAT, Transcript
from rubricgate.records.files import read_summary, read_transcript
from rubricgate.reports.replay import read_replay
from rubricgate.view.comparisons import ComparisonRef, read
from tests.conftest import make_repo

NEWER = "was written by a newer rubricgate"
FIX = "(fix: upgrade rubricgate: pip install -U rubricgate)"


def _one_line_refusal(result, file: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {file}: format_version: 99 {NEWER}"), lines
    assert lines[0].endswith(FIX)


def test_validate_refuses_a_config_written_by_a_newer_rubricgate(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump({**config, "format_version": 99}))
    _one_line_refusal(CliRunner().invoke(main, ["validate", "--repo", str(repo)]), "rubricgate.yaml")


def test_validate_refuses_a_baseline_written_by_a_newer_rubricgate(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    stored = json.loads((repo / "baseline.json").read_text())
    (repo / "baseline.json").write_text(json.dumps({**stored, "format_version": 99}))
    _one_line_refusal(CliRunner().invoke(main, ["validate", "--repo", str(repo)]), "baseline.json")


@pytest.mark.parametrize(("name", "reader"), [
    ("summary.json", read_summary),
    ("transcripts/a-1.json", lambda path: read_transcript(path.parent.parent, "transcripts/a-1.json")),
    ("replay/a-1.json", read_replay),
    ("shard.json", lambda path: read_shard_record(path.parent)),
    ("compare.json", lambda path: read(ComparisonRef(path.parent, path.name))),
])
def test_every_run_file_written_by_a_newer_rubricgate_is_refused_naming_the_file(tmp_path, name, reader) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format_version": 99}))
    with pytest.raises(GateInputError) as caught:
        reader(path)
    line = caught.value.one_line()
    assert line.startswith(f"{path}: format_version: 99 {NEWER}") and line.endswith(FIX), line


def test_the_older_formats_are_still_read() -> None:
    assert Config.model_validate({"format_version": 1}).format_version == 1
    for version in (1, 2):
        assert Baseline.model_validate({"format_version": version, "rates": {}, "cases": {}}).format_version == version
    assert Transcript.model_validate({"format_version": TRANSCRIPT_FORMAT - 1, "agent": "a"}).format_version == 1
    assert COMPARISON_FORMAT == 3  # the record reads formats 2 and 3 (a format-2 file has no id)


def test_a_baseline_measured_with_the_agents_setup_is_a_format_an_older_reader_calls_newer(tmp_path) -> None:
    """measured_with.setup came under format 3: a rubricgate of that format refused the file with
    "remove it (unknown key)", and a baseline with it removed pools the trials of any setup."""
    from typing import Annotated

    from pydantic import TypeAdapter, ValidationError

    from rubricgate.models.base import known_format

    repo = make_repo(tmp_path / "repo")
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)]).exit_code == 0
    stored = json.loads((repo / "baseline.json").read_text())
    assert stored["measured_with"]["setup"]
    with pytest.raises(ValidationError, match=NEWER):  # the check a format-3 rubricgate makes first
        TypeAdapter(Annotated[int, known_format(3)]).validate_python(stored["format_version"])


def test_a_format_3_baseline_an_older_rubricgate_wrote_is_still_read() -> None:
    """tests/data/baselines/format3-2026-12-07.json: written by `baseline update` of that day's
    release, before measured_with.setup (no setup: pooled as any setup, the docs say so)."""
    from pathlib import Path

    from rubricgate.suite.baseline_file import load_baseline

    path = Path(__file__).parents[1] / "data" / "baselines" / "format3-2026-12-07.json"
    baseline = load_baseline(path, "baseline.json")
    assert baseline.format_version == 3 and baseline.measured_with and baseline.measured_with.setup is None
    assert baseline.cases["block-missing-description"]["verdict"].trials == 1
