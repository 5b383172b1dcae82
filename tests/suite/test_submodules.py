"""rubricgate.suite.submodules: a reviewer file inside a git submodule is refused, never run without."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.errors import GateInputError
from rubricgate.suite.submodules import nested_repository, refuse_submodule_files
from tests.conftest import git, make_repo


def add_submodule(repo: Path, at: str, files: dict[str, str]) -> None:
    """A repository of `files` beside `repo`, added to it as the submodule `at` and committed."""
    module = repo.parent / f"module-{at.replace('/', '-')}"
    subprocess.run(["git", "init", "-q", "-b", "main", str(module)], check=True)
    for rel, text in files.items():
        (module / rel).write_text(text)
    commit = ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "module"]
    git(module, "add", "-A")
    git(module, *commit)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(module), at)
    git(repo, "add", "-A")
    git(repo, *commit)


def test_a_file_below_a_folder_holding_git_is_in_that_repository(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "a/b/.git").write_text("gitdir: ../../.git/modules/b\n")
    assert nested_repository(tmp_path, "a/b/c/rubric.md") == "a/b"
    assert nested_repository(tmp_path, "a/rubric.md") == "" and nested_repository(tmp_path, "rubric.md") == ""
    with pytest.raises(GateInputError, match="--base: main's reviewer: 'a/b/x.md' is inside 'a/b', a git submodule"):
        refuse_submodule_files(tmp_path, ["a/y.md", "a/b/x.md"], "main's reviewer")


def test_outside_git_a_nested_repository_is_copied_with_the_tree(tmp_path: Path) -> None:
    (tmp_path / "a/.git").mkdir(parents=True)  # tmp_path itself is no repository: a walk copies a/ whole
    assert nested_repository(tmp_path, "a/rubric.md") == ""


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_rubric_inside_a_submodule_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    # validate said ok, then every trial failed "rubric not found in workspace" (run: REGRESSION).
    repo = make_repo(tmp_path / "repo")
    add_submodule(repo, "policy", {"rubric.md": (repo / "reviewer/evaluator/references/rubric.md").read_text()})
    config = (repo / "rubricgate.yaml").read_text()
    (repo / "rubricgate.yaml").write_text(config.replace("reviewer/evaluator/references/rubric.md", "policy/rubric.md"))
    got = CliRunner().invoke(main, [command, "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert got.output.startswith("error: rubricgate.yaml: reviewer.rubric: 'policy/rubric.md' is inside 'policy', "
                                 "a git submodule"), got.output
    assert got.output.count("\n") == 1 and "fix: copy the file into the repository" in got.output
