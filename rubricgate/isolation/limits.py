"""Per-trial resource limits inside the sandbox, and telling a limit reached from a crash.

What the kernel offers without a delegated cgroup (docs/isolation.md):
- processes: RLIMIT_NPROC, counted per user namespace and uid (Linux >= 5.14), so per trial: each
  trial has a user namespace of its own. Threads count, so the bound leaves room for Node's and
  a Rust runtime's worker threads;
- memory: RLIMIT_DATA (private writable memory: heap, and what V8 commits). RLIMIT_AS would stop
  Node at start, since V8 reserves far more address space than it ever uses;
- one file's size: RLIMIT_FSIZE (a write past it fails with EFBIG; SIGXFSZ kills a writer that
  ignores it);
- the private /tmp: a tmpfs of `tmp_mb` (bwrap's --size).
The limits are applied by `prlimit` as the agent's first step inside the sandbox (never on the
harness or on bwrap). A trial that reached one fails as the reviewer's error, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rubricgate.isolation.rootfs import system_program
from rubricgate.models.transcript import LIMIT_REACHED

SIGXFSZ_EXIT = 128 + 25
MB = 1 << 20

# What a process says when it reached one of the limits (its last stderr lines).
SIGNS = (
    ("processes", ("Cannot fork", "Resource temporarily unavailable", "fork: retry")),
    ("memory", ("Cannot allocate memory", "out of memory", "MemoryError", "heap out of memory")),
    ("disk", ("No space left on device", "File too large", "File size limit exceeded")),
)


@dataclass(frozen=True)
class Limits:
    """One trial's bounds (agent.limits in rubricgate.yaml; models/config.py documents each)."""

    processes: int = 1024  # processes and threads
    memory_mb: int = 8192  # private writable memory
    file_mb: int = 1024  # one file written
    tmp_mb: int = 1024  # the private /tmp

    @property
    def tmp_bytes(self) -> int:
        return self.tmp_mb * MB


@lru_cache(maxsize=8)
def limit_prefix(limits: Limits = Limits()) -> tuple[str, ...]:
    """`prlimit` with the per-trial limits, in front of the agent inside the sandbox."""
    prlimit = system_program("prlimit")
    return (prlimit, f"--nproc={limits.processes}", f"--data={limits.memory_mb * MB}",
            f"--fsize={limits.file_mb * MB}", "--core=0", "--")


def limit_reached(exit_code: int | None, stderr_tail: str, limits: Limits = Limits()) -> str:
    """'' or the trial's error naming the sandbox limit the ended agent reached (its exit and
    last stderr lines say so): the reviewer's doing, not the infrastructure's."""
    name = ""
    tail = "\n".join(stderr_tail.strip().splitlines()[-5:])
    if exit_code in (SIGXFSZ_EXIT, -25):
        name = "disk"
    for kind, signs in SIGNS:
        if not name and any(sign in tail for sign in signs):
            name = kind
    if not name:
        return ""
    bounds = {"processes": f"agent.limits.processes {limits.processes}",
              "memory": f"agent.limits.memory_mb {limits.memory_mb}",
              "disk": f"agent.limits.file_mb {limits.file_mb} a file, tmp_mb {limits.tmp_mb} in /tmp"}
    return f"{LIMIT_REACHED}{name} limit ({bounds[name]})"
