"""record's git sources in a monorepo's folder (rubricgate.yaml below the top of the work tree)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rubricgate.adopt.record_sources import from_git, from_worktree
from tests.adopt.test_record import CLEAN, commit
from tests.conftest import git, make_repo


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
