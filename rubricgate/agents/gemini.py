"""Gemini CLI (`gemini -p PROMPT -o stream-json`) adapter and its event-stream parser.

Facts verified against gemini 0.40.1 and 0.61.0 driven by tests/e2e/gemini_server.py:
- One JSON object a line: `init {model}`, `message {role, content, delta}` (the assistant's text
  comes in pieces), `tool_use {tool_name, tool_id, parameters}`, `tool_result {tool_id, status:
  success|error, output, error {type, message}}`, `error {severity, message}` and a last
  `result {status: success|error, error, stats}`; `stats` has the run's input/output/cached
  token counts (no cost). There is no turn event: a model turn starts with the first assistant
  message or tool call after the prompt or after a round of tool results.
- With GOOGLE_GEMINI_BASE_URL set the CLI picks its "gateway" auth, which headless mode refuses
  ("Invalid auth method selected.", exit 41): the run's settings select the API-key auth.
  Headless mode also refuses an untrusted folder (exit 55): the settings switch folder trust off.
- A run reaching `model.maxSessionTurns` prints an `error` event "Maximum session turns
  exceeded" and then a *successful* result, exit 0. API errors end with a result whose error
  message starts "[API Error:" and the HTTP status as exit code, modulo 256 (400 -> 144,
  500 -> 244); the CLI's own errors exit 1, 41 (auth), 42 (input), 52 (config), 53 (turn limit).
- An admin policy (`--admin-policy`, the highest tier: the reviewed tree's own .gemini/ settings
  cannot lift it) denying every tool but the allowlist removes the others from the model's tool
  list; a call to one anyway comes back as `tool_not_registered`. A path outside the workspace
  is refused (`Path not in workspace`).
- The launcher re-executes itself in a child Node process unless GEMINI_CLI_NO_RELAUNCH is set;
  the parent ignores SIGTERM and turns a child killed by a signal into exit 1. The adapter sets
  it, so a crash by signal is the CLI's own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.normalize import (
    Draft,
    TurnCounter,
    count_or_zero,
    fail_if_truncated,
    feed_stream,
    field_dict,
    line_event,
    mark_not_allowed,
    native_tools,
)
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat, Tested
from rubricgate.suite.agent_context import CONTEXT_FILES

if TYPE_CHECKING:
    from rubricgate.isolation.process import ProcessResult, Watch

SPEC = CliSpec(
    name="gemini", adapter="GeminiAgent", title="Gemini CLI", binary="gemini", package="@google/gemini-cli",
    endpoint=Endpoint("GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com",
                      default_hosts=("generativelanguage.googleapis.com",)),
    format=StreamFormat("gemini", "rubricgate.agents.gemini:parse_gemini_stream",
                        "rubricgate.agents.gemini:turn_limit_watch"),
    context_files=CONTEXT_FILES["gemini"],
    tested=Tested("0.40.1", "0.61.0", "one bundled JavaScript package (node>=20); settings select API-key auth "
                  "and switch folder trust off, an admin policy restricts the tools"),
)

# The CLI's tool name -> the normalized name (what rubric allowlists speak).
TOOL_NAMES = {"read_file": "read", "read_many_files": "read", "grep_search": "grep", "search_file_content": "grep",
              "glob": "glob", "list_directory": "list", "run_shell_command": "bash", "write_file": "write",
              "replace": "edit", "web_fetch": "webfetch", "google_web_search": "websearch",
              "write_todos": "todowrite", "invoke_agent": "task", "save_memory": "memory"}
NATIVE_TOOLS = native_tools(TOOL_NAMES)
_DENIED_TYPES = {"tool_not_registered", "policy_violation", "permission_denied", "path_not_in_workspace"}
_DENIAL_MARKERS = ("not in workspace", "outside the allowed workspace", "denied by policy", "not found. did you mean")
MAX_TURNS_MESSAGE = "Maximum session turns exceeded"


class GeminiAgent(CliAgent):
    """Drives the real `gemini` CLI headless with generated settings and an admin policy."""

    spec = SPEC
    name = SPEC.name
    binary = SPEC.binary

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """gemini --prompt=PROMPT -o stream-json [--admin-policy FILE] [-m MODEL]."""
        args = [self.executable(request), f"--prompt={prompt}", "--output-format", "stream-json"]
        if request.allowed_tools is not None:
            args += ["--admin-policy", str(request.agent_view(policy_path(request)))]
        return args + self.model_args(request, "--model") + list(request.extra_args)

    def agent_env(self, request: AgentRequest) -> dict[str, str]:
        # One process (no relaunched child): the exit status and a signal are the CLI's own.
        return {"GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1"}

    def execute(self, request: AgentRequest, argv: list[str]) -> ProcessResult:
        """Write the run's settings (HOME/.gemini) and policy, then run."""
        settings = json.dumps(gemini_settings(request), indent=2)
        request.write_scratch(request.home / ".gemini" / "settings.json", settings)
        if request.allowed_tools is not None:
            request.write_scratch(policy_path(request), admin_policy(request.allowed_tools))
        return super().execute(request, argv)

    def watch(self, request: AgentRequest) -> Watch | None:
        return turn_limit_watch(request.max_steps)

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        draft = parse_gemini_stream(data, agent=self.name, allowed=request.allowed_tools)
        draft.model = draft.model or request.model or self.config.model
        return draft


def policy_path(request: AgentRequest) -> Path:
    return request.scratch / "gemini-policy.toml"


def gemini_settings(request: AgentRequest) -> dict[str, Any]:
    """User settings for one run: API-key auth, no folder trust prompt, no telemetry, the CLI's
    own retries off (agent.retries is the one retry policy), the turn limit."""
    settings: dict[str, Any] = {
        "security": {"folderTrust": {"enabled": False}},
        "general": {"maxAttempts": 1},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    if request.env.get("GEMINI_API_KEY"):
        settings["security"]["auth"] = {"selectedType": "gemini-api-key"}
    if request.max_steps is not None:
        settings["model"] = {"maxSessionTurns": request.max_steps}
    return settings


def admin_policy(allowed: list[str]) -> str:
    """Policy rules: deny every tool, allow the allowlist's (unknown names pass through as is)."""
    names = [n for a in allowed for n in NATIVE_TOOLS.get(a, (a,))]
    rules = ['[[rule]]\ntoolName = "*"\ndecision = "deny"\npriority = 1\n']
    if names:
        rules.append(f"[[rule]]\ntoolName = {json.dumps(sorted(set(names)))}\ndecision = \"allow\"\npriority = 2\n")
    return "\n".join(rules)


def turn_limit_watch(max_steps: int | None, allowed: list[str] | None = None) -> Watch | None:
    """Stop the run at the first model turn past max_steps (the CLI's own limit comes from
    settings a reviewed tree's .gemini/settings.json may override)."""
    if max_steps is None:
        return None
    turns = _Turns()

    def watch(line: bytes) -> str | None:
        ev = line_event(line)
        if ev is not None and turns.feed(ev) and turns.counter.turns > max_steps:
            return f"max_turns: turn {turns.counter.turns} exceeds max_steps {max_steps}"
        return None

    return watch


class _Turns:
    """Model turns by structure: a turn starts at the first assistant output after the prompt
    or after tool results."""

    def __init__(self) -> None:
        self.counter = TurnCounter()

    def feed(self, ev: dict[str, Any]) -> bool:
        """True when this event starts a new model turn."""
        kind = ev.get("type")
        if kind == "tool_result":
            self.counter.tool_result()
        elif kind == "tool_use" or (kind == "message" and ev.get("role") == "assistant"):
            return self.counter.assistant("")
        return False


def parse_gemini_stream(data: bytes | str, *, agent: str = "gemini", allowed: list[str] | None = None) -> Draft:
    """Gemini CLI stream-json events -> Draft."""
    state = feed_stream(data, agent, _GeminiState)
    fail_if_truncated(state.draft, data)
    mark_not_allowed(state.draft, allowed)
    return state.draft


class _GeminiState:
    """Walks the events once; tool ids attach results to their calls."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.turns = _Turns()
        self.calls: dict[str, int] = {}
        self.last_text: list[str] = []
        self.max_turns = ""
        draft.tokens_known = False  # until the result's stats say

    def feed(self, ev: dict[str, Any]) -> None:
        if self.turns.feed(ev):
            self.last_text = []  # only the final turn's text is the answer
        kind = ev.get("type")
        if kind == "init":
            self.draft.model = str(ev.get("model") or "") or None
        elif kind == "message" and ev.get("role") == "assistant":
            self.last_text.append(str(ev.get("content") or ""))
        elif kind == "tool_use":
            self._tool(ev)
        elif kind == "tool_result":
            self._result(ev)
        elif kind == "error" and MAX_TURNS_MESSAGE.lower() in str(ev.get("message", "")).lower():
            self.max_turns = str(ev.get("message"))
        elif kind == "result":
            self._end(ev)

    def _tool(self, ev: dict[str, Any]) -> None:
        raw = str(ev.get("tool_name") or "")
        call = self.draft.add_tool(raw, ev.get("parameters") or {}, max(self.turns.counter.turns, 1))
        call.name = TOOL_NAMES.get(raw, call.name)
        self.calls[str(ev.get("tool_id"))] = len(self.draft.tool_calls) - 1

    def _result(self, ev: dict[str, Any]) -> None:
        idx = self.calls.get(str(ev.get("tool_id")))
        if idx is None:
            return
        call = self.draft.tool_calls[idx]
        err = field_dict(ev, "error")
        output = ev.get("output") if isinstance(ev.get("output"), str) else err.get("message")
        if isinstance(output, str) and output:
            call.keep_result(output)
        if ev.get("status") != "success":
            text = f"{err.get('message', '')} {output or ''}".lower()
            denied = str(err.get("type")) in _DENIED_TYPES or any(m in text for m in _DENIAL_MARKERS)
            call.status = "denied" if denied else "error"

    def _end(self, ev: dict[str, Any]) -> None:
        d = self.draft
        stats = field_dict(ev, "stats")
        d.input_tokens = count_or_zero(stats.get("input_tokens"))
        d.output_tokens = count_or_zero(stats.get("output_tokens"))
        d.tokens_known = "input_tokens" in stats or "output_tokens" in stats
        # The run's own end, an error's too: its exit status is then the CLI's choice (an API
        # error's HTTP status modulo 256, 400 -> 144), never a signal's 128 + N.
        d.saw_result = True
        if ev.get("status") == "success":
            return
        err = field_dict(ev, "error")
        message = str(err.get("message") or "the CLI reported an error")
        kind = str(err.get("type") or "")
        if kind == "FatalTurnLimitedError":
            d.fail("max_turns", message)
        elif message.startswith("[API Error") or kind in ("FatalAuthenticationError", "ApiError"):
            text = api_error_text(message.removeprefix("[API Error: "))
            d.endpoint_error(text, _status(text), f"the result event's error ({kind or 'no type'})")
        else:
            d.fail("crashed", f"{kind}: {message}" if kind and kind != "unknown" else message)

    def close(self) -> None:
        d = self.draft
        d.steps = self.turns.counter.turns
        d.final_text = "".join(self.last_text)
        if self.max_turns:
            d.fail("max_turns", self.max_turns)
            d.saw_result = False


def api_error_text(message: str) -> str:
    """`{"error": {"code": 500, "message": "..."}}]` (the API's body as the CLI quotes it, maybe
    with the CLI's advice after it) -> "API 500: ..."; other text without its closing bracket."""
    try:
        body, _ = json.JSONDecoder().raw_decode(message)
    except ValueError:
        return message.split("]", 1)[0] if "]" in message else message
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return f"API {err.get('code', '?')}: {err['message']}"
    return message


def _status(text: str) -> int | None:
    found = re.match(r"API (\d{3}):", text)
    return int(found.group(1)) if found else None

