"""The REAL Claude Code CLI when the model cannot be reached or no key is set: each ends in
seconds with a message naming what to set, not after the CLI's own ten retries."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.e2e import claude_scenarios as sc
from tests.e2e.anthropic_server import ScriptedAnthropicServer
from tests.e2e.support import Install, install_fixture, installs

pytestmark = pytest.mark.e2e
install = install_fixture(installs("claude"))


def _run(install: Install, tmp_path: Path, base_url: str, drop_key: bool = False):
    from rubricgate.agents.claude import ClaudeAgent
    from rubricgate.isolation.sandbox import SandboxPolicy
    from rubricgate.models.config import AgentConfig
    from tests.e2e.record_claude import make_workspace, request_for

    ws = make_workspace(tmp_path)
    req = request_for(ws, tmp_path / "scratch", base_url, ["read", "grep", "glob"], 6, 120.0,
                      {"PATH": install.path()}, sandbox=SandboxPolicy("bwrap"))
    if drop_key:
        req.env.pop("ANTHROPIC_API_KEY")
    started = time.monotonic()
    transcript = ClaudeAgent(AgentConfig(name="claude")).run(req)
    return transcript, time.monotonic() - started


def test_no_api_key_says_which_variable_to_set(install: Install, tmp_path: Path) -> None:
    with ScriptedAnthropicServer(sc.script_for({}, default=sc.review_correctly)) as server:
        transcript, took = _run(install, tmp_path, server.base_url, drop_key=True)
    assert transcript.termination == "api_error", transcript.error
    assert "set ANTHROPIC_API_KEY" in transcript.error and "agent.secret_env" in transcript.error
    assert took < 30


def test_a_stopped_endpoint_ends_in_seconds_not_after_the_clis_own_retries(install: Install, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    transcript, took = _run(install, tmp_path, f"http://127.0.0.1:{port}")
    assert transcript.termination in ("api_error", "crashed"), transcript
    assert took < 30, f"{took:.0f} s: the CLI retried on its own"
