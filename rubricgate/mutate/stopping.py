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
from concurrent.futures import Future, ThreadPoolExecutor, wait
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
    """fn over items, `jobs` at once, in order; Ctrl-C (in the main thread) trips `stop` and waits
    for the calls under way (further Ctrl-C change nothing), whose results are kept."""
    with ThreadPoolExecutor(max(jobs, 1), thread_name_prefix="mutant") as pool:
        futures: list[Future[R]] = [pool.submit(fn, item) for item in items]
        try:
            wait(futures)
        except KeyboardInterrupt:
            stop.trip()
            _wait_quietly(futures)
    return [f.result() for f in futures]


def _wait_quietly(futures: list[Future]) -> None:
    while True:
        try:
            wait(futures)
            return
        except KeyboardInterrupt:
            continue  # a second Ctrl-C while the running mutants wind down
