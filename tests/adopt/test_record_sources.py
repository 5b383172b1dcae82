"""record's git sources in a monorepo's folder (rubricgate.yaml below the top of the work tree)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rubricgate.adopt.record_sources import from_git, from_pull_request, from_worktree
from rubricgate.reports.github import GitHubTarget
from tests.adopt.test_record import CLEAN, commit
from tests.conftest import git, make_repo
from tests.fake_github import FakeGitHub


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    """A monorepo whose folder team/ holds the suite; branch `feature` adds a skill there and one
    in another folder."""
    top = tmp_path / "mono"
    make_repo(top / "team", commit=False)
    (top / "README.md").write_text("x\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], check=True)
    commit(top, "init")
    git(top, "checkout", "-qb", "feature")
    for folder in ("team/skills/orders-loader", "other/skills/elsewhere"):
        (top / folder / "references").mkdir(parents=True)
        (top / folder / "SKILL.md").write_text(CLEAN)
        (top / folder / "references/setup.md").write_text("Run it.\n")
    commit(top, "add skills")
    return top / "team"


def test_a_skill_added_in_a_monorepos_folder_is_found_named_from_the_folder(monorepo):
    # git names a diff's files from the top (team/skills/...), the tree listing from the folder:
    # no changed skill was found, and `record --base main` stopped with exit 2.
    got = from_git(monorepo, "main", "feature", [])
    assert got.skills == ["skills/orders-loader/SKILL.md"]
    assert got.files == {"skills/orders-loader/SKILL.md": CLEAN, "skills/orders-loader/references/setup.md": "Run it.\n"}


def test_the_working_tree_of_a_monorepos_folder_is_read_from_the_folder(monorepo):
    (monorepo / "skills/orders-loader/SKILL.md").write_text(CLEAN + "\nedited\n")
    got = from_worktree(monorepo, "main", ["reviewer/"])
    assert got.skills == ["skills/orders-loader/SKILL.md"]
    assert got.files["skills/orders-loader/SKILL.md"] == CLEAN + "\nedited\n"


def test_a_pull_request_in_a_monorepos_folder_leaves_its_fixtures_out(monorepo):
    # GitHub names a PR's files from the top (team/fixtures/...): `fixtures` left out matched
    # nothing, and the fixture's folder, its answer key expect.yaml with it, became the task.
    key = "team/fixtures/block/data-loader/"
    head = {key + "SKILL.md": CLEAN, key + "expect.yaml": "tier: BLOCK\n", "team/skills/a/SKILL.md": CLEAN,
            "other/skills/b/SKILL.md": CLEAN}
    with FakeGitHub() as gh:
        gh.add_pull(5, "d" * 40, head, dict.fromkeys(head, "modified"))
        got = from_pull_request(GitHubTarget.from_env(gh.env()), 5, ["fixtures", "reviewer"], "team/")
    assert got.skills == ["skills/a/SKILL.md"] and got.files == {"skills/a/SKILL.md": CLEAN}
