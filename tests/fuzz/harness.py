"""The fuzz loop: mutated inputs of every format through their targets, outcomes tallied.

`fuzz_transcripts` and `fuzz_files` mutate `count` inputs of each transcript format (the
recordings of every CLI, tests/fuzz/targets.py `recordings`) and of each file format (`FILES`), run each
through its target under a hang guard, and returns a Tally per format: how many inputs, the
outcome classes seen, the failures (an exception, a hang or an outcome outside the documented
classes) with the seed that reproduces each, and the time per input. tests/fuzz runs it small
and seeded; bench/fuzz_inputs.py runs it at the full count and prints the table.
"""

from __future__ import annotations

import random
import signal
import statistics
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.fuzz.mutators import mutate
from tests.fuzz.targets import FILES, World, recordings, resign, run_transcript

HANG_S = 60.0  # one input this long is a hang, whatever the machine's load


class Hang(Exception):
    """An input that did not finish within HANG_S."""


@dataclass
class Failure:
    fmt: str
    label: str  # the recording or file mutated
    index: int  # with the seed, names the input: random.Random(f"{seed}:{fmt}:{index}")
    mutations: list[str]
    error: str
    data: bytes = b""


@dataclass
class Tally:
    fmt: str
    inputs: int = 0
    outcomes: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def spread(self) -> str:
        """Median, 95th percentile and slowest time per input."""
        if not self.seconds:
            return "-"
        ordered = sorted(self.seconds)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return f"{statistics.median(ordered) * 1000:.1f} / {p95 * 1000:.1f} / {ordered[-1] * 1000:.0f} ms"


@contextmanager
def hang_guard(seconds: float) -> Iterator[None]:
    """Raise Hang in this (main) thread after `seconds`; elsewhere, no guard."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _hang(_signum, _frame):
        raise Hang(f"no outcome after {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, _hang)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _one(tally: Tally, run: Callable[[], str], failure: Callable[[str], Failure]) -> None:
    started = time.perf_counter()
    try:
        with hang_guard(HANG_S):
            outcome = run()
    except Exception as exc:  # every exception is what the fuzz looks for: recorded, never raised
        tally.failures.append(failure(f"{type(exc).__name__}: {str(exc)[:300]} ({_where(exc)})"))
        outcome = "FAILED"
    tally.seconds.append(time.perf_counter() - started)
    tally.inputs += 1
    tally.outcomes[outcome] += 1


def _where(exc: BaseException) -> str:
    """The deepest frame in rubricgate's own code (else the deepest frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/rubricgate/" in f.filename] or frames
    frame = ours[-1]
    return f"{frame.filename.split('/rubricgate/', 1)[-1]}:{frame.lineno}"


def fuzz_transcripts(world: World, count: int, seed: int, only: set[str] | None = None) -> list[Tally]:
    """`count` mutated streams of each transcript format (its recordings' streams or companions)."""
    out = []
    for fmt, recs in recordings().items():
        if only and fmt not in only:
            continue
        tally = Tally(fmt)
        for i in range(count):
            rng = random.Random(f"{seed}:{fmt}:{i}")
            rec = rng.choice(recs)
            stream, companions = rec.stream, dict(rec.companions)
            if companions and rng.random() < 0.3:
                which = rng.choice(sorted(companions))
                companions[which], names = mutate(rng, companions[which], "jsonl")
                names = [f"{which}:{n}" for n in names]
            else:
                stream, names = mutate(rng, stream, "jsonl")
            _one(tally, lambda s=stream, c=companions, r=rec: run_transcript(world, r, s, c),
                 lambda err, f=fmt, r=rec, n=names, s=stream, idx=i: Failure(f, r.label, idx, n, err, s))
        out.append(tally)
    return out


def fuzz_files(world: World, count: int, seed: int, only: set[str] | None = None) -> list[Tally]:
    """`count` mutated inputs of each file format, written where the world keeps it, read back."""
    out = []
    for ff in FILES:
        if only and ff.name not in only:
            continue
        path = ff.where(world)
        original = path.read_bytes()
        tally = Tally(ff.name)
        try:
            for i in range(count):
                rng = random.Random(f"{seed}:{ff.name}:{i}")
                data, names = mutate(rng, original, ff.kind)
                if ff.name == "cache entry" and rng.random() < 0.5:
                    data, names = resign(world, data), [*names, "resigned"]
                path.write_bytes(data)
                _one(tally, lambda f=ff, p=path: f.target(world, p),
                     lambda err, f=ff, n=names, d=data, idx=i: Failure(f.name, f.name, idx, n, err, d))
        finally:
            path.write_bytes(original)
        out.append(tally)
    return out
