"""mutate/execute.py: a suite run in its own process never outlives the mutate that awaits it."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from rubricgate.mutate.execute import awaited

CHILD = "import signal, sys, time; signal.signal(signal.SIGINT, lambda *a: sys.exit(2)); print('up', flush=True); time.sleep(600)"


def test_an_interrupt_while_a_suite_run_is_awaited_interrupts_that_run_too() -> None:
    """SIGTERM during mutate's control run (awaited without a Stop) left the run orphaned, its agents
    spending on for seconds to minutes."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"  # type: ignore[union-attr]

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupted)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            awaited(proc, timeout_s=120)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert proc.returncode == 2  # it was interrupted and ended itself (its partial report written)


def test_a_suite_run_past_its_timeout_is_killed() -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        awaited(proc, timeout_s=0.5)
    assert proc.returncode == -signal.SIGKILL
