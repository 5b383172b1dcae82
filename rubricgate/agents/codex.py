"""Codex (`codex exec --json`) adapter and its event-stream parser.

Facts verified against codex-cli 0.171.0 driven by tests/e2e/openai_server.py (Responses API):
- JSONL events: `thread.started`, `turn.started`, `item.started` / `item.completed` with an
  `item` of type agent_message, reasoning, command_execution, file_change, mcp_tool_call,
  web_search, todo_list or error (an `error` item is a warning, e.g. unknown model metadata),
  then `turn.completed {usage}` or `turn.failed {error}`; a fatal problem is an `error` event.
- Codex has one tool, the shell: every call is a `command_execution` item whose `command` is
  `/bin/bash -lc '<cmd>'`, with `exit_code` and status completed | failed | declined. The
  harness names a call by what the command does (cat -> read, grep/rg -> grep, ls/find ->
  glob, anything else -> bash), since the rubric's allowlist speaks in those names.
- No turn limit and no tool allowlist exist in the CLI. The hard forms used are `-s read-only`
  (a write fails inside the sandbox) and `approval_policy = "never"`. The harness counts model
  turns itself and stops the run at the first turn past max_steps. A command outside the
  allowlist is recorded (and graded by tool_use), not raced: by the time its item shows in the
  stream it has already run, and a sandbox-refused one never shows there at all.
- A live turn is the batch of items between two rounds of tool results; afterwards the session
  rollout (CODEX_HOME/sessions) gives the exact count (one usage record per model response) and
  every call, including the ones the --json stream leaves out.
- `-o FILE` writes the final agent message; the stream's last agent_message is the same text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.codex_rollout import add_usage, apply_rollout, clear_sessions, read_rollout
from rubricgate.agents.normalize import (
    UNREACHABLE_STOP,
    Draft,
    fail_if_truncated,
    feed_stream,
    field_dict,
    line_event,
    mark_not_allowed,
    normalize_tool_name,
    retry_stop,
    rust_duration_s,
)
from rubricgate.agents.shell_commands import classify_command
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat, Tested
from rubricgate.isolation.untrusted import read_reviewer_text, write_fresh
from rubricgate.suite.agent_context import CONTEXT_FILES

if TYPE_CHECKING:
    from rubricgate.isolation.process import ProcessResult, Watch
    from rubricgate.models.transcript import ToolStatus

SPEC = CliSpec(
    name="codex", adapter="CodexAgent", title="Codex", binary="codex", package="@openai/codex",
    endpoint=Endpoint("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com",
                      default_hosts=("api.openai.com",), extra=("CODEX_CA_CERTIFICATE",)),
    format=StreamFormat("codex", "rubricgate.agents.codex:parse_codex_stream", "rubricgate.agents.codex:limit_watch"),
    context_files=CONTEXT_FILES["codex"],
    tested=Tested("0.171.0", "0.171.0", "native binary in an optional dependency; runs regardless of Node version"),
)

PROVIDER_ID = "rubricgate"  # the custom provider used when OPENAI_BASE_URL is set
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}
MAX_RECONNECTS = 2  # "Reconnecting..." notices in one run before it is stopped as an outage
RETRY_LOG = "codex_core::responses_retry=warn"  # the log target that announces Codex's retries
_SAMPLING_RETRY = re.compile(r"retrying sampling request \(\d+/\d+ in ([\d.]+)(ns|µs|us|ms|s)\).*?sampling_error=(.*)$")
_CONNECTION_RETRY = re.compile(r"waiting to retry\b.*?\berror=(.*?)\s+retry_delay=([\d.]+)(ns|µs|us|ms|s)\b")
_LAST_STATUS = re.compile(r"last status: ([1-5]\d\d)\b")


class CodexAgent(CliAgent):
    """Drives the real `codex exec` with a throwaway CODEX_HOME and a read-only sandbox."""

    spec = SPEC
    name = SPEC.name
    binary = SPEC.binary

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """codex exec --json -o FILE -s read-only ... -- PROMPT."""
        args = [self.executable(), "exec", "--json", "-o", str(request.agent_view(request.last_message_file)),
                "-s", "read-only", "--skip-git-repo-check", "--color", "never",
                "-C", str(request.workspace)]
        model = request.model or self.config.model
        if model:
            args += ["-m", model]
        return args + list(request.extra_args) + ["--", prompt]

    def agent_env(self, request: AgentRequest) -> dict[str, str]:
        # Codex names a retry's wait (the endpoint's retry-after) only in its log: this target
        # alone goes to stderr, where stderr_watch reads it (unless the team sets RUST_LOG).
        env = {"CODEX_HOME": str(request.agent_view(codex_home(request))),
               "RUST_LOG": request.env.get("RUST_LOG", RETRY_LOG)}
        if request.env.get("OPENAI_API_KEY") and not request.env.get("OPENAI_BASE_URL"):
            env["CODEX_API_KEY"] = request.env["OPENAI_API_KEY"]  # exec mode's API-key login
        return env

    def execute(self, request: AgentRequest, argv: list[str]) -> ProcessResult:
        """Write the run's config.toml (sandbox, approvals, provider), then run. A retry runs in
        the same CODEX_HOME: the failed attempt's session goes first, or an attempt that wrote
        none (or one in the same second) was read as the earlier one's calls and turns."""
        request.write_scratch(codex_home(request) / "config.toml", codex_config(request, self.config.model))
        clear_sessions(request)  # the rollout's copy beside the run goes by clear_kept
        return super().execute(request, argv)

    def kept_files(self, request: AgentRequest) -> list[Path]:
        return [*super().kept_files(request), rollout_copy(request)]

    def watch(self, request: AgentRequest) -> Watch | None:
        return limit_watch(request.max_steps)

    def stderr_watch(self, request: AgentRequest) -> Watch | None:
        return retry_notice_stop

    def read_stderr(self, draft: Draft, stderr_tail: str) -> None:
        """The wait of the last retry Codex announced: the harness's retry waits at least that."""
        notices = [parsed for line in stderr_tail.splitlines() if (parsed := retry_notice(line)) is not None]
        if notices and draft.retry_after_s is None:
            draft.retry_after_s = notices[-1][2]

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        rollout = read_rollout(codex_home(request))
        draft = parse_codex_stream(data, agent=self.name, allowed=request.allowed_tools, rollout=rollout)
        if rollout is not None:
            # Keep the complete record beside the raw stream: it is the only place hidden calls show.
            write_fresh(rollout_copy(request), rollout)
        draft.model = request.model or self.config.model
        if not draft.final_text:
            draft.final_text = _read_last_message(request.last_message_file)
        return draft


def rollout_copy(request: AgentRequest) -> Path:
    return request.scratch / "codex-rollout.jsonl"


def codex_home(request: AgentRequest) -> Path:
    return request.home / ".codex"


def codex_config(request: AgentRequest, default_model: str | None) -> str:
    """config.toml: never ask for approval, read-only sandbox, no web search, our provider."""
    lines = ['approval_policy = "never"', 'sandbox_mode = "read-only"', 'web_search = "disabled"',
             "check_for_update_on_startup = false", "", "[analytics]", "enabled = false", ""]
    base_url = request.env.get("OPENAI_BASE_URL")
    if base_url:
        model = request.model or default_model or "default"
        lines = [f"model = {_toml(model)}", f'model_provider = "{PROVIDER_ID}"', *lines,
                 f"[model_providers.{PROVIDER_ID}]", f'name = "{PROVIDER_ID}"',
                 f"base_url = {_toml(base_url)}", 'wire_api = "responses"',
                 "request_max_retries = 1", "stream_max_retries = 1"]
        if request.env.get("OPENAI_API_KEY"):
            lines.append('env_key = "OPENAI_API_KEY"')
    return "\n".join(lines) + "\n"


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def tool_name(item: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(raw name, normalized name, input) of a tool item."""
    kind = str(item.get("type"))
    if kind == "command_execution":
        command = str(item.get("command") or "")
        return kind, classify_command(command), {"command": command}
    if kind == "mcp_tool_call":
        raw = f"mcp__{item.get('server', '')}__{item.get('tool', '')}"
        args = item.get("arguments")
        return raw, raw, args if isinstance(args, dict) else {"arguments": args}
    if kind == "file_change":
        return kind, "edit", {"changes": item.get("changes") or []}
    return kind, normalize_tool_name(kind.replace("_", "")), {"query": item.get("query", "")}


def item_result(item: dict[str, Any]) -> str | None:
    """What a tool item returned: a command's output, an MCP call's result or error; None while
    the item shows none (in progress, or a kind that returns nothing, such as a file change)."""
    if item.get("type") == "command_execution" and isinstance(item.get("aggregated_output"), str):
        return str(item["aggregated_output"])
    for key in ("result", "error"):
        value = item.get(key) if item.get("type") == "mcp_tool_call" else None
        if value not in (None, "", {}):
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return None


def item_status(item: dict[str, Any]) -> ToolStatus:
    """completed -> ok (a non-zero exit is an error); declined -> denied; failed -> error."""
    status = str(item.get("status") or "")
    if status == "declined":
        return "denied"
    code = item.get("exit_code")
    no_match = code == 1 and item.get("type") == "command_execution" and \
        classify_command(str(item.get("command") or "")) == "grep"
    if status in ("completed", "failed") and (code in (0, None) or no_match) and not item.get("error"):
        return "ok"  # grep's exit 1 means "no match", a normal answer for a credential scan
    return "error"


class TurnCounter:
    """Counts model turns from items: a new turn starts with the first item after tool results."""

    def __init__(self) -> None:
        self.steps = 0
        self.awaiting_model = True
        self.seen: set[str] = set()

    def feed(self, ev: dict[str, Any]) -> dict[str, Any] | None:
        """Returns the item when this event starts a new item, else None."""
        item = ev.get("item") if isinstance(ev.get("item"), dict) else None
        if item is None or item.get("type") == "error":
            return None
        new = str(item.get("id")) not in self.seen
        self.seen.add(str(item.get("id")))
        if new and self.awaiting_model:
            self.steps += 1
            self.awaiting_model = False
        if ev.get("type") == "item.completed" and str(item.get("type")) in TOOL_ITEMS:
            self.awaiting_model = True
        return item if new else None


def limit_watch(max_steps: int | None, allowed: list[str] | None = None) -> Watch:
    """Stop the run at the first model turn past max_steps (Codex has no turn limit of its own),
    and at its second "Reconnecting..." notice (`reconnect_stop`). `allowed` is not raced: a
    command outside it has already run when its item shows in the stream, so it is recorded and
    graded by tool_use."""
    counter = TurnCounter()
    reconnects = [0]

    def watch(line: bytes) -> str | None:
        if b"Reconnecting" in line:
            return reconnect_stop(line, reconnects)
        if max_steps is None or b'"item.' not in line:
            return None
        if (ev := line_event(line)) is not None:
            counter.feed(ev)
        if counter.steps > max_steps:
            return f"max_turns: turn {counter.steps} exceeds max_steps {max_steps}"
        return None

    return watch


def retry_notice(line: str) -> tuple[int | None, str, float, bool] | None:
    """(status, error, wait in seconds, answered) of a retry Codex's log announces, else None.

    codex-cli 0.171.0 logs, at WARN, "stream disconnected - retrying sampling request (1/1 in
    19.99s)... sampling_error=exceeded retry limit, last status: 429 Too Many Requests" when the
    endpoint answered with an error, and "stream connection failed; waiting to retry ...
    error=Connection failed: ... retry_delay=5s" when it did not answer."""
    if "codex_core::responses_retry" not in line:
        return None
    answered = _SAMPLING_RETRY.search(line)
    if answered is not None:
        said = answered.group(3).strip()
        status = _LAST_STATUS.search(said)
        return (int(status.group(1)) if status else None, said,
                rust_duration_s(answered.group(1), answered.group(2)), True)
    failed = _CONNECTION_RETRY.search(line)
    if failed is not None:
        return None, failed.group(1).strip(), rust_duration_s(failed.group(2), failed.group(3)), False
    return None


def retry_notice_stop(line: bytes) -> str | None:
    """Stop at a retry Codex announces with a long wait (normalize.retry_stop)."""
    if b"responses_retry" not in line:
        return None
    notice = retry_notice(line.decode("utf-8", errors="replace"))
    if notice is None:
        return None
    status, said, wait, answered = notice
    return retry_stop("codex", status, said[:200], wait, answered)


def reconnect_stop(line: bytes, seen: list[int]) -> str | None:
    """A stop reason at the MAX_RECONNECTS-th "Reconnecting..." error event, else None.

    With its model server down, codex 0.171.0 prints `{"type":"error","message":"Reconnecting...
    waiting for network (...)"}` at growing intervals for ever, whatever its provider's retry
    settings: the idle timeout never fires and the trial would run to its wall-clock timeout
    and be graded a reviewer timeout. One notice may be a blip Codex recovers from; a second in
    the same run is an outage, for the harness's own retry policy (runner/retry.py)."""
    ev = line_event(line)
    message = str(ev.get("message", "")) if ev is not None and ev.get("type") == "error" else ""
    if not message.startswith("Reconnecting"):
        return None
    seen[0] += 1
    if seen[0] < MAX_RECONNECTS:
        return None
    return f"{UNREACHABLE_STOP}: codex kept reconnecting to its model server: {message[:200]}"


def parse_codex_stream(data: bytes | str, *, agent: str = "codex", allowed: list[str] | None = None,
                       rollout: bytes | str | None = None) -> Draft:
    """codex exec --json events (plus the session rollout, when there is one) -> Draft."""
    state = feed_stream(data, agent, _CodexState)
    fail_if_truncated(state.draft, data)
    if rollout is not None:
        apply_rollout(state.draft, rollout)
    mark_not_allowed(state.draft, allowed)
    return state.draft


class _CodexState:
    """Walks the events once; tool items are keyed by id so completion updates the call."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.turns = TurnCounter()
        self.calls: dict[str, int] = {}
        self.last_text = ""

    def feed(self, ev: dict[str, Any]) -> None:
        kind = str(ev.get("type"))
        if kind.startswith("item."):
            self._item(ev)
        elif kind == "turn.completed":
            self.draft.saw_result = True
            add_usage(self.draft, ev.get("usage"))
        elif kind == "turn.failed":
            self.draft.endpoint_error(_error_text(ev.get("error")), None, "the CLI's turn.failed event")
        elif kind == "error" and not str(ev.get("message", "")).startswith("Reconnecting"):
            # "Reconnecting... n/m" is a retry notice; the error after the last retry counts.
            self.draft.endpoint_error(_error_text(ev), None, "the CLI's error event")

    def _item(self, ev: dict[str, Any]) -> None:
        self.turns.feed(ev)
        item = field_dict(ev, "item")
        kind = str(item.get("type"))
        if kind in TOOL_ITEMS:
            self._tool(item)
        elif kind == "agent_message" and str(item.get("text", "")).strip():
            self.last_text = str(item["text"])

    def _tool(self, item: dict[str, Any]) -> None:
        item_id = str(item.get("id"))
        raw, name, args = tool_name(item)
        status = item_status(item) if item.get("status") != "in_progress" else "error"
        if item_id in self.calls:
            call = self.draft.tool_calls[self.calls[item_id]]
            call.status = status
        else:
            call = self.draft.add_tool(raw, args, max(self.turns.steps, 1), status)
            call.name = name
            self.calls[item_id] = len(self.draft.tool_calls) - 1
        result = item_result(item)
        if result is not None:
            call.keep_result(result)

    def close(self) -> None:
        d = self.draft
        d.steps = self.turns.steps
        d.final_text = self.last_text
        if d.termination != "completed":
            d.saw_result = False


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        return str(err.get("message") or json.dumps(err))
    return str(err or "the CLI reported an error")


def _read_last_message(path: Path) -> str:
    """The -o file: optional, used only when the stream carried no agent message; never
    followed through a link the agent planted there."""
    return read_reviewer_text(path)
