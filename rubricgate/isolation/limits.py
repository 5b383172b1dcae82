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
The limits are set as the agent's first step inside the sandbox (never on the harness or on
bwrap), by the shell's own `ulimit` where this system's /bin/sh has a spelling that sets exactly
these (checked once a run), else by `prlimit`. A trial that reached one fails as the reviewer's
error, naming it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import lru_cache

from rubricgate.isolation.rootfs import system_program
from rubricgate.models.transcript import LIMIT_REACHED

SIGXFSZ_EXIT = 128 + 25
MB = 1 << 20
SHELL = "/bin/sh"  # the shell in front of the agent: a system program every sandbox shows
PROBE_TIMEOUT_S = 10.0
# `ulimit`'s spellings: (the processes flag, the bytes of a block of -f and -c). dash's -p is bash's
# -u (dash has no -u, bash's -p is the pipe size); dash counts 512-byte blocks, bash 1024 (512 as sh).
_SPELLINGS = (("-p", 512), ("-u", 512), ("-u", 1024))

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


@lru_cache(maxsize=8)
def ulimit_script(limits: Limits = Limits()) -> str:
    """The /bin/sh commands setting the per-trial limits with its builtin `ulimit` (soft and hard
    alike), joined by `&&` so nothing runs when one fails; '' where no spelling is seen to set
    exactly these here (prlimit then). Checked once per run: an exec a trial fewer than prlimit."""
    for flag, block in _SPELLINGS:
        script = " && ".join((f"ulimit {flag} {limits.processes}", f"ulimit -d {limits.memory_mb * 1024}",
                              f"ulimit -f {limits.file_mb * MB // block}", "ulimit -c 0"))
        if _sets_exactly(script, limits):
            return script
    return ""


def _sets_exactly(script: str, limits: Limits) -> bool:
    """`script` run by /bin/sh leaves exactly `limits` (soft and hard) to what it execs."""
    argv = [SHELL, "-c", f'{script} && exec "$@"', "sh", system_program("cat"), "/proc/self/limits"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    want = {"Max processes": limits.processes, "Max data size": limits.memory_mb * MB,
            "Max file size": limits.file_mb * MB, "Max core file size": 0}
    seen = {name: line[len(name):].split()[:2] for line in done.stdout.decode(errors="replace").splitlines()
            for name in want if line.startswith(name + "  ")}
    return done.returncode == 0 and seen == {name: [str(v), str(v)] for name, v in want.items()}


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
