"""Failure modes of the model endpoint and the CLI, played against the REAL CLIs through their
adapters (inside bubblewrap, the endpoint reached through the allowlisting proxy as a run's
default network reaches it): each mode's scripted server, the run, the class it ended in and how
long after the cause. Shared by tests/e2e/test_failure_modes_e2e.py (the classes) and
bench/failure_modes.py (the times against the 30 s target).

Every mode but `down` lets the first model turn through (the opening read of the changed-files
list) and fails the next request, so each failure comes after the first turn. The cause's instant
is the server's first failing answer (`down`: the run's start; `permission`: none, it is the
reviewer's own request).
"""

from __future__ import annotations

import signal
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rubricgate.agents import get_agent
from rubricgate.agents.registry import cli_specs
from rubricgate.graders.failures import failure_class
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import Transcript
from tests.e2e import claude_scenarios as sc
from tests.e2e import openai_server as oa
from tests.e2e.anthropic_server import Reply, ScriptedAnthropicServer
from tests.e2e.gemini_server import ScriptedGeminiServer
from tests.e2e.record_claude import make_workspace as claude_workspace
from tests.e2e.record_claude import request_for
from tests.e2e.record_openai_clis import make_workspace as openai_workspace
from tests.e2e.record_openai_clis import skill
from tests.e2e.support import Install, sandbox_to

MODES = ("down", "auth", "rate_limit", "overloaded", "malformed", "truncated", "hang", "crash", "permission")
RETRY_AFTER_S = 10  # what the rate limit and the overload ask for (a long wait: over 5 s)
# agent.idle_timeout_s: a hang ends there (the target leaves the idle timeout aside). Every other
# mode runs with room for OpenCode's start, which prints nothing for 20 s and more on a loaded machine.
HANG_IDLE_S, IDLE_S = 15.0, 90.0
TIMEOUT_S = 150.0
ALLOWED = ["read", "grep", "glob"]


@dataclass
class Outcome:
    transcript: Transcript
    seconds_after_cause: float
    failure: str | None  # its class (None: completed)
    killed: list[int]
    failures: int = 0  # failing answers the endpoint served (the CLI's own retries of the failing request)


def sandbox(url: str, network: str):
    """The run's default sandbox (its network by allowlist, through the proxy), or one sharing the
    host's network (`agent.sandbox_network: shared`: the CLI meets a dead endpoint itself)."""
    if network == "allowlist":
        return sandbox_to(url)
    from rubricgate.isolation.netaccess import NetworkAccess
    from rubricgate.isolation.sandbox import SandboxPolicy

    return SandboxPolicy("bwrap", network=NetworkAccess("shared"))


def closed_port_url(path: str = "") -> str:
    """A 127.0.0.1 URL nobody listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}{path}"


# --- Claude Code: the Anthropic Messages API ---------------------------------------------------

def _anthropic(mode: str) -> sc.Behaviour:
    retry_after = {"retry-after": str(RETRY_AFTER_S)}
    replies = {
        "auth": Reply(error_status=401, error_type="authentication_error", error_message="invalid x-api-key"),
        "rate_limit": Reply(error_status=429, error_type="rate_limit_error", error_message="rate limited",
                            headers=retry_after),
        "overloaded": Reply(error_status=529, error_type="overloaded_error", error_message="Overloaded",
                            headers=retry_after),
        "malformed": Reply(malformed=True),
        "truncated": Reply(broken="truncated"),
        "hang": Reply(hang_s=TIMEOUT_S),
        "crash": Reply(crash=signal.SIGSEGV),
    }
    if mode == "permission":
        return sc.permission_denied
    return lambda conv, path, turn: replies[mode]


def run_claude(install: Install, mode: str, tmp: Path, network: str) -> Outcome:
    from rubricgate.agents.claude import ClaudeAgent

    with ScriptedAnthropicServer(sc.script_for({}, default=_anthropic(mode))) as server:
        ws = claude_workspace(tmp)
        url = closed_port_url() if mode == "down" else server.base_url
        req = request_for(ws, tmp / "scratch", url, ALLOWED, 6, TIMEOUT_S, {"PATH": install.path()},
                          sandbox=sandbox(url, network))
        req.idle_timeout_s = HANG_IDLE_S if mode == "hang" else IDLE_S
        started = time.monotonic()
        transcript = ClaudeAgent(AgentConfig(name="claude")).run(req)
        ended = time.monotonic()
    cause = server.failed_at if mode not in ("down", "permission") else started
    return Outcome(transcript, ended - (cause or started), failure_class(transcript), server.killed,
                   server.failures)


# --- Codex, OpenCode, Qwen Code, Copilot CLI (the OpenAI APIs) and Gemini CLI (the Gemini API) ---

def _scripted_turns(mode: str, name: str) -> list[oa.Turn]:
    retry_after = {"retry-after": str(RETRY_AFTER_S)}
    verdict = oa.answer(oa.verdict_text("PASS", [skill(name)]))
    return {
        "down": [],
        "auth": [oa.http_error(401, "Incorrect API key provided: sk-****", headers={})],
        "rate_limit": [oa.http_error(429, "Rate limit reached for requests", headers=retry_after)],
        "overloaded": [oa.http_error(503, "The server is overloaded", headers=retry_after)],
        "malformed": [oa.malformed()],
        "truncated": [oa.truncated()],
        "hang": [oa.hang(TIMEOUT_S)],
        "crash": [oa.crash(signal.SIGSEGV)],
        "permission": [oa.escalated_bash(f"touch fixtures/pass/{name}/NOTES.md"), verdict],
    }[mode]


def endpoint_env(cli: str, base_url: str) -> dict[str, str]:
    """The CLI's endpoint and key variables (its CliSpec) pointing at `base_url`."""
    endpoint = cli_specs()[cli].endpoint
    return {endpoint.base_url: base_url, endpoint.key: f"sk-{cli}-modes-0123456789"}


def run_scripted(install: Install, mode: str, tmp: Path, network: str) -> Outcome:
    """Every CLI but Claude Code: Gemini CLI against the scripted Gemini API, the others against
    the scripted OpenAI APIs (chat/completions, Codex the Responses API)."""
    name = f"mode-{mode}"
    # A CLI may ask again after a stream cut short: every ask is cut short too.
    scenario = oa.Scenario(f"fixtures/pass/{name}/", _scripted_turns(mode, name), repeat_last=mode == "truncated")
    gemini = install.cli == "gemini"
    with (ScriptedGeminiServer if gemini else oa.ScriptedServer)([scenario]) as server:
        ws = tmp / "ws"
        openai_workspace(ws, name)
        url = closed_port_url("" if gemini else "/v1") if mode == "down" else server.base_url
        from rubricgate.agents.base import AgentRequest

        req = AgentRequest(case_id=name, trial=1, workspace=ws, prompt_file=ws / "reviewer/prompts/evaluate.md",
                           rubric_file=ws / "reviewer/evaluator/references/rubric.md",
                           changed_files_file=ws / "reviewer/.changed-skills.txt", scratch=tmp / "scratch",
                           allowed_tools=ALLOWED, max_steps=6, timeout_s=TIMEOUT_S,
                           idle_timeout_s=HANG_IDLE_S if mode == "hang" else IDLE_S,
                           env={"PATH": install.path("/usr/local/bin:/usr/bin:/bin"), **endpoint_env(install.cli, url)},
                           sandbox=sandbox(url, network))
        started = time.monotonic()
        transcript = get_agent(install.cli, AgentConfig(name=install.cli, model="scripted")).run(req)
        ended = time.monotonic()
    cause = server.failed_at if mode not in ("down", "permission") else started
    return Outcome(transcript, ended - (cause or started), failure_class(transcript), server.killed,
                   server.failures)


def run_mode(install: Install, mode: str, network: str = "allowlist") -> Outcome:
    """One run of `install`'s CLI in `mode`, in a throwaway folder (`network`: the sandbox's)."""
    with tempfile.TemporaryDirectory(prefix=f"mode-{mode}-") as tmp:
        runner = run_claude if install.cli == "claude" else run_scripted
        return runner(install, mode, Path(tmp), network)
