"""Agent processes inside bubblewrap: the arguments pipe reaches bwrap whatever its fd number, and
a CLI's own sandbox (Codex runs its commands in bubblewrap) can start inside ours, also as root.

Needs bubblewrap (the bwrap_ready fixture: under .ci/run a missing one fails).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rubricgate.isolation.process import run_process
from rubricgate.isolation.sandbox import SandboxPolicy


@pytest.fixture
def bwrap(bwrap_ready: None) -> str:
    return shutil.which("bwrap") or "bwrap"


def sandboxed(argv: list[str], tmp_path: Path):
    out = tmp_path / "out"
    res = run_process(argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout_s=20, output_cap_bytes=10000,
                      stdout_path=out, sandbox=SandboxPolicy("bwrap"))
    return res, out.read_text()


def test_arguments_reach_bwrap_when_the_pipe_is_not_fd_3(bwrap: str, tmp_path: Path) -> None:
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(4)]  # the pipe gets a higher number
    try:
        res, out = sandboxed(["/bin/echo", "inside"], tmp_path)
    finally:
        for fd in held:
            os.close(fd)
    assert (res.exit_code, out, res.stderr_tail) == (0, "inside\n", "")


def test_a_cli_can_start_its_own_bubblewrap_inside_ours(bwrap: str, tmp_path: Path) -> None:
    inner = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-user",
             "--unshare-pid", "--unshare-net", "/bin/echo", "nested"]
    res, out = sandboxed(inner, tmp_path)
    assert (res.exit_code, out) == (0, "nested\n"), res.stderr_tail
