"""gating/continuation_marks.py: a dead continuation's mark is taken over by one process only."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from rubricgate.gating import continuation_marks
from rubricgate.gating.continuation_marks import RUNNING, open_mark


def _dead_mark(marker: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    marker.write_text(f"{RUNNING} (pid {proc.stdout.strip()})\n")  # that process has ended


def _exactly_one_of_two_wins(open_one, first_won: threading.Event) -> None:
    """Two threads, "first" and "second", each take the mark with `open_one`: one gets it, the
    other finds it taken (FileExistsError)."""
    outcomes: dict[str, object] = {}

    def take(name: str) -> None:
        try:
            outcomes[name] = open_one()
        except FileExistsError as exc:
            outcomes[name] = exc
        finally:
            if name == "first":
                first_won.set()

    threads = [threading.Thread(target=take, args=(n,), name=n) for n in ("first", "second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    winners = [v for v in outcomes.values() if isinstance(v, int)]
    for fd in winners:
        os.close(fd)
    assert len(outcomes) == 2 and len(winners) == 1, outcomes
    assert isinstance(outcomes["second"], FileExistsError)


def test_of_two_takeovers_of_a_dead_mark_at_once_exactly_one_wins(tmp_path: Path, monkeypatch) -> None:
    """Both found the mark stale, then each removed it and made its own: the second removed the
    first's new mark, so two continuations of one run both went on and spent the error twice."""
    marker = tmp_path / "mark"
    _dead_mark(marker)
    both_looked, first_won = threading.Barrier(2), threading.Event()
    real, first_look = continuation_marks.continued_by, threading.local()

    def looked_at_once(path: Path) -> str | None:
        found = real(path)
        if not getattr(first_look, "done", False):  # each found it stale before either took it
            first_look.done = True
            both_looked.wait(timeout=10)
            if threading.current_thread().name == "second":
                first_won.wait(timeout=10)  # and went on once the first had its new mark
        return found

    monkeypatch.setattr(continuation_marks, "continued_by", looked_at_once)

    def open_and_write() -> int:
        fd = open_mark(marker)
        os.write(fd, b"a run in progress (pid %d)\n" % os.getpid())
        return fd

    _exactly_one_of_two_wins(open_and_write, first_won)


def test_a_dead_mark_is_taken_over_and_a_live_one_is_not(tmp_path: Path) -> None:
    import pytest

    marker = tmp_path / "mark"
    _dead_mark(marker)
    fd = open_mark(marker)
    os.write(fd, continuation_marks.running_mark().encode() + b"\n")
    os.close(fd)
    with pytest.raises(FileExistsError):
        open_mark(marker)  # this process's own mark: alive


def test_of_two_takeovers_of_an_old_empty_mark_at_once_exactly_one_wins(tmp_path: Path, monkeypatch) -> None:
    """An empty mark untouched for `empty_after` seconds is taken over (its maker was killed before
    its first write), by one process only: the other finds the winner's new mark young, or written."""
    marker = tmp_path / "mark"
    marker.write_text("")
    os.utime(marker, (1.0, 1.0))
    both_looked, first_won = threading.Barrier(2), threading.Event()
    real, first_look = continuation_marks._stale, threading.local()

    def looked_at_once(path: Path, empty_after: float | None) -> bool:
        found = real(path, empty_after)
        if not getattr(first_look, "done", False):  # each found it stale before either took it
            first_look.done = True
            both_looked.wait(timeout=10)
            if threading.current_thread().name == "second":
                first_won.wait(timeout=10)
        return found

    monkeypatch.setattr(continuation_marks, "_stale", looked_at_once)
    _exactly_one_of_two_wins(lambda: open_mark(marker, empty_after=60.0), first_won)


def test_a_mark_that_is_a_link_is_no_mark_and_is_not_followed(tmp_path: Path) -> None:
    """A mark planted beside a run folder under reports/, linked to /dev/zero, was read until
    memory ran out by every plain rerun (its check of the run passed over)."""
    outside = tmp_path / "outside"
    outside.write_text("20990101T000000Z-abcdef\n")
    marker = tmp_path / "run" / continuation_marks.CONTINUED_BY
    marker.parent.mkdir()
    marker.symlink_to(outside)
    assert continuation_marks.continued_by(marker) is None
    marker.unlink()
    marker.write_text("20990101T000000Z-abcdef\n")
    assert continuation_marks.continued_by(marker) == "20990101T000000Z-abcdef"  # a regular mark still reads
