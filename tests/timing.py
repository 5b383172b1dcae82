"""Wall-clock bounds scaled by how slow this machine is right now, measured.

A test that asserts "ended within N seconds" states what it means on an idle machine; on a busy
one (a shared 2-core machine at load 20 runs a process start 5-10x slower) the same behaviour
takes longer. `within(N)` is N times the machine's slowness, measured when the bound is checked:
the median wall time of a few fresh interpreters doing nothing, against what that takes on an
idle 2-core machine (IDLE_START_S), never below 1. Speed targets themselves are measured by
bench/ scripts, never by tests; these bounds only tell "stopped early" from "ran to its end".
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

# `python -I -S -c pass` on an idle 2-core machine: 0.02 s (0.02-0.04 s at load 7-8 on this one).
IDLE_START_S = 0.02
SAMPLES = 3


# A process that should stop at once but ran on: no busy machine makes a stop take this long, and
# a hang always does. Tests bound hangs with it; how many seconds a stop takes is bench/'s figure.
HANG_S = 300.0


def slowness() -> float:
    """How many times slower than idle this machine starts a process right now (>= 1)."""
    walls = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        walls.append(time.perf_counter() - started)
    return max(1.0, statistics.median(walls) / IDLE_START_S)


def within(seconds: float) -> float:
    """`seconds` (an idle machine's bound) scaled by the slowness measured now."""
    return seconds * slowness()
