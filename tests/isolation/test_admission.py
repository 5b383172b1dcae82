"""isolation/admission.py: at most N agents at once; a waiter gives up at Ctrl-C, never starts."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from rubricgate.isolation import admission as ad
from rubricgate.isolation.admission import CANCEL, AgentSlots
from rubricgate.runner.scheduler import runs_ahead, trial_threads
from tests.timing import HANG_S


# -- failure paths first ------------------------------------------------------------------------

def test_zero_slots_is_refused() -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        AgentSlots(0)


def test_a_slot_released_twice_is_a_bug_not_an_extra_slot() -> None:
    slots = AgentSlots(1)
    assert slots.acquire()
    slots.release()
    with pytest.raises(RuntimeError, match="more often than acquired"):
        slots.release()


def test_a_waiter_gives_up_at_ctrl_c_and_takes_no_slot() -> None:
    slots = AgentSlots(1)
    assert slots.acquire()
    answers: list[bool] = []
    waiters = [threading.Thread(target=lambda: answers.append(slots.acquire())) for _ in range(3)]
    for w in waiters:
        w.start()
    time.sleep(0.2)
    try:
        CANCEL.trip()
        for w in waiters:
            w.join(HANG_S)
        assert answers == [False, False, False]
        assert slots.running == 1  # only the slot taken before the stop
        assert not slots.acquire()  # and nothing starts after it, even with a slot free
    finally:
        CANCEL.reset()


def _until(condition) -> None:
    """Wait until `condition()` holds (HANG_S at most): a sleep could end before a loaded machine got there."""
    deadline = time.monotonic() + HANG_S
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.005)


def _launch_then(slots: AgentSlots, then) -> threading.Thread:
    """A trial thread: takes the launch turn (held until something ends it), then runs `then`."""
    def trial() -> None:
        slots.launch_turn().__enter__()
        then()

    thread = threading.Thread(target=trial, daemon=True)
    thread.start()
    return thread


def test_taking_a_slot_ends_the_takers_launch_turn() -> None:
    """A trial never waits for a slot holding the launch turn: the next trial could not launch
    until a slot freed (isolation/process.py and the scheduler rely on this, not on calls of their own)."""
    slots = AgentSlots(2)
    with slots.launch_turn():
        assert slots.acquire()  # one slot of two: the first agents are not all out yet
        launched = threading.Event()
        _launch_then(slots, launched.set)
        assert launched.wait(HANG_S), "the trial that took a slot kept the launch turn"
    assert not slots.filled.is_set()


def test_the_launch_turn_is_one_trial_at_a_time_until_the_first_agents_are_out() -> None:
    slots = AgentSlots(2)
    launched = threading.Event()
    with slots.launch_turn():
        other = _launch_then(slots, launched.set)
        assert not launched.wait(0.1)  # queued behind this launch
        slots.end_launch_turn()  # this trial's agent is launched
        assert launched.wait(HANG_S)
        slots.end_launch_turn()  # a second end (the `with` ends it too) is a no-op
    other.join(HANG_S)
    slots.filled.set()
    with slots.launch_turn(), slots.launch_turn():  # the first agents are out: no turn at all
        pass


# -- the bound ----------------------------------------------------------------------------------

def test_never_more_than_n_hold_a_slot_however_many_wait() -> None:
    slots, lock = AgentSlots(3), threading.Lock()
    now, peak = [0], [0]

    def trial() -> None:
        assert slots.acquire()
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.01)
        with lock:
            now[0] -= 1
        slots.release()

    threads = [threading.Thread(target=trial) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_S)
    assert peak[0] == 3 and slots.running == 0


def test_trials_run_ahead_of_the_slots_only_when_nothing_forbids_it() -> None:
    from rubricgate.runner.cost import Budget

    assert trial_threads(1) == 3 and trial_threads(4) == 9 and trial_threads(4, ahead=False) == 4
    process, builtin = SimpleNamespace(execute=None), SimpleNamespace()
    ctx = SimpleNamespace(budget=Budget(None), fingerprint=None, agents={"a": process, "b": builtin})
    assert runs_ahead(ctx)
    assert not runs_ahead(SimpleNamespace(budget=Budget(1.0), fingerprint=None, agents={"a": process}))  # a trial at its gate would start
    assert not runs_ahead(SimpleNamespace(budget=Budget(None), fingerprint={}, agents={"a": process}))  # per-trial repository check
    # Every agent in this process (no sandbox to build ahead): one trial at a time under --jobs 1.
    assert not runs_ahead(SimpleNamespace(budget=Budget(None), fingerprint=None, agents={"b": builtin}))


def test_a_released_slot_passes_to_the_first_waiter_whose_gate_the_releaser_opens() -> None:
    slots = AgentSlots(1)
    assert slots.acquire()
    opened: list[tuple[int, int]] = []
    waiters = []
    for i in range(3):
        t = threading.Thread(target=slots.take, args=(lambda i=i: opened.append((i, threading.get_ident())),))
        t.start()
        waiters.append(t)
        _until(lambda i=i: len(slots._queue) == i + 1)  # queued in this order
    for expected in range(3):
        slots.release()  # by this thread: the next waiter's gate opens here, before its thread runs
        assert opened[-1] == (expected, threading.get_ident())
    slots.release()
    for t in waiters:
        t.join(HANG_S)
    assert slots.running == 0


def test_after_ctrl_c_a_release_opens_no_waiting_gate() -> None:
    slots = AgentSlots(1)
    assert slots.acquire()
    opened: list[int] = []
    answer: list = []
    waiter = threading.Thread(target=lambda: answer.append(slots.take(lambda: opened.append(1))))
    waiter.start()
    time.sleep(0.05)
    try:
        CANCEL.trip()
        slots.release()
        waiter.join(HANG_S)
    finally:
        CANCEL.reset()
    assert opened == [] and answer == [None] and slots.running == 0


# -- a sandbox built ahead waits out the hand-over ------------------------------------------------

def _all_taken_after_a_run(seconds: float) -> tuple[AgentSlots, float]:
    """One slot, handed out just now, after an earlier agent held it `seconds`."""
    slots = AgentSlots(1)
    assert slots.acquire()
    slots.ran(seconds)
    slots.release()
    granted = slots.take()
    assert granted is not None
    return slots, granted


def test_after_ctrl_c_a_trial_waiting_out_a_hand_over_stops_waiting_at_once(monkeypatch) -> None:
    # The cap raised to 30 s makes the pause of a 100 s typical run 15 s: a waiter that ran its
    # pause out is told from one that stopped at once by a margin no machine's load closes.
    monkeypatch.setattr(ad, "HANDOVER_MAX_S", 30.0)
    slots, _ = _all_taken_after_a_run(100.0)
    pause = slots.handover_pause(time.monotonic())
    assert pause > 10
    slots.filled.set()
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (slots.wait_out_handover(), done.set()))
    try:
        CANCEL.trip()
        started = time.monotonic()
        waiter.start()
        waiter.join(HANG_S)
        assert done.is_set() and time.monotonic() - started < pause  # it did not run its pause out
    finally:
        CANCEL.reset()


def test_no_pause_while_a_slot_is_free_or_before_any_agent_finished() -> None:
    slots = AgentSlots(2)
    assert slots.take() is not None  # one of two slots taken: a new agent could start now
    slots.ran(1.0)
    assert slots.handover_pause(time.monotonic()) == 0.0
    fresh = AgentSlots(1)
    assert fresh.take() is not None  # every slot taken, but no agent has finished yet
    assert fresh.handover_pause(time.monotonic()) == 0.0


def test_the_pause_is_a_share_of_a_typical_run_capped_and_ends_with_its_window() -> None:
    slots, granted = _all_taken_after_a_run(0.2)  # short agents: a share of their run
    assert slots.handover_pause(granted) == pytest.approx(ad.HANDOVER_SHARE * 0.2)
    assert slots.handover_pause(granted + ad.HANDOVER_SHARE * 0.2) == 0.0
    slow, at = _all_taken_after_a_run(60.0)  # long agents: never more than the cap
    assert slow.handover_pause(at) == pytest.approx(ad.HANDOVER_MAX_S)


def test_the_typical_run_follows_the_agents_without_jumping() -> None:
    slots, granted = _all_taken_after_a_run(0.2)
    slots.ran(1.2)  # one slow agent among fast ones moves the average a fifth of the way
    assert slots.handover_pause(granted) == pytest.approx(ad.HANDOVER_SHARE * 0.4)


def test_agents_too_short_to_build_ahead_beside_get_no_pause() -> None:
    slots, granted = _all_taken_after_a_run(ad.HANDOVER_MIN_RUN_S / 2)
    assert slots.handover_pause(granted) == 0.0


def test_a_trial_building_ahead_right_after_a_hand_over_waits_it_out() -> None:
    slots, _ = _all_taken_after_a_run(100.0)
    slots.filled.set()  # the first agents are out: later trials build without the lock
    with slots.launch_turn():
        pass  # the lock-free build itself never waits
    assert slots.handover_pause(time.monotonic()) > 0  # the wait is wait_out_handover's alone
    started = time.monotonic()
    slots.wait_out_handover()
    waited = time.monotonic() - started
    assert waited >= ad.HANDOVER_MAX_S - 0.02  # Event.wait never returns early but for Ctrl-C
    assert slots.handover_pause(time.monotonic()) == 0.0  # and once is enough
