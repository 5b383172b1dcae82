"""What `mutate` says while it works: a line as each run starts and ends, and a tick at least every
`every_s` seconds in between (a mutant's run of a model-backed reviewer takes minutes)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

Emit = Callable[[str], None]


@dataclass
class Progress:
    """Counts of the runs of one `mutate`, and the ticker that reports them."""

    emit: Emit
    total: int
    every_s: float = 10.0
    started_at: float = field(default_factory=time.monotonic)
    done: int = 0
    running: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Progress:
        threading.Thread(target=self._tick, name="mutate-progress", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def start(self, label: str) -> None:
        with self._lock:
            self.running.append(label)
        self.emit(f"mutate: {label}: started ({self._elapsed()})")

    def finish(self, label: str, status: str, seconds: float) -> None:
        with self._lock:
            self.running.remove(label)
            self.done += label != "control"
            self.counts[status] = self.counts.get(status, 0) + (label != "control")
        self.emit(f"mutate: {label}: {status} in {seconds:.0f} s; {self._summary()}")

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            self.emit(f"mutate: {self._summary()}")

    def _summary(self) -> str:
        with self._lock:
            tally = ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items()) if n)
            running = ", ".join(self.running[:3]) + (" ..." if len(self.running) > 3 else "")
            return (f"{self.done}/{self.total} mutants done" + (f" ({tally})" if tally else "")
                    + (f", running: {running}" if running else "") + f", {self._elapsed()}")

    def _elapsed(self) -> str:
        s = int(time.monotonic() - self.started_at)
        return f"{s // 60}:{s % 60:02d} elapsed"
