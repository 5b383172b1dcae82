"""`compare --base` judges a pull request's reviewer change on what the base's suite can see
(flows/compare_scope.py): a changed rule no case exercises, or cases the pull request deletes
beside its reviewer change, never read as a PASS."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import git, make_repo

FIXTURES = ["block/data-loader", "pass/weekly-revenue-summary", "pass/ab-test-readout"]
RUBRIC = "reviewer/evaluator/references/rubric.md"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    got = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo)])  # records the rule table
    assert got.exit_code == 0, got.output
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "measured")
    return repo


def _compare(repo: Path):
    return CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD", "--trials", "1"])


def _edit_rule(repo: Path, rule: str, old: str, new: str) -> None:
    path = repo / RUBRIC
    lines = [line.replace(f"| {old} |", f"| {new} |") if line.startswith(f"| {rule} |") else line
             for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def test_a_rule_change_no_case_exercises_is_not_a_pass(base) -> None:
    _edit_rule(base, "scope-single-purpose", "suggestion", "warning")
    got = _compare(base)
    assert got.exit_code == 2 and "INCONCLUSIVE" in got.output, got.output
    assert "scope-single-purpose" in got.output


def test_cases_removed_beside_a_reviewer_change_are_not_a_pass(base) -> None:
    prompt = base / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nReview carefully.\n")
    shutil.rmtree(base / "fixtures/block/data-loader")
    got = _compare(base)
    assert got.exit_code == 2, got.output
    assert "also removes 1 case(s) the base has (fixture-data-loader)" in got.output


def test_cases_removed_with_the_reviewer_unchanged_are_the_suites_business(base) -> None:
    shutil.rmtree(base / "fixtures/block/data-loader")
    got = _compare(base)
    assert got.exit_code == 0, got.output


def test_a_rule_change_is_seen_when_the_pull_request_also_updates_the_baseline(base) -> None:
    """The documented way to record a rule change is `baseline update`; the head's baseline then
    holds the new rule table, and the change read against it had vanished: PASS."""
    _edit_rule(base, "scope-single-purpose", "suggestion", "warning")
    assert CliRunner().invoke(main, ["baseline", "update", "--repo", str(base), "--reason", "a warning now"]).exit_code == 0
    got = _compare(base)
    assert got.exit_code == 2 and "scope-single-purpose" in got.output, got.output


def test_a_reworded_rule_no_case_exercises_is_named_not_held(base) -> None:
    """A benign rewording of the rules must pass the PR gate (issue 40's target); the line names it."""
    path = base / RUBRIC
    text = path.read_text()
    assert "The skill does one job" in text
    path.write_text(text.replace("The skill does one job", "Each skill does a single job"))
    got = _compare(base)
    assert got.exit_code == 0, got.output
