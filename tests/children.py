"""This test process's children, for the suite's guard against zombies (tests/conftest.py).

A test (or a module's shared fixture) that makes this process adopt orphans (a copy-only
run_suite, `rubricgate run` through CliRunner, adopt_orphans itself) left it so for every later
test of the worker: from then on each sandbox a `rubricgate` subprocess started handed this
process its init when bwrap exited, with the namespaces' holders it left, which nothing reaped.
xdist workers ended holding hundreds of them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def children() -> dict[int, tuple[str, str]]:
    """{pid: (state letter, command name)} of every child of this process, across its threads."""
    found: dict[int, tuple[str, str]] = {}
    for task in os.listdir("/proc/self/task"):
        try:
            pids = Path(f"/proc/self/task/{task}/children").read_text().split()
        except OSError:  # the thread ended meanwhile
            continue
        for pid in map(int, pids):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:  # reaped meanwhile
                continue
            found[pid] = (stat.rsplit(")", 1)[1].split()[0], stat[stat.index("(") + 1:stat.rindex(")")])
    return found


def new_zombies(before: set[int], grace_s: float = 2.0) -> list[str]:
    """'pid (command)' of each zombie child that was not a child of this process at `before` and
    is still one after `grace_s`: a thread of the code under test may be about to wait on a child
    that just ended (a run refused at load leaves its `git ls-files` to runner/git_listing.py's
    thread), and only a child nobody waits on stays a zombie."""
    deadline = time.monotonic() + grace_s
    while True:
        left = [f"{pid} ({comm})" for pid, (state, comm) in children().items() if state == "Z" and pid not in before]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)
