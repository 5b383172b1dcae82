"""A link to a folder of the repository shows that folder's files at its own path in every
workspace, as a checkout does; never a folder outside the repository, the repository itself, or
the answer key by another name."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rubricgate.runner import workspace
from rubricgate.runner.linked_folders import linked_folder_files


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "shared" / "policy" / "deep").mkdir(parents=True)
    (repo / "shared" / "policy" / "rules.md").write_text("RULE: strict")
    (repo / "shared" / "policy" / "deep" / "more.md").write_text("more")
    (repo / "prompt.md").write_text("Read [the rules](policy/rules.md).")
    (repo / "policy").symlink_to("shared/policy")
    return repo


def _git_repo(tmp_path: Path) -> Path:
    repo = _repo(tmp_path)
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    return repo


def test_a_link_to_an_excluded_folder_shows_none_of_its_files(tmp_path: Path) -> None:
    # `notes -> fixtures` would show every case's expect.yaml under another name.
    repo = _git_repo(tmp_path)
    (repo / "fixtures" / "block" / "x").mkdir(parents=True)
    (repo / "fixtures" / "block" / "x" / "expect.yaml").write_text("tier: BLOCK\n")
    (repo / "notes").symlink_to("fixtures/block")
    listed = workspace.list_tree(repo, {"fixtures"})
    assert not [f for f in listed if f.startswith(("notes", "fixtures"))], listed


def test_a_link_to_the_repository_or_outside_it_shows_nothing(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("s")
    (repo / "all").symlink_to(".")
    (repo / "out").symlink_to(tmp_path / "outside")
    listed = workspace.list_tree(repo)
    assert not [f for f in listed if f.startswith(("all/", "out/"))], listed


def test_a_linked_folder_inside_a_linked_folder_is_not_entered(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "shared" / "policy" / "loop").symlink_to("..")  # an ancestor: never ending if entered
    assert linked_folder_files(str(repo), "policy", workspace.SKIP_DIRS) == ["policy/deep/more.md",
                                                                            "policy/rules.md"]


def test_a_git_listed_link_to_a_folder_shows_its_files_at_the_links_path(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path)
    listed = workspace.list_tree(repo)
    assert "policy/rules.md" in listed and "policy/deep/more.md" in listed
    assert "shared/policy/rules.md" in listed  # at its own place too
    assert listed == sorted(listed)


def test_a_walked_tree_shows_a_linked_folders_files_too(tmp_path: Path) -> None:
    # compare --base's base side is a copy of the tree (no repository): it is walked.
    repo = _repo(tmp_path)
    assert workspace.list_tree(repo) == ["policy/deep/more.md", "policy/rules.md", "prompt.md",
                                         "shared/policy/deep/more.md", "shared/policy/rules.md"]


def test_the_snapshot_holds_a_linked_folders_files_by_content(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path)
    dest = tmp_path / "snapshot"
    workspace._copy_files(repo, dest, workspace.list_tree(repo))
    assert not (dest / "policy").is_symlink() and (dest / "policy" / "rules.md").read_text() == "RULE: strict"


def test_a_file_git_ignores_in_a_linked_folder_is_not_shown_at_the_links_path(tmp_path: Path) -> None:
    # git keeps `.env` out of the listing; walking the linked folder must not bring it back.
    repo = _git_repo(tmp_path)
    (repo / ".gitignore").write_text(".env\n")
    (repo / "shared" / "policy" / ".env").write_text("API_KEY=secret")
    listed = workspace.list_tree(repo)
    assert "policy/rules.md" in listed
    assert not [f for f in listed if f.endswith(".env")], listed
