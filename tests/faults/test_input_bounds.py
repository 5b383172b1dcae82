"""Issue 28, findings 11 and 15: inputs with bounds, keys given once, secrets in any encoding.

`trials: 100000000` made `validate` use 13 GB; a second `agent:` block silently replaced the
first (and its sandbox setting); a baseline with `trials: 0` or counts of 10^30 was accepted; a
base64-encoded secret reached the reports; a 300-character task id was an internal error. Each
is now a one-line error naming file, field and fix (exit 2), or scrubbed.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.secrets import REDACTED, scrub
from tests.conftest import make_repo

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]


def _validate(repo: Path) -> str:
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output and "internal error" not in result.output, lines
    return lines[0]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", fixtures=FIXTURES, commit=False)


def test_a_second_agent_block_is_an_error_not_a_replacement(repo: Path) -> None:
    text = (repo / "rubricgate.yaml").read_text()
    (repo / "rubricgate.yaml").write_text(text + "\nagent:\n  sandbox: none\n" if "agent:" in text else
                                          text + "\nagent:\n  sandbox: bwrap\nagent:\n  sandbox: none\n")
    assert "'agent' is given twice" in _validate(repo)


def test_a_key_twice_in_baseline_json_is_an_error(repo: Path) -> None:
    (repo / "baseline.json").write_text('{"format_version": 1, "rates": {"verdict": 1.0}, "rates": {"verdict": 0.0}, '
                                        '"trials": 1, "history": []}')
    assert "'rates' is given twice" in _validate(repo)


@pytest.mark.parametrize("counts, says", [
    ({"passes": 0, "trials": 0}, "trials"),
    ({"passes": 10**30, "trials": 10**30}, "less than or equal to 1000000"),
], ids=["zero-trials", "huge-counts"])
def test_baseline_counts_out_of_range_are_errors(repo: Path, counts: dict, says: str) -> None:
    dims = {d: counts for d in DIMENSIONS}
    (repo / "baseline.json").write_text(json.dumps({"format_version": 2, "rates": {"verdict": 1.0},
                                                    "cases": {"fixture-data-loader": dims}}))
    assert says in _validate(repo)


def test_huge_trials_fail_at_once_naming_the_bound(repo: Path) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["trials"] = 100_000_000
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    assert "trials" in _validate(repo) and "1000" in _validate(repo)


@pytest.mark.parametrize("value, says", [(86_400, "less than or equal to 3600"), (-1, "greater than or equal to 0")],
                         ids=["above-bound", "negative"])
def test_idle_timeout_out_of_range_names_the_field_and_bound(repo: Path, value: float, says: str) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config.setdefault("agent", {})["idle_timeout_s"] = value
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    line = _validate(repo)
    assert "idle_timeout_s" in line and says in line, line


def test_a_300_character_task_id_is_an_input_error(repo: Path) -> None:
    task = yaml.safe_load((Path(__file__).parents[2] / "evals/tasks/block-missing-description.yaml").read_text())
    task["id"] = "a" * 300
    (repo / "evals" / "tasks" / f"{'a' * 200}.yaml").write_text(yaml.safe_dump(task))
    assert "id" in _validate(repo)


def test_an_encoded_secret_is_scrubbed() -> None:
    secret = "sk-live-Zq9K2mP7vL4nR8tW"
    raw = secret.encode()
    for form in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("="),
                 raw.hex(), raw.hex().upper()):
        assert scrub(f"token={form};", [secret]) == f"token={REDACTED};"
    # Inside a longer string, at any offset: Basic auth's `user:KEY`, `Bearer KEY`, a line after it.
    for whole in (b"user:" + raw, b"Bearer " + raw, b"u" + raw + b"\n", b"us" + raw + b"xy"):
        for form in (base64.b64encode(whole).decode(), base64.urlsafe_b64encode(whole).decode().rstrip("=")):
            out = scrub(f"token={form};", [secret])
            assert REDACTED in out and len(out) <= len(f"token={REDACTED};") + 16, (whole, out)
