"""The test servers' own behaviour: a client that goes away mid-answer is counted, not printed."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.loopback import LoopbackServer


class _LateAnswer(LoopbackServer):
    """Answers each GET only after `client_left` is set, as a hung model answers a stopped CLI."""

    def __init__(self) -> None:
        self.client_left, self.answered = threading.Event(), threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.client_left.wait(60)
                try:
                    for _ in range(64):  # the first writes may still land in the kernel's buffer
                        self.wfile.write(b"x" * 65536)
                finally:
                    server.answered.set()

            def log_message(self, *args: object) -> None:
                pass  # noqa: S110 - the test reads the server's counters, not its access log

        self.serve(Handler)


def test_an_answer_to_a_client_that_left_prints_nothing_and_is_counted() -> None:
    printed = io.StringIO()
    with _LateAnswer() as server, contextlib.redirect_stderr(printed):
        client = socket.create_connection(("127.0.0.1", server.httpd.server_address[1]))
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        client.close()  # linger 0: a reset, as from a killed process
        server.client_left.set()
        assert server.answered.wait(60)
        deadline = time.monotonic() + 60  # handle_error runs in the handler's thread, after `answered`
        while server.httpd.clients_gone == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert server.httpd.clients_gone == 1
    assert printed.getvalue() == ""
