"""The gate over the configured dimensions (gate.dimensions), a dimension the baseline never
measured, and `run --only` of cases the baseline does not hold."""

from __future__ import annotations

import json
import shutil

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.dimensions import DIMENSIONS
from tests.conftest import ROOT, make_repo, write_baseline_cases


def _config(repo, **gate) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config.setdefault("gate", {}).update(gate)
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def _run(repo, *args):
    return CliRunner().invoke(main, ["run", "--repo", str(repo), *args])


def _summary(repo) -> dict:
    return json.loads(sorted((repo / "reports").glob("*/summary.json"))[-1].read_text())


def test_only_the_configured_dimensions_are_graded_and_gated(tmp_path):
    repo = make_repo(tmp_path / "repo")
    # A baseline measured on the verdict alone (one measuring more is held until it is re-measured:
    # tests/gating/test_config_changes.py).
    write_baseline_cases(repo, ["fixture-weekly-revenue-summary", "fixture-data-loader"], {"verdict": 1.0})
    _config(repo, dimensions=["verdict"])
    result = _run(repo)
    assert result.exit_code == 0, result.output
    summary = _summary(repo)
    assert list(summary["rates"]) == ["verdict"]
    assert all(list(t["grades"]) == ["verdict"] for c in summary["cases"] for t in c["trials"])
    assert "tool_use" not in result.output and "trajectory" not in result.output


def test_a_dimension_the_baseline_never_measured_is_reported_as_no_baseline(tmp_path):
    repo = make_repo(tmp_path / "repo")
    write_baseline_cases(repo, ["fixture-weekly-revenue-summary", "fixture-data-loader"], {"verdict": 1.0})
    assert CliRunner().invoke(main, ["validate", "--repo", str(repo)]).exit_code == 0
    result = _run(repo)
    assert result.exit_code == 0, result.output
    rates = _summary(repo)["rates"]
    assert rates["verdict"]["status"] == "ok"
    assert {d: rates[d]["status"] for d in DIMENSIONS if d != "verdict"} == dict.fromkeys(DIMENSIONS[1:], "no_baseline")
    assert "no baseline: run `rubricgate baseline update` to measure tool_use" in result.output


def test_a_regression_on_a_measured_dimension_still_fails_beside_an_unmeasured_one(tmp_path):
    repo = make_repo(tmp_path / "repo")
    write_baseline_cases(repo, ["fixture-weekly-revenue-summary", "fixture-data-loader"], {"verdict": 1.0})
    skill = repo / "fixtures/block/data-loader/SKILL.md"
    shutil.copy(ROOT / "fixtures/pass/weekly-revenue-summary/SKILL.md", skill)  # a BLOCK case now reads clean
    result = _run(repo)
    assert result.exit_code == 1, result.output
    assert _summary(repo)["rates"]["verdict"]["status"] == "regression"


def _with_new_case(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shutil.copytree(ROOT / "fixtures/warn/oncall-handoff", repo / "fixtures/warn/oncall-handoff")
    return repo


def test_only_a_new_case_under_the_statistical_gate_runs_and_is_reported_as_new(tmp_path):
    """It used to end in `internal error: ValueError: information at the looks must be positive`."""
    repo = _with_new_case(tmp_path)
    _config(repo, method="statistical")
    result = _run(repo, "--only", "oncall")
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    assert "only case(s) new to baseline.json ran (fixture-oncall-handoff): reported, not gated" in result.output
    gate = _summary(repo)["gate"]
    assert gate["new_cases"] == ["fixture-oncall-handoff"] and gate["new_case_rates"]["verdict"]["trials"] == 1
    # the command it names adds the new case (without --allow-partial it was refused: a partial run)
    run_dir = sorted((repo / "reports").glob("*/summary.json"))[-1].parent
    said = result.output.split("`rubricgate baseline update ")[1].split("`")[0].replace("<this run>", str(run_dir))
    added = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), *said.split()])
    assert added.exit_code == 0, added.output
    assert "fixture-oncall-handoff" in json.loads((repo / "baseline.json").read_text())["cases"]


def test_only_a_new_case_under_new_cases_strict_is_judged_on_its_trials(tmp_path):
    repo = _with_new_case(tmp_path)
    result = _run(repo, "--only", "oncall")  # the strict gate: new cases must pass every trial
    assert result.exit_code == 0, result.output
    assert "fixture-oncall-handoff" in result.output and _summary(repo)["gate"]["new_cases"] == ["fixture-oncall-handoff"]
