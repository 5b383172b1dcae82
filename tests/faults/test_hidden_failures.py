"""A reviewer cannot hide a wrong answer as an outage (issue 38, target 2).

The reviewer below is wrong on the BLOCK case data-loader, and on that case alone it ends the way
an outage would: a claimed API error, exit 1 with no output, or a malformed event. The first two
make the trial `errored` (missing data, left out of every rate), which with gate.max_errored: 1
used to PASS with exit 0 when the truth is a regression; the records carry what the gate needs
(errored, the failure class, its evidence), and the gate holds a PASS only when it would hold with
every errored trial counted as a failure (gating/). A malformed event is the reviewer's own
stream: graded. Under the allowlist sandbox a claimed API error with no request behind it is
graded too (the proxy saw none).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.failures import INFRA_FAILURES
from tests.faults.helpers import PASS, RIGHT_BLOCK, fake_repo

ERRORED = ["fake_api_error", "exit_1_silent"]  # errored: the gate must count them as failures
WRONG_ON_BLOCK = {"tier": "PASS", "rules": []}


def _repo(tmp_path: Path, data_loader: dict, sandbox: str = "none", max_errored: int = 1) -> Path:
    plan = {"data-loader": data_loader, "forecast-notebook-runner": RIGHT_BLOCK, "*": PASS}
    repo = fake_repo(tmp_path, plan, sandbox=sandbox)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["max_errored"] = max_errored
    config["agent"].update({"retries": 1, "retry_backoff_s": 0})
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return repo


def _trial(repo: Path, case: str) -> dict:
    summary = json.loads(next((repo / "reports").glob("*/summary.json")).read_text())
    return next(t for c in summary["cases"] if c["id"].endswith(case) for t in c["trials"])


def test_the_same_reviewer_wrong_in_the_open_is_a_regression(tmp_path: Path) -> None:
    """The control: without hiding, the wrong answer on the BLOCK case fails the gate."""
    repo = _repo(tmp_path, WRONG_ON_BLOCK)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize("hide", ERRORED)
def test_a_hidden_failure_is_recorded_as_errored_with_its_class_and_evidence(tmp_path: Path, hide: str) -> None:
    repo = _repo(tmp_path, {**WRONG_ON_BLOCK, "hide": hide})
    CliRunner().invoke(main, ["run", "--repo", str(repo)])
    trial = _trial(repo, "data-loader")
    assert trial["errored"] and trial["failure"] in INFRA_FAILURES and trial["evidence"], trial
    assert len(trial["attempts"]) == 2 and all(a["failure"] == trial["failure"] for a in trial["attempts"])
    assert {g["category"] for g in trial["grades"].values()} == {"errored"}


def test_a_malformed_event_is_the_reviewers_own_stream_and_graded(tmp_path: Path) -> None:
    """An assistant event whose message is a number is a model turn that said nothing usable:
    the run ended after it without a result, the reviewer's error (agent_error), graded."""
    repo = _repo(tmp_path, {**WRONG_ON_BLOCK, "hide": "malformed_event"})
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    trial = _trial(repo, "data-loader")
    assert not trial["errored"] and trial["failure"] == "agent_error", trial
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize("max_errored", [0, 1, 50])
@pytest.mark.parametrize("hide", [*ERRORED, "malformed_event"])
def test_a_reviewer_hiding_a_wrong_block_answer_never_gets_exit_0(tmp_path: Path, hide: str, max_errored: int) -> None:
    """Whatever gate.max_errored allows (none, the one hidden trial, far more than the suite has)."""
    repo = _repo(tmp_path, {**WRONG_ON_BLOCK, "hide": hide}, max_errored=max_errored)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code in (1, 2) and isinstance(result.exception, (SystemExit, type(None))), result.output


def test_a_claimed_api_error_with_no_request_behind_it_is_graded_in_the_sandbox(tmp_path: Path, bwrap_ready) -> None:
    """Under the allowlist sandbox every request goes through rubricgate's proxy, which saw none:
    the claimed API 529 is the reviewer's own doing, graded, and the wrong answer is a regression."""
    repo = _repo(tmp_path, {**WRONG_ON_BLOCK, "hide": "fake_api_error"}, sandbox="bwrap")
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    trial = _trial(repo, "data-loader")
    assert not trial["errored"] and trial["failure"] == "agent_error" and "relayed none" in trial["evidence"], trial
    assert result.exit_code == 1, result.output
