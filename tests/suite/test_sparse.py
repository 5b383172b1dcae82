"""rubricgate.suite.sparse: suite or reviewer files a sparse checkout leaves off disk are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.config import Config
from rubricgate.suite.sparse import off_disk, sparse_checkout, suite_paths
from tests.conftest import git, make_repo


def sparse(repo: Path, *patterns: str) -> None:
    git(repo, "sparse-checkout", "set", "--no-cone", *patterns)


def test_outside_a_sparse_checkout_nothing_is_off_disk(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert not sparse_checkout(repo) and not sparse_checkout(tmp_path)
    sparse(repo, "/*", "!/fixtures/block/")
    assert sparse_checkout(repo)
    assert off_disk(repo, ["fixtures", "reviewer/prompts"]) == [
        "fixtures/block/data-loader/SKILL.md", "fixtures/block/data-loader/expect.yaml",
        "fixtures/block/data-loader/references/sandbox-retention.md"]
    assert suite_paths(Config()) == ["evals/tasks", "fixtures", "reviewer/prompts", "reviewer/evaluator",
                                     "reviewer/evaluator/references"]


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_fixture_a_sparse_checkout_leaves_out_is_named_with_the_fix(tmp_path: Path, command: str) -> None:
    # It read "baseline.json: cases.fixture-data-loader: no task or fixture has this case id", whose
    # fix (`baseline update`) drops the case for good; nothing said the checkout is sparse.
    repo = make_repo(tmp_path / "repo")
    sparse(repo, "/*", "!/fixtures/block/")
    got = CliRunner().invoke(main, [command, "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert got.output.startswith("error: fixtures/block/data-loader/SKILL.md: not on disk: git's sparse checkout "
                                 "leaves out this file and 2 more of the suite"), got.output
    assert "git sparse-checkout add fixtures" in got.output and "no task or fixture" not in got.output


def test_a_sparse_checkout_leaving_out_other_files_is_no_problem(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "docs").mkdir()
    (repo / "docs/big.md").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "docs")
    sparse(repo, "/*", "!/docs/")
    assert not (repo / "docs/big.md").exists()
    assert CliRunner().invoke(main, ["validate", "--repo", str(repo)]).exit_code == 0
