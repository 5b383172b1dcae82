"""Claude Code (`claude -p`) adapter and its stream-json parser.

Facts verified against claude 2.1.112 driven by tests/e2e/anthropic_server.py:
- `--output-format stream-json` needs `--verbose`; one `assistant` line per content block. A
  model turn starts at a new `message.id` or at an assistant message after a tool result (ids
  may be reused or missing); the CLI's own error text comes as model `<synthetic>`.
- `--tools Read,Grep,Glob` removes every other tool (a call to Bash gets "No such tool
  available"); `--allowedTools` only pre-approves. `--max-turns N` ends with
  `result.subtype == "error_max_turns"`, `is_error: true`, exit 1, and no `result` text.
- API errors end with `subtype: "success"`, `is_error: true`, `api_error_status`, exit 1.
- `--permission-mode dontAsk` turns every permission prompt into a denial, listed in
  `result.permission_denials`; `--setting-sources user` keeps the reviewed repo's own
  `.claude/settings.json` from granting permissions.
"""

from __future__ import annotations

from typing import Any

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.normalize import (
    CLAUDE_TOOL_NAMES,
    Draft,
    TurnCounter,
    feed_stream,
    is_tool_block,
    mark_not_allowed,
    tool_block_name,
)
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat, Tested

SPEC = CliSpec(
    name="claude", adapter="ClaudeAgent", title="Claude Code", binary="claude", package="@anthropic-ai/claude-code",
    endpoint=Endpoint("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com",
                      default_hosts=("api.anthropic.com",)),
    format=StreamFormat("claude", "rubricgate.agents.claude:parse_claude_stream",
                        "rubricgate.agents.formats:claude_shape_watch"),
    context_files=("CLAUDE.md", "CLAUDE.local.md", ".claude", ".mcp.json"),
    tested=Tested("2.1.112", "2.1.332", "2.1.112 is the last pure-JS release; later ones ship a native binary through "
                  "an npm optional dependency and run on Node 20 despite engines node>=22"),
)

_DENIAL_MARKERS = ("has been denied", "permission denied", "was blocked")


class ClaudeAgent(CliAgent):
    """Drives the real `claude` CLI in print mode."""

    spec = SPEC
    name = SPEC.name
    binary = SPEC.binary

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """claude -p PROMPT with the hard tool allowlist and turn limit."""
        args = [self.executable(request), "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--permission-mode", "dontAsk", "--setting-sources", "user",
                "--strict-mcp-config", "--no-session-persistence"]
        if request.allowed_tools is not None:
            args += ["--tools", claude_tools(request.allowed_tools)]
        if request.max_steps is not None:
            args += ["--max-turns", str(request.max_steps)]
        return args + self.model_args(request, "--model") + list(request.extra_args)

    def agent_env(self, request: AgentRequest) -> dict[str, str]:
        # No telemetry, autoupdate or error reporting from a throwaway run. The CLI's own retries
        # (10 by default, with backoff: ten minutes against a dead endpoint) are off unless the
        # team sets CLAUDE_CODE_MAX_RETRIES: agent.retries is the one retry policy.
        return {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_MAX_RETRIES": request.env.get("CLAUDE_CODE_MAX_RETRIES", "0"),
                "CLAUDE_CONFIG_DIR": str(request.agent_view(request.home / ".claude"))}

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        return parse_claude_stream(data, agent=self.name, allowed=request.allowed_tools)


def claude_tools(allowed: list[str]) -> str:
    """Normalized allowlist -> the --tools value; "" disables every built-in tool."""
    names = [CLAUDE_TOOL_NAMES.get(n, n) for n in allowed if not n.startswith("mcp__")]
    return ",".join(dict.fromkeys(names))


def parse_claude_stream(data: bytes | str, *, agent: str = "claude",
                        allowed: list[str] | None = None) -> Draft:
    """Claude Code stream-json (also Cortex Code's) -> Draft."""
    state = feed_stream(data, agent, _ClaudeState)
    mark_not_allowed(state.draft, allowed)
    return state.draft


class _ClaudeState:
    """Walks the events once; counts turns by structure and keeps tool ids to attach results."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.turns = TurnCounter()
        self.calls: dict[str, int] = {}  # tool_use id -> index into draft.tool_calls
        self.last_text = ""  # text of the final top-level assistant turn only
        self.synthetic = ""
        self.retry_error = ""
        self.retry_delay_s: float | None = None

    def feed(self, ev: dict[str, Any]) -> None:
        handler = {"system": self._system, "assistant": self._assistant, "user": self._user,
                   "result": self._result}.get(str(ev.get("type")))
        if handler is not None:
            handler(ev)

    def _system(self, ev: dict[str, Any]) -> None:
        sub = ev.get("subtype")
        if sub == "init":
            self.draft.model = ev.get("model") or self.draft.model
        elif sub == "permission_denied":
            self._set_status(ev.get("tool_use_id"), "denied")
        elif sub == "api_retry":
            self.retry_error = f"API {ev.get('error_status')} {ev.get('error') or ''}".strip()
            delay = ev.get("retry_delay_ms")
            self.retry_delay_s = float(delay) / 1000 if isinstance(delay, (int, float)) else None

    def _assistant(self, ev: dict[str, Any]) -> None:
        msg = ev.get("message") or {}
        blocks = [b for b in msg.get("content") or [] if isinstance(b, dict)]
        top_level = ev.get("parent_tool_use_id") is None
        if msg.get("model") == "<synthetic>":
            # The CLI's own text dressed as a message: not a model turn and not an answer, but a
            # tool call inside it is still a call the reviewer's run made.
            self.synthetic = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            self._tools(blocks, self.turns.turns)
            return
        if top_level and self.turns.assistant(str(msg.get("id") or "")):
            self.last_text = ""  # a new turn: only the final turn's text is the answer
        self._tools(blocks, self.turns.turns)
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text" and str(b.get("text", "")).strip()]
        if top_level and texts:
            self.last_text = "\n".join([self.last_text, *texts]).strip("\n")

    def _tools(self, blocks: list[dict[str, Any]], step: int) -> None:
        for block in blocks:
            if is_tool_block(block):
                self.draft.add_tool(tool_block_name(block), block.get("input") or {}, step)
                self.calls[str(block.get("id"))] = len(self.draft.tool_calls) - 1

    def _user(self, ev: dict[str, Any]) -> None:
        content = (ev.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and str(block.get("type", "")).endswith("tool_result") \
                    and ev.get("parent_tool_use_id") is None:
                self.turns.tool_result()
            if isinstance(block, dict) and str(block.get("type", "")).endswith("tool_result"):
                self._keep_result(block)

    def _keep_result(self, block: dict[str, Any]) -> None:
        """The result text goes on its call; an error result sets the call's status."""
        idx = self.calls.get(str(block.get("tool_use_id")))
        text = _result_text(block)
        if idx is not None:
            self.draft.tool_calls[idx].keep_result(text)
        if block.get("type") == "tool_result" and block.get("is_error"):
            denied = any(m in text.lower() for m in _DENIAL_MARKERS)
            self._set_status(block.get("tool_use_id"), "denied" if denied else "error")

    def _set_status(self, tool_id: Any, status: str) -> None:
        idx = self.calls.get(str(tool_id))
        if idx is not None and self.draft.tool_calls[idx].status != "denied":
            self.draft.tool_calls[idx].status = status  # type: ignore[assignment]

    def _result(self, ev: dict[str, Any]) -> None:
        d = self.draft
        d.saw_result = True
        # The CLI's result text, else the final turn's own text: never an earlier message's.
        d.final_text = str(ev.get("result") or "") or self.last_text
        num_turns = ev.get("num_turns")
        self.reported = (int(num_turns), str(ev.get("subtype") or ""), bool(ev.get("is_error"))) \
            if isinstance(num_turns, int) else None
        _usage(d, ev)
        for denial in ev.get("permission_denials") or []:
            self._set_status((denial or {}).get("tool_use_id"), "denied")
        _termination(d, ev, self.synthetic, self.last_text)

    def close(self) -> None:
        """No result event (killed, truncated, crashed): keep the last thing the model said."""
        d = self.draft
        d.steps = self.turns.turns
        d.retry_after_s = self.retry_delay_s
        reported = getattr(self, "reported", None)
        if reported is not None:
            cross_check_turns(d, *reported)
        if not d.saw_result:
            d.final_text = self.last_text
            if self.synthetic or self.retry_error:
                d.fail("api_error", self.synthetic or self.retry_error)


def claimed_model_turns(num_turns: int, subtype: str, is_error: bool) -> int:
    """Model turns implied by Claude Code's `num_turns`, with the offsets measured on real runs.

    Measured on claude 2.1.112 (tests/data/transcripts/claude): at `error_max_turns` it is one
    above the model requests made; an API error counts the failed request (1 with none made);
    a success counts every tool-result round plus one, so it is at least the model turns.
    """
    if subtype == "error_max_turns" or (subtype == "success" and is_error):
        return max(0, num_turns - 1)
    return num_turns


def cross_check_turns(d: Draft, num_turns: int, subtype: str, is_error: bool) -> None:
    """Record the CLI's own count; a stream claiming fewer turns than its structure shows is noted."""
    d.reported_turns = num_turns
    claimed = claimed_model_turns(num_turns, subtype, is_error)
    if claimed < d.steps:
        d.notes.append(f"the CLI reported num_turns {num_turns} ({claimed} model turn(s)) but the stream "
                       f"shows {d.steps}; counted {d.steps}")


def _usage(d: Draft, ev: dict[str, Any]) -> None:
    usage = ev.get("usage") or {}
    d.input_tokens = sum(int(usage.get(k) or 0) for k in
                         ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    d.output_tokens = int(usage.get("output_tokens") or 0)
    cost = ev.get("total_cost_usd")
    d.cost_usd = float(cost) if isinstance(cost, (int, float)) else None


def _termination(d: Draft, ev: dict[str, Any], synthetic: str, last_text: str) -> None:
    """subtype + is_error -> termination; success with is_error is an error, not an answer."""
    sub, is_error = str(ev.get("subtype") or ""), bool(ev.get("is_error"))
    if sub == "error_max_turns":
        d.fail("max_turns", "; ".join(ev.get("errors") or []) or "maximum number of turns reached")
    elif sub == "success" and is_error:
        # `result` is the CLI's error message here; only what the model itself said is an answer.
        d.final_text = last_text
        message = _actionable(str(ev.get("result") or synthetic or "the CLI reported an error"))
        status = ev.get("api_error_status")
        d.fail("api_error", f"API {status}: {message}" if status else message)
    elif sub != "success" or is_error:
        d.fail("crashed", f"{sub or 'unknown result'}: {'; '.join(ev.get('errors') or [])}".rstrip(": "))


def _actionable(message: str) -> str:
    """The CLI's words, with what to set when they only say to log in (the harness has no login)."""
    if "not logged in" in message.lower():
        return (f"{message}: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment and list it in "
                "agent.secret_env in rubricgate.yaml")
    return message


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)
