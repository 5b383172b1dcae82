"""Who may start an agent, and when: the process-wide stop switch and the run's agent slots.

`--jobs N` bounds the agents that run at once, not the harness's own work around them. A trial
prepares its workspace and launches its sandbox (the user namespace, the overlay mount, bwrap's
mounts: most of a short trial's cost) *before* it holds a slot, with the agent held at a gate
inside the sandbox; it takes a slot, opens the gate, and gives the slot back the moment the agent
is dead, grading afterwards. So the next agent starts as soon as one ends, in a sandbox that is
already built, while the finished trial is graded on the other core (isolation/process.py).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

# Right after agents are handed their slots the CPU is theirs: their processes start while the
# trials that just ended are graded and their sandboxes torn down. A sandbox built ahead is needed
# only when a running agent ends, so one that would be built then waits out the hand-over: this
# share of a typical agent's run, at most HANDOVER_MAX_S. Agents shorter than HANDOVER_MIN_RUN_S
# get no pause: building the next sandbox takes most of their run already (10-20 ms).
HANDOVER_SHARE = 0.15
HANDOVER_MAX_S = 0.15
HANDOVER_MIN_RUN_S = 0.1


class Cancelled:
    """Process-wide stop switch: after Ctrl-C / SIGTERM no new agent starts and every running
    one is woken and killed at once (no poll interval, no waiting for its timeout)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._waiters: set = set()

    def trip(self) -> None:
        self.event.set()
        with self._lock:
            for wake in self._waiters:
                wake.set()

    def reset(self) -> None:
        self.event.clear()

    def register(self, wake) -> None:
        """`wake.set()` is called on trip (at once when already tripped)."""
        with self._lock:
            self._waiters.add(wake)
        if self.event.is_set():
            wake.set()

    def unregister(self, wake) -> None:
        with self._lock:
            self._waiters.discard(wake)


CANCEL = Cancelled()


class AgentSlots:
    """At most `size` agents running at once, taken in turn (first come, first served).

    A finished agent's slot passes straight to the next waiting trial, and the thread that
    releases it opens that trial's gate itself: the next agent starts the moment one ends, not
    when its own thread next gets the interpreter (with 16 trials grading at once, that is tens
    of milliseconds later). After Ctrl-C no waiting trial is given a slot."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"agent slots must be >= 1, got {size}")
        self.size = size
        self._free = size
        self._lock = threading.Lock()
        self._queue: deque[_Turn] = deque()
        # The first agents are all out: every slot was taken once, or the first trials ended
        # without one (scheduler._first_wave_out), or the run is over.
        self.filled = threading.Event()
        self._launching = threading.Lock()
        self._turn = threading.local()  # .held: this thread holds the launch turn
        self._last_grant = 0.0  # monotonic time a slot was last handed to an agent
        self._typical_run = 0.0  # moving average of how long an agent held its slot (0: none yet)

    def take(self, open_gate: Callable[[], None] | None = None) -> float | None:
        """Wait for a slot, then call `open_gate` (in whichever thread grants the slot); the
        monotonic time the slot was granted, or None when the run was stopped first. A trial
        never waits for a slot holding the launch turn: this ends the caller's."""
        self.end_launch_turn()
        turn = _Turn(self, open_gate)
        with self._lock:
            if CANCEL.event.is_set():
                return None
            now = self._free > 0 and not self._queue
            if now:
                self._free -= 1
            else:
                self._queue.append(turn)
            if not self._free:
                self.filled.set()
        if now:
            return turn.grant()
        CANCEL.register(turn)
        try:
            turn.granted.wait()
        finally:
            CANCEL.unregister(turn)
        return None if turn.cancelled else turn.at

    def acquire(self) -> bool:
        """take() without a gate: True once a slot is held, False when the run was stopped."""
        return self.take() is not None

    def release(self) -> None:
        """Give the slot back: to the next waiting trial (its gate opened here), or to the pool."""
        with self._lock:
            turn = self._queue.popleft() if self._queue and not CANCEL.event.is_set() else None
            if turn is None:
                if self._free >= self.size:
                    raise RuntimeError("agent slot released more often than acquired")
                self._free += 1
        if turn is not None:
            turn.grant()

    def cancel(self, turn: _Turn) -> None:
        """A waiting trial's turn is withdrawn (Ctrl-C): it returns None and holds no slot."""
        with self._lock:
            if turn not in self._queue:
                return  # granted already: it holds its slot and sees the stop itself
            self._queue.remove(turn)
            turn.cancelled = True
        turn.granted.set()

    @contextlib.contextmanager
    def launch_turn(self) -> Iterator[None]:
        """Held by a trial from its workspace's first folder until its agent is launched
        (`end_launch_turn`, called where the agent starts), until the first agents are out: that
        work holds the interpreter, so the first trials doing it side by side would only take
        turns at it and all finish late; one whole launch at a time, the first agent starts at
        once and the last no later. Later, trials building beside running ones need no order
        (a lock there only makes them queue behind whoever waits for the interpreter)."""
        if not self.filled.is_set():
            self._launching.acquire()
            self._turn.held = True
        try:
            yield
        finally:
            self.end_launch_turn()

    def end_launch_turn(self) -> None:
        """This thread's agent is launched, or failed to start, or waits for a slot (`take`): the
        next trial may launch. A no-op in a thread that does not hold the turn."""
        if getattr(self._turn, "held", False):
            self._turn.held = False
            self._launching.release()

    def wait_out_handover(self) -> None:
        """Called once by a trial before it builds: a trial building ahead (every slot taken)
        waits out the last hand-over (`handover_pause`); Ctrl-C ends the wait at once."""
        pause = self.handover_pause(time.monotonic())
        if pause > 0:
            CANCEL.event.wait(pause)

    def handover_pause(self, now: float) -> float:
        """Seconds a sandbox about to be built should wait: none while a slot is free (its agent
        may start at once) or before any agent has finished (no typical run yet); otherwise
        until HANDOVER_SHARE of a typical run, at most HANDOVER_MAX_S, after the last hand-over;
        none for agents shorter than HANDOVER_MIN_RUN_S."""
        with self._lock:
            if self._free or self._typical_run < HANDOVER_MIN_RUN_S:
                return 0.0
            window = min(HANDOVER_SHARE * self._typical_run, HANDOVER_MAX_S)
            return max(0.0, self._last_grant + window - now)

    def ran(self, seconds: float) -> None:
        """An agent held its slot this long (the moving average `handover_pause` scales by)."""
        with self._lock:
            self._typical_run = seconds if not self._typical_run else 0.8 * self._typical_run + 0.2 * seconds

    def _granted(self, at: float) -> None:
        with self._lock:
            self._last_grant = max(self._last_grant, at)

    @property
    def running(self) -> int:
        with self._lock:
            return self.size - self._free


class _Turn:
    """One trial waiting for a slot; `set` is what CANCEL.trip calls."""

    def __init__(self, slots: AgentSlots, open_gate: Callable[[], None] | None) -> None:
        self.slots, self.open_gate = slots, open_gate
        self.granted = threading.Event()
        self.cancelled = False
        self.at = 0.0

    def grant(self) -> float:
        self.at = time.monotonic()
        self.slots._granted(self.at)
        try:
            if self.open_gate is not None:
                self.open_gate()
        finally:
            self.granted.set()
        return self.at

    def set(self) -> None:
        self.slots.cancel(self)
