"""paths.py: a repository path resolves exactly as realpath would, symlinks out are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rubricgate.errors import GateInputError
from rubricgate.suite.paths import resolve_under, safe_relpath


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "docs" / "sub").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("a")
    outside.mkdir()
    (outside / "secret.md").write_text("s")
    os.symlink(outside, repo / "out-dir")
    os.symlink(outside / "secret.md", repo / "docs" / "out-file.md")
    os.symlink(repo / "docs", repo / "in-dir")
    os.symlink("a.md", repo / "docs" / "rel-link.md")
    return repo, outside


# -- failure paths first ------------------------------------------------------------------------

@pytest.mark.parametrize("rel", ["out-dir/secret.md", "docs/out-file.md", "out-dir", "in-dir/out-file.md"])
def test_a_symlink_out_of_the_repository_is_refused_wherever_it_sits(tree, rel: str) -> None:
    repo, _ = tree
    with pytest.raises(GateInputError, match="resolves outside the repository"):
        safe_relpath(repo, rel, "t.yaml", "review[0]")


# -- equivalence with realpath ------------------------------------------------------------------

@pytest.mark.parametrize("rel", ["docs/a.md", "docs/./a.md", "docs//sub", "missing/deeper/x.md", "in-dir/a.md",
                                 "docs/rel-link.md", "out-dir/secret.md", "docs/out-file.md", "in-dir/out-file.md",
                                 "docs/sub/missing.md", "."])
def test_resolves_as_realpath_does(tree, rel: str) -> None:
    repo, _ = tree
    root = os.path.realpath(repo)
    assert resolve_under(root, rel) == os.path.realpath(os.path.join(root, rel))


def test_a_repository_link_pointed_elsewhere_is_resolved_again(tmp_path: Path) -> None:
    # The repository's real path is remembered per folder, not per name: re-pointing a link at
    # a folder whose task path leads out must not pass on the first folder's answer.
    safe, unsafe = tmp_path / "safe", tmp_path / "unsafe"
    (safe / "docs").mkdir(parents=True)
    (safe / "docs" / "a.md").write_text("a")
    unsafe.mkdir()
    os.symlink(tmp_path, unsafe / "docs")
    link = tmp_path / "repo"
    os.symlink(safe, link)
    safe_relpath(link, "docs/a.md", "t.yaml", "review[0]")
    link.unlink()
    os.symlink(unsafe, link)
    with pytest.raises(GateInputError, match="resolves outside the repository"):
        safe_relpath(link, "docs/a.md", "t.yaml", "review[0]")
