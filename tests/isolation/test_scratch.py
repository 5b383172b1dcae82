"""isolation/scratch.py: the harness's private folders go to a tmpfs only when it fits; TMPDIR wins."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rubricgate.isolation.leftovers import OWNER_FILE
from rubricgate.isolation.scratch import MARGIN_BYTES, Scratch, choose_scratch
from rubricgate.runner.workspace import RunTree


def _mounts(tmp_path: Path, folder: Path, fstype: str = "tmpfs") -> Path:
    table = tmp_path / "mounts"
    table.write_text(f"/dev/vda / ext4 rw 0 0\ntmpfs {folder} {fstype} rw,nosuid 0 0\n")
    return table


# -- failure paths first ------------------------------------------------------------------------

def test_a_folder_that_is_not_a_tmpfs_is_not_used(tmp_path: Path) -> None:
    got = choose_scratch(0, env={}, shm=tmp_path, mounts=_mounts(tmp_path, tmp_path, fstype="ext4"))
    assert got.private == Path(tempfile.gettempdir()) and "not a tmpfs" in got.reason


def test_a_tmpfs_without_room_for_the_snapshot_is_not_used(tmp_path: Path) -> None:
    got = choose_scratch(10**15, env={}, shm=tmp_path, mounts=_mounts(tmp_path, tmp_path))
    assert got.private == Path(tempfile.gettempdir()) and "MiB free" in got.reason


def test_an_unreadable_mount_table_means_no_tmpfs(tmp_path: Path) -> None:
    got = choose_scratch(0, env={}, shm=tmp_path, mounts=tmp_path / "missing")
    assert got.private == Path(tempfile.gettempdir())


def test_tmpdir_set_by_the_user_wins_over_a_tmpfs(tmp_path: Path) -> None:
    got = choose_scratch(0, env={"TMPDIR": "/somewhere"}, shm=tmp_path, mounts=_mounts(tmp_path, tmp_path))
    assert got.private == got.shown == Path(tempfile.gettempdir()) and got.reason == "TMPDIR is set"


# -- the fast path ------------------------------------------------------------------------------

def test_a_writable_tmpfs_with_room_takes_the_private_folders_only(tmp_path: Path) -> None:
    got = choose_scratch(1000, env={}, shm=tmp_path, mounts=_mounts(tmp_path, tmp_path))
    assert got == Scratch(shown=Path(tempfile.gettempdir()), private=tmp_path, reason="tmpfs")
    assert MARGIN_BYTES > 1000


def test_a_layered_workspace_makes_nothing_in_the_shown_folder(tmp_path: Path) -> None:
    """What the agent is shown (cwd, HOME) lives only in its sandbox's view: on the host every
    folder of the trial is in the private one (the tmpfs), nothing under the shown one."""
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("a")
    shown, private = tmp_path / "shown", tmp_path / "private"
    shown.mkdir()
    private.mkdir()
    tree = RunTree(repo, ["docs/a.md"], [], scratch=Scratch(shown, private, "tmpfs"))
    ws = tree.workspace({}, {}, ("changed.txt", ["docs/a.md"]), layered=True)
    assert ws.overlay is not None and not ws.root.exists() and not ws.scratch_view.exists()
    assert ws.root.is_relative_to(tree.root) and ws.scratch_view.is_relative_to(tree.root)
    assert all(f.is_relative_to(private) for f in ws.folders) and ws.scratch.is_dir()
    assert ws.overlay.target.is_relative_to(private) and (ws.overlay.lower[0] / "changed.txt").is_file()
    assert [p.name for p in tree.root.iterdir()] == [OWNER_FILE]  # the run's lock (isolation/leftovers.py)
    ws.remove()
    tree.remove()
    assert list(shown.iterdir()) == [] and list(private.iterdir()) == []
