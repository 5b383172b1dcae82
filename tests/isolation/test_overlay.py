"""isolation/overlay.py: trial and probe folders are removed whole, even what overlayfs leaves unreadable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rubricgate.isolation.overlay import probe_overlay, remove_tree
from tests.deep_trees import nest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
import tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rubricgate.isolation.overlay import probe_overlay, remove_tree
target = Path(sys.argv[2])
remove_tree(target)
print("left" if target.exists() else "gone")
"""


def _as_unprivileged(argv: list[str]) -> list[str]:
    # Root ignores permissions, so the case only shows for another user: run it as nobody.
    if os.geteuid() != 0:
        return argv
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is needed to run this check as an unprivileged user")
    return ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", *argv]


@pytest.fixture
def open_tmp():
    # pytest's own tmp_path sits under a 0700 folder the unprivileged user cannot enter.
    folder = Path(tempfile.mkdtemp(prefix="rg-rm-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_unreadable_subfolder_like_overlayfs_work_is_removed(open_tmp: Path) -> None:
    tmp_path = open_tmp
    shared = tmp_path / "shared"
    shutil.copytree(ROOT / "rubricgate", shared / "rubricgate", ignore=shutil.ignore_patterns("__pycache__"))
    trial = tmp_path / "trial"
    (trial / "work" / "work").mkdir(parents=True)
    (trial / "work" / "work" / "left-over").write_text("x")
    (trial / "upper").mkdir()
    (trial / "upper" / "written").write_text("y")
    for path in [tmp_path, *tmp_path.rglob("*")]:
        os.chown(path, 65534, 65534) if os.geteuid() == 0 else None
    (trial / "work" / "work").chmod(0)  # as overlayfs leaves it
    python = "/usr/bin/python3" if os.geteuid() == 0 and Path("/usr/bin/python3").exists() else sys.executable
    out = subprocess.run(_as_unprivileged([python, "-c", SCRIPT, str(shared), str(trial)]),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "gone", out.stderr


def test_a_link_in_a_read_only_folder_is_removed_not_followed_by_chmod(open_tmp: Path) -> None:
    """An unprivileged user cannot unlink in a folder the reviewer made read-only: the careful
    path makes it writable, and chmod of the failed entry, a link, changed the mode of what it
    pointed at outside the trial folder (a file or folder of the user running the gate)."""
    shared = open_tmp / "shared"
    shutil.copytree(ROOT / "rubricgate", shared / "rubricgate", ignore=shutil.ignore_patterns("__pycache__"))
    outside, trial = open_tmp / "outside", open_tmp / "trial"
    (outside / "dir").mkdir(parents=True)
    (outside / "file").write_text("precious")
    (trial / "ro").mkdir(parents=True)
    (trial / "ro" / "to-file").symlink_to(outside / "file")
    (trial / "ro" / "to-dir").symlink_to(outside / "dir")
    for path in [open_tmp, *open_tmp.rglob("*")]:
        os.lchown(path, 65534, 65534) if os.geteuid() == 0 else None
    (outside / "file").chmod(0o644)
    (outside / "dir").chmod(0o755)
    (trial / "ro").chmod(0o500)
    python = "/usr/bin/python3" if os.geteuid() == 0 and Path("/usr/bin/python3").exists() else sys.executable
    out = subprocess.run(_as_unprivileged([python, "-c", SCRIPT, str(shared), str(trial)]),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "gone", out.stderr
    modes = [oct((outside / name).stat().st_mode & 0o777) for name in ("file", "dir")]
    assert modes == ["0o644", "0o755"] and (outside / "file").read_text() == "precious"


def test_a_missing_folder_is_not_an_error(tmp_path: Path) -> None:
    remove_tree(tmp_path / "never-made")


def test_symlinks_in_a_trial_folder_are_removed_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "keep.txt").write_text("precious")
    trial = tmp_path / "trial"
    (trial / "out").mkdir(parents=True)
    (trial / "out" / "to-dir").symlink_to(outside)  # an agent's parting gift
    (trial / "out" / "to-file").symlink_to(outside / "sub" / "keep.txt")
    link = tmp_path / "link-to-outside"
    link.symlink_to(outside)
    remove_tree(trial)
    remove_tree(link)
    assert not trial.exists() and not link.is_symlink()
    assert (outside / "sub" / "keep.txt").read_text() == "precious"


def test_the_careful_path_never_raises_on_a_deep_folder(tmp_path: Path, monkeypatch) -> None:
    import rubricgate.isolation.overlay as overlay

    def refused(path: str) -> None:
        raise PermissionError(path)  # the lean walk gives up: shutil's walk recurses per level

    monkeypatch.setattr(overlay, "_remove", refused)
    trial = tmp_path / "trial"
    trial.mkdir()
    nest(trial, 1200)
    overlay.remove_tree(trial)  # what resists may stay; nothing is raised
    monkeypatch.undo()
    remove_tree(trial)
    assert not trial.exists()


def test_read_only_folders_an_agent_left_are_removed(tmp_path: Path) -> None:
    trial = tmp_path / "trial"
    locked = trial / "upper" / "locked"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    locked.chmod(0o500)
    (trial / "work" / "work").mkdir(parents=True)
    (trial / "work" / "work").chmod(0)
    remove_tree(trial)
    assert not trial.exists()


PROBE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rubricgate.isolation.overlay import probe_overlay
print(repr(probe_overlay(Path(sys.argv[2]))))
"""


def test_the_start_up_probe_leaves_nothing_behind(open_tmp: Path) -> None:
    problem = probe_overlay()
    if problem and os.environ.get("RUBRICGATE_REQUIRE_SANDBOX") != "1":
        pytest.skip(f"no overlay mounts here: {problem}")
    shared = open_tmp / "shared"
    shutil.copytree(ROOT / "rubricgate", shared / "rubricgate", ignore=shutil.ignore_patterns("__pycache__"))
    scratch = open_tmp / "scratch"
    scratch.mkdir()
    if os.geteuid() == 0:
        for path in (open_tmp, scratch, *shared.rglob("*"), shared):
            os.chown(path, 65534, 65534)
    python = "/usr/bin/python3" if os.geteuid() == 0 and Path("/usr/bin/python3").exists() else sys.executable
    out = subprocess.run(_as_unprivileged([python, "-c", PROBE, str(shared), str(scratch)]),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "''", out.stderr  # the overlay mounted ...
    assert list(scratch.iterdir()) == []  # ... and its probe folder, work/work included, is gone


@pytest.mark.parametrize("depth", [1500, 2500])  # within PATH_MAX, and past it
def test_a_tree_deeper_than_pythons_recursion_limit_is_removed_without_raising(tmp_path: Path, depth: int) -> None:
    """A reviewer that nests folders in its workspace 1,300 deep made remove_tree ("never raising")
    raise RecursionError: the trials' remover thread died, the run hung once its queue filled
    (SIGTERM could not end it), and the leftover sweep raised on such a folder at every run."""
    top = tmp_path / "trial"
    top.mkdir()
    nest(top, depth)
    remove_tree(top)
    assert not top.exists()
