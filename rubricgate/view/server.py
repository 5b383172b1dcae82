"""The live viewer: stdlib http.server on 127.0.0.1, GET and HEAD only.

It answers only the viewer's own page paths (rubricgate/view/urls.py): nothing maps a request
path onto the file system, so `..`, encoded slashes and absolute paths match no page. Files are
read below the run folders with no link followed (safe.py). A Host header other than the
loopback address it serves on is refused, so a web page elsewhere cannot reach it through DNS
rebinding; every method but GET and HEAD gets 405.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from rubricgate.view.site import Page, Site

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765


class Handler(BaseHTTPRequestHandler):
    """One request: route it to a page of `site`; refuse everything else."""

    site: Site
    server_version = "rubricgate-view"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._answer(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def __getattr__(self, name: str):
        if name.startswith("do_"):  # POST, PUT, DELETE, anything: the viewer never writes
            return self._refuse
        raise AttributeError(name)

    def _refuse(self) -> None:
        self._send(Page(405, "text/plain; charset=utf-8", b"read-only viewer: GET and HEAD only\n"), True,
                   {"Allow": "GET, HEAD"})

    def _answer(self, body: bool) -> None:
        if not self._host_ok():
            self._send(Page(403, "text/plain; charset=utf-8", b"wrong Host\n"), body)
            return
        path = unquote(urlsplit(self.path).path)
        if not self.path.startswith("/") or self.path.startswith("//"):  # origin-form only, no proxy requests
            self._send(Page(400, "text/plain; charset=utf-8", b"bad path\n"), body)
            return
        if path in ("/", "/index.html"):
            self.site.catalog.refresh()  # a run started since the viewer did
        self._send(self.site.page(path[1:]), body)

    def _host_ok(self) -> bool:
        port = self.server.server_address[1]  # type: ignore[index]  # an AF_INET (host, port)
        return self.headers.get("Host", "") in (f"{LOOPBACK}:{port}", f"localhost:{port}")

    def _send(self, page: Page, body: bool, extra: dict[str, str] | None = None) -> None:
        self.send_response(page.status)
        headers = {"Content-Type": page.content_type, "Content-Length": str(len(page.body)),
                   "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                   "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", **(extra or {})}
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(page.body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        return  # a request log on stderr would bury the one line that says where the viewer is


def make_server(site: Site, port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1:port (0: any free port), not yet serving."""
    handler = type("BoundHandler", (Handler,), {"site": site})
    server = ThreadingHTTPServer((LOOPBACK, port), handler)
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    return f"http://{LOOPBACK}:{server.server_address[1]}/"


def serve_in_thread(site: Site, port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving on a thread (tests, embedding); stop with server.shutdown()."""
    server = make_server(site, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="rubricgate-view", daemon=True)
    thread.start()
    return server, thread
