"""records/events.py: every event is logged as it happens, whatever its listeners do."""

from __future__ import annotations

import json
from pathlib import Path

from rubricgate.records.events import EventLog


def test_a_listener_whose_reader_left_is_dropped_once_and_the_log_goes_on(tmp_path: Path) -> None:
    """`run 2>&1 | head`: the progress listener's stream is closed. Two trials' threads meeting it
    at once removed it twice, and the second removal raised in the middle of a trial."""
    log = EventLog(tmp_path / "events.jsonl", [], [])
    calls = []

    def closed_pipe(record) -> None:
        calls.append(record["event"])
        log.listeners.remove(closed_pipe)  # the other thread got there first
        raise BrokenPipeError(32, "Broken pipe")

    log.listeners.append(closed_pipe)
    log.emit("trial_result", case_id="a")
    log.emit("trial_result", case_id="b")
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [line["case_id"] for line in lines] == ["a", "b"] and calls == ["trial_result"]


def test_the_log_is_held_while_open_and_free_once_closed_however_the_run_ends(tmp_path: Path) -> None:
    """A reader tells a run still writing from one killed before its summary by the log's lock:
    the kernel drops it at close or at the process's death, SIGKILL included."""
    import os

    from rubricgate.records.events import writer_alive

    log = EventLog(tmp_path / "events.jsonl", [], [])
    log.emit("run_started", total_trials=1)
    fd = os.open(tmp_path / "events.jsonl", os.O_RDONLY)
    try:
        assert writer_alive(fd)
        log.close()
        assert not writer_alive(fd)
    finally:
        os.close(fd)


def test_a_reader_never_finds_a_new_log_unlocked(tmp_path: Path, monkeypatch) -> None:
    """The viewer reads a log no process holds as a run killed before its summary. Created first
    and locked after, a new run's log was there unlocked for a moment: a viewer looking then
    showed the live run as stopped."""
    import fcntl
    import os

    from rubricgate.records import events

    path = tmp_path / "events.jsonl"
    seen = []
    real_flock = fcntl.flock

    def probing_flock(fd: int, op: int) -> None:
        if op & fcntl.LOCK_EX and path.exists():  # what a viewer looking just before the lock sees
            probe = os.open(path, os.O_RDONLY)
            try:
                seen.append(events.writer_alive(probe))
            finally:
                os.close(probe)
        real_flock(fd, op)

    monkeypatch.setattr(events.fcntl, "flock", probing_flock)
    log = EventLog(path, [], [])
    monkeypatch.undo()
    log.emit("run_started", total_trials=1)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert False not in seen and events.writer_alive(fd)
    finally:
        os.close(fd)
        log.close()
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]  # no staging file left behind


def test_a_run_folder_without_a_summary_says_whether_its_run_goes_on_or_ended(tmp_path: Path) -> None:
    """`export`/`trend reports/*` leave such a folder out (named in a note) rather than fail on it."""
    from rubricgate.records.events import unfinished_run

    log = EventLog(tmp_path / "events.jsonl", [], [])
    log.emit("run_started")
    assert unfinished_run(tmp_path).startswith("a run still going")
    log.close()
    assert unfinished_run(tmp_path).startswith("a run that ended without a summary.json, killed outright")
    (tmp_path / "summary.json").write_text("{}")
    assert unfinished_run(tmp_path) == "" and unfinished_run(tmp_path / "summary.json") == ""
    assert unfinished_run(tmp_path / "nowhere") == ""
