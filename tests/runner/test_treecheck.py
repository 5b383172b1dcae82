"""runner/treecheck.py: the run-end backstop reads again only what may have changed, and is
never fooled by a rewrite whose size and mtime were put back."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rubricgate.runner import treecheck
from rubricgate.runner.treecheck import TreeGuard


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git" / "hooks").mkdir(parents=True)
    (repo / "baseline.json").write_text('{"verdict": 1.0}')
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("a")
    return repo


def _aged(guard: TreeGuard) -> TreeGuard:
    """As if the files had been written long before the run started (none is racy)."""
    guard.started_ns = time.time_ns() + 10 * treecheck.RACY_NS
    return guard


def _reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = treecheck._sha256
    monkeypatch.setattr(treecheck, "_sha256", lambda p: reads.append(p) or real(p))
    return reads


# -- failure paths first ------------------------------------------------------------------------

def test_a_rewrite_with_size_and_mtime_put_back_is_caught(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    guard = _aged(TreeGuard.start(repo, set(), adopt=False, known=set()))
    target = repo / "baseline.json"
    st = target.stat()
    target.write_text('{"verdict": 0.0}')  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert guard.changes() == ["baseline.json"]


def test_a_planted_hook_and_a_removed_file_are_caught(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    guard = _aged(TreeGuard.start(repo, set(), adopt=False, known=set()))
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (repo / "docs" / "a.md").unlink()
    assert guard.changes() == [".git/hooks/pre-commit", "docs/a.md"]


def test_files_touched_just_before_the_run_are_read_again_whatever_their_lstat(tmp_path: Path, monkeypatch) -> None:
    repo = _repo(tmp_path)  # written a moment ago: within RACY_NS of the start
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    reads = _reads(monkeypatch)
    assert guard.changes() == []
    assert sorted(os.path.basename(p) for p in reads) == ["a.md", "baseline.json"]


# -- the cheap path -----------------------------------------------------------------------------

def test_an_untouched_tree_is_not_read_again_at_the_end(tmp_path: Path, monkeypatch) -> None:
    repo = _repo(tmp_path)
    guard = _aged(TreeGuard.start(repo, set(), adopt=False, known=set()))
    reads = _reads(monkeypatch)
    assert guard.changes() == [] and reads == []


def test_a_folder_that_cannot_be_listed_is_digested_as_a_folder_not_a_crash(tmp_path: Path, monkeypatch) -> None:
    repo = _repo(tmp_path)
    locked = repo / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "x.md").write_text("x")
    real_scandir = os.scandir

    def refuse(path):  # as an unreadable folder would (root reads every folder, so refused here)
        if os.fspath(path).endswith("/locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(treecheck.os, "scandir", refuse)
    digest = treecheck.digest_tree(repo)
    assert digest["locked"][0] == "dir" and not any(rel.startswith("locked/") for rel in digest)
