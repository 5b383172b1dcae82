"""How long a test may wait for a process that should stop.

Tests never assert how fast something is: on a busy machine (a shared 2-core machine at load 20
starts a process 5-10x slower) a speed bound fails although nothing is wrong. A test that checks
that something stopped asserts what stopped it (the cap, not the timeout; the hung reply was never
sent; the endpoint's answer, not the preflight's time running out) and waits for it at most
HANG_S; where only time can tell, it bounds the stop by what would have happened had it not
stopped (the sleep, the loop or the timeout it was in the middle of). Speed is measured by bench/
scripts.

One exception, for cost that grows faster than its input (a quadratic scan an agent's output can
trigger): `cpu_seconds` of the input under test against a baseline input measured in the same
test, a ratio with a wide margin, never a number of seconds. CPU time, not wall time, so a busy
machine slows both sides alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# A process that should stop at once but ran on: no busy machine makes a stop take this long, and
# a hang always does.
HANG_S = 300.0


def cpu_seconds(call: Callable[[], object], rounds: int = 3) -> float:
    """The least CPU time of `rounds` calls (the least is the one least disturbed)."""
    spent = []
    for _ in range(rounds):
        start = time.process_time()
        call()
        spent.append(time.process_time() - start)
    return min(spent)
