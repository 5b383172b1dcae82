"""isolation/limits.py: the per-trial limits, set by the shell in front of the agent where it can."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rubricgate.isolation import limits
from rubricgate.isolation.identity import drop_to_sandbox_user
from rubricgate.isolation.limits import MB, Limits, limit_prefix, limit_reached, ulimit_script
from rubricgate.isolation.netaccess import NetworkAccess
from rubricgate.isolation.process import run_process
from rubricgate.isolation.sandbox import GATE, SandboxPolicy, agent_start

SMALL = Limits(processes=64, memory_mb=256, file_mb=8, tmp_mb=8)


def _limits_of(text: str) -> dict[str, list[str]]:
    names = ("Max processes", "Max data size", "Max file size", "Max core file size")
    return {n: line[len(n):].split()[:2] for line in text.splitlines() for n in names if line.startswith(n + "  ")}


@pytest.fixture
def fresh_probe():
    ulimit_script.cache_clear()
    yield
    ulimit_script.cache_clear()


def test_a_shell_with_no_spelling_that_sets_them_exactly_leaves_the_limits_to_prlimit(
        tmp_path: Path, monkeypatch, fresh_probe) -> None:
    # A shell whose ulimit says yes to every spelling and sets nothing is never trusted with them.
    liar = tmp_path / "sh"
    liar.write_text('#!/bin/sh\nscript=$2\nshift 3\nulimit() { return 0; }\neval "$script"\n')
    liar.chmod(0o755)
    monkeypatch.setattr(limits, "SHELL", str(liar))
    assert ulimit_script(SMALL) == ""
    monkeypatch.setattr("rubricgate.isolation.sandbox.ulimit_script", ulimit_script)
    assert agent_start(SMALL, gated=True) == (*limit_prefix(SMALL), *GATE)
    assert agent_start(SMALL, gated=False) == limit_prefix(SMALL)


@pytest.mark.parametrize("shell", ["/bin/sh", "/bin/bash", "/bin/dash"])
def test_each_shell_gets_the_spelling_that_sets_exactly_the_limits(shell: str, monkeypatch, fresh_probe) -> None:
    if not os.access(shell, os.X_OK):
        pytest.skip(f"{shell} is not installed")
    monkeypatch.setattr(limits, "SHELL", shell)
    script = ulimit_script(SMALL)
    assert script, f"{shell}: no spelling found"
    done = subprocess.run([shell, "-c", f'{script} && exec cat /proc/self/limits'], capture_output=True, text=True)
    assert _limits_of(done.stdout) == {"Max processes": ["64", "64"], "Max data size": [str(256 * MB)] * 2,
                                       "Max file size": [str(8 * MB)] * 2, "Max core file size": ["0", "0"]}


def test_a_limit_the_shell_cannot_set_stops_the_agent_before_it_runs(tmp_path: Path) -> None:
    # An unprivileged process under a lower hard limit cannot raise it: the agent must not run unbounded.
    marker = tmp_path / "ran"
    lower = ["prlimit", f"--fsize={MB}:{MB}", "--"]
    drop = list(drop_to_sandbox_user()) if os.geteuid() == 0 else []
    tmp_path.chmod(0o777)
    done = subprocess.run([*drop, *lower, *agent_start(Limits(), gated=False), "touch", str(marker)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and not marker.exists(), done


@pytest.mark.usefixtures("bwrap_ready")
@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
def test_the_agent_runs_under_exactly_its_limits_soft_and_hard(tmp_path: Path, gated: bool) -> None:
    ws, out = tmp_path / "ws", tmp_path / "out.txt"
    ws.mkdir()
    network = NetworkAccess("allowlist") if gated else NetworkAccess("none")
    res = run_process(["/bin/sh", "-c", "exec cat /proc/self/limits"], cwd=ws, env={"PATH": "/usr/bin:/bin"},
                      timeout_s=30, output_cap_bytes=100_000, stdout_path=out,
                      sandbox=SandboxPolicy("bwrap", limits=SMALL, network=network))
    assert res.exit_code == 0, res.stderr_tail or res.start_error
    assert _limits_of(out.read_text()) == {"Max processes": ["64", "64"], "Max data size": [str(256 * MB)] * 2,
                                           "Max file size": [str(8 * MB)] * 2, "Max core file size": ["0", "0"]}


@pytest.mark.usefixtures("bwrap_ready")
@pytest.mark.parametrize("size, fits", [(8 * MB, True), (8 * MB + 1, False)], ids=["tmp_mb", "one-byte-past"])
def test_the_private_tmp_holds_exactly_tmp_mb(tmp_path: Path, size: int, fits: bool) -> None:
    # docs/isolation.md: a tmpfs capped at agent.limits.tmp_mb. One file of tmp_mb fits, one byte
    # more is "No space left on device", which limit_reached names as the disk limit. file_mb is
    # above it, so the tmpfs's size is what stops the write, not RLIMIT_FSIZE.
    ws, out = tmp_path / "ws", tmp_path / "out.txt"
    ws.mkdir()
    fill = f"with open('/tmp/fill', 'wb') as f: f.write(b'x' * {size})"
    res = run_process(["/usr/bin/python3", "-c", fill], cwd=ws, env={"PATH": "/usr/bin:/bin"}, timeout_s=60,
                      output_cap_bytes=100_000, stdout_path=out,
                      sandbox=SandboxPolicy("bwrap", limits=Limits(file_mb=64, tmp_mb=8),
                                            network=NetworkAccess("none")))
    assert (res.exit_code == 0) is fits, res.stderr_tail or res.start_error
    if not fits:
        assert "No space left on device" in res.stderr_tail
        assert limit_reached(res.exit_code, res.stderr_tail, Limits(file_mb=64, tmp_mb=8)) == (
            "the reviewer reached the sandbox's disk limit (agent.limits.file_mb 64 a file, tmp_mb 8 in /tmp)")
