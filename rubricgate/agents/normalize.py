"""Shared transcript normalization for every agent adapter.

Adapters parse their CLI's native stream into a `Draft` (a mutable dataclass) with the helpers
here (JSON lines decoded once, tool names normalized, turns counted, the stop reasons a watch
gives); agents/ending.py's `finish` then folds in how the process ended and returns the pydantic
`Transcript`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricgate import boundary
from rubricgate.agents.decoded_lines import decode_line
from rubricgate.isolation.streams import IDLE_STOP
from rubricgate.models.failures import FailureClass, endpoint_failure

# The transcript models are built only when a stream is parsed: the adapter modules (and their
# specs) load without them (agents/spec.py).
if TYPE_CHECKING:
    from rubricgate.models.transcript import Termination, ToolCall, ToolStatus

# Lower-cased raw name (underscores and dashes dropped) -> normalized name.
_CANONICAL = {
    "read": "read", "readfile": "read", "view": "read",
    "grep": "grep", "search": "grep",
    "glob": "glob", "find": "glob",
    "ls": "list", "list": "list",
    "bash": "bash", "shell": "bash", "localshell": "bash", "exec": "bash", "commandexecution": "bash",
    "write": "write", "writefile": "write", "create": "write",
    "edit": "edit", "multiedit": "edit", "notebookedit": "edit", "strreplace": "edit",
    "patch": "edit", "applypatch": "edit", "filechange": "edit",
    "webfetch": "webfetch", "websearch": "websearch", "task": "task", "agent": "task",
    "todowrite": "todowrite",
}

# How a stop reason starts when the harness ended the run because the infrastructure failed
# (a silent agent; a CLI that keeps reconnecting to a model server that is down): the trial is
# an infrastructure failure (graders/failures.py), retried and then errored, never graded.
UNREACHABLE_STOP = "model_unreachable"
# How the stop reason starts when a CLI said it would retry a request the endpoint answered with an
# error (429, 529, 5xx) and its wait was long: the harness's retry waits it instead, outside the
# trial's clock. The reason carries "API <status>" and "retry after <seconds> s".
ENDPOINT_STOP = "endpoint_error"
INFRA_STOPS = (IDLE_STOP, UNREACHABLE_STOP, ENDPOINT_STOP)
# A retry the CLI makes sooner than this is left to it (a blip costs no restart); a longer wait
# (a retry-after, a backoff against a dead endpoint) stops the run, so the class is known in
# seconds and the wait happens in the harness's retry, which honours it (runner/retry.py).
INLINE_RETRY_S = 5.0


def retry_stop(cli: str, status: int | None, said: str, delay_s: float | None, answered: bool | None = None,
               leave_short: bool = True) -> str | None:
    """The stop reason for a CLI's retry notice, or None when its retry is left to it (a short
    wait, unless not `leave_short`). `answered` (default: a status was given) says the endpoint
    answered with an error; otherwise the request never got an answer."""
    if leave_short and delay_s is not None and delay_s < INLINE_RETRY_S:
        return None
    wait = f"; retry after {delay_s:.1f} s" if delay_s is not None else ""
    if not (status is not None if answered is None else answered):
        return f"{UNREACHABLE_STOP}: {cli} could not reach its model server and would retry ({said}){wait}"
    code = f"API {status}" if status is not None else "an API error"
    return f"{ENDPOINT_STOP}: {cli} would retry a model request the endpoint answered with {code} ({said}){wait}"


def rust_duration_s(amount: str, unit: str) -> float:
    """A Rust `Duration` as its Debug form prints it ("19.99s", "500ms", "0ns") -> seconds."""
    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}.get(unit, 1.0)
    return float(amount) * scale

# Normalized name -> Claude Code's built-in tool name (for --tools).
CLAUDE_TOOL_NAMES = {
    "read": "Read", "grep": "Grep", "glob": "Glob", "bash": "Bash", "write": "Write",
    "edit": "Edit", "list": "LS", "webfetch": "WebFetch", "websearch": "WebSearch",
    "task": "Task", "todowrite": "TodoWrite",
}


def native_tools(tool_names: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """A CLI's {its tool name: normalized name} table turned around: normalized name -> the CLI's
    tools, for restricting it to an allowlist written in normalized names."""
    native: dict[str, tuple[str, ...]] = {}
    for raw, name in tool_names.items():
        native[name] = (*native.get(name, ()), raw)
    return native


def count_or_zero(value: Any) -> int:
    """A count a CLI reported as a JSON number, else 0 (a string, a bool, null)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def normalize_tool_name(raw: str) -> str:
    """Read/read -> read, MultiEdit -> edit, Bash -> bash; mcp__server__tool is kept whole."""
    name = raw.strip()
    if name.startswith("mcp__"):
        return name
    key = name.lower().replace("_", "").replace("-", "")
    return _CANONICAL.get(key, name.lower())


def parse_json_lines(data: bytes | str) -> tuple[list[dict[str, Any]], int]:
    """JSON object lines of a stream, plus how many non-empty lines were not JSON objects.

    Banner lines, progress text and a final line cut off by a timeout or the output cap
    are counted, never fatal.
    """
    events, skipped, _ = parse_stream(data)
    return events, skipped


def line_event(line: bytes | str) -> dict[str, Any] | None:
    """The event one stream line holds (None for a line that holds none): parse_json_lines of a
    single line, for a live watch, without the stream's bookkeeping (skipped and malformed lines
    are the parser's to count). Its value is kept for the trial's parser (agents/decoded_lines.py)."""
    text = (line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line).strip()
    if "\n" in text:  # several lines (a watch is shown one): the first event, as parse_json_lines gives
        events = parse_json_lines(text)[0]
        return events[0] if events else None
    if not text:
        return None
    obj = decode_line(text, _loads)
    return obj if isinstance(obj, dict) else None


# What an event line begins with: an object whose first key is quoted (`{"type": ...`), or `{}`.
# Node's console.log of an object (`{ level: 'warn', msg: '...' }`) is a log line, not an event.
_LOOKS_LIKE_EVENT = re.compile(r'\{\s*(?:"|\})')
_EVENT_START = re.compile(r'\{\s*"')
# Where in a line that is no event one is looked for; a line with more such places is taken for one.
_EVENT_TRIES = 16
_DECODER = json.JSONDecoder()


def parse_stream(data: bytes | str) -> tuple[list[dict[str, Any]], int, int]:
    """parse_json_lines' events and count, and how many of the skipped lines before the last began
    as an event (`{"`), or held one after other text, and did not parse: a malformed event, which
    may have been a tool call (the last line is one cut off by a kill or the cap: fail_if_truncated)."""
    events, skipped, malformed, _ = _scan(data)
    return events, skipped, malformed


def _scan(data: bytes | str) -> tuple[list[dict[str, Any]], int, int, bool]:
    """parse_stream's three, and whether the last line began as or held an event and did not
    parse: the stream was cut in the middle of an event."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    events: list[dict[str, Any]] = []
    skipped = malformed = 0
    broken_last = False
    # Lines end at "\n" only: str.splitlines() would also cut at U+2028, U+2029 and \x85, which
    # a JSON string may hold raw (Node's JSON.stringify leaves them so); the cut line's event (a
    # forbidden tool call, say) would vanish into two "non-JSON" lines. A "\r" before the "\n"
    # goes with strip().
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        obj = decode_line(line, _loads)  # once a trial: a watch may have decoded it already
        malformed += broken_last
        broken_last = False
        if isinstance(obj, dict):
            events.append(obj)
        else:
            skipped += 1
            broken_last = _holds_event(line)
    return events, skipped, malformed, broken_last


def _holds_event(line: str) -> bool:
    """A line that did not parse began as an event, or holds one after other text: an escape
    sequence or a progress word a writer left without its newline (`\\x1b[?25l{"type": ...}`)
    hides the event behind it, a forbidden tool call say, from the parser and the live watch."""
    if _LOOKS_LIKE_EVENT.match(line):
        return True
    for tries, start in enumerate(_EVENT_START.finditer(line)):
        if tries == _EVENT_TRIES:
            return True
        try:
            value, _ = _DECODER.raw_decode(line, start.start())
        except ValueError:
            continue
        except RecursionError:  # nested past the interpreter's limit: taken for an event
            return True
        if isinstance(value, dict):
            return True
    return False


def field_dict(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """obj[key] when it is a JSON object, else {}: an agent's stream line may hold anything there."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _loads(line: str) -> Any:
    # The bounded loader: a line nested deeper than boundary.MAX_DEPTH keeps its event with the
    # deep part replaced by a placeholder (never RecursionError, never a hidden tool call); lone
    # surrogates come back escaped and NaN or 1e999 as None.
    if not line.startswith("{"):
        return None
    try:
        return boundary.loads(line, clip=True)
    except ValueError:
        return None


def read_stream(path: Path) -> bytes:
    """The captured stdout of a run; an absent file (the CLI never started) reads as empty."""
    return path.read_bytes() if path.is_file() else b""


@dataclass
class Draft:
    """A transcript under construction by an adapter's parser."""

    agent: str
    model: str | None = None
    steps: int = 0
    tool_calls: list[ToolCall] = field(default_factory=list)
    final_text: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_known: bool = True  # False: the CLI reported no token counts (usage unknown, never 0)
    cost_usd: float | None = None
    termination: Termination = "completed"
    error: str = ""
    failure: FailureClass | None = None  # models/failures.py, with the evidence that decided it
    evidence: str = ""
    signal: str | None = None
    api_status: int | None = None
    skipped_lines: int = 0
    malformed_lines: int = 0  # skipped lines that began as or held an event (parse_stream)
    cut_mid_event: bool = False  # the last line began as or held an event and did not parse
    saw_result: bool = False  # the stream reached its own end-of-run event
    # The stream's format always ends with its end-of-run event (Claude Code's `result`, written on an
    # error too): events that stop before it at exit 0 were cut, not the reviewer's answer.
    result_always: bool = False
    retry_after_s: float | None = None  # a retry delay the CLI reported
    reported_turns: int | None = None  # the CLI's own turn count, when it gives one
    notes: list[str] = field(default_factory=list)
    # How the stream ended, read from the stream alone (cut mid-line, stopped after a step that
    # asked for tools). Applied unless the process explains the end: when rubricgate itself
    # stopped or killed the agent, the stream ends wherever the kill caught it.
    ending: tuple[Termination, str] | None = None

    def add_tool(self, raw_name: str, args: Any, step: int, status: ToolStatus = "ok") -> ToolCall:
        """Record one tool call with its normalized name (its input cut at boundary.VALUE_DEPTH)."""
        from rubricgate.models.transcript import ToolCall

        args, cut = boundary.clip_value(args if isinstance(args, dict) else {"value": args})
        if cut:
            self.notes.append(f"tool call {len(self.tool_calls) + 1} ({raw_name[:80]}): its input nests deeper than "
                              f"{boundary.VALUE_DEPTH} levels; the deeper part is left out")
        call = ToolCall(raw_name=raw_name, name=normalize_tool_name(raw_name), input=args, status=status, step=step)
        self.tool_calls.append(call)
        return call

    def ended_early(self, termination: Termination, error: str) -> None:
        """Record how the stream ended when that is all the stream says (see `ending`)."""
        if self.ending is None:
            self.ending = (termination, error)

    def fail(self, termination: Termination, error: str, failure: FailureClass | None = None,
             evidence: str = "") -> None:
        """Record an abnormal end, its failure class and the evidence; the first recorded reason wins."""
        if self.termination == "completed":
            self.termination = termination
        if not self.error:
            self.error = one_line(error)
        if self.failure is None and failure is not None:
            self.failure, self.evidence = failure, one_line(evidence)

    def endpoint_error(self, error: str, status: int | None, evidence: str) -> None:
        """The CLI reports that the model endpoint answered with an error (or not at all)."""
        self.api_status = self.api_status or status
        self.fail("api_error", error, endpoint_failure(status, error), evidence)


def mark_not_allowed(draft: Draft, allowed: Iterable[str] | None) -> None:
    """A call the harness's allowlist excludes that the CLI answered with an error was denied."""
    if allowed is None:
        return
    ok = set(allowed)
    for call in draft.tool_calls:
        if call.name not in ok and call.status == "error":
            call.status = "denied"


def one_line(text: str) -> str:
    """A CLI's words as the reason of a trial: one line, no terminal escape, at most 300 characters."""
    return boundary.printable(" ".join(text.split()))[:300]


def feed_stream(data: bytes | str, agent: str, state_cls):
    """Parse a native JSON-lines stream and feed every event to a fresh per-CLI state machine.

    The state class takes a Draft and has feed(event) and close(); non-JSON lines are counted.
    """
    events, skipped, malformed, cut = _scan(data)
    state = state_cls(Draft(agent=agent, skipped_lines=skipped, malformed_lines=malformed, cut_mid_event=cut))
    for event in events:
        state.feed(event)
    state.close()
    return state


def last_line_broken(data: bytes | str) -> bool:
    """True when the stream's last non-empty line is not JSON (cut off by a kill or the cap)."""
    raw = data.encode() if isinstance(data, str) else data
    lines = [ln for ln in raw.splitlines() if ln.strip()]
    return bool(lines) and not parse_json_lines(lines[-1])[0]


def fail_if_truncated(draft: Draft, data: bytes | str) -> None:
    """A cut-off stream: the answer (if any) is kept for the verdict grader, the run is not done."""
    if not draft.saw_result and last_line_broken(data):
        draft.ended_early("crashed", "the stream ended mid-line (truncated output)")



def is_tool_block(block: Any) -> bool:
    """Every tool-call block type a CLI emits: tool_use, server_tool_use, mcp_tool_use, ..."""
    return isinstance(block, dict) and str(block.get("type", "")).endswith("tool_use")


def tool_block_name(block: dict[str, Any]) -> str:
    """The raw tool name of a tool block; an MCP block carries its server separately."""
    name = str(block.get("name", ""))
    server = block.get("server_name")
    if block.get("type") == "mcp_tool_use" and server and not name.startswith("mcp__"):
        return f"mcp__{server}__{name}"
    return name


class TurnCounter:
    """Model turns from the stream's structure, not from ids alone.

    A new top-level assistant message starts a turn when its id differs from the current turn's,
    or when a tool result arrived since the last assistant message (the model was asked again).
    So reused or missing message ids cannot hide turns. Used by the parsers and the live watch.
    """

    def __init__(self) -> None:
        self.turns = 0
        self._id = ""
        self._tool_result_since = False
        self.resuming = False
        self.resumes = 0  # answers the CLI had the model resume after its endpoint cut them off

    def assistant(self, msg_id: str) -> bool:
        """Count one top-level assistant message; True when it starts a new turn."""
        if self.resuming:
            self.resuming = False
            if not self._tool_result_since:  # the cut-off answer, going on
                self._id = msg_id or self._id
                return False
        new = self.turns == 0 or self._tool_result_since or bool(msg_id and self._id and msg_id != self._id)
        if new:
            self.turns += 1
            self._tool_result_since = False
        self._id = msg_id or self._id
        return new

    def tool_result(self) -> None:
        """A tool result went back to the model: its next message is a new turn."""
        self._tool_result_since = True

    def resumed(self) -> None:
        """The CLI asked the model again for an answer its endpoint's stream cut off (to go on with
        it, or a retry of the request): the next message continues this turn (the endpoint's
        fault, not a step the reviewer took)."""
        if not self.resuming:
            self.resumes += 1
        self.resuming = True


# Claude Code (2.1.3xx) recovers from a stream cut mid-answer by sending the model this request
# as a user message of its own, then streams the rest of the answer as a new message.
_RESUME_REQUEST = re.compile(r"cut off mid-stream|Resume directly from where it stops")


# Its other wording drops the cut part from the conversation and asks for the whole answer again:
# the next message replaces the cut one instead of going on from it.
_RESTART_REQUEST = re.compile(r"only your next message is delivered|complete response again from the start")


def is_resume_request(ev: dict[str, Any]) -> bool:
    """A top-level user message of the CLI's own asking the model to resume a cut-off answer."""
    return bool(_RESUME_REQUEST.search(_request_text(ev)))


def is_restart_request(ev: dict[str, Any]) -> bool:
    """A resume request asking for the complete answer again, the cut part not delivered."""
    text = _request_text(ev)
    return bool(_RESUME_REQUEST.search(text) and _RESTART_REQUEST.search(text))


def _request_text(ev: dict[str, Any]) -> str:
    """The text of a top-level user message made of text blocks only ("" for any other event)."""
    content = field_dict(ev, "message").get("content")
    if ev.get("type") != "user" or ev.get("parent_tool_use_id") is not None or not isinstance(content, list):
        return ""
    texts = [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return " ".join(texts) if texts and len(texts) == len(content) else ""
