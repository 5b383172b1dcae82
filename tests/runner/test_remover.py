"""rubricgate.runner.remover: finished trials' folders go off the trials' path, full copies in one `rm -rf`."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rubricgate.runner import remover as remover_module
from rubricgate.runner.remover import Remover
from tests.timing import HANG_S


def test_a_full_backlog_makes_the_finished_trial_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Removal stalls (a slow disk): past the backlog the next trial's hand-off blocks instead of
    # letting full copies pile up in the temp folder.
    release = threading.Event()
    removed: list[Path] = []
    monkeypatch.setattr(remover_module, "remove_tree", lambda f: (release.wait(HANG_S), removed.append(f)))
    remover = Remover(backlog=2)
    for i in range(3):  # one being removed, two waiting: the backlog is full
        remover(tmp_path / f"t{i}")
    handed_off = threading.Event()
    late = threading.Thread(target=lambda: (remover(tmp_path / "t3"), handed_off.set()))
    late.start()
    assert not handed_off.wait(0.5)
    release.set()
    assert handed_off.wait(HANG_S)
    late.join()
    remover.close()
    assert removed == [tmp_path / f"t{i}" for i in range(4)]


def test_full_copies_queued_together_go_in_one_rm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A copy of the whole tree per trial (copy-only): one `rm -rf` for the copies queued meanwhile,
    # outside the interpreter, instead of a Python walk of each that fell behind four trials.
    calls: list[list[str]] = []
    import rubricgate.isolation.overlay as overlay_module  # where the `rm -rf` is started (rm_rf)

    real_start = overlay_module.start_helper

    def recording(argv, **kw):
        calls.append(list(argv))
        return real_start(argv, **kw)

    monkeypatch.setattr(overlay_module, "start_helper", recording)
    copies = []
    for i in range(4):
        (tmp_path / f"c{i}" / "tree" / ".hidden").mkdir(parents=True)
        (tmp_path / f"c{i}" / "tree" / ".hidden" / "f").write_text("x")
        (tmp_path / f"c{i}" / "link").symlink_to(tmp_path)  # removed itself, never followed
        copies.append(tmp_path / f"c{i}")
    remover = Remover(backlog=4)
    remover._queue.put((copies[0], True))  # queued before the thread starts: taken together
    for c in copies[1:]:
        remover._queue.put((c, True))
    remover.copy(tmp_path / "absent")  # starts the thread (the queue holds 4 already: waits its turn)
    remover.close()
    assert not any(c.exists() or c.is_symlink() for c in copies) and tmp_path.exists()
    rms = [c for c in calls if c[:2] == ["rm", "-rf"]]
    assert rms and rms[0][-4:] == [str(c) for c in copies]


def test_a_trial_ending_after_the_remover_closed_removes_its_own_folder(tmp_path) -> None:
    remover = Remover()
    early, late = tmp_path / "early", tmp_path / "late"
    for folder in (early, late):
        (folder / "sub").mkdir(parents=True)
    remover.copy(early)
    remover.close()
    remover.copy(late)  # no second worker that could take an end marker: removed here and now
    assert not early.exists() and not late.exists()
    assert not [t for t in threading.enumerate() if t.name == "trial-remover"]


def test_a_folder_that_cannot_be_walked_in_python_does_not_stop_the_remover(tmp_path: Path, capsys,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial folder whose removal raised (RecursionError on a reviewer's 1,300-deep folders)
    ended the remover's thread: the next trials' puts filled its queue and blocked for good, and
    the run hung, SIGTERM notwithstanding. Every later folder is still removed and close returns."""
    real = remover_module.remove_tree

    def raising_on_deep(folder: Path) -> None:
        if folder.name == "deep":
            raise RecursionError("maximum recursion depth exceeded")
        real(folder)

    monkeypatch.setattr(remover_module, "remove_tree", raising_on_deep)
    folders = [tmp_path / name for name in ("deep", "a", "b", "c")]
    for folder in folders:
        folder.mkdir()
    rm = Remover(backlog=1)
    handing_off = threading.Thread(target=lambda: ([rm(f) for f in folders], rm.close()), daemon=True)
    handing_off.start()
    handing_off.join(timeout=30)  # four empty folders: seconds even on a loaded machine
    assert not handing_off.is_alive(), "the remover's queue blocked"
    assert [f.name for f in folders if f.exists()] == ["deep"]
    assert f"{folders[0]} was not removed (RecursionError: maximum recursion depth exceeded)" in capsys.readouterr().err
