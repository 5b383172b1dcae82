"""A repository git cannot list is refused, never walked: the walk would show ignored files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rubricgate.errors import GateInputError
from rubricgate.runner.workspace import GitListing, list_tree

DUBIOUS = "fatal: detected dubious ownership in repository at '{repo}'"


def _repo(tmp_path: Path) -> Path:
    """A git repository with a tracked file and an ignored `.env`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.md").write_text("a")
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".env").write_text("API_TOKEN=abc\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _path_with_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str | None) -> None:
    """PATH holds only a `git` running `script` (or no git at all when None)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if script is not None:
        (bin_dir / "git").write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


@pytest.mark.parametrize("script", [None, f"echo \"{DUBIOUS}\" >&2; exit 128"], ids=["no-git", "dubious-ownership"])
def test_a_repository_git_cannot_list_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             script: str | None) -> None:
    repo = _repo(tmp_path)
    _path_with_git(tmp_path, monkeypatch, script)
    with pytest.raises(GateInputError) as err:
        list_tree(repo, listing=GitListing(repo))
    line = str(err.value)
    assert "\n" not in line and "git cannot list the repository's files" in line
    assert f"safe.directory {repo}" in line and ("dubious ownership" in line if script else "cannot be started" in line)


def test_a_worktree_whose_git_is_a_file_is_a_repository_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "wt"
    repo.mkdir()
    (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    _path_with_git(tmp_path, monkeypatch, None)
    with pytest.raises(GateInputError):
        GitListing(repo).names()


def test_without_git_a_folder_outside_any_repository_is_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.md").write_text("a")
    _path_with_git(tmp_path, monkeypatch, None)
    listing = GitListing(folder)
    assert listing.names() is None and list_tree(folder, listing=listing) == ["a.md"]


def test_a_listed_repository_leaves_its_ignored_files_out(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert list_tree(repo, listing=GitListing(repo)) == [".gitignore", "a.md"]
