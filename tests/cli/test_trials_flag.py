"""Every --trials flag is bounded as rubricgate.yaml's trials are: refused at once, exit 2."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.bounds import MAX_TRIALS
from rubricgate.models.config import GateConfig
from tests.conftest import make_repo

COMMANDS = [["run"], ["plan"], ["compare", "--base", "HEAD"], ["baseline", "update"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_trials_count_past_the_bound_is_refused_before_anything_runs(tmp_path, command) -> None:
    repo = make_repo(tmp_path / "repo")
    result = CliRunner().invoke(main, [*command, "--repo", str(repo), "--trials", "100000000"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "'--trials'" in result.output and f"1<=x<={MAX_TRIALS}" in result.output
    assert not (repo / "reports").exists()


def test_the_flag_and_the_config_share_one_bound() -> None:
    assert GateConfig.model_fields["max_trials_per_case"].metadata[-1].le == MAX_TRIALS


def test_plan_with_trials_past_max_trials_per_case_says_the_first_round_is_the_whole_budget(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"] = {"method": "statistical", "max_trials_per_case": 3}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo), "--trials", "5"])
    assert result.exit_code == 0, result.output
    head = result.output.splitlines()[0]
    assert "5 trial(s) per case first" in head and "up to 3" not in head
    assert "whole budget" in head and "gate.max_trials_per_case=3" in head


def test_plan_judges_what_passes_within_the_budget_the_first_round_sets(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")  # an unchanged reviewer's bound is under the margin after 30 trials a case
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"] = {"method": "statistical", "max_trials_per_case": 3}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo), "--trials", "30"])
    assert result.exit_code == 0, result.output
    assert "cannot PASS within the budget" not in result.output
    assert "to PASS an unchanged reviewer within the budget" not in result.output
