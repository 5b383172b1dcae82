"""A mutate stopped by Ctrl-C or SIGTERM keeps what finished (mutate/stopping.py): the mutants
that ran are written to mutation.json, marked interrupted; before, an interrupt lost them all."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

from click.testing import CliRunner

from rubricgate.cli.app import main
from rubricgate.mutate.execute import Outcome
from rubricgate.mutate.mutants import Mutant
from rubricgate.mutate.stopping import Stop, map_until_stopped
from tests.timing import HANG_S


def test_ctrl_c_keeps_what_finished_stops_what_runs_and_starts_nothing_more() -> None:
    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C raises, as in the CLI
    stop, main_thread = Stop(), threading.main_thread().ident

    def fn(i: int) -> str:
        if i == 0:
            return "finished"
        if i == 1:  # Ctrl-C, as the main thread waits for the mutants: a real signal ends its wait
            signal.pthread_kill(main_thread, signal.SIGINT)
            assert stop.event.wait(HANG_S)
            return "stopped while it ran"
        return "skipped" if stop.event.is_set() else "started after the stop"

    try:
        got = map_until_stopped(fn, [0, 1, 2, 3], 1, stop)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert got == ["finished", "stopped while it ran", "skipped", "skipped"] and stop.event.is_set()


def test_a_suite_run_under_way_is_interrupted_and_one_starting_after_the_stop_at_once() -> None:
    stop = Stop()
    running = subprocess.Popen(["sleep", "600"])
    stop.started(running)
    stop.trip()
    assert running.wait(HANG_S) == -signal.SIGINT
    late = subprocess.Popen(["sleep", "600"])
    stop.started(late)
    assert late.wait(HANG_S) == -signal.SIGINT


def test_an_interrupted_mutate_writes_what_finished_and_exits_2(repo, tmp_path, monkeypatch) -> None:
    done = Mutant("severity-down:a", "severity-down", "body-present", "a", "r.md", "")
    gone = Mutant("severity-down:b", "severity-down", "body-length", "b", "r.md", "")
    outcomes = [Outcome(done, "killed", 1, "1 case(s) failed: x", ["x"]),
                Outcome(gone, "not_run", None, "the mutate was stopped before it started")]
    monkeypatch.setattr("rubricgate.mutate.flow.run_all", lambda *a, **k: (outcomes, True))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--out", str(out),
                                       "--only-rules", "body-present,body-length"])
    assert result.exit_code == 2, result.output
    assert f"interrupted: 1 of 2 mutants finished and are kept in {out / 'mutation.json'}" in result.output
    report = json.loads((out / "mutation.json").read_text())
    assert report["interrupted"] is True and [m["status"] for m in report["mutants"]] == ["killed", "not_run"]


def test_nothing_is_left_running_by_the_test_helpers() -> None:
    assert not [t for t in threading.enumerate() if t.name.startswith("mutant")]


def test_ctrl_c_while_the_workers_start_trips_the_stop_and_skips_what_is_left(monkeypatch) -> None:
    stop, starts = Stop(), []

    class InterruptedOnSecondStart(threading.Thread):
        def start(self) -> None:  # Ctrl-C lands as the second worker is started, before it runs
            starts.append(self.name)
            if len(starts) == 2:
                raise KeyboardInterrupt
            super().start()

    def fn(i: int) -> str:
        if i == 0:
            return "stopped while it ran" if stop.event.wait(HANG_S) else "never stopped"
        return "skipped" if stop.event.is_set() else "started after the stop"

    monkeypatch.setattr("rubricgate.mutate.stopping.threading.Thread", InterruptedOnSecondStart)
    got = map_until_stopped(fn, [0, 1, 2, 3], 3, stop)
    assert got == ["stopped while it ran", "skipped", "skipped", "skipped"] and stop.event.is_set()


def test_a_call_that_raised_raises_for_the_caller_after_the_others_finish() -> None:
    finished = []

    def fn(i: int) -> int:
        if i == 1:
            raise ValueError("mutant 1 broke")
        finished.append(i)
        return i

    try:
        map_until_stopped(fn, [0, 1, 2], 2, Stop())
    except ValueError as exc:
        assert str(exc) == "mutant 1 broke" and sorted(finished) == [0, 2]
    else:
        raise AssertionError("the error of mutant 1 was lost")


def test_max_cost_bounds_mutants_running_at_once_together(monkeypatch) -> None:
    from rubricgate.mutate import execute
    together = threading.Barrier(3)

    def spends_all_it_is_given(repo, mutant, settings, budget, stop=None) -> Outcome:
        together.wait(HANG_S)  # the first three start before any has spent
        return Outcome(mutant, "survived", 0, cost_usd=budget or 0.0)

    monkeypatch.setattr(execute, "run_one", spends_all_it_is_given)
    mutants = [Mutant(f"m{i}", "delete-rule", "r", "d", "f", "t") for i in range(3)]
    outcomes, _ = execute.run_all(Path("."), mutants, execute.RunSettings(jobs=3, max_cost=9.0))
    assert sum(o.cost_usd for o in outcomes) <= 9.0
