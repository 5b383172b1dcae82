"""A scripted OpenAI-compatible model server on 127.0.0.1, for driving real agent CLIs offline.

It speaks two dialects: chat/completions SSE (OpenCode through @ai-sdk/openai-compatible, Qwen
Code, Copilot CLI's custom provider) and the Responses API SSE (Codex). The "model" is a script: a list of turns (call a tool, answer text,
fail with an HTTP error, stream garbage). A conversation picks its script by the scenario key
found in the request — tool results first (every case starts with the same opening turn, reading
the changed-files list, whose listed path selects the scenario), then the first user message,
then system messages and instructions — so one server can serve a whole suite. When no key is
anywhere, or a scenario runs out of turns, the request gets a non-retryable 400 (the CLI stops at
once) and leaving the `with` block fails the test saying what was missing and where it looked.

Tool calls are written abstractly (read/grep/glob/bash/write) and translated to the tools the client
offers in its request: OpenCode's `read {filePath}`, Qwen Code's `read_file {file_path}`, Copilot's
`view {path}` (the last two take absolute paths, joined to the working directory the client
states), and Codex's shell tool (`cat`, `grep -n`, `ls`). A `crash(signal)` turn kills the client
process by that signal mid-run (tests/e2e/peer.py).
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.peer import kill_client
from tests.loopback import LoopbackServer, send_broken_stream


@dataclass
class Turn:
    """One model turn. kind: tool | text | error | malformed | cut | truncated | hang | crash."""

    kind: str
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    status: int = 500
    headers: dict[str, str] | None = None  # an error's response headers (None: a fast retry-after)
    signal: signal.Signals | None = None  # crash: the client's process is killed with it


def read(path: str) -> Turn:
    return Turn("tool", "read", {"path": path})


def grep(pattern: str, path: str) -> Turn:
    return Turn("tool", "grep", {"pattern": pattern, "path": path})


def glob(pattern: str) -> Turn:
    return Turn("tool", "glob", {"pattern": pattern})


def bash(command: str) -> Turn:
    return Turn("tool", "bash", {"command": command})


def escalated_bash(command: str) -> Turn:
    """A shell command the model asks to run outside the sandbox (Codex: sandbox_permissions
    require_escalated), the CLI's interactive permission request."""
    return Turn("tool", "bash", {"command": command, "escalate": True})


def write(path: str, content: str) -> Turn:
    return Turn("tool", "write", {"path": path, "content": content})


def answer(text: str) -> Turn:
    return Turn("text", text=text)


def http_error(status: int = 500, text: str = "scripted upstream failure",
               headers: dict[str, str] | None = None) -> Turn:
    """The model API answers this turn with an HTTP error (>= 500 is retryable for clients);
    `headers` replace the default fast retry-after (retry-after-ms 20)."""
    return Turn("error", text=text, status=status, headers=headers)


def crash(sig: signal.Signals = signal.SIGSEGV) -> Turn:
    """The client's process is killed by `sig` when it asks for this turn (tests/e2e/peer.py)."""
    return Turn("crash", signal=sig)


def malformed() -> Turn:
    return Turn("malformed")


def cut() -> Turn:
    """The stream starts (200, a first chunk of the answer) and the connection closes mid-stream."""
    return Turn("cut")


def truncated() -> Turn:
    """A complete HTTP body whose stream stops mid-answer: no finish reason, no [DONE] (chat), no
    response.completed (Responses)."""
    return Turn("truncated")


def hang(seconds: float = 60.0) -> Turn:
    """The model never answers in time (for hard-timeout tests)."""
    return Turn("hang", status=int(seconds))


OPENING = read("reviewer/.changed-skills.txt")


@dataclass
class Scenario:
    """Turns played after the opening read; `key` must appear in the conversation."""

    key: str
    turns: list[Turn]
    repeat_last: bool = False  # keep replaying the last turn (a model that never stops)


def verdict_text(tier: str, files: list[str], findings: list[dict[str, Any]] | None = None,
                 summary: str = "scripted review") -> str:
    """A final answer ending with the fenced json verdict the reviewer contract asks for."""
    body = {"tier": tier, "summary": summary, "files_reviewed": files, "findings": findings or []}
    return f"Review done.\n\n```json\n{json.dumps(body, indent=2)}\n```\n"


# ---------------------------------------------------------------- conversation state

Places = list[tuple[str, str]]  # (where in the request, its text), the most telling first


class ScriptError(Exception):
    """The script cannot tell from the request what to do: the test must fail, not loop."""


def _chat_state(body: dict[str, Any]) -> tuple[int, Places]:
    """(model turns so far, where the task may be) for a chat/completions request: tool results,
    then the first user message, then role:system messages."""
    msgs = body.get("messages", [])
    turns = sum(1 for m in msgs if m.get("role") == "assistant")
    places = [("tool result", _content_text(m.get("content"))) for m in msgs if m.get("role") == "tool"]
    places += [("first user message", _content_text(m.get("content")))
               for m in [next((m for m in msgs if m.get("role") == "user"), {})] if m]
    places += [("role:system message", _content_text(m.get("content"))) for m in msgs if m.get("role") == "system"]
    places += [("later user message", _content_text(m.get("content"))) for m in msgs if m.get("role") == "user"][1:]
    return turns, places


def _responses_state(body: dict[str, Any]) -> tuple[int, Places]:
    """Same for a Responses API request: one function_call per scripted turn; the task may be in
    function_call_output items, the first user message, system/developer messages or `instructions`."""
    items = body.get("input", [])
    if isinstance(items, str):
        return 0, [("first user message", items), ("instructions", str(body.get("instructions") or ""))]
    turns = sum(1 for i in items if i.get("type") == "function_call"
                or (i.get("type") == "message" and i.get("role") == "assistant"))
    places = [("tool result", _content_text(i.get("output"))) for i in items if i.get("type") == "function_call_output"]
    users = [i for i in items if i.get("type", "message") == "message" and i.get("role") == "user"]
    places += [("first user message", _content_text(users[0].get("content")))] if users else []
    places += [(f"role:{i['role']} message", _content_text(i.get("content"))) for i in items
               if i.get("type", "message") == "message" and i.get("role") in ("system", "developer")]
    places.append(("instructions", str(body.get("instructions") or "")))
    places += [("later user message", _content_text(u.get("content"))) for u in users[1:]]
    return turns, places


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


PREFLIGHT_PROMPT = "This is a connectivity check."  # rubricgate/agents/preflight.py's PROMPT


class Script:
    """Chooses the next turn from the conversation so far."""

    def __init__(self, scenarios: list[Scenario], opening: Turn = OPENING) -> None:
        self.scenarios = scenarios
        self.opening = opening  # every conversation's first turn: read the changed-files list

    def next_turn(self, turns_done: int, places: Places) -> Turn:
        """The opening read, then the turns of the scenario the conversation names.

        Raises ScriptError when no scenario key is anywhere in the request, or a scenario
        without repeat_last ran out of turns: a model that answers without a verdict would only
        hide the problem behind a plausible failure."""
        if any(PREFLIGHT_PROMPT in text for _, text in places):
            return answer("OK")  # rubricgate's preflight before the suite: one plain answer
        if turns_done == 0:
            return self.opening
        scenario = self.scenario_for(places)
        index = turns_done - 1
        if index >= len(scenario.turns):
            if not scenario.repeat_last:
                raise ScriptError(f"scenario {scenario.key!r} has {len(scenario.turns)} turns but the client "
                                  f"asked for turn {turns_done + 1} (opening read included)")
            index = len(scenario.turns) - 1
        return scenario.turns[index]

    def scenario_for(self, places: Places) -> Scenario:
        """The scenario whose key appears first in the most telling place that names any."""
        for _, text in places:
            hits = [(text.find(s.key), i) for i, s in enumerate(self.scenarios) if s.key in text]
            if hits:
                return self.scenarios[min(hits)[1]]
        looked = ", ".join(dict.fromkeys(name for name, text in places if text)) or "nothing"
        raise ScriptError(f"no scenario key ({', '.join(s.key for s in self.scenarios)}) in the request; "
                          f"looked in: {looked}. The opening read of {self.opening.args['path']} did not come "
                          "back, or came back somewhere tests/e2e/openai_server.py does not look")


# ---------------------------------------------------------------- chat/completions dialect

# Where a client states its working directory: Qwen Code ("I'm currently working in the
# directory: /x"), Copilot CLI ("Current working directory: /x"), Gemini CLI ("Workspace
# Directories:\n  - /x").
_CWD = re.compile(r"(?:currently working in the directory|Current working directory|Workspace Directories:\**)"
                  r":?\s*(?:-\s*)?(/[^\s`'\"]+)")


def stated_cwd(places: Places) -> str:
    """The working directory the request states, or "" when it names none."""
    for _, text in places:
        m = _CWD.search(text)
        if m:
            return m.group(1).rstrip(".")
    return ""


def absolute(path: str, cwd: str) -> str:
    """`path` joined to the client's stated working directory (a script error without one)."""
    if path.startswith("/"):
        return path
    if not cwd:
        raise ScriptError(f"this client wants absolute paths but its request states no working directory "
                          f"(looked for {_CWD.pattern!r}); cannot make {path!r} absolute")
    return f"{cwd.rstrip('/')}/{path}"


def _dialect(tools: list[dict[str, Any]]) -> str:
    """Which client's tool set the request offers: opencode, qwen or copilot."""
    names = {str((t.get("function") or t).get("name")) for t in tools if isinstance(t, dict)}
    if "read_file" in names:
        return "qwen"
    if "view" in names:
        return "copilot"
    return "opencode"


def chat_call(turn: Turn, tools: list[dict[str, Any]], cwd: str) -> tuple[str, dict[str, Any]]:
    """Abstract tool -> the name and arguments of the offering client's own tool."""
    a, dialect = turn.args, _dialect(tools)
    if dialect == "qwen":
        return {"read": lambda: ("read_file", {"file_path": absolute(a.get("path", ""), cwd)}),
                "grep": lambda: ("grep_search", {"pattern": a.get("pattern"), "path": absolute(a.get("path", "."), cwd)}),
                "glob": lambda: ("glob", {"pattern": a.get("pattern")}),
                "write": lambda: ("write_file", {"file_path": absolute(a.get("path", ""), cwd), "content": a.get("content")}),
                }.get(turn.tool, lambda: ("run_shell_command", {"command": a.get("command"), "is_background": False}))()
    if dialect == "copilot":
        return {"read": lambda: ("view", {"path": absolute(a.get("path", ""), cwd)}),
                "grep": lambda: ("grep", {"pattern": a.get("pattern"), "paths": absolute(a.get("path", "."), cwd)}),
                "glob": lambda: ("glob", {"pattern": a.get("pattern")}),
                "write": lambda: ("create", {"path": absolute(a.get("path", ""), cwd), "file_text": a.get("content")}),
                }.get(turn.tool, lambda: ("bash", {"command": a.get("command"), "description": "scripted command"}))()
    return _opencode_call(turn)


def _opencode_call(turn: Turn) -> tuple[str, dict[str, Any]]:
    """Abstract tool -> OpenCode's own tool name and arguments."""
    a = turn.args
    if turn.tool == "read":
        return "read", {"filePath": a["path"]}
    if turn.tool == "grep":
        return "grep", {"pattern": a["pattern"], "path": a["path"]}
    if turn.tool == "glob":
        return "glob", {"pattern": a["pattern"]}
    if turn.tool == "write":
        return "write", {"filePath": a["path"], "content": a["content"]}
    return "bash", {"command": a["command"], "description": "scripted command"}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": "scripted", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def chat_events(turn: Turn, n: int, tools: list[dict[str, Any]] | None = None, cwd: str = "") -> list[dict[str, Any]]:
    """The SSE data payloads for one chat/completions turn (n numbers the tool call id)."""
    usage = {"choices": [], "id": "chatcmpl-scripted", "object": "chat.completion.chunk",
             "created": int(time.time()), "model": "scripted",
             "usage": {"prompt_tokens": 100 + n, "completion_tokens": 20, "total_tokens": 120 + n}}
    if turn.kind == "text":
        return [_chunk({"role": "assistant", "content": turn.text}), _chunk({}, "stop"), usage]
    name, args = chat_call(turn, tools or [], cwd)
    call = {"index": 0, "id": f"call_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}
    return [_chunk({"role": "assistant", "tool_calls": [call]}), _chunk({}, "tool_calls"), usage]


# ---------------------------------------------------------------- Responses dialect


def _shell_command(turn: Turn) -> str:
    """Abstract tool -> the shell command Codex would run for it."""
    a = turn.args
    if turn.tool == "read":
        return f"cat {shlex.quote(a['path'])}"
    if turn.tool == "grep":
        return f"grep -rn {shlex.quote(a['pattern'])} {shlex.quote(a['path'])}"
    if turn.tool == "glob":
        return f"ls -d {a['pattern']}"  # unquoted: the shell expands the glob
    if turn.tool == "write":
        return f"printf %s {shlex.quote(a['content'])} > {shlex.quote(a['path'])}"
    return a["command"]


def _codex_call(turn: Turn, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Use whichever shell tool this Codex version offers; an `escalate` turn asks to run outside
    the sandbox (which approval_policy "never" refuses)."""
    names = {t.get("name") for t in tools if isinstance(t, dict)}
    command = _shell_command(turn)
    escalate = {"sandbox_permissions": "require_escalated", "justification": "scripted: needs to write"} \
        if turn.args.get("escalate") else {}
    if "exec_command" in names:
        return "exec_command", {"cmd": command, **escalate}
    return "shell", {"command": ["bash", "-lc", command], **escalate}


def responses_events(turn: Turn, n: int, tools: list[dict[str, Any]]) -> list[tuple[str, dict]]:
    """(event, payload) pairs for one Responses API turn."""
    rid = f"resp_{n}"
    if turn.kind == "text":
        item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}
    else:
        name, args = _codex_call(turn, tools)
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
                "arguments": json.dumps(args), "status": "completed"}
    usage = {"input_tokens": 100 + n, "output_tokens": 20, "total_tokens": 120 + n,
             "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}
    base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": "scripted"}
    return [
        ("response.created", {"type": "response.created",
                              "response": {**base, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                       "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {**base, "status": "completed", "output": [item],
                                             "usage": usage}}),
    ]


HALF_ANSWER = "Reviewing the ski"  # what a stream cut short carries


def _half_response() -> list[tuple[str, dict[str, Any]]]:
    """The opening events of a Responses API message and a first text delta, no more."""
    base = {"id": "resp_cut", "object": "response", "created_at": int(time.time()), "model": "scripted"}
    item = {"type": "message", "id": "msg_cut", "role": "assistant", "status": "in_progress", "content": []}
    return [("response.created", {"type": "response.created",
                                  "response": {**base, "status": "in_progress", "output": []}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_cut",
                                            "output_index": 0, "content_index": 0, "delta": HALF_ANSWER})]


# ---------------------------------------------------------------- HTTP


class ScriptedServer(LoopbackServer):
    """ThreadingHTTPServer on 127.0.0.1:<free port>; use as a context manager."""

    def __init__(self, scenarios: list[Scenario], opening: Turn = OPENING) -> None:
        self.script = Script(scenarios, opening)
        self.requests: list[dict[str, Any]] = []  # (path, body) log, for tests and debugging
        self.problems: list[str] = []  # ScriptErrors: reported when the server stops
        self.failed_at: float | None = None  # time.monotonic() of the first failure served (a cause's instant)
        self.failures = 0  # failing answers served (errors, broken streams, hangs, crashes)
        self.killed: list[int] = []  # PIDs a `crash` turn killed
        self.hangs_answered = 0  # `hang` turns that slept their time out and answered (a client that waited)
        self.lock = threading.Lock()
        self.serve(_handler_for(self))

    def next_turn(self, state: tuple[int, Places]) -> Turn:
        """The script's turn, or (on a ScriptError) a non-retryable 400 that stops the CLI now."""
        try:
            return self.script.next_turn(*state)
        except ScriptError as exc:
            return self.refuse(exc)

    def refuse(self, exc: ScriptError) -> Turn:
        """A non-retryable 400 for a request the script cannot follow; the test fails on exit."""
        with self.lock:
            self.problems.append(str(exc))
        return http_error(400, f"scripted server: {exc}")

    def chat_reply(self, body: dict[str, Any], n: int) -> tuple[Turn, list[tuple[None, dict[str, Any]]]]:
        """The turn and SSE payloads answering one chat/completions request. A request without
        tools is a client's side request (OpenCode's session title): it gets a short text."""
        state = _chat_state(body)
        turn = self.next_turn(state) if body.get("tools") else answer("Scripted review")
        try:
            events = chat_events(turn, n, body.get("tools") or [], stated_cwd(state[1])) \
                if turn.kind in ("text", "tool") else []
        except ScriptError as exc:
            return self.refuse(exc), []
        return turn, [(None, e) for e in events]

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        if self.problems and exc[0] is None:
            raise AssertionError("the scripted OpenAI server could not follow the conversation:\n"
                                 + "\n".join(dict.fromkeys(self.problems)))

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def record(self, path: str, body: dict[str, Any]) -> int:
        with self.lock:
            self.requests.append({"path": path, "body": body})
            return len(self.requests)


def _handler_for(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            return

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw or b"{}")
            n = server.record(self.path, body)
            if self.path.endswith("/chat/completions"):
                turn, chat = server.chat_reply(body, n)
                self._play(turn, lambda: chat, chat=True)
            elif self.path.endswith("/responses"):
                turn = server.next_turn(_responses_state(body))
                tools = body.get("tools", [])
                self._play(turn, lambda: responses_events(turn, n, tools), chat=False)
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def _play(self, turn: Turn, events: Any, chat: bool) -> None:
            if turn.kind in ("hang", "error", "malformed", "crash", "cut", "truncated"):
                server.failed_at = server.failed_at or time.monotonic()
                server.failures += 1
            if turn.kind in ("cut", "truncated"):
                self._broken(turn.kind, chat)
                return
            if turn.kind == "crash":
                server.killed.append(kill_client(self.client_address[1], server.httpd.server_address[1],
                                                 turn.signal or signal.SIGSEGV))
                self.close_connection = True
                return
            if turn.kind == "hang":
                time.sleep(turn.status)  # bounded: the client is killed long before
                with server.lock:
                    server.hangs_answered += 1
                return
            if turn.kind == "error":
                # retry-after-ms keeps a client's retry loop (OpenCode: 5 retries) fast in tests.
                kind = "server_error" if turn.status >= 500 else "invalid_request_error"
                self._json(turn.status, {"error": {"message": turn.text, "type": kind,
                                                   "code": "scripted"}},
                           {"retry-after-ms": "20", "retry-after": "0"} if turn.headers is None else turn.headers)
                return
            if turn.kind == "malformed":
                self._sse([b"data: {this is not json\n\n"])
                return
            frames = []
            for name, payload in events():
                head = f"event: {name}\n" if name else ""
                frames.append(f"{head}data: {json.dumps(payload)}\n\n".encode())
            if chat:
                frames.append(b"data: [DONE]\n\n")
            self._sse(frames)

        def _broken(self, kind: str, chat: bool) -> None:
            """Half an answer: a first text chunk, then the connection closes (`cut`: short of its
            Content-Length) or the body ends without the stream's end (`truncated`)."""
            events = [(None, _chunk({"role": "assistant", "content": HALF_ANSWER}))] if chat else _half_response()
            frames = [(f"event: {name}\n" if name else "") + f"data: {json.dumps(payload)}\n\n"
                      for name, payload in events]
            data = "".join(frames).encode()
            send_broken_stream(self, data, kind)

        def _sse(self, frames: list[bytes]) -> None:
            data = b"".join(frames)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, payload: dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
