"""The live viewer: stdlib http.server on 127.0.0.1, GET and HEAD only.

It answers only the viewer's own page paths (rubricgate/view/urls.py): nothing maps a request
path onto the file system, so `..`, encoded slashes and absolute paths match no page. Files are
read below the run folders with no link followed (safe.py). A Host header other than the
loopback address it serves on is refused, so a web page elsewhere cannot reach it through DNS
rebinding; every method but GET and HEAD gets 405.

Every page lives under a per-session token, `http://127.0.0.1:PORT/<token>/`, as Jupyter's
server does: the loopback port is reachable by every local user and by any process of this
one (a reviewer in a sandbox that shares the host's network, say), and the runs it serves hold
the suite's answer key. Without the token a request gets 403 and no page. The token is random
per server, printed once in the URL `rubricgate view` shows; every link between pages is
relative (urls.py), so the pages keep it without knowing it.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from rubricgate.view.site import Page, Site

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765


class Handler(BaseHTTPRequestHandler):
    """One request: route it to a page of `site`; refuse everything else."""

    site: Site
    token: str
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
        if not self.path.startswith("/") or self.path.startswith("//"):  # origin-form only, no proxy requests
            self._send(Page(400, "text/plain; charset=utf-8", b"bad path\n"), body)
            return
        path = self._page_path(unquote(urlsplit(self.path).path))
        if path is None:
            self._send(Page(403, "text/plain; charset=utf-8", NO_TOKEN), body)
            return
        if path in ("/", "/index.html"):
            self.site.catalog.refresh()  # a run started since the viewer did
        self._send(self.site.page(path[1:]), body)

    def _page_path(self, path: str) -> str | None:
        """The path below the token (with its leading slash), None without the right token."""
        given, slash, rest = path[1:].partition("/")
        if not slash or not hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        return "/" + rest

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


NO_TOKEN = b"this viewer serves its pages only at the URL with its token, as `rubricgate view` printed it\n"


def make_server(site: Site, port: int = DEFAULT_PORT, token: str | None = None) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1:port (0: any free port), not yet serving; its pages under
    `token` (default: a new random one; url_of names it)."""
    handler = type("BoundHandler", (Handler,), {"site": site, "token": token or secrets.token_urlsafe(24)})
    server = ThreadingHTTPServer((LOOPBACK, port), handler)
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    """The viewer's address with its token: the only URL it serves pages under."""
    token = server.RequestHandlerClass.token  # type: ignore[attr-defined]
    return f"http://{LOOPBACK}:{server.server_address[1]}/{token}/"


def serve_in_thread(site: Site, port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving on a thread (tests, embedding); stop with server.shutdown()."""
    server = make_server(site, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="rubricgate-view",
                              daemon=True)
    thread.start()
    return server, thread
