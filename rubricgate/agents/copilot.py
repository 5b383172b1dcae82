"""GitHub Copilot CLI (`copilot -p PROMPT --output-format json`) adapter and its parser.

Facts verified against copilot 1.0.40 and 1.0.102 driven by tests/e2e/openai_server.py
(chat/completions SSE, the CLI's custom provider):
- With COPILOT_PROVIDER_BASE_URL set (its "bring your own key" mode) the CLI needs no GitHub
  login, and COPILOT_OFFLINE=true keeps it off the network but for that provider: no GitHub
  authentication, telemetry, web tools, GitHub MCP server or update check (an strace of a run
  shows connections to the provider only). A model is required: --model or COPILOT_MODEL.
- JSON lines `{type, data, ...}`: `assistant.turn_start` / `assistant.turn_end` around each
  model turn (`assistant.turn_retry` when the CLI retries a failed request in the same turn),
  `assistant.message {content, toolRequests}`, `tool.execution_start {toolCallId, toolName,
  arguments}`, `tool.execution_complete {toolCallId, success, result | error}`,
  `model.call_failure {statusCode}`, `session.error {errorType, message, statusCode}`, and a
  last `result {exitCode, usage}` whose usage has no token counts. `--usage-output-file FILE`
  (1.0.80 and later) writes them (`modelMetrics.<model>.usage.inputTokens/outputTokens`,
  requests.count) when the run ends normally; without that file (an older CLI, a crash) the
  tokens are unknown, never 0. No cost in dollars.
- The CLI retries a failed model request 5 times before `session.error`, exit 1, each failure a
  `model.call_failure` event (`statusCode` when the provider answered; none, "error sending
  request", when it could not be reached) and each retry an `assistant.turn_retry`, neither
  naming the wait: the endpoint's retry-after (plus a second or two: about a minute against a
  429 or 503 with retry-after 10), else a backoff of about 1, 1, 2, 4.5, 9 s (20 to 30 s against
  a provider that is down). The adapter stops it at the second failure of a turn.
- `--available-tools` removes every other tool from the model's list; a call to one anyway
  comes back `Tool 'X' does not exist.`. A path outside the working directory is refused
  ("Permission denied because no interactive user response"). There is no turn limit.
- The npm package's `copilot` is a Node loader that runs a native binary from the platform
  package beside it; a native binary killed by a signal comes back through the loader as exit
  1 and "no platform package found". The adapter starts the native binary itself.
- The native binary unpacks its JavaScript (235 MB) into $XDG_CACHE_HOME/copilot/pkg/<platform>/
  <version> on its first start, and runs a whole copy (`.extraction-complete`) it finds there
  instead: a sandboxed trial is shown one copy per run there, read-only (agents/copilot_package.py).
"""

from __future__ import annotations

import os
import platform
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricgate import boundary
from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.normalize import (
    Draft,
    count_or_zero,
    fail_if_truncated,
    feed_stream,
    field_dict,
    line_event,
    mark_not_allowed,
    native_tools,
    retry_stop,
)
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat, Tested
from rubricgate.isolation.untrusted import read_reviewer_text
from rubricgate.models.failures import endpoint_failure
from rubricgate.suite.agent_context import CONTEXT_FILES

if TYPE_CHECKING:
    from rubricgate.agents.copilot_package import SharedPackages
    from rubricgate.isolation.process import ProcessResult, Watch

SPEC = CliSpec(
    name="copilot", adapter="CopilotAgent", title="GitHub Copilot CLI", binary="copilot", package="@github/copilot",
    # Without a custom provider it signs in to GitHub (COPILOT_GITHUB_TOKEN) and uses Copilot's models.
    endpoint=Endpoint("COPILOT_PROVIDER_API_KEY", "COPILOT_PROVIDER_BASE_URL",
                      "GitHub Copilot's models (api.githubcopilot.com, signed in with COPILOT_GITHUB_TOKEN)",
                      default_hosts=("api.githubcopilot.com", "api.github.com"),
                      extra=("COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_WIRE_API", "COPILOT_MODEL"),
                      workflow_vars=("COPILOT_PROVIDER_BASE_URL", "COPILOT_MODEL")),
    format=StreamFormat("copilot", "rubricgate.agents.copilot:parse_copilot_stream",
                        "rubricgate.agents.copilot:limit_watch"),
    context_files=CONTEXT_FILES["copilot"],
    version_pattern=r"^GitHub Copilot CLI (\S+?)\.?$",  # "GitHub Copilot CLI 1.0.102."
    tested=Tested("1.0.40", "1.0.102", "a Node loader starting a native binary from an optional dependency; "
                  "--usage-output-file (token counts) from 1.0.80"),
)

TOOL_NAMES = {"view": "read", "grep": "grep", "glob": "glob", "bash": "bash", "read_bash": "bash",
              "write_bash": "bash", "stop_bash": "bash", "list_bash": "bash", "create": "write", "edit": "edit",
              "web_fetch": "webfetch", "task": "task"}
NATIVE_TOOLS = native_tools(TOOL_NAMES)
USAGE_FILE_SINCE = (1, 0, 80)
_DENIAL_MARKERS = ("does not exist", "permission denied", "denied", "not allowed", "not available")


class CopilotAgent(CliAgent):
    """Drives the real Copilot CLI in prompt mode, against a custom provider when one is set."""

    spec = SPEC
    name = SPEC.name
    binary = SPEC.binary
    share_package = True  # one unpacked package per run, shown read-only to every sandboxed trial
    _packages: SharedPackages | None = None

    def executable(self, request: AgentRequest | None = None) -> str:
        """The platform package's native binary beside the npm loader, else `copilot` itself."""
        return native_binary(super().executable(request))

    def execute(self, request: AgentRequest, argv: list[str]) -> ProcessResult:
        """Run it with the run's unpacked package shown read-only in its sandbox, if it has one."""
        if self.share_package:
            from rubricgate.agents.copilot_package import SharedPackages

            self._packages = self._packages or SharedPackages()
            request = self._packages.request_for(request, argv[0])
        return self.launch(request, argv)

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """copilot --prompt=PROMPT --output-format json --allow-all-tools --available-tools ..."""
        args = [self.executable(request), f"--prompt={prompt}", "--output-format", "json", "--allow-all-tools",
                "--no-auto-update", "--no-ask-user", "--no-color", "--disable-builtin-mcps"]
        if writes_usage_file(self.version()):
            args += ["--usage-output-file", str(request.agent_view(usage_path(request)))]
        if request.allowed_tools is not None:
            names = [n for a in request.allowed_tools for n in NATIVE_TOOLS.get(a, (a,))]
            args += [f"--available-tools={','.join(names)}"] if names else ["--available-tools="]
        return args + self.model_args(request, "--model") + list(request.extra_args)

    def agent_env(self, request: AgentRequest) -> dict[str, str]:
        env = {"COPILOT_AUTO_UPDATE": "false", "NO_COLOR": "1"}
        if request.env.get("COPILOT_PROVIDER_BASE_URL"):
            env["COPILOT_OFFLINE"] = "true"  # the custom provider only: no GitHub, telemetry or web
        return env

    def kept_files(self, request: AgentRequest) -> list[Path]:
        return [*super().kept_files(request), usage_path(request)]

    def watch(self, request: AgentRequest) -> Watch | None:
        return limit_watch(request.max_steps)

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        draft = parse_copilot_stream(data, agent=self.name, allowed=request.allowed_tools,
                                     usage=read_reviewer_text(usage_path(request)))
        draft.model = draft.model or request.model or self.config.model
        return draft


def writes_usage_file(version: str | None) -> bool:
    """--usage-output-file exists from 1.0.80 on; an older CLI refuses it (exit 1)."""
    from rubricgate.agents.support import parse_version  # with the run's models, not on import

    parsed = parse_version(version)
    return parsed is not None and parsed >= USAGE_FILE_SINCE


def usage_path(request: AgentRequest) -> Path:
    return request.scratch / "copilot-usage.json"


def native_binary(program: str) -> str:
    """`<prefix>/bin/copilot` -> the native binary in the platform package npm installed beside
    the loader (`.../@github/copilot/node_modules/@github/copilot-linux-x64/copilot`)."""
    if not os.path.isabs(program):
        return program
    package = Path(os.path.realpath(program)).parent
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
    for flavour in ("linux", "linuxmusl"):
        found = package / "node_modules" / "@github" / f"copilot-{flavour}-{arch}" / "copilot"
        if package.name == "copilot" and found.is_file() and os.access(found, os.X_OK):
            return str(found)
    return program


def limit_watch(max_steps: int | None, allowed: list[str] | None = None) -> Watch:
    """Stop the run at the first model turn past max_steps (the CLI has no turn limit), and at the
    second failed request of a turn (`model.call_failure`): the CLI retries one 5 times, waiting
    the endpoint's retry-after or a backoff of 1 to 9 s, about a minute against a 429 or 503 with
    retry-after 10 and 20 to 30 s against a provider that is down, where the harness's own retry
    can decide in seconds. One failure may be a blip its first retry recovers from; a second is
    an outage, and the wait between the two (the endpoint's retry-after, or the CLI's backoff) is
    the least the harness's retry waits. A request that never reached the provider (no status, an
    unreachable's words) is `unreachable`; any other the endpoint's answer."""
    turns = [0]
    failed: list[str] = []  # this turn's failed requests' timestamps

    def watch(line: bytes) -> str | None:
        if b"assistant.turn_start" not in line and b"model.call_failure" not in line:
            return None
        ev = line_event(line) or {}
        if ev.get("type") == "assistant.turn_start":
            failed.clear()  # the last turn's request succeeded
            turns[0] += 1
            if max_steps is not None and turns[0] > max_steps:
                return f"max_turns: turn {turns[0]} exceeds max_steps {max_steps}"
        elif ev.get("type") == "model.call_failure":
            return _failure_stop(field_dict(ev, "data"), str(ev.get("timestamp") or ""), failed)
        return None

    return watch


def _failure_stop(data: dict[str, Any], stamp: str, failed: list[str]) -> str | None:
    failed.append(stamp)
    if len(failed) < 2:
        return None
    code = data.get("statusCode")
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    said = _error_message(data.get("errorMessage")) or (f"HTTP {status}" if status else "the request failed")
    answered = status is not None or endpoint_failure(None, said) != "unreachable"
    return retry_stop("copilot", status, said[:200], _seconds_between(failed[-2], failed[-1]), answered=answered,
                      leave_short=False)


def _error_message(raw: Any) -> str:
    """The failure's errorMessage: the provider's JSON error body (its `message`), or a quoted or
    plain text."""
    text = str(raw or "")
    try:  # the CLI's record of the endpoint's answer: bounded like every JSON (never RecursionError)
        body = boundary.loads(text)
    except ValueError:
        return text
    if isinstance(body, dict):
        return str(body.get("message") or text)
    return body if isinstance(body, str) else text


def _seconds_between(first: str, second: str) -> float | None:
    try:
        start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (first, second))
    except ValueError:
        return None
    return max(0.0, (end - start).total_seconds())


def parse_copilot_stream(data: bytes | str, *, agent: str = "copilot", allowed: list[str] | None = None,
                         usage: str = "") -> Draft:
    """Copilot CLI JSON events (and its usage file's text, when there is one) -> Draft."""
    state = feed_stream(data, agent, _CopilotState)
    fail_if_truncated(state.draft, data)
    apply_usage(state.draft, usage)
    mark_not_allowed(state.draft, allowed)
    return state.draft


def apply_usage(draft: Draft, text: str) -> None:
    """Token counts from the --usage-output-file JSON; unknown without one."""
    try:  # the reviewer's process writes it: bounded like its stream (never RecursionError)
        data = boundary.loads(text) if text.strip() else None
    except ValueError:
        data = None
    metrics = field_dict(data, "modelMetrics") if isinstance(data, dict) else {}
    usages = [u for m in metrics.values() if isinstance(m, dict) and (u := field_dict(m, "usage"))]
    if not usages:
        draft.tokens_known = False
        return
    draft.tokens_known = True
    draft.input_tokens = sum(count_or_zero(u.get("inputTokens")) for u in usages)
    draft.output_tokens = sum(count_or_zero(u.get("outputTokens")) for u in usages)


class _CopilotState:
    """Walks the events once: a model turn is a turn_start whose turn produced a message."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.turn_open = False
        self.turn_counted = False
        self.calls: dict[str, int] = {}
        self.last_text = ""
        self.exit_code: int | None = None
        self.error = ""
        self.status: int | None = None

    def feed(self, ev: dict[str, Any]) -> None:
        kind, data = str(ev.get("type")), field_dict(ev, "data")
        if kind == "assistant.turn_start":
            self.turn_open, self.turn_counted = True, False
        elif kind == "assistant.message":
            self._message(data)
        elif kind == "tool.execution_start":
            self._tool(data)
        elif kind == "tool.execution_complete":
            self._complete(data)
        elif kind == "session.error":
            status = data.get("statusCode")
            self.status = status if isinstance(status, int) and not isinstance(status, bool) else None
            message = str(data.get("message") or data.get("errorType") or "session error")
            self.error = f"API {self.status}: {message}" if self.status else message
        elif kind == "session.tools_updated" or kind == "model.call_start":
            self.draft.model = str(data.get("model") or "") or self.draft.model
        elif kind == "result":
            code = ev.get("exitCode")
            self.exit_code = code if isinstance(code, int) and not isinstance(code, bool) else -1

    def _count_turn(self) -> int:
        if self.turn_open and not self.turn_counted:
            self.draft.steps += 1
            self.turn_counted = True
            self.last_text = ""
        return max(self.draft.steps, 1)

    def _message(self, data: dict[str, Any]) -> None:
        self._count_turn()
        text = str(data.get("content") or "")
        if text.strip():
            self.last_text = text

    def _tool(self, data: dict[str, Any]) -> None:
        raw = str(data.get("toolName") or "")
        call = self.draft.add_tool(raw, data.get("arguments") or {}, self._count_turn())
        call.name = TOOL_NAMES.get(raw, call.name)
        self.calls[str(data.get("toolCallId"))] = len(self.draft.tool_calls) - 1

    def _complete(self, data: dict[str, Any]) -> None:
        idx = self.calls.get(str(data.get("toolCallId")))
        if idx is None:
            return
        call = self.draft.tool_calls[idx]
        result, err = field_dict(data, "result"), field_dict(data, "error")
        text = result.get("content") if data.get("success") else err.get("message")
        if isinstance(text, str):
            call.keep_result(text)
        if not data.get("success"):
            message = str(err.get("message") or "").lower()
            call.status = "denied" if any(m in message for m in _DENIAL_MARKERS) else "error"

    def close(self) -> None:
        d = self.draft
        d.final_text = self.last_text
        if self.error:
            d.endpoint_error(self.error, self.status, "the CLI's session.error event")
        elif self.exit_code == 0:
            d.saw_result = True
        elif self.exit_code is not None:
            d.fail("crashed", f"the CLI ended with exit code {self.exit_code}")

