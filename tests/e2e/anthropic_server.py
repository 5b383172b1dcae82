"""A scripted Anthropic Messages API server on 127.0.0.1 for driving the real Claude Code CLI.

Each main-loop request (one that carries tools) is answered by a *script*: a function from the
conversation so far to the next reply. Scripts key on what the client actually sent back (tool
results), so "read the changed-files list, then review the path it names" is a real round trip
through the CLI's tools. Side requests without tools (title generation, quota probes) get a
short text reply. Replies are streamed as SSE when the client asks for `stream: true`.

A script that cannot tell what to do (no workspace in the request, no task in the tool results)
raises ScriptError: the server answers that request with a non-retryable 400, so the CLI stops at
once, and leaving the `with` block fails the test naming what was missing and where it looked,
instead of a model that loops until the turn limit.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.peer import kill_client
from tests.loopback import LoopbackServer, send_broken_stream


@dataclass
class Reply:
    """One model turn: text and/or tool calls, an HTTP error (with `headers`, say retry-after),
    or a failure of the connection itself: a stream that is not JSON (`malformed`), no answer for
    `hang_s` seconds, or the client's process killed by the signal `crash` (tests/e2e/peer.py)."""

    text: str = ""
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error_status: int = 0
    error_type: str = "invalid_request_error"
    error_message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)
    malformed: bool = False
    hang_s: float = 0.0
    crash: signal.Signals | None = None
    broken: str = ""  # "cut": the connection closes mid-stream; "truncated": the stream stops short


Script = Callable[["Conversation"], Reply]

# Where Claude Code states the workspace, in any release so far ("Primary working directory: /x").
_CWD = re.compile(r"(?:Primary working directory|Current working directory|Working directory): *(\S+)")


class ScriptError(Exception):
    """The script cannot tell from the request what to do: the test must fail, not loop."""


@dataclass
class Conversation:
    """A view of one /v1/messages request that scripts decide on."""

    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def cwd(self) -> str:
        """The working directory the CLI states, wherever this release puts it (see `places`)."""
        for _, text in self.places():
            m = _CWD.search(text)
            if m:
                return m.group(1)
        raise ScriptError("cannot find the workspace (\"Primary working directory: ...\") in the request; "
                          f"looked in: {', '.join(name for name, _ in self.places()) or 'nothing'}. "
                          "A CLI release moved its environment section: teach "
                          "tests/e2e/anthropic_server.py Conversation.places where it went")

    @property
    def system_text(self) -> str:
        """The top-level `system` field (a string or text blocks)."""
        return _text(self.body.get("system", ""))

    def places(self) -> list[tuple[str, str]]:
        """(where, text) of everything a CLI may carry the environment or task in, most usual first:
        the `system` field, role:system messages (2.1.332 moved the environment there), the first
        user message (its non-tool-result text) and the tool results."""
        msgs = self.body.get("messages", [])
        found = [("system field", self.system_text)]
        found += [(f"messages[{i}] (role system)", _text(m.get("content"))) for i, m in enumerate(msgs)
                  if m.get("role") == "system"]
        first_user = next((m for m in msgs if m.get("role") == "user"), None)
        if first_user is not None:
            found.append(("first user message", _text(first_user.get("content"))))
        found += [("tool result", t) for t in self.tool_results()]
        return [(name, text) for name, text in found if text]

    def first_user_text(self) -> str:
        msgs = self.body.get("messages", [])
        return next((_text(m.get("content")) for m in msgs if m.get("role") == "user"), "")

    def tool_results(self) -> list[str]:
        """Text of every tool_result the client sent back, oldest first."""
        out = []
        for msg in self.body.get("messages", []):
            content = msg.get("content")
            if msg.get("role") != "user" or not isinstance(content, list):
                continue
            out.extend(_block_text(b) for b in content if b.get("type") == "tool_result")
        return out

    def turns(self) -> int:
        """Assistant turns already in the conversation."""
        return sum(1 for m in self.body.get("messages", []) if m.get("role") == "assistant")


def _text(content: Any) -> str:
    """Text of a string or of the text blocks in a content list (tool results left out)."""
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type", "text") == "text")
    return str(content or "")


def _block_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content)


class ScriptedAnthropicServer(LoopbackServer):
    """Serve `script` on 127.0.0.1:<random port> in a daemon thread; use as a context manager."""

    def __init__(self, script: Script, model: str = "claude-scripted-1") -> None:
        self.script, self.model = script, model
        self.requests: list[dict[str, Any]] = []
        self.problems: list[str] = []  # ScriptErrors: reported when the server stops
        self.failed_at: float | None = None  # time.monotonic() of the first failure served (a cause's instant)
        self.failures = 0  # failing answers served (errors, broken streams, hangs, crashes)
        self.killed: list[int] = []  # PIDs a `crash` reply killed
        self._counter = 0
        self._lock = threading.Lock()
        self.serve(_handler_for(self))

    @property
    def base_url(self) -> str:
        return self.origin

    def next_id(self) -> str:
        with self._lock:
            self._counter += 1
            return f"msg_scripted_{self._counter:04d}"

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        """Main-loop requests go to the script; side requests get a short text."""
        with self._lock:
            self.requests.append(body)
        if not body.get("tools"):
            return Reply(text="Skill review")
        try:
            return self.script(Conversation(body, headers))
        except ScriptError as exc:
            # Answer with a non-retryable error so the CLI stops now, and fail the test on exit.
            with self._lock:
                self.problems.append(str(exc))
            return Reply(error_status=400, error_message=f"scripted server: {exc}")

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        if self.problems and exc[0] is None:
            raise AssertionError("the scripted Anthropic server could not follow the conversation:\n"
                                 + "\n".join(dict.fromkeys(self.problems)))


def _message_blocks(reply: Reply, server: ScriptedAnthropicServer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for name, args in reply.tools:
        blocks.append({"type": "tool_use", "id": f"toolu_{server.next_id()[4:]}", "name": name,
                       "input": args})
    return blocks


def _sse_events(msg: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The Messages streaming event sequence for a complete message."""
    start = dict(msg, content=[], stop_reason=None)
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(msg["content"]):
        events.extend(_block_events(i, block))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": msg["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _block_events(i: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if block["type"] == "text":
        head = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [("content_block_start", {"type": "content_block_start", "index": i, "content_block": head}),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i})]


def _handler_for(server: ScriptedAnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            return

        def do_HEAD(self) -> None:  # connectivity probes
            self._send(200, "application/json", b"")

        def do_GET(self) -> None:
            self._send(200, "application/json", b"{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if "count_tokens" in self.path:
                self._send(200, "application/json", b'{"input_tokens": 100}')
                return
            reply = server.answer(body, {k.lower(): v for k, v in self.headers.items()})
            if reply.error_status or reply.malformed or reply.hang_s or reply.crash or reply.broken:
                self._fail(reply)
                return
            self._reply(body, reply)

        def _fail(self, reply: Reply) -> None:
            """An error answer, a broken stream, silence, or the client killed mid-request."""
            server.failed_at = server.failed_at or time.monotonic()
            server.failures += 1
            if reply.crash is not None:
                server.killed.append(kill_client(self.client_address[1], server.httpd.server_address[1], reply.crash))
                self.close_connection = True
            elif reply.hang_s:
                time.sleep(reply.hang_s)  # bounded: the client is stopped long before
                self.close_connection = True
            elif reply.malformed:
                self._send(200, "text/event-stream", b"event: message_start\ndata: {this is not json\n\n")
            elif reply.broken:
                self._broken(reply.broken)
            else:
                err = {"type": "error", "error": {"type": reply.error_type, "message": reply.error_message}}
                self._send(reply.error_status, "application/json", json.dumps(err).encode(), reply.headers)

        def _broken(self, kind: str) -> None:
            """Half an answer: the message starts, a first text delta, then the connection closes
            short of its content-length (`cut`) or the body ends with no message_stop (`truncated`)."""
            msg = {"id": server.next_id(), "type": "message", "role": "assistant", "model": server.model,
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 120, "output_tokens": 1}}
            events = [("message_start", {"type": "message_start", "message": msg}),
                      ("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}}),
                      ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": "Reviewing the ski"}})]
            data = "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()
            send_broken_stream(self, data, kind)

        def _reply(self, body: dict[str, Any], reply: Reply) -> None:
            content = _message_blocks(reply, server)
            msg = {"id": server.next_id(), "type": "message", "role": "assistant",
                   "model": body.get("model", server.model), "content": content,
                   "stop_reason": "tool_use" if reply.tools else "end_turn", "stop_sequence": None,
                   "usage": {"input_tokens": 120, "output_tokens": 30,
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
            if not body.get("stream"):
                self._send(200, "application/json", json.dumps(msg).encode())
                return
            payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in _sse_events(msg))
            self._send(200, "text/event-stream", payload.encode())

        def _send(self, status: int, ctype: str, data: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            self.send_header("request-id", "req_scripted")
            self.end_headers()
            self.wfile.write(data)

    return Handler
