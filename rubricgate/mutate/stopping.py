"""A mutate stopped by Ctrl-C or SIGTERM keeps what finished.

No mutant starts once it is stopped; each running mutant's suite run is interrupted (SIGINT: it
writes its partial report and exits 2) and recorded as not run, and mutation.json is written with
every mutant that finished, marked interrupted. Before this an interrupt lost them all: the
mutants already running went on to the end and the report was never written.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Stop:
    """Whether the mutate was stopped, and the suite runs to interrupt when it is."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()

    def started(self, proc: subprocess.Popen) -> None:
        """A suite run began; interrupted at once if the mutate already stopped."""
        with self._lock:
            self._running.add(proc)
        if self.event.is_set():
            _interrupt(proc)

    def ended(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._running.discard(proc)

    def trip(self) -> None:
        """Stop: no new mutant, every running suite run interrupted."""
        self.event.set()
        with self._lock:
            running = list(self._running)
        for proc in running:
            _interrupt(proc)


def _interrupt(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)


def map_until_stopped(fn: Callable[[T], R], items: list[T], jobs: int, stop: Stop) -> list[R]:
    """fn over items, `jobs` at once, results in order; Ctrl-C (in the main thread) trips `stop` and
    waits for the calls under way (further Ctrl-C change nothing), whose results are kept.

    Worker threads take the items one at a time, so the main thread only starts them and waits: a
    Ctrl-C that lands while work is still being handed out stops it as one during the wait does
    (with an executor, one during `submit` skipped the stop and waited for every mutant)."""
    shared = _Shared(fn, items)
    try:
        for n in range(max(jobs, 1)):
            threading.Thread(target=shared.work, name=f"mutant-{n}").start()
        shared.wait_all()
    except KeyboardInterrupt:
        stop.trip()
        # One worker more: if the interrupt came before every worker started, it takes the items
        # left, each skipped at once (the stop is set). A spare worker finds nothing to take.
        _ignoring_ctrl_c(lambda: threading.Thread(target=shared.work, name="mutant-after").start())
        _ignoring_ctrl_c(shared.wait_all)
    return shared.results()


class _Shared:
    """Items handed out one at a time to whichever worker asks; each outcome kept at its index."""

    def __init__(self, fn: Callable[[T], R], items: list[T]) -> None:
        self._fn, self._items = fn, items
        self._outcomes: list[tuple[bool, object] | None] = [None] * len(items)
        self._cond = threading.Condition()
        self._claimed = self._finished = 0

    def work(self) -> None:
        while (index := self._claim()) is not None:
            try:
                outcome: tuple[bool, object] = (True, self._fn(self._items[index]))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread by results()
                outcome = (False, exc)
            with self._cond:
                self._outcomes[index] = outcome
                self._finished += 1
                self._cond.notify_all()

    def _claim(self) -> int | None:
        with self._cond:
            if self._claimed == len(self._items):
                return None
            self._claimed += 1
            return self._claimed - 1

    def wait_all(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._finished == len(self._items))

    def results(self) -> list:
        """The results in order; the first call that raised raises here, as `Future.result` did."""
        for outcome in self._outcomes:
            assert outcome is not None  # wait_all returned: every item finished
            if not outcome[0]:
                raise outcome[1]  # type: ignore[misc]
        return [outcome[1] for outcome in self._outcomes]  # type: ignore[index]


def _ignoring_ctrl_c(call: Callable[[], None]) -> None:
    while True:
        try:
            call()
            return
        except KeyboardInterrupt:
            continue  # a second Ctrl-C while the running mutants wind down
