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

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.normalize import (
    CLAUDE_TOOL_NAMES,
    Draft,
    TurnCounter,
    feed_stream,
    field_dict,
    is_restart_request,
    is_resume_request,
    is_tool_block,
    line_event,
    mark_not_allowed,
    retry_stop,
    tool_block_name,
)
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat, Tested
from rubricgate.suite.agent_context import CONTEXT_FILES

if TYPE_CHECKING:
    from rubricgate.isolation.process import Watch

SPEC = CliSpec(
    name="claude", adapter="ClaudeAgent", title="Claude Code", binary="claude", package="@anthropic-ai/claude-code",
    endpoint=Endpoint("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com",
                      default_hosts=("api.anthropic.com",)),
    format=StreamFormat("claude", "rubricgate.agents.claude:parse_claude_stream",
                        "rubricgate.agents.formats:claude_shape_watch"),
    context_files=CONTEXT_FILES["claude"],
    tested=Tested("2.1.112", "2.1.337", "2.1.112 is the last pure-JS release; later ones ship a native binary through "
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
        # (10 by default, with backoff: ten minutes against a dead endpoint) are cut to one unless
        # the team sets CLAUDE_CODE_MAX_RETRIES: that one retry is announced by a system/api_retry
        # event naming the endpoint's status and the wait (its retry-after), and a long wait is
        # stopped there (watch): agent.retries is the one retry policy.
        return {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_MAX_RETRIES": request.env.get("CLAUDE_CODE_MAX_RETRIES", "1"),
                "CLAUDE_CONFIG_DIR": str(request.agent_view(request.home / ".claude"))}

    def watch(self, request: AgentRequest) -> Watch | None:
        """Stop at a long retry the CLI announces (unless the team chose its retries)."""
        return None if "CLAUDE_CODE_MAX_RETRIES" in request.env else api_retry_stop

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        draft = parse_claude_stream(data, agent=self.name, allowed=request.allowed_tools)
        # The CLI itself always writes its result event; a `command` reviewer's stream in this
        # format is its own, and one that stops early is its own doing (graded, never errored).
        draft.result_always = True
        return draft


def api_retry_stop(line: bytes) -> str | None:
    """A stop reason at a `system/api_retry` event whose wait is long (normalize.retry_stop):
    Claude Code emits it before sleeping, with the endpoint's status (none: no answer) and the
    delay it computed from the retry-after header."""
    if b'"api_retry"' not in line:
        return None
    ev = line_event(line) or {}
    if ev.get("type") != "system" or ev.get("subtype") != "api_retry":
        return None
    status, delay = ev.get("error_status"), ev.get("retry_delay_ms")
    code = status if isinstance(status, int) and not isinstance(status, bool) else None
    wait = float(delay) / 1000 if isinstance(delay, (int, float)) and not isinstance(delay, bool) else None
    return retry_stop("claude", code, str(ev.get("error") or "error"), wait)


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
        self.retry_status: int | None = None
        self.retry_delay_s: float | None = None
        self.message_usage: dict[str, dict[str, Any]] = {}  # message id -> its usage, for a run without a result

    def feed(self, ev: dict[str, Any]) -> None:
        handler = {"system": self._system, "assistant": self._assistant, "user": self._user,
                   "result": self._result}.get(str(ev.get("type")))
        if handler is not None:
            handler(ev)

    def _system(self, ev: dict[str, Any]) -> None:
        sub = ev.get("subtype")
        if sub == "init":
            model = ev.get("model")
            self.draft.model = model if isinstance(model, str) and model else self.draft.model
        elif sub == "permission_denied":
            self._set_status(ev.get("tool_use_id"), "denied")
        elif sub == "api_retry":
            self.retry_error = f"API {ev.get('error_status')} {ev.get('error') or ''}".strip()
            status = ev.get("error_status")
            self.retry_status = status if isinstance(status, int) else None
            delay = ev.get("retry_delay_ms")
            self.retry_delay_s = float(delay) / 1000 if isinstance(delay, (int, float)) else None

    def _assistant(self, ev: dict[str, Any]) -> None:
        msg = field_dict(ev, "message")
        content = msg.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        top_level = ev.get("parent_tool_use_id") is None
        if msg.get("model") == "<synthetic>":
            # The CLI's own text dressed as a message: not a model turn and not an answer, but a
            # tool call inside it is still a call the reviewer's run made.
            self.synthetic = " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            self._tools(blocks, self.turns.turns)
            return
        if isinstance(msg.get("usage"), dict):
            self.message_usage[str(msg.get("id") or len(self.message_usage))] = msg["usage"]
        resumed = self.turns.resuming
        if top_level and self.turns.assistant(str(msg.get("id") or "")):
            self.last_text = ""  # a new turn: only the final turn's text is the answer
        self._tools(blocks, self.turns.turns)
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text" and str(b.get("text", "")).strip()]
        if top_level and texts:
            # A resumed answer goes on where the cut one stopped, mid-line as often as not.
            self.last_text = "".join([self.last_text, *texts]) if resumed else \
                "\n".join([self.last_text, *texts]).strip("\n")

    def _tools(self, blocks: list[dict[str, Any]], step: int) -> None:
        for block in blocks:
            if is_tool_block(block):
                self.draft.add_tool(tool_block_name(block), block.get("input") or {}, step)
                self.calls[str(block.get("id"))] = len(self.draft.tool_calls) - 1

    def _user(self, ev: dict[str, Any]) -> None:
        if is_resume_request(ev):
            self.turns.resumed()
            if is_restart_request(ev):
                self.last_text = ""  # the answer comes again whole: the cut part is no part of it
            return
        content = field_dict(ev, "message").get("content")
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
        # The CLI's result text, else the final turn's own text: never an earlier message's. The
        # result of a resumed answer is its last part alone; the turn's text is the whole of it.
        result = str(ev.get("result") or "")
        resumed_whole = self.turns.resumes and result.strip() and self.last_text.rstrip().endswith(result.strip())
        d.final_text = self.last_text if resumed_whole else result or self.last_text
        num_turns = ev.get("num_turns")
        self.reported = (int(num_turns), str(ev.get("subtype") or ""), bool(ev.get("is_error"))) \
            if isinstance(num_turns, int) else None
        _usage(d, ev)
        denials = ev.get("permission_denials")
        for denial in denials if isinstance(denials, list) else []:
            if isinstance(denial, dict):
                self._set_status(denial.get("tool_use_id"), "denied")
        _termination(d, ev, self.synthetic, self.last_text)

    def close(self) -> None:
        """No result event (killed, truncated, crashed): keep the last thing the model said."""
        d = self.draft
        d.steps = self.turns.turns
        d.retry_after_s = self.retry_delay_s
        if self.turns.resumes:
            d.notes.append(f"the endpoint's stream cut the model's answer off {self.turns.resumes} time(s) and the "
                           "CLI had the model resume it: each resumed part counted in the turn it continues")
        reported = getattr(self, "reported", None)
        if reported is not None:
            cross_check_turns(d, *reported)
        if not d.saw_result:
            d.final_text = self.last_text
            _message_usage(d, self.message_usage.values())
            if self.synthetic or self.retry_error:
                said = "its own error message (model <synthetic>)" if self.synthetic else "a system/api_retry event"
                d.endpoint_error(self.synthetic or self.retry_error, self.retry_status,
                                 f"no result event; the CLI's {said}")


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


_INPUT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _usage(d: Draft, ev: dict[str, Any]) -> None:
    usage = field_dict(ev, "usage")
    d.input_tokens = sum(_count(usage.get(k)) for k in _INPUT_KEYS)
    d.output_tokens = _count(usage.get("output_tokens"))
    cost = ev.get("total_cost_usd")
    d.cost_usd = float(cost) if isinstance(cost, (int, float)) else None


def _message_usage(d: Draft, usages: Iterable[dict[str, Any]]) -> None:
    """A run that ended without its result event (killed, crashed): the tokens each model
    message reported, summed (each message once, whatever its number of content lines)."""
    for usage in usages:
        d.input_tokens += sum(_count(usage.get(k)) for k in _INPUT_KEYS)
        d.output_tokens += _count(usage.get("output_tokens"))


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def _termination(d: Draft, ev: dict[str, Any], synthetic: str, last_text: str) -> None:
    """subtype + is_error -> termination; success with is_error is an error, not an answer."""
    sub, is_error = str(ev.get("subtype") or ""), bool(ev.get("is_error"))
    if sub == "error_max_turns":
        errors = ev.get("errors")
        said = "; ".join(str(e) for e in errors) if isinstance(errors, list) else ""
        d.fail("max_turns", said or "maximum number of turns reached", "max_turns",
               "result.subtype error_max_turns")
    elif sub == "success" and is_error:
        # `result` is the CLI's error message here; only what the model itself said is an answer.
        d.final_text = last_text
        message = _actionable(str(ev.get("result") or synthetic or "the CLI reported an error"))
        raw = ev.get("api_error_status")
        status = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
        d.endpoint_error(f"API {raw}: {message}" if raw else message, status,
                         f"the CLI's result event: is_error with api_error_status {raw}" if raw
                         else "the CLI's result event: is_error without an API status")
    elif sub != "success" or is_error:
        d.fail("crashed", f"{sub or 'unknown result'}: {'; '.join(ev.get('errors') or [])}".rstrip(": "),
               "agent_error", f"the CLI's result event: subtype {sub or '(none)'}")


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
