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


# -- the copy-only check between trials (fingerprint_tree) ---------------------------------------

def _rewritten_in_place(path: Path, text: str) -> None:
    """Same size, same mtime: only the ctime (which user space cannot set back) shows it."""
    st = path.stat()
    assert len(text.encode()) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_the_fingerprint_catches_a_rewrite_with_size_and_mtime_put_back(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = treecheck.fingerprint_tree(repo)
    time.sleep(0.01)  # a later ctime tick, however coarse the file system's clock
    _rewritten_in_place(repo / "baseline.json", '{"verdict": 0.0}')
    assert treecheck.tree_changes(before, treecheck.fingerprint_tree(repo)) == ["baseline.json"]


def test_the_fingerprint_skips_an_excluded_folder_and_nothing_beside_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    for rel in ("reports/run/summary.json", "reports-old/a.md", "reportsx", "docs/reports/b.md", "a/reports/c.md"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x")
    exclude = {"reports", "a/reports"}
    before = treecheck.fingerprint_tree(repo, exclude)
    assert not any(rel == "reports" or rel.startswith(("reports/", "a/reports")) for rel in before)
    time.sleep(0.01)
    for rel in ("reports/run/summary.json", "a/reports/c.md"):  # the run's own outputs: never a change
        (repo / rel).write_text("y")
    (repo / "reports" / "new.json").write_text("{}")
    assert treecheck.tree_changes(before, treecheck.fingerprint_tree(repo, exclude)) == []
    for rel in ("reports-old/a.md", "reportsx", "docs/reports/b.md"):  # names that only begin alike
        (repo / rel).write_text("y")
    assert treecheck.tree_changes(before, treecheck.fingerprint_tree(repo, exclude)) == [
        "docs/reports/b.md", "reports-old/a.md", "reportsx"]


def test_the_fingerprint_watches_git_but_its_index_locks_and_objects(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".git" / "objects" / "ab").mkdir(parents=True)
    before = treecheck.fingerprint_tree(repo)
    for rel in (".git/index", ".git/index.lock", ".git/refs/heads/main.lock", ".git/objects/ab/cdef"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x")
    changes = treecheck.tree_changes(before, treecheck.fingerprint_tree(repo))
    assert not any(c.startswith((".git/index", ".git/objects/")) or c.endswith(".lock") for c in changes), changes
    assert ".git/refs/heads" in changes  # the folder a lock was taken in still shows it
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    assert ".git/hooks/pre-commit" in treecheck.tree_changes(before, treecheck.fingerprint_tree(repo))
