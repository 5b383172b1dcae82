"""Qwen Code (`qwen -p PROMPT --output-format stream-json`) adapter and its parser.

Facts verified against qwen 0.21.10 and 0.24.4 driven by tests/e2e/openai_server.py
(chat/completions SSE):
- The stream follows Claude Code's event shape (`system/init`, `assistant`, `user` tool results,
  a last `result` with `num_turns`, `usage`, `permission_denials`), plus `stream_event` lines.
  One `assistant` line is one model turn (its `message.id` is new each turn), with the turn's
  token usage; the result's usage is the run's total. There is no cost.
- A failed model request is NOT a model turn although it looks like one: the CLI prints an
  `assistant` message of its own whose only text is "[API Error: <status> <message>]", with no
  stop reason and zero usage, then a result carrying the same message: `error_during_execution`,
  exit 1 (0.24); `success` with that text as the `result`, exit 0 (0.21). Claude Code's parser
  counts the message as a turn and, on 0.21, the error as the reviewer's answer.
- Its tool names are Gemini CLI's (read_file, grep_search, glob, run_shell_command, ...). In
  headless mode with `--approval-mode default` a tool that needs approval (shell, writes) is
  declined ("requires permission ... declined"), listed in `permission_denials`; tools named
  by `--exclude-tools` are not offered. `--max-session-turns N` ends the run after N turns.
- Its loop guard halts a run repeating one tool call with the same arguments
  (`error_during_execution`, "Loop detection halted the run"): the reviewer's own failure.
- The CLI retries a 5xx, a 429 or a request that got no answer up to 7 times, waiting the
  endpoint's retry-after (429, 503) or a backoff from 1.5 s doubling to 30 s (about 75 s against
  a server answering 500, 75 to 90 s against one refusing connections, 60 s against a 429 with
  retry-after 10); no setting changes it, and nothing on stdout or stderr shows it. Its debug
  log (QWEN_DEBUG_LOG_FILE=1: HOME/.qwen/debug/<session id>.txt, the id given by --session-id)
  names each retry: "[RETRY] Attempt 1 failed with status 503. Retrying after explicit delay of
  10000ms..." ("Attempt 1 failed. Retrying with backoff in 2s..." for no answer). The adapter
  makes that file a FIFO the harness reads while the CLI runs (isolation/streams.py SideLog)
  and stops the run at a retry whose wait is 5 s or more, as Claude Code's retry notices are.
- A stream that breaks after it began (no finish reason, an error event mid-answer) is retried
  too, and 0.24 says so on stdout: a `system/retry` event, then the turn streamed again (a turn
  of the same request, not a step the reviewer took). When retries run out, the CLI appends
  "[API Error: ...]" to the half answer's message (no stop reason, no usage): the endpoint's error.
- Usage statistics go to a public endpoint unless QWEN_USAGE_STATISTICS_ENABLED=false; the
  launcher re-executes itself in child Node processes unless QWEN_CODE_NO_RELAUNCH is set.
"""

from __future__ import annotations

import json
import os
import re
import uuid
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
    is_tool_block,
    mark_not_allowed,
    native_tools,
    parse_json_lines,
    retry_stop,
)
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat, Tested
from rubricgate.suite.agent_context import CONTEXT_FILES

if TYPE_CHECKING:
    from rubricgate.isolation.process import ProcessResult, Watch

QWEN_DEFAULT_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
SPEC = CliSpec(
    name="qwen", adapter="QwenAgent", title="Qwen Code", binary="qwen", package="@qwen-code/qwen-code",
    # Its OpenAI-compatible auth (--auth-type openai): without a base URL 0.21 and 0.24 call
    # DashScope (their DEFAULT_DASHSCOPE_BASE_URL; a run under strace looks up no other host),
    # not the OpenAI SDK's api.openai.com.
    endpoint=Endpoint("OPENAI_API_KEY", "OPENAI_BASE_URL", QWEN_DEFAULT_URL,
                      default_hosts=("dashscope.aliyuncs.com",), extra=("OPENAI_MODEL",)),
    format=StreamFormat("qwen", "rubricgate.agents.qwen:parse_qwen_stream", "rubricgate.agents.qwen:turn_limit_watch"),
    context_files=CONTEXT_FILES["qwen"],
    tested=Tested("0.21.10", "0.24.4", "declares engines node>=22 and runs on Node 20; 0.21 ends a failed model "
                  "request with a successful result"),
)

TOOL_NAMES = {"read_file": "read", "read_many_files": "read", "grep_search": "grep", "glob": "glob",
              "list_directory": "list", "run_shell_command": "bash", "write_file": "write", "edit": "edit",
              "web_fetch": "webfetch", "web_search": "websearch", "todo_write": "todowrite", "agent": "task"}
NATIVE_TOOLS = native_tools(TOOL_NAMES)
_DENIAL_MARKERS = ("requires permission", "declined", "deny rule", "not found in registry", "not available",
                   "outside", "not in workspace")
API_ERROR_PREFIX = "[API Error"
# Its debug log is on (QWEN_DEBUG_LOG_FILE): the only place its retries show (retry_watch).
_QUIET_ENV = {"QWEN_CODE_NO_RELAUNCH": "1", "QWEN_USAGE_STATISTICS_ENABLED": "false", "NO_COLOR": "1",
              "QWEN_DEBUG_LOG_FILE": "1"}
_API_ERROR_LOG = re.compile(rb"\[OPENAI_ERROR\] OpenAI API Error: (.*?)(?: \{|$)")
_RETRY_NOTICE = re.compile(rb"\[RETRY\] (?:\[Persistent\] )?(Attempt \d+ failed(?: with status (\d{3}))?)\. "
                           rb"Retrying(?: after explicit delay of (\d+)ms| with backoff in (\d+)s| in (\d+)s)?")


class QwenAgent(CliAgent):
    """Drives the real `qwen` CLI headless through an OpenAI-compatible endpoint."""

    spec = SPEC
    name = SPEC.name
    binary = SPEC.binary

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """qwen --prompt=PROMPT --output-format stream-json --approval-mode default ..."""
        args = [self.executable(request), f"--prompt={prompt}", "--output-format", "stream-json",
                "--approval-mode", "default", "--auth-type", "openai"]
        if request.allowed_tools is not None:
            args += tool_args(request.allowed_tools)
        if request.max_steps is not None:
            args += ["--max-session-turns", str(request.max_steps)]
        args += ["--session-id", session_id()]  # names its debug log (retry_watch)
        return args + self.model_args(request, "--model") + list(request.extra_args)

    def agent_env(self, request: AgentRequest) -> dict[str, str]:
        return dict(_QUIET_ENV)

    def execute(self, request: AgentRequest, argv: list[str]) -> ProcessResult:
        """Write the run's user settings (HOME/.qwen), then run with its debug log watched."""
        from rubricgate.isolation.streams import SideLog

        request.write_scratch(request.home / ".qwen" / "settings.json", json.dumps(QWEN_SETTINGS, indent=2))
        log = debug_log_path(request, argv[argv.index("--session-id") + 1])
        folder = request.scratch_folder(log.parent)  # by descriptor: the agent can relink the path
        try:
            os.mkfifo(log.name, 0o600, dir_fd=folder)
            # Read-write: the harness is a writer too, so the CLI's open never blocks and the read
            # end never sees end of file between its appends.
            fd = os.open(log.name, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=folder)
            try:
                return self.launch(request, argv, SideLog(fd, retry_watch()))
            finally:
                os.close(fd)
                _unlink_in(folder, log.name)  # nothing may later open a FIFO nobody writes
        finally:
            os.close(folder)

    def watch(self, request: AgentRequest) -> Watch | None:
        return turn_limit_watch(request.max_steps)

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        draft = parse_qwen_stream(data, agent=self.name, allowed=request.allowed_tools, max_steps=request.max_steps)
        draft.model = draft.model or request.model or self.config.model
        return draft


# No usage statistics, telemetry, update checks or SDK retries (agent.retries is the one policy).
QWEN_SETTINGS = {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                 "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                 "model": {"generationConfig": {"maxRetries": 0}}}


def session_id() -> str:
    """A fresh --session-id for one attempt. A retry runs in the same HOME, where the crashed
    attempt's session is kept, and Qwen Code refuses to start a session id it already has
    ("Session Id ... already exists (active or archived)")."""
    return str(uuid.uuid4())


def _unlink_in(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:  # the agent removed it already
        return


def debug_log_path(request: AgentRequest, session: str) -> Path:
    """Where the CLI writes its debug log: HOME/.qwen/debug/<session id>.txt."""
    return request.home / ".qwen" / "debug" / f"{session}.txt"


def retry_watch() -> Watch:
    """Stop the run at a retry the debug log announces with a wait of 5 s or more (the endpoint's
    retry-after, or a backoff grown that long): the class is known at once and the wait happens
    in the harness's retry (agent.retries), not inside the trial. A retry with no status is a
    request that got no answer (refused, reset, timed out): unreachable. What the endpoint said is
    the API error the log names just before the notice."""
    said = [b""]

    def watch(line: bytes) -> str | None:
        if b"[OPENAI_ERROR]" in line and (error := _API_ERROR_LOG.search(line)):
            said[0] = error.group(1)
        found = _RETRY_NOTICE.search(line) if b"[RETRY]" in line else None
        if found is None:
            return None
        attempt, status, ms, *seconds = found.groups()
        wait = int(ms) / 1000 if ms else next((float(s) for s in seconds if s), None)
        text = (said[0] or attempt).decode("utf-8", errors="replace")[:200]
        return retry_stop("qwen", int(status) if status else None, text, wait)

    return watch


def tool_args(allowed: list[str]) -> list[str]:
    """--core-tools for the allowlist, --exclude-tools for every other tool the CLI has."""
    keep = [n for a in allowed for n in NATIVE_TOOLS.get(a, (a,))]
    drop = [raw for raw in TOOL_NAMES if raw not in keep]
    return [*(["--core-tools", ",".join(keep)] if keep else []), "--exclude-tools", ",".join(drop)]


def turn_limit_watch(max_steps: int | None, allowed: list[str] | None = None) -> Watch | None:
    """Stop the run at the first model turn past max_steps (the CLI's limit is a flag a reviewed
    tree's settings cannot lift, but a parse of the same structure keeps the count exact)."""
    if max_steps is None:
        return None
    state = _QwenState(Draft(agent="qwen"))

    def watch(line: bytes) -> str | None:
        events, _ = parse_json_lines(line)
        if events and events[0].get("type") in ("assistant", "user", "system"):
            state.feed(events[0])
            if state.turns.turns > max_steps:
                return f"max_turns: turn {state.turns.turns} exceeds max_steps {max_steps}"
        return None

    return watch


def parse_qwen_stream(data: bytes | str, *, agent: str = "qwen", allowed: list[str] | None = None,
                      max_steps: int | None = None) -> Draft:
    """Qwen Code stream-json -> Draft. `max_steps`: the --max-session-turns the run was given.

    At that limit the CLI exits 53 without a result event, its message on stderr only: a stream
    that ends right after a round of tool results at max_steps turns ended there."""
    state = feed_stream(data, agent, _QwenState)
    d = state.draft
    if max_steps is not None and not d.saw_result and d.termination == "completed" and state.after_tools \
            and d.steps >= max_steps:
        d.ended_early("max_turns", f"the CLI stopped at its turn limit (--max-session-turns {max_steps})")
    fail_if_truncated(state.draft, data)
    mark_not_allowed(state.draft, allowed)
    return state.draft


def is_cli_error_message(msg: dict[str, Any]) -> bool:
    """The CLI's own "[API Error: ...]" dressed as an assistant message (no stop reason, no usage)."""
    content = msg.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    usage = field_dict(msg, "usage")
    return (bool(blocks) and all(b.get("type") == "text" for b in blocks) and text.startswith(API_ERROR_PREFIX)
            and msg.get("stop_reason") is None and not usage.get("output_tokens"))


# 0.21's words for a model answer with a finish reason and nothing else (0.24: an empty result).
_ANSWERED_NOTHING = "Model stream ended after a tool result without visible progress"
_TRAILING_API_ERROR = re.compile(rf"\s*({re.escape(API_ERROR_PREFIX)}[^\n]*\])\s*$")


def split_api_error(text: str) -> tuple[str, str]:
    """(the model's text, the CLI's "[API Error: ...]" it appended when the stream broke mid-answer)."""
    found = _TRAILING_API_ERROR.search(text)
    return (text[:found.start()], found.group(1)) if found else (text, "")


class _QwenState:
    """Walks the events once; a model turn is a new top-level assistant message."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.turns = TurnCounter()
        self.calls: dict[str, int] = {}
        self.last_text = ""
        self.cli_error = ""
        self.appended: tuple[str, str] | None = None  # an "[API Error ...]" after the last text, and the text
        self.turn_tokens = [0, 0]  # summed per turn: the run's tokens when no result arrives
        self.after_tools = False  # the last event was a round of tool results

    def feed(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        top = ev.get("parent_tool_use_id") is None
        if kind in ("assistant", "user", "result"):
            self.after_tools = kind == "user"
        if kind == "system" and ev.get("subtype") == "init":
            self.draft.model = str(ev.get("model") or "") or None
        elif kind == "system" and ev.get("subtype") == "retry" and top:
            # 0.24 retries a request whose stream broke and says so: the next message is that
            # turn again, its text anew (unless the CLI kept what came), not a step of the reviewer's.
            self.turns.resumed()
            if not field_dict(ev, "data").get("preserveText"):
                self.last_text, self.appended = "", None
        elif kind == "assistant" and top:
            self._assistant(field_dict(ev, "message"))
        elif kind == "user" and top:
            self._tool_results(field_dict(ev, "message"))
        elif kind == "result":
            self._end(ev)

    def _assistant(self, msg: dict[str, Any]) -> None:
        if is_cli_error_message(msg):
            content = msg.get("content")
            blocks = content if isinstance(content, list) else []
            self.cli_error = "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
            return
        if self.turns.assistant(str(msg.get("id") or "")):
            self.last_text, self.appended = "", None
        usage = field_dict(msg, "usage")
        self.turn_tokens[0] += count_or_zero(usage.get("input_tokens"))
        self.turn_tokens[1] += count_or_zero(usage.get("output_tokens"))
        content = msg.get("content")
        # Only a message the stream never finished can carry the CLI's error after its text, and
        # only the result's own error confirms it is the CLI's (a model may write such text).
        unfinished = msg.get("stop_reason") is None and not usage.get("output_tokens")
        for block in content if isinstance(content, list) else []:
            if is_tool_block(block):
                raw = str(block.get("name", ""))
                call = self.draft.add_tool(raw, block.get("input") or {}, self.turns.turns)
                call.name = TOOL_NAMES.get(raw, call.name)
                self.calls[str(block.get("id"))] = len(self.draft.tool_calls) - 1
            elif isinstance(block, dict) and block.get("type") == "text" and str(block.get("text", "")).strip():
                text, error = split_api_error(str(block["text"])) if unfinished else (str(block["text"]), "")
                self.appended = (error, "\n".join(filter(None, [self.last_text, text]))) if error else None
                self.last_text = "\n".join(filter(None, [self.last_text, str(block["text"])]))

    def _tool_results(self, msg: dict[str, Any]) -> None:
        content = msg.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            self.turns.tool_result()
            idx = self.calls.get(str(block.get("tool_use_id")))
            if idx is None:
                continue
            text = _text(block.get("content"))
            self.draft.tool_calls[idx].keep_result(text)
            if block.get("is_error"):
                denied = any(m in text.lower() for m in _DENIAL_MARKERS)
                self.draft.tool_calls[idx].status = "denied" if denied else "error"

    def _end(self, ev: dict[str, Any]) -> None:
        d = self.draft
        usage = field_dict(ev, "usage")
        if usage:
            d.input_tokens, d.output_tokens = (count_or_zero(usage.get("input_tokens")),
                                               count_or_zero(usage.get("output_tokens")))
        else:
            d.input_tokens, d.output_tokens = self.turn_tokens
        if isinstance(ev.get("num_turns"), int):
            d.reported_turns = ev["num_turns"]
        denials = ev.get("permission_denials")
        for denial in denials if isinstance(denials, list) else []:
            idx = self.calls.get(str(denial.get("tool_use_id"))) if isinstance(denial, dict) else None
            if idx is not None:
                d.tool_calls[idx].status = "denied"
        sub, is_error = str(ev.get("subtype") or ""), bool(ev.get("is_error"))
        result = str(ev.get("result") or "")
        said = str(field_dict(ev, "error").get("message") or "")
        # The CLI's error after a half answer: 0.24 names it as the result's error; 0.21 ends with a
        # "successful" result whose text is the half answer, that error appended.
        if self.appended is not None and (said == self.appended[0] if is_error else result == self.last_text):
            self.cli_error, self.last_text = self.appended
            result = result if is_error else self.cli_error
        if result == self.cli_error and _ANSWERED_NOTHING in self.cli_error and not self.last_text:
            # every request was answered: the silence is the reviewer's (no verdict), never errored
            d.notes.append(f"the model answered nothing; the CLI said: {self.cli_error}")
            d.final_text, d.saw_result = "", True
            return
        if self.cli_error and result == self.cli_error:
            # 0.21 ends a failed request with a "successful" result whose text is the CLI's error.
            sub, is_error = "error_during_execution", True
        d.final_text = (result if sub == "success" and not is_error else "") or self.last_text
        if sub == "success" and not is_error:
            d.saw_result = True
            return
        message = str(field_dict(ev, "error").get("message") or self.cli_error or sub or "the CLI reported an error")
        if "max_turns" in sub or "session turns" in message.lower():
            d.fail("max_turns", message)
        elif message.startswith(API_ERROR_PREFIX) and self.cli_error:
            text = api_error_text(message)
            d.endpoint_error(text, _status(text), "the result's error and the CLI's own [API Error] message")
        else:
            d.fail("crashed", message)

    def close(self) -> None:
        d = self.draft
        d.steps = self.turns.turns
        if self.turns.resumes:
            d.notes.append(f"the CLI retried {self.turns.resumes} model request(s) whose stream broke: each retry "
                           "counted in the turn it repeats")
        if not d.saw_result and d.termination == "completed":
            d.final_text = d.final_text or self.last_text
            d.input_tokens, d.output_tokens = self.turn_tokens
            if self.cli_error:
                text = api_error_text(self.cli_error)
                d.endpoint_error(text, _status(text), "the CLI's own [API Error] message, no result event")


def api_error_text(message: str) -> str:
    """"[API Error: 500 upstream failed] advice..." -> "API 500: upstream failed" (else the
    text inside the brackets)."""
    inner = message.removeprefix("[API Error: ").split("]", 1)[0]
    status, _, rest = inner.partition(" ")
    return f"API {status}: {rest}" if status.isdigit() and len(status) == 3 and rest else inner


def _status(text: str) -> int | None:
    head = text.removeprefix("API ")[:3]
    return int(head) if text.startswith("API ") and head.isdigit() else None


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")

