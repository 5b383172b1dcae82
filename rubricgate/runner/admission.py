"""Who may start an agent, and when: the process-wide stop switch and the run's agent slots.

`--jobs N` bounds the agents that run at once, not the harness's own work around them. A trial
prepares its workspace and launches its sandbox (the user namespace, the overlay mount, bwrap's
mounts: most of a short trial's cost) *before* it holds a slot, with the agent held at a gate
inside the sandbox; it takes a slot, opens the gate, and gives the slot back the moment the agent
is dead, grading afterwards. So the next agent starts as soon as one ends, in a sandbox that is
already built, while the finished trial is graded on the other core (runner/process.py).
"""

from __future__ import annotations

import threading


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
    """At most `size` agents running at once. `acquire` waits for a free slot and answers False
    when the run is stopped instead (a waiting trial must not start its agent after Ctrl-C)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"agent slots must be >= 1, got {size}")
        self.size = size
        self._free = size
        self._cond = threading.Condition()

    def acquire(self) -> bool:
        with self._cond:
            if self._free and not CANCEL.event.is_set():
                self._free -= 1
                return True
        waker = _Notify(self._cond)
        CANCEL.register(waker)
        try:
            with self._cond:
                while not self._free and not CANCEL.event.is_set():
                    self._cond.wait()
                if CANCEL.event.is_set():
                    return False
                self._free -= 1
                return True
        finally:
            CANCEL.unregister(waker)

    def release(self) -> None:
        with self._cond:
            if self._free >= self.size:
                raise RuntimeError("agent slot released more often than acquired")
            self._free += 1
            self._cond.notify()

    @property
    def running(self) -> int:
        with self._cond:
            return self.size - self._free


class _Notify:
    """What CANCEL.trip sets for one waiting `acquire`: wakes every waiter to see the stop."""

    def __init__(self, cond: threading.Condition) -> None:
        self.cond = cond

    def set(self) -> None:
        with self.cond:
            self.cond.notify_all()
