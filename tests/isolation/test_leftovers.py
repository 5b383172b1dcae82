"""isolation/leftovers.py: a temp folder is removed only when its owner is provably dead."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from rubricgate.isolation.leftovers import OWNER_FILE, disown, owned_folder, release, remove_owned, sweep_dead
from tests.conftest import ROOT

OWNER = r'''
import sys, time
from rubricgate.isolation.leftovers import owned_folder
folder = owned_folder(sys.argv[2], sys.argv[1])
(folder / "snapshot").write_text("x" * 1000)
print(folder, flush=True)
time.sleep(600)
'''


def _owner(parent: Path, prefix: str = "rg-") -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", OWNER, str(parent), prefix], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    folder = Path(proc.stdout.readline().strip())  # type: ignore[union-attr]
    proc.stdout.close()  # type: ignore[union-attr]
    return proc, folder


def test_a_live_owners_folder_stays_and_a_killed_ones_goes(tmp_path: Path) -> None:
    proc, folder = _owner(tmp_path)
    try:
        assert sweep_dead([tmp_path]) == [] and (folder / "snapshot").exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert sweep_dead([tmp_path]) == [folder] and not folder.exists()


def test_every_prefix_a_run_mutate_or_compare_uses_is_swept(tmp_path: Path) -> None:
    folders = []
    for prefix in ("rg-", "rubricgate-mutant-", "rubricgate-base-", "rubricgate-basecopy-"):
        proc, folder = _owner(tmp_path, prefix)
        proc.kill()
        proc.wait()
        folders.append(folder)
    assert sorted(sweep_dead([tmp_path])) == sorted(folders)


def test_a_folder_of_this_process_is_never_taken_for_dead(tmp_path: Path) -> None:
    folder = owned_folder("rg-", tmp_path)
    try:
        assert sweep_dead([tmp_path]) == [] and folder.exists()
    finally:
        remove_owned(folder)
    assert not folder.exists()


def test_folders_without_a_lock_file_or_of_other_names_are_never_touched(tmp_path: Path) -> None:
    plain = tmp_path / "rg-faults-abc123"  # another program's folder with a similar name
    plain.mkdir()
    unlocked_name = tmp_path / "pytest-of-me"
    unlocked_name.mkdir()
    (unlocked_name / OWNER_FILE).write_text("")  # not a name ours take
    linked = tmp_path / "rg-link"
    linked.symlink_to(unlocked_name)
    assert sweep_dead([tmp_path]) == []
    assert plain.exists() and unlocked_name.exists() and linked.is_symlink()


def test_a_kept_folder_is_disowned_before_its_lock_goes(tmp_path: Path) -> None:
    folder = owned_folder("rg-", tmp_path)
    disown(folder)  # --keep-workspaces: the user looks at it after the run
    assert sweep_dead([tmp_path]) == [] and folder.exists()


def test_the_named_lock_file_is_locked_from_the_moment_it_exists(tmp_path: Path) -> None:
    # Made under a staging name, locked, then renamed: no instant where the name is unlocked.
    folder = owned_folder("rg-", tmp_path)
    try:
        assert [p.name for p in folder.iterdir()] == [OWNER_FILE]
        assert sweep_dead([tmp_path]) == []
    finally:
        release(folder)
    assert sweep_dead([tmp_path]) == [folder]


PROBE_KILLED = r'''
import os, signal, sys
from pathlib import Path
from rubricgate.isolation import overlay

def die(argv):  # killed outright while the probe's mount runs
    print(next(Path(sys.argv[1]).glob("rg-probe-*")), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

overlay.probe_command = die
overlay.probe_overlay(Path(sys.argv[1]), mount_with=lambda o: ["true"])
'''


def test_the_overlay_probe_s_folder_of_a_killed_run_is_swept(tmp_path: Path) -> None:
    """It held no lock file: killed during the probe, no later run ever removed it."""
    proc = subprocess.run([sys.executable, "-c", PROBE_KILLED, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    folder = Path(proc.stdout.strip())
    assert proc.returncode == -signal.SIGKILL and folder.is_dir() and (folder / OWNER_FILE).is_file()
    assert sweep_dead([tmp_path]) == [folder] and not folder.exists()


def test_a_removal_cut_short_keeps_the_lock_file_so_a_later_sweep_finds_the_folder(tmp_path: Path, monkeypatch) -> None:
    """SIGTERM while a run removed its snapshot left a folder without its lock file, which no
    later run ever removed: the lock file now goes last."""
    import pytest

    from rubricgate.isolation import leftovers

    folder = owned_folder("rg-", tmp_path)
    (folder / "base").mkdir()
    (folder / "base" / "f").write_text("x")
    (folder / "staging").mkdir()

    def interrupted(path: Path) -> None:  # the walk took what it met first, its lock file among them
        (path / OWNER_FILE).unlink(missing_ok=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(leftovers, "remove_tree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        remove_owned(folder)
    assert (folder / OWNER_FILE).is_file()
    monkeypatch.undo()
    remove_owned(folder)
    assert not folder.exists()


CLAIM_KILLED = r'''
import os, signal, sys
from rubricgate.isolation import leftovers

def die(src, dst):  # killed outright between the staged lock file and its name
    print(os.path.dirname(src), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

leftovers.os.rename = die
leftovers.owned_folder("rg-", sys.argv[1])
'''


def _aged(folder: Path, seconds: float) -> None:
    import time

    then = time.time() - seconds
    os.utime(folder, (then, then))


def test_a_folder_whose_maker_died_while_claiming_it_is_swept_once_old(tmp_path: Path) -> None:
    """Killed between its staged lock file and that file's name, a run left a folder no sweep
    ever took (it held no `.rubricgate-owner`): it goes once older than any claim takes."""
    from rubricgate.isolation.leftovers import HALF_CLAIMED_AGE

    proc = subprocess.run([sys.executable, "-c", CLAIM_KILLED, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    folder = Path(proc.stdout.strip())
    assert proc.returncode == -signal.SIGKILL and [p.name for p in folder.iterdir()][0].startswith(OWNER_FILE + ".")
    assert sweep_dead([tmp_path]) == [] and folder.exists()  # young: its maker may be claiming it still
    _aged(folder, HALF_CLAIMED_AGE + 60)
    assert sweep_dead([tmp_path]) == [folder] and not folder.exists()


def test_a_half_claimed_folder_that_is_locked_or_holds_more_stays_however_old(tmp_path: Path) -> None:
    import fcntl

    from rubricgate.isolation.leftovers import HALF_CLAIMED_AGE

    locked, fuller = tmp_path / "rg-locked", tmp_path / "rg-fuller"
    for folder in (locked, fuller):
        folder.mkdir()
        (folder / f"{OWNER_FILE}.0badc0de").write_text("")
    (fuller / "snapshot").write_text("x")  # not what a claim cut short leaves
    fd = os.open(locked / f"{OWNER_FILE}.0badc0de", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live maker between its lock and the rename
    try:
        for folder in (locked, fuller):
            _aged(folder, HALF_CLAIMED_AGE + 60)
        assert sweep_dead([tmp_path]) == [] and locked.exists() and fuller.exists()
    finally:
        os.close(fd)


def test_a_claim_interrupted_leaves_neither_its_staged_file_nor_its_folder(tmp_path: Path, monkeypatch) -> None:
    """Only an OSError cleaned up after itself: Ctrl-C between the staged file and its name left both."""
    import pytest

    from rubricgate.isolation import leftovers

    def interrupted(src, dst) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(leftovers.os, "rename", interrupted)
    with pytest.raises(KeyboardInterrupt):
        owned_folder("rg-", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_folder_of_our_names_whose_maker_died_before_claiming_it_is_swept_once_old(tmp_path: Path) -> None:
    """Killed between mkdtemp and its staged lock file, a run left an empty folder that no sweep
    ever took (it held no lock file at all): it goes by rmdir once older than any claim takes.
    Young, of another name, not empty, or a link to one, it stays."""
    import tempfile

    from rubricgate.isolation.leftovers import HALF_CLAIMED_AGE

    made = [Path(tempfile.mkdtemp(prefix=p, dir=tmp_path)) for p in ("rg-", "rg-probe-", "rubricgate-mutant-")]
    young = Path(tempfile.mkdtemp(prefix="rg-", dir=tmp_path))
    similar, fuller = tmp_path / "rg-faults-abc123", Path(tempfile.mkdtemp(prefix="rg-", dir=tmp_path))
    similar.mkdir()
    (fuller / "snapshot").write_text("x")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "rg-abcd1234").symlink_to(target)
    other = tmp_path / "rg-projects"  # another program's, of mkdtemp's length: not mkdtemp's mode
    other.mkdir(mode=0o755)
    for folder in (*made, similar, fuller, target, other):
        _aged(folder, HALF_CLAIMED_AGE + 60)
    assert sorted(sweep_dead([tmp_path])) == sorted(made)
    assert young.exists() and similar.exists() and (fuller / "snapshot").exists() and target.is_dir()
    assert other.is_dir()
    assert (tmp_path / "rg-abcd1234").is_symlink()


def test_every_prefix_owned_folder_is_called_with_is_one_an_empty_folder_is_swept_by() -> None:
    import re

    from rubricgate.isolation.leftovers import MADE_PREFIXES

    called = {m for path in (ROOT / "rubricgate").rglob("*.py")
              for m in re.findall(r'owned_folder\("([^"]+)"', path.read_text())}
    assert called and called <= set(MADE_PREFIXES)
