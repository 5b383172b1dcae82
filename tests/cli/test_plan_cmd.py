"""`rubricgate plan` and the margin check of `validate`: figures without running, one line on refusal."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.dimensions import DIMENSIONS
from tests.conftest import make_repo


def _statistical(repo, **gate) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"] = {"method": "statistical", **gate}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def _many_trials(repo, trials: int = 20) -> None:
    stored = json.loads((repo / "baseline.json").read_text())
    for dims in stored["cases"].values():
        for d in dims:
            dims[d] = {"passes": trials, "trials": trials}
    (repo / "baseline.json").write_text(json.dumps(stored))


def test_plan_prints_the_detectable_drop_and_what_reaches_a_target_without_running(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    _statistical(repo)
    _many_trials(repo)
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo), "--target", "0.3"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("plan: 2 shared case(s)")
    assert "verdict: smallest drop detectable with 80% power" in result.output
    assert "30.0 points needs" in result.output
    assert not (repo / "reports").exists()  # nothing ran


def test_plan_json_carries_every_dimension(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo), "--json"])
    data = json.loads(result.output)
    assert [d["dimension"] for d in data["dimensions"]] == list(DIMENSIONS)


def test_validate_refuses_a_margin_the_suite_can_never_show_with_one_line_and_exit_2(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")  # 2 cases, 1 baseline trial each
    _statistical(repo, margin=0.02, max_trials_per_case=5)
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: rubricgate.yaml: gate.margin: 0.02 cannot be shown")
    assert "raise gate.margin or gate.max_trials_per_case, or add cases" in lines[0]


def test_validate_accepts_a_margin_within_reach(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    _statistical(repo, margin=0.5, max_trials_per_case=20)
    assert CliRunner().invoke(main, ["validate", "--repo", str(repo)]).exit_code == 0


def test_plan_ends_with_the_rule_coverage_of_the_planned_cases(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    _statistical(repo)
    _many_trials(repo)
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    assert "rule coverage:" in result.output and "uncovered:" in result.output
    data = json.loads(CliRunner().invoke(main, ["plan", "--repo", str(repo), "--json"]).output)
    assert "scope-single-purpose" in data["coverage"]["uncovered"]
    only = json.loads(CliRunner().invoke(main, ["plan", "--repo", str(repo), "--json", "--only", "data-loader"]).output)
    row = next(r for r in only["coverage"]["rules"] if r["rule"] == "tier:otherwise-pass")
    assert row["expected"] == []  # the pass fixture is not planned
