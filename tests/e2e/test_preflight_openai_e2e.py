"""Preflight with the REAL Codex and OpenCode CLIs: a refused key, a stopped endpoint and a missing
key each end `rubricgate run` in seconds with exit 2 and one line naming what to set; a working
endpoint passes preflight. Codex against a stopped endpoint would print "Reconnecting..." for
ever, and OpenCode would retry a refused connection silently on stdout (five retries, 2 to 30 s
apart: about 70 s; no setting of 1.18.33 bounds that): the adapters stop each at its first retry
notice (Codex's log) or its second failed request (OpenCode's), so the preflight answers in
seconds once the CLI has started."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from http.server import BaseHTTPRequestHandler

from tests.e2e.openai_server import ScriptedServer
from tests.e2e.openai_suite import scenarios
from tests.e2e.support import Install, install_fixture, installs, lay_out_suite, write_baseline
from tests.loopback import LoopbackServer

pytestmark = pytest.mark.e2e
install = install_fixture([i for cli in ("codex", "opencode") for i in installs(cli)])
KEY = "sk-openai-preflight-0123456789"


class RefusingServer(LoopbackServer):
    """Every request (model list, title, preflight, review) is refused as a bad key would be."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return

            def do_GET(self) -> None:
                self._refuse()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._refuse()

            def _refuse(self) -> None:
                body = json.dumps({"error": {"message": "Incorrect API key provided: sk-open****6789.",
                                             "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler)

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"


def suite(tmp_path: Path, cli: str) -> Path:
    repo = tmp_path / "repo"
    config = lay_out_suite(repo, ["block/no-description"])
    config["agent"] = {"name": cli, "model": "scripted", "timeout_s": 120, "sandbox": "bwrap", "retries": 0,
                       "env_allowlist": ["PATH", "LANG", "OPENAI_BASE_URL"], "secret_env": ["OPENAI_API_KEY"]}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    write_baseline(repo, {"block/no-description": (None, None, None)})
    return repo


def run(repo: Path, install: Install, base_url: str, key: str | None = KEY):
    env = {**os.environ, "PATH": install.path(), "OPENAI_BASE_URL": base_url}
    env.pop("OPENAI_API_KEY", None)
    if key:
        env["OPENAI_API_KEY"] = key
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


def test_a_stopped_endpoint_names_the_base_url_setting_in_seconds(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path, install.cli)
    with socket.socket() as sock:  # a port nobody listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run(repo, install, f"http://127.0.0.1:{port}/v1")
    line = _one_error_line(proc)
    assert f"cannot reach http://127.0.0.1:{port}/v1" in line and "OPENAI_BASE_URL" in line, line


def test_a_refused_key_names_the_variable(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path, install.cli)
    with RefusingServer() as server:
        proc = run(repo, install, server.base_url)
    line = _one_error_line(proc)
    assert "set OPENAI_API_KEY" in line and "agent.secret_env" in line and "preflight" in line, line


def test_a_missing_key_names_the_variable(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path, install.cli)
    with RefusingServer() as server:
        proc = run(repo, install, server.base_url, key=None)
    line = _one_error_line(proc)
    assert "OPENAI_API_KEY is not set" in line and "set OPENAI_API_KEY" in line, line


def test_a_working_endpoint_passes_preflight(install: Install, tmp_path: Path) -> None:
    repo = suite(tmp_path, install.cli)
    with ScriptedServer(scenarios()) as server:
        proc = run(repo, install, server.base_url)
    assert list((repo / "reports").glob("*/summary.json")), proc.stdout + proc.stderr
    assert "preflight" not in proc.stderr, proc.stderr
