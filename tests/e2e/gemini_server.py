"""A scripted Gemini API server on 127.0.0.1, for driving the real Gemini CLI offline.

The Gemini CLI (GOOGLE_GEMINI_BASE_URL) calls `POST /v1beta/models/<model>:streamGenerateContent
?alt=sse` for its main loop and `:generateContent` for side requests (JSON-mode helpers such as
its model router or next-speaker check), with the key in `x-goog-api-key`. The model is a
script written with tests/e2e/openai_server.py's scenarios and turns (read/grep/glob/bash/write,
answer, http_error, malformed, hang, crash): one server serves a whole suite, each conversation
picking its scenario by the key found in the request (tool results first, then the first user
message, then the system instruction). A request the script cannot follow gets a non-retryable
400 and fails the test when the server stops.

Tool calls become `functionCall` parts for the CLI's own tools: read_file {file_path},
grep_search {pattern, dir_path}, glob {pattern}, run_shell_command {command}, write_file
{file_path, content}, with paths joined to the workspace the CLI states in its first message.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.openai_server import (
    OPENING,
    Places,
    Scenario,
    Script,
    ScriptError,
    Turn,
    absolute,
    answer,
    http_error,
    stated_cwd,
)
from tests.e2e.peer import kill_client
from tests.loopback import LoopbackServer

STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def _parts_text(parts: Any) -> str:
    """Text of a content's parts: text parts and function responses (as the tool's output)."""
    out = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if "text" in part:
            out.append(str(part["text"]))
        response = part.get("functionResponse")
        if isinstance(response, dict):
            out.append(_response_text(response.get("response")))
    return "\n".join(out)


def _response_text(response: Any) -> str:
    if isinstance(response, dict):
        value = response.get("output", response.get("error", response))
        return value if isinstance(value, str) else json.dumps(value)
    return str(response or "")


def gemini_state(body: dict[str, Any]) -> tuple[int, Places]:
    """(model turns so far, where the task may be) for a generateContent request."""
    contents = [c for c in body.get("contents", []) if isinstance(c, dict)]
    turns = sum(1 for c in contents if c.get("role") == "model")
    places: Places = []
    for c in contents:
        for part in c.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                places.append(("tool result", _response_text(part["functionResponse"].get("response"))))
    users = [c for c in contents if c.get("role") == "user" and not _is_tool_result(c)]
    places += [("first user message", _parts_text(users[0].get("parts")))] if users else []
    places.append(("system instruction", _parts_text((body.get("systemInstruction") or {}).get("parts"))))
    places += [("later user message", _parts_text(u.get("parts"))) for u in users[1:]]
    return turns, places


def _is_tool_result(content: dict[str, Any]) -> bool:
    parts = content.get("parts") or []
    return bool(parts) and all(isinstance(p, dict) and "functionResponse" in p for p in parts)


def function_call(turn: Turn, cwd: str) -> dict[str, Any]:
    """Abstract tool -> a Gemini CLI functionCall part."""
    a = turn.args
    if turn.tool == "read":
        name, args = "read_file", {"file_path": absolute(a["path"], cwd)}
    elif turn.tool == "grep":
        name, args = "grep_search", {"pattern": a["pattern"], "dir_path": absolute(a["path"], cwd)}
    elif turn.tool == "glob":
        name, args = "glob", {"pattern": a["pattern"]}
    elif turn.tool == "write":
        name, args = "write_file", {"file_path": absolute(a["path"], cwd), "content": a["content"]}
    else:
        name, args = "run_shell_command", {"command": a["command"]}
    return {"functionCall": {"name": name, "args": args}}


def response_chunk(turn: Turn, n: int, cwd: str) -> dict[str, Any]:
    """One GenerateContentResponse carrying the whole turn, with usage metadata."""
    parts = [{"text": turn.text}] if turn.kind == "text" else [function_call(turn, cwd)]
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100 + n, "candidatesTokenCount": 20,
                              "totalTokenCount": 120 + n, "cachedContentTokenCount": 10},
            "modelVersion": "scripted", "responseId": f"resp_{n}"}


def side_answer(body: dict[str, Any]) -> str:
    """A side request's reply: JSON when the CLI asked for JSON (routing, next-speaker check)."""
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        return json.dumps({"next_speaker": "user", "reasoning": "scripted", "complexity_score": 10,
                           "complexity_reasoning": "scripted"})
    return "Scripted review"


class ScriptedGeminiServer(LoopbackServer):
    """ThreadingHTTPServer on 127.0.0.1:<free port>; use as a context manager."""

    def __init__(self, scenarios: list[Scenario], opening: Turn = OPENING) -> None:
        self.script = Script(scenarios, opening)
        self.requests: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.killed: list[int] = []  # PIDs a `crash` turn killed
        self.failed_at: float | None = None  # time.monotonic() of the first failure served (a cause's instant)
        self.failures = 0  # failing answers served (errors, broken streams, hangs, crashes)
        self.lock = threading.Lock()
        self.serve(_handler_for(self))

    @property
    def base_url(self) -> str:
        """GOOGLE_GEMINI_BASE_URL: the SDK appends /v1beta/models/..."""
        return self.origin

    def record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> int:
        with self.lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
            return len(self.requests)

    def reply(self, body: dict[str, Any], n: int) -> tuple[Turn, dict[str, Any] | None]:
        """The turn answering a main-loop request and its response chunk (None: no chunk)."""
        state = gemini_state(body)
        try:
            turn = self.script.next_turn(*state)
            chunk = response_chunk(turn, n, stated_cwd(state[1])) if turn.kind in ("text", "tool") else None
        except ScriptError as exc:
            with self.lock:
                self.problems.append(str(exc))
            return http_error(400, f"scripted server: {exc}"), None
        return turn, chunk

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        if self.problems and exc[0] is None:
            raise AssertionError("the scripted Gemini server could not follow the conversation:\n"
                                 + "\n".join(dict.fromkeys(self.problems)))


def _handler_for(server: ScriptedGeminiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            return

        def do_GET(self) -> None:
            self._json(200, {"models": [{"name": "models/scripted"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            n = server.record(self.path, body, {k.lower(): v for k, v in self.headers.items()})
            if ":countTokens" in self.path:
                self._json(200, {"totalTokens": 100})
            elif ":streamGenerateContent" in self.path and body.get("tools"):
                self._play(*server.reply(body, n))
            elif ":generateContent" in self.path or ":streamGenerateContent" in self.path:
                turn = answer(side_answer(body))
                self._play(turn, response_chunk(turn, n, ""), stream=":stream" in self.path)
            else:
                self._json(404, {"error": {"code": 404, "message": f"no route {self.path}", "status": "NOT_FOUND"}})

        def _play(self, turn: Turn, chunk: dict[str, Any] | None, stream: bool = True) -> None:
            if turn.kind in ("hang", "error", "malformed", "crash", "truncated"):
                server.failed_at = server.failed_at or time.monotonic()
                server.failures += 1
            if turn.kind == "hang":
                time.sleep(turn.status)  # bounded: the client is killed long before
            elif turn.kind == "crash":
                server.killed.append(kill_client(self.client_address[1], server.httpd.server_address[1],
                                                 turn.signal or signal.SIGSEGV))
                self.close_connection = True
            elif turn.kind == "error":
                status = STATUS_NAMES.get(turn.status, "UNKNOWN")
                self._json(turn.status, {"error": {"code": turn.status, "message": turn.text, "status": status}},
                           {"retry-after": "0"} if turn.headers is None else turn.headers)
            elif turn.kind == "malformed":
                self._send(200, "text/event-stream", b"data: {this is not json\n\n")
            elif turn.kind == "truncated":  # half an answer, no finishReason, and the stream ends
                half = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Reviewing the ski"}]},
                                        "index": 0}], "modelVersion": "scripted"}
                self._send(200, "text/event-stream", f"data: {json.dumps(half)}\r\n\r\n".encode())
            elif stream:
                self._send(200, "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode())
            else:
                self._json(200, chunk or {})

        def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send(status, "application/json", json.dumps(payload).encode(), headers)

        def _send(self, status: int, ctype: str, data: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
