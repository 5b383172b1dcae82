"""runner/topdir.py: the run's temp root spreads its trial folders over ext4's block groups, and
where a file system keeps no such flag nothing changes and nothing fails."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from rubricgate.runner import topdir
from rubricgate.runner.topdir import FS_TOPDIR_FL, inode_flags, spread_children
from rubricgate.runner.workspace import RunTree

SHM = Path("/dev/shm")


def _flagged_folder(tmp_path: Path) -> Path:
    """A folder on a file system that takes FS_TOPDIR_FL (ext2/3/4), else the test is skipped."""
    probe = tmp_path / "probe"
    probe.mkdir()
    if not spread_children(probe):
        pytest.skip("the temp folder's file system takes no FS_TOPDIR_FL (not ext2/3/4)")
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


# -- failure paths first ------------------------------------------------------------------------

def test_a_file_system_without_inode_flags_is_left_alone(tmp_path: Path) -> None:
    if not (SHM.is_dir() and os.access(SHM, os.W_OK)):
        pytest.skip("no writable /dev/shm")
    with tempfile.TemporaryDirectory(dir=SHM) as folder:  # tmpfs: some flags, never this one
        before = inode_flags(Path(folder))
        assert spread_children(Path(folder)) is False
        assert inode_flags(Path(folder)) == before
    assert spread_children(tmp_path / "absent") is False


def test_a_refused_flag_leaves_a_working_run_tree(tmp_path: Path, monkeypatch) -> None:
    def refuse(*_args):
        raise OSError(95, "Operation not supported")

    monkeypatch.setattr(topdir.fcntl, "ioctl", refuse)
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("a")
    tree = RunTree(repo, ["docs/a.md"], [])
    try:
        ws = tree.workspace({}, {}, ("changed.txt", []))
        assert (ws.root / "docs" / "a.md").read_text() == "a"
        ws.remove()
    finally:
        tree.remove()
    assert not tree.root.exists()


# -- the flag -----------------------------------------------------------------------------------

def test_the_flag_is_added_to_the_folders_own_and_not_inherited(tmp_path: Path) -> None:
    folder = _flagged_folder(tmp_path)
    before = inode_flags(folder)
    assert before is not None and not before & FS_TOPDIR_FL
    assert spread_children(folder) is True
    assert inode_flags(folder) == before | FS_TOPDIR_FL
    (folder / "trial").mkdir()  # a trial's folder: its copy's own folders stay beside it
    assert not inode_flags(folder / "trial") & FS_TOPDIR_FL  # type: ignore[operator]
    assert spread_children(folder) is True  # already set: nothing to do, still true


def test_a_run_trees_root_spreads_its_trial_folders(tmp_path: Path, monkeypatch) -> None:
    _flagged_folder(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the run's temp root on this file system
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("a")
    tree = RunTree(repo, ["docs/a.md"], [])
    try:
        assert tree.root.parent == tmp_path
        assert inode_flags(tree.root) & FS_TOPDIR_FL  # type: ignore[operator]
    finally:
        tree.remove()
