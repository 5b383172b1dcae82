"""Sandboxes a hard-killed harness stranded: ended by a later run's sweep, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rubricgate.isolation import leftovers, stranded
from rubricgate.isolation.stranded import HARNESS_VAR, end_stranded_sandboxes, harness_mark


def _waiting(mark: str) -> subprocess.Popen[bytes]:
    """A process of this user carrying `mark` as a sandbox's bwrap does, waiting for good."""
    proc = subprocess.Popen(["sleep", "300"], env={"PATH": os.environ["PATH"], HARNESS_VAR: mark})
    for _ in range(200):  # until its exec shows the environment given
        if HARNESS_VAR.encode() in Path(f"/proc/{proc.pid}/environ").read_bytes():
            break
        time.sleep(0.01)
    return proc


def _ended(proc: subprocess.Popen[bytes]) -> bool:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == -9


def _dead_harness() -> str:
    """The mark of a harness that ran and is gone: this process's id with another start time."""
    namespace, pid, start = harness_mark().split(":")
    return f"{namespace}:{pid}:{int(start) + 1}"


def test_a_process_naming_a_dead_harness_is_ended() -> None:
    stranded_one = _waiting(_dead_harness())
    try:
        assert stranded_one.pid in end_stranded_sandboxes()
        assert _ended(stranded_one)
    finally:
        stranded_one.kill()


def test_a_live_harness_a_foreign_namespace_and_a_mark_of_no_form_are_never_judged() -> None:
    namespace, pid, start = harness_mark().split(":")
    spared = [_waiting(harness_mark()), _waiting(f"{int(namespace) + 1}:{pid}:{int(start) + 1}"),
              _waiting("not-a-mark"), _waiting(f"{namespace}:{pid}")]
    try:
        ended = end_stranded_sandboxes()
        assert not {p.pid for p in spared} & set(ended)
        assert all(p.poll() is None for p in spared)
    finally:
        for p in spared:
            p.kill()
            p.wait()


def test_the_sweep_of_a_dead_runs_folder_ends_the_sandbox_it_stranded(tmp_path: Path) -> None:
    # Before, the sweep removed the dead run's folder and left its sandbox's init waiting on
    # bubblewrap's eventfd with parent 1, for good (seen after kill -9 of a run near its starts).
    made = subprocess.run([sys.executable, "-c", "import sys; from rubricgate.isolation.leftovers import owned_folder;"
                           f" print(owned_folder('rg-', {str(tmp_path)!r}))"], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    folder = Path(made.stdout.strip())
    stranded_one = _waiting(_dead_harness())
    try:
        assert leftovers.sweep_dead([tmp_path]) == [folder] and not folder.exists()
        assert _ended(stranded_one)
    finally:
        stranded_one.kill()


def test_no_dead_folder_no_process_scan(tmp_path: Path, monkeypatch) -> None:
    # The scan reads every process's environment: a run's start pays it only after a hard kill.
    monkeypatch.setattr(stranded, "_own_pids", lambda: (_ for _ in ()).throw(AssertionError("scanned")))
    assert leftovers.sweep_dead([tmp_path]) == []
