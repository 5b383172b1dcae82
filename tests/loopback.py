"""Test servers on 127.0.0.1:<free port>, served from a daemon thread.

LoopbackServer (HTTP, a context manager) is shared by the scripted model servers (tests/e2e) and
the fake GitHub API; AnsweringServer (raw sockets) by the network proxy's and sandbox's tests.
"""

from __future__ import annotations

import socket
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def send_broken_stream(handler: BaseHTTPRequestHandler, data: bytes, kind: str) -> None:
    """Answer with the start of an event stream and break it: `cut` closes the connection short
    of the Content-Length it announced, `truncated` ends the body without the stream's end."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Content-Length", str(len(data) + (4096 if kind == "cut" else 0)))
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()
    if kind == "cut":
        handler.close_connection = True
        handler.connection.shutdown(2)


class _CountingHTTPServer(ThreadingHTTPServer):
    """Counts a client that went away mid-answer instead of printing its traceback: a test that
    stops its reviewer leaves a handler writing to a closed socket, and socketserver would print
    that to whatever sys.stderr is then (another test's captured CLI output, seconds later)."""

    clients_gone = 0

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            self.clients_gone += 1
            return
        traceback.print_exc(file=sys.__stderr__)  # a handler's own bug: shown by pytest, in no CLI output


class LoopbackServer:
    """Subclasses build their handler class and call `self.serve(handler)` in __init__."""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = _CountingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class AnsweringServer:
    """A raw socket server on 127.0.0.1 (or any `address` of `family`, an abstract unix name
    among them): it records each connection's request head in `got` (what came before a blank
    line, or within a second from a client that sends nothing), answers `reply`, and with
    `keep_reading` reads on until the client closes. Served from a daemon thread until close()."""

    def __init__(self, reply: bytes, address: object = ("127.0.0.1", 0), family: int = socket.AF_INET,
                 keep_reading: bool = False):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(16)
        self.reply, self.keep_reading = reply, keep_reading
        self.got: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(1)
        data = b""
        try:
            while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                data += chunk
        except TimeoutError:
            pass  # noqa: S110 - a client that sends nothing is answered all the same
        except OSError:
            return
        self.got.append(data)
        conn.settimeout(5)
        try:
            conn.sendall(self.reply)
            while self.keep_reading and conn.recv(4096):
                continue
        except OSError:
            return

    def close(self) -> None:
        self.sock.close()
