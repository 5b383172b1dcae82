"""Preflight with the REAL Claude Code CLI: a refused key, a stopped endpoint and a missing key
each end `rubricgate run` in seconds with exit 2 and one line naming what to set; a working
endpoint runs the suite as before."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from tests.e2e import claude_scenarios as sc
from tests.e2e.anthropic_server import Reply, ScriptedAnthropicServer
from tests.e2e.support import Install, install_fixture, installs, lay_out_suite, write_baseline

pytestmark = pytest.mark.e2e
install = install_fixture(installs("claude"))
KEY = "sk-ant-preflight-0123456789"


class RefusingServer(ScriptedAnthropicServer):
    """Every request, the preflight's included, is refused as a bad key would be."""

    def answer(self, body, headers) -> Reply:
        return Reply(error_status=401, error_type="authentication_error", error_message="invalid x-api-key")


def suite(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    config = lay_out_suite(repo, ["block/no-description"])
    config["agent"] = {"name": "claude", "timeout_s": 90, "sandbox": "bwrap", "retries": 0,
                       "env_allowlist": ["PATH", "LANG", "ANTHROPIC_BASE_URL"], "secret_env": ["ANTHROPIC_API_KEY"]}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, {"block/no-description": (None, None, None)})
    return repo


def run(repo: Path, install: Install, base_url: str, key: str | None = KEY):
    env = {**os.environ, "PATH": install.path(), "ANTHROPIC_BASE_URL": base_url}
    env.pop("ANTHROPIC_API_KEY", None)
    if key:
        env["ANTHROPIC_API_KEY"] = key
    proc = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    return proc


def _one_error_line(proc) -> str:
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stdout + proc.stderr
    assert not list((Path(proc.args[4]) / "reports").glob("*/summary.json")), "no trial may have run"
    # Ended by what the endpoint said (or that nothing was there), not by the preflight's time
    # running out: that is a line of its own (agents/preflight.py). Its seconds: bench/failure_modes.py.
    assert "did not finish starting" not in errors[0] and "did not answer within" not in errors[0], errors[0]
    return errors[0]


def test_a_refused_key_names_the_variable(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path)
    with RefusingServer(sc.script_for({})) as server:
        proc = run(repo, install, server.base_url)
    line = _one_error_line(proc)
    assert "set ANTHROPIC_API_KEY" in line and "agent.secret_env" in line and "preflight" in line, line


def test_a_missing_key_names_the_variable(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path)
    with ScriptedAnthropicServer(sc.script_for({})) as server:
        proc = run(repo, install, server.base_url, key=None)
    line = _one_error_line(proc)
    assert "ANTHROPIC_API_KEY is not set" in line and "set ANTHROPIC_API_KEY" in line, line


def test_a_stopped_endpoint_names_the_base_url_setting(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path)
    with socket.socket() as sock:  # a port nobody listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run(repo, install, f"http://127.0.0.1:{port}")
    line = _one_error_line(proc)
    assert f"cannot reach http://127.0.0.1:{port}" in line and "ANTHROPIC_BASE_URL" in line, line
    # docs/agents.md: under sandbox_network allowlist (the default) the line says what the proxy saw.
    assert f"the sandbox's proxy could not connect to 127.0.0.1:{port} (Connection refused) (fix: check that " \
           "the endpoint is up and ANTHROPIC_BASE_URL names it;" in line, line


def test_an_endpoint_that_accepts_and_never_answers_is_named_within_the_preflight_timeout(
        install: Install, tmp_path: Path) -> None:
    # docs/agents.md: a CLI that started but got no answer is "... started, but http://... did not
    # answer within N s", never "cannot reach" (the endpoint took the connection).
    repo = suite(tmp_path)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"]["preflight_timeout_s"] = 10
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port, held = silent.getsockname()[1], []
        threading.Thread(target=lambda: [held.append(silent.accept()) for _ in range(16)], daemon=True).start()
        proc = run(repo, install, f"http://127.0.0.1:{port}")  # a hang: run()'s own 600 s bound
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stdout + proc.stderr
    assert f"claude started, but http://127.0.0.1:{port} did not answer within 10 s (fix: " in errors[0], errors[0]
    assert "cannot reach" not in errors[0] and held, errors[0]
    # ended by the preflight's bound, not a trial's: no trial ran, so no transcript was written
    assert not list(repo.glob("reports/*/transcripts/*")), proc.stdout + proc.stderr


def test_a_cli_not_on_the_agents_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    repo = suite(tmp_path)
    env = {**os.environ, "PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": KEY}
    proc = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: rubricgate.yaml: agent.name: agent 'claude': program 'claude' not found on PATH (fix: install "
        "claude or put it on PATH (the agent's PATH comes from agent.env_allowlist))"], proc.stdout + proc.stderr
    assert not (repo / "reports").exists() or not list((repo / "reports").glob("*/summary.json"))


def test_a_working_endpoint_passes_preflight_and_runs_the_suite(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path)
    with ScriptedAnthropicServer(sc.script_for({})) as server:
        proc = run(repo, install, server.base_url)
    assert list((repo / "reports").glob("*/summary.json")), proc.stdout + proc.stderr
    assert "preflight" not in proc.stderr


def test_a_base_url_set_in_the_shell_but_not_allowlisted_is_named_before_the_cli_starts(
        install: Install, tmp_path: Path) -> None:
    # docs/agents.md: the variable names the right endpoint but never reaches the CLI; the line
    # said "cannot reach https://api.anthropic.com ... ANTHROPIC_BASE_URL names it" after ~20 s.
    repo = suite(tmp_path)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"]["env_allowlist"] = ["PATH", "LANG"]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with ScriptedAnthropicServer(sc.script_for({})) as server:
        proc = run(repo, install, server.base_url)
        asked = len(server.requests)
    line = _one_error_line(proc)
    assert "ANTHROPIC_BASE_URL is set in the environment but not listed in agent.env_allowlist" in line, line
    assert "add ANTHROPIC_BASE_URL to agent.env_allowlist" in line and "cannot reach" not in line, line
    # before the CLI starts: it never asked the endpoint (how soon is no test's to say on a busy machine)
    assert asked == 0, f"{asked} requests"
