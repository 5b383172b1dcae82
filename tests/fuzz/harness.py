"""The fuzz loop: mutated inputs of every format through their targets, outcomes tallied.

`fuzz_transcripts` and `fuzz_files` mutate `count` inputs of each transcript format (the
recordings of every CLI, tests/fuzz/targets.py `recordings`, their streams and the files the CLI
writes beside them) and of each file format (`FILES`), run each through its target under a hang
guard, and return a Tally per format: how many inputs, the outcome classes seen, the failures (an
exception, a hang or an outcome outside the format's documented classes) with the seed that
reproduces each, and the time per input. tests/fuzz runs it small
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
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.mutators import mutate
from tests.fuzz.targets import (
    COMPANIONS,
    FILES,
    SIDE_LOG_CLASSES,
    TRANSCRIPT_CLASSES,
    FileFormat,
    Recording,
    SideLogRecording,
    World,
    recordings,
    resign,
    run_side_log,
    run_transcript,
    side_logs,
)

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
    sources: Counter = field(default_factory=Counter)  # inputs per file mutated: the stream, a companion

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


def _one(tally: Tally, run: Callable[[], str], failure: Callable[[str], Failure], classes: Collection[str]) -> None:
    started = time.perf_counter()
    try:
        with hang_guard(HANG_S):
            outcome = run()
    except Exception as exc:  # every exception is what the fuzz looks for: recorded, never raised
        tally.failures.append(failure(f"{type(exc).__name__}: {str(exc)[:300]} ({_where(exc)})"))
        outcome = "FAILED"
    else:
        if outcome not in classes:
            tally.failures.append(failure(f"outcome {outcome!r} is none of the documented classes"))
    tally.seconds.append(time.perf_counter() - started)
    tally.inputs += 1
    tally.outcomes[outcome] += 1


def _where(exc: BaseException) -> str:
    """The deepest frame in rubricgate's own code (else the deepest frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/rubricgate/" in f.filename] or frames
    frame = ours[-1]
    return f"{frame.filename.split('/rubricgate/', 1)[-1]}:{frame.lineno}"


@dataclass
class Drawn:
    """One mutated input: the file it mutated, its label, bytes and mutations, and its run."""

    source: str
    label: str
    data: bytes
    mutations: list[str]
    run: Callable[[], str]


def _fuzz(fmt: str, count: int, seed: int, draw: Callable[[random.Random], Drawn], classes: Collection[str]) -> Tally:
    """`count` inputs of one format, the i-th drawn from random.Random(f"{seed}:{fmt}:{i}")."""
    tally = Tally(fmt)
    for i in range(count):
        drawn = draw(random.Random(f"{seed}:{fmt}:{i}"))
        tally.sources[drawn.source] += 1
        _one(tally, drawn.run, lambda err, d=drawn, idx=i: Failure(fmt, d.label, idx, d.mutations, err, d.data),
             classes)
    return tally


def fuzz_transcripts(world: World, count: int, seed: int, only: set[str] | None = None) -> list[Tally]:
    """`count` mutated streams of each transcript format (its recordings' streams or companions)."""

    def draw(rng: random.Random, recs: list[Recording]) -> Drawn:
        rec = rng.choice(recs)
        stream, companions = rec.stream, dict(rec.companions)
        if companions and rng.random() < 0.3:
            which = rng.choice(sorted(companions))
            companions[which], names = mutate(rng, companions[which], COMPANIONS[which].kind)
            names, data = [f"{which}:{n}" for n in names], companions[which]
        else:
            which = "stream"
            stream, names = mutate(rng, stream, "jsonl")
            data = stream
        return Drawn(which, rec.label, data, names, lambda: run_transcript(world, rec, stream, companions))

    return [_fuzz(fmt, count, seed, lambda rng, r=recs: draw(rng, r), TRANSCRIPT_CLASSES)
            for fmt, recs in recordings().items() if not only or fmt in only]


def fuzz_side_logs(world: World, count: int, seed: int, only: set[str] | None = None) -> list[Tally]:
    """`count` mutated logs of each side-log format (a CLI's debug log the run reads its retries
    from), read as the run reads them."""

    def draw(rng: random.Random, fmt: str, recs: list[SideLogRecording]) -> Drawn:
        rec = rng.choice(recs)
        data, names = mutate(rng, rec.data, "text")
        return Drawn(fmt, rec.label, data, names, lambda: run_side_log(rec, data))

    return [_fuzz(fmt, count, seed, lambda rng, f=fmt, r=recs: draw(rng, f, r), SIDE_LOG_CLASSES)
            for fmt, recs in side_logs().items() if not only or fmt in only]


def fuzz_files(world: World, count: int, seed: int, only: set[str] | None = None) -> list[Tally]:
    """`count` mutated inputs of each file format, written where the world keeps it, read back."""

    def draw(rng: random.Random, ff: FileFormat, path: Path, original: bytes) -> Drawn:
        data, names = mutate(rng, original, ff.kind)
        if ff.name == "cache entry" and rng.random() < 0.5:
            data, names = resign(world, data), [*names, "resigned"]
        path.write_bytes(data)
        return Drawn(ff.name, ff.name, data, names, lambda: ff.target(world, path))

    out = []
    for ff in FILES:
        if only and ff.name not in only:
            continue
        path = ff.where(world)
        original = path.read_bytes()
        try:
            out.append(_fuzz(ff.name, count, seed, lambda rng, f=ff, p=path, o=original: draw(rng, f, p, o), ff.classes))
        finally:
            path.write_bytes(original)
    return out
