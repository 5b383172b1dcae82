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
    assert "verdict, tool_use, trajectory: smallest drop detectable with 80% power" in result.output
    assert "30.0 points needs" in result.output
    assert not (repo / "reports").exists()  # nothing ran


def test_plan_refuses_a_target_at_or_below_the_margin_with_one_line_and_exit_2(tmp_path) -> None:
    # No run calls a drop of at most the margin a REGRESSION: the plan said "more than 100 trials
    # per case (the baseline's own trials limit it: re-measure it with more)".
    repo = make_repo(tmp_path / "repo")
    _statistical(repo, margin=0.2)
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo), "--target", "0.2"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: --target: 0.2 is not above gate.margin 0.2: a drop of at most the margin is never a REGRESSION "
        "(fix: pass a drop above 0.2, at most 1)"]


def test_plan_json_carries_every_dimension(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo), "--json"])
    data = json.loads(result.output)
    assert [d["dimension"] for d in data["dimensions"]] == list(DIMENSIONS)


def test_validate_refuses_a_margin_no_reviewer_could_show_at_this_size_with_one_line_and_exit_2(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")  # 2 cases: 10 trials at most could never bound a drop under 2 points
    _statistical(repo, margin=0.02, max_trials_per_case=5)
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: rubricgate.yaml: gate.margin: 0.02 cannot be shown by 2 case(s)")
    assert "not even by a reviewer that never fails" in lines[0]
    assert "(fix: raise gate.margin, or: " in lines[0] and "cases like these (now 2)" in lines[0]


def _noisy(repo, passes: int) -> None:
    """Every case measured in two sessions of 5 trials, `passes` of 10 passing."""
    stored = json.loads((repo / "baseline.json").read_text())
    for dims in stored["cases"].values():
        for d in dims:
            dims[d] = {"passes": passes, "trials": 10, "sessions": [[passes // 2, 5], [passes - passes // 2, 5]]}
    (repo / "baseline.json").write_text(json.dumps(stored))


def test_validate_warns_and_exits_0_when_the_measured_baseline_puts_the_margin_out_of_reach(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    _statistical(repo, margin=0.3, max_trials_per_case=10)  # a reviewer that never fails could show 30 points here
    _noisy(repo, 5)  # but one that passes half its trials cannot
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok: 2 cases")
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning: gate.margin 0.3")]
    assert len(warning) == 1 and "out of reach of the measured baseline" in warning[0]
    assert "to PASS within the budget: about" in warning[0] and "cases like these (now 2)" in warning[0]
    _noisy(repo, 10)  # measured without a failure: within reach, nothing to warn
    assert "warning: gate.margin" not in CliRunner().invoke(main, ["validate", "--repo", str(repo)]).stderr


def test_plan_before_any_baseline_says_what_a_reviewer_that_never_fails_could_show(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")
    _statistical(repo)
    (repo / "baseline.json").unlink()
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("plan: 2 shared case(s)")
    assert "before a baseline: every case as a reviewer that never fails would measure it" in result.output
    assert "verdict, tool_use, trajectory: smallest drop detectable" in result.output  # one line for equal figures
    assert "to PASS an unchanged reviewer within the budget: about" in result.output


def test_init_of_a_model_backed_reviewer_prints_what_a_decision_needs(tmp_path) -> None:
    import subprocess

    repo = tmp_path / "fresh"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    result = CliRunner().invoke(main, ["init", "--repo", str(repo), "--agent", "claude"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("plan: "))
    assert "needs, even from a reviewer that never fails, about" in line and "cases to PASS" in line
    assert "to catch a 10-point drop in 80% of runs" in line
    builtin = tmp_path / "builtin"
    builtin.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(builtin)], check=True)
    assert "plan: " not in CliRunner().invoke(main, ["init", "--repo", str(builtin)]).output  # strict: nothing to plan


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


def test_validate_names_the_baseline_trials_a_single_collapse_needs_and_warns_when_the_baseline_has_fewer(tmp_path) -> None:
    repo = make_repo(tmp_path / "repo")  # 2 cases measured with 1 trial each
    _statistical(repo, margin=0.3)
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    assert ("warning: a single collapsing case is shown with 3 baseline trials per case at 2 cases; baseline.json "
            "has 1 for some case: re-measure it (rubricgate baseline update measures at least 3)") in result.stderr
    _noisy(repo, 10)
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert "note: a single collapsing case is shown with 3 baseline trials per case at 2 cases (baseline.json has at " \
           "least 10)" in result.stdout and "collapsing" not in result.stderr
