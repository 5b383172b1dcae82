"""The allowlisting proxy a sandboxed reviewer reaches the network through (isolation/netaccess.py).

It runs in the harness, outside the sandbox, one door per trial: sockets listening at
127.0.0.1:PORT in the trial's own network namespace (made there by isolation/netns.py), which
the reviewer's HTTP_PROXY names. On each connection it reads one HTTP request head and either

- opens a tunnel (`CONNECT host:port`: https, or any TCP a client tunnels),
- forwards one plain http request (an absolute URI, `GET http://host:port/path`, as proxy
  clients send; or an origin-form request, `GET /path` with its `Host`, from a client that
  ignored the proxy variables and connected to a loopback endpoint's port in the sandbox),
  with `Connection: close` so that the next request is judged on its own (said to the endpoint,
  and to the client in the answer's head: isolation/answer_head.py; what the client sends after
  the answer began is not relayed),

when the host:port is allowed, and answers 403 naming `agent.network_allow` when it is not. A
host not named as loopback that resolves to the host's loopback is refused too.

Every connection is logged for the trial (`Connection`: host, port, outcome, the endpoint's
HTTP status and Retry-After when the harness can see them, i.e. plain http, and the bytes each
way): never a header value, a path or a body. The trial's record keeps the log
(Transcript.network), where failure classification can read what the endpoint answered.
"""

from __future__ import annotations

import errno
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from rubricgate.isolation.answer_head import MAX_HEAD, AnswerHeads, HeadTooLarge, status_of
from rubricgate.isolation.netaccess import HostPort, NetworkAccess, Upstream, parse_host_port, reaches_this_host

Outcome = Literal["relayed", "refused", "unreachable", "bad_request"]
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 30.0
MAX_LOGGED = 200  # the latest connections kept per trial; the earlier ones are counted
MAX_OPEN = 64  # connections one trial holds open at once (each is a thread and two descriptors)
ACCEPT_RETRY_S = 0.05
_PASSING = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED, errno.EPROTO}
CHUNK = 65536
_HOP = {b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization", b"proxy-authenticate", b"te",
        b"trailer", b"upgrade"}


@dataclass
class Connection:
    """One connection the reviewer made through the proxy (the trial's network log)."""

    host: str
    port: int
    kind: Literal["tunnel", "http"]
    outcome: Outcome
    detail: str = ""  # why it was refused or could not be made
    status: int | None = None  # the endpoint's HTTP status, when the harness sees it (plain http)
    retry_after: str | None = None  # the endpoint's Retry-After, likewise
    sent: int = 0  # bytes from the reviewer towards the endpoint
    received: int = 0  # bytes from the endpoint to the reviewer
    at_s: float = 0.0  # seconds after the trial's door opened
    duration_s: float = 0.0


class Refused(Exception):
    """The request is answered by the proxy itself: (status, outcome, detail)."""

    def __init__(self, status: int, outcome: Outcome, detail: str):
        super().__init__(detail)
        self.status, self.outcome, self.detail = status, outcome, detail


@dataclass
class _Request:
    kind: Literal["tunnel", "http"]
    target: HostPort
    rest: bytes  # bytes after the head the client already sent
    line: tuple[bytes, bytes, bytes] = (b"", b"", b"")  # http: method, origin-form path, version
    headers: tuple[bytes, ...] = ()  # http: the client's, hop-by-hop ones dropped

    def head(self, upstream: Upstream | None) -> bytes:
        """The http request as sent on: origin-form to the endpoint, absolute-form (with the
        user's proxy credentials) to an upstream proxy; always `Connection: close`."""
        method, path, version = self.line
        target = f"http://{self.target}".encode() + path if upstream is not None else path
        extra = ([b"Host: " + str(self.target).encode()]
                 if not any(h.lower().startswith(b"host:") for h in self.headers) else [])
        if upstream is not None and upstream.authorization:
            extra.append(b"Proxy-Authorization: " + upstream.authorization.encode())
        return b"\r\n".join([b" ".join([method, target, version]), *self.headers, *extra,
                             b"Connection: close", b"", b""])


@dataclass
class TrialDoor:
    """One trial's way out: `listen()` takes the sockets made in its sandbox's namespace and
    accepts on them; `close()` ends it all and returns its log. Made by `open_door`."""

    access: NetworkAccess
    opened: float = field(default_factory=time.monotonic)
    log: list[Connection] = field(default_factory=list)
    omitted: int = 0
    _listeners: list[socket.socket] = field(default_factory=list)
    _active: set[socket.socket] = field(default_factory=set)
    _threads: set[threading.Thread] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def listen(self, listeners: list[socket.socket]) -> None:
        """Accept the reviewer's connections on these sockets (one thread each) until close()."""
        with self._lock:
            if self._closed:
                for sock in listeners:
                    sock.close()
                return
            self._listeners += listeners
        for sock in listeners:
            threading.Thread(target=self._accept, args=(sock,), name="rubricgate-proxy", daemon=True).start()

    def close(self, grace_s: float = 2.0) -> tuple[list[Connection], int]:
        """Stop accepting, end what is still open (the sandbox is gone), and return (log, omitted)."""
        with self._lock:
            self._closed = True
            live = [*self._listeners, *self._active]
            threads = list(self._threads)
        for sock in live:
            _shut(sock)
        for sock in self._listeners:
            sock.close()
        deadline = time.monotonic() + grace_s
        for thread in threads:
            if thread.is_alive():  # one not started yet ends at once (its sockets are shut on tracking)
                thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            return sorted(self.log, key=lambda c: c.at_s), self.omitted

    def _accept(self, listener: socket.socket) -> None:
        while not self._closed:
            try:
                client, _ = listener.accept()
            except OSError as exc:
                if self._closed or exc.errno not in _PASSING:
                    return  # shut down: the trial ended
                time.sleep(ACCEPT_RETRY_S)  # the harness is short of descriptors for now: the door stays open
                continue
            self._admit(client)

    def _admit(self, client: socket.socket) -> None:
        """Serve `client` on a thread of its own; past MAX_OPEN at once it is answered 503 and
        closed: a reviewer's connections cannot take the descriptors and threads of the harness,
        which every other trial's door and record need."""
        with self._lock:
            crowded = self._closed or len(self._threads) >= MAX_OPEN
            if not crowded:
                thread = threading.Thread(target=self._serve, args=(client,), name="rubricgate-proxy-conn",
                                          daemon=True)
                self._threads.add(thread)
        if crowded:
            self._turn_away(client)
            return
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: this connection alone is lost
            with self._lock:
                self._threads.discard(thread)
            self._turn_away(client)

    def _turn_away(self, client: socket.socket) -> None:
        detail = f"more than {MAX_OPEN} connections open at once"
        if not self._closed:
            _answer(client, 503, detail)
            self._record(Connection("", 0, "tunnel", "refused", detail,
                                    at_s=round(time.monotonic() - self.opened, 3)))
        client.close()

    def _serve(self, client: socket.socket) -> None:
        started = time.monotonic()
        entry = Connection("", 0, "tunnel", "bad_request", at_s=round(started - self.opened, 3))
        server: socket.socket | None = None
        self._track(client)
        try:
            server = self._open(client, entry)
            if server is not None:
                self._track(server)
                relay(client, server, entry)
        except OSError as exc:  # the reviewer or the endpoint hung up mid-way: logged as far as it got
            entry.detail = entry.detail or f"closed: {exc.strerror or exc}"
        finally:
            for sock in (client, server):
                if sock is not None:
                    self._untrack(sock)
                    sock.close()
            entry.duration_s = round(time.monotonic() - started, 3)
            self._record(entry)

    def _open(self, client: socket.socket, entry: Connection) -> socket.socket | None:
        """The endpoint's socket with the request on its way, or None once refused (answered)."""
        try:
            request = read_request(client)
            entry.host, entry.port, entry.kind = request.target.host, request.target.port, request.kind
            if not self.access.allows(request.target.host, request.target.port):
                raise Refused(403, "refused", f"{request.target} is not in the sandbox's network allowlist "
                                              "(agent.network_allow)")
            upstream = self.access.upstream_for(request.target, request.kind == "tunnel")
            server, early = connect(request.target, upstream, request.kind == "tunnel")
        except Refused as exc:
            entry.outcome, entry.detail = exc.outcome, exc.detail
            _answer(client, exc.status, exc.detail)
            return None
        entry.outcome = "relayed"
        if request.kind == "tunnel":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n" + early)
            entry.received += len(early)
        else:
            head = request.head(upstream)
            server.sendall(head)
            entry.sent += len(head)
        if request.rest:
            server.sendall(request.rest)
            entry.sent += len(request.rest)
        return server

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._active.add(sock)
            closed = self._closed
        if closed:  # opened as the door closed: ended like the rest
            _shut(sock)

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._active.discard(sock)

    def _record(self, entry: Connection) -> None:
        with self._lock:
            self._threads.discard(threading.current_thread())
            self.log.append(entry)
            if len(self.log) > MAX_LOGGED:  # the oldest go: a timeout is judged by the last (a hung request)
                del self.log[0]
                self.omitted += 1


def open_door(access: NetworkAccess) -> TrialDoor:
    """A trial's door, before its sandbox exists: it listens once `listen()` is given the sockets."""
    return TrialDoor(access)


def read_request(client: socket.socket) -> _Request:
    """Read and judge one request head; raises Refused for what is not a request we relay."""
    head, rest = read_head(client)
    line, _, fields = head.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise Refused(400, "bad_request", "not an HTTP/1 request")
    method, target, version = parts
    if method == b"CONNECT":
        return _Request("tunnel", _host_port(target.decode("latin-1"), None), rest)
    headers = [h for h in fields.split(b"\r\n") if h]
    if target.startswith(b"/"):  # origin form: a client that came to a loopback endpoint's port directly
        host = next((v.strip() for n, _, v in (h.partition(b":") for h in headers)
                     if n.strip().lower() == b"host"), b"")
        where, path = _host_port(host.decode("latin-1"), 80), target
    elif target.lower().startswith(b"http://"):
        authority, slash, tail = target[7:].partition(b"/")
        where, path = _host_port(authority.decode("latin-1"), 80), b"/" + tail if slash else b"/"
    else:
        raise Refused(400, "bad_request", "only CONNECT and http:// requests are relayed (https goes by CONNECT)")
    kept = tuple(h for h in headers if h.partition(b":")[0].strip().lower() not in _HOP)
    return _Request("http", where, rest, (method, path, version), kept)


def _host_port(text: str, default_port: int | None) -> HostPort:
    if "@" in text:
        raise Refused(400, "bad_request", "credentials in the request's authority")
    bare = text.rsplit("]", 1)[-1] if text.startswith("[") else text
    if ":" not in bare and default_port is not None:
        text = f"{text}:{default_port}"
    try:
        return parse_host_port(text)
    except ValueError as exc:
        raise Refused(400, "bad_request", str(exc)) from None


def read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """(head without its blank line, what followed it) read from sock; Refused past MAX_HEAD."""
    sock.settimeout(HEAD_TIMEOUT_S)
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            raise Refused(431, "bad_request", "request head too large")
        chunk = sock.recv(CHUNK)
        if not chunk:
            raise Refused(400, "bad_request", "closed before a complete request head")
        data += chunk
    sock.settimeout(None)
    head, _, rest = data.partition(b"\r\n\r\n")
    if len(head) > MAX_HEAD:
        raise Refused(431, "bad_request", "request head too large")
    return head, rest


def connect(target: HostPort, upstream: Upstream | None, tunnel: bool) -> tuple[socket.socket, bytes]:
    """(a socket to `target`, bytes already read from it), directly or through the user's proxy
    (a CONNECT for a tunnel, whose answer may arrive with the first bytes of the tunnel; plain
    http goes to the proxy itself, in absolute form: `_Request.head`)."""
    if upstream is None:
        return _direct(target), b""
    sock = _dial(upstream.host, upstream.port, f"the upstream proxy {upstream.host}:{upstream.port}: ")
    if upstream.tls:
        import ssl  # only for an https:// upstream proxy

        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=upstream.host)
    if tunnel:
        auth = f"Proxy-Authorization: {upstream.authorization}\r\n" if upstream.authorization else ""
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{auth}\r\n".encode())
        head, early = read_head(sock)
        status = status_of(head)
        if status is None or not 200 <= status < 300:
            sock.close()
            raise Refused(502, "unreachable", f"the upstream proxy answered {status} to CONNECT {target}")
        return sock, early
    return sock, b""


def _direct(target: HostPort) -> socket.socket:
    sock = _dial(target.host, target.port)
    if not target.loopback and reaches_this_host(sock):
        sock.close()  # a name that resolves to the host itself: only a loopback endpoint named as such
        raise Refused(403, "refused", f"{target} resolves to the host's loopback or one of its own addresses; "
                                      "name it as 127.0.0.1 or localhost in agent.network_allow to allow it")
    return sock


def _dial(host: str, port: int, via: str = "") -> socket.socket:
    """A connected socket; Refused saying why not (`via`: what it was, when not the endpoint)."""
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except socket.gaierror as exc:
        raise Refused(502, "unreachable", f"{via}cannot resolve {host}: {exc.strerror}") from None
    except TimeoutError:
        raise Refused(504, "unreachable", f"{via}connection timed out") from None
    except OSError as exc:
        raise Refused(502, "unreachable", f"{via}{exc.strerror or exc}") from None
    sock.settimeout(None)
    return sock


def _answer(client: socket.socket, status: int, detail: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large", 502: "Bad Gateway",
              503: "Service Unavailable", 504: "Gateway Timeout"}.get(status, "Error")
    body = f"rubricgate sandbox proxy: {detail}\n".encode()
    try:
        client.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                       f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    except OSError:  # the reviewer hung up first: nothing to tell it
        return


def relay(client: socket.socket, server: socket.socket, entry: Connection) -> None:
    """Copy bytes both ways until both sides are done; count them. A plain http answer's head is
    held until complete and passed on saying `Connection: close` (isolation/answer_head.py)."""
    poller = select.poll()
    open_ends = {client.fileno(): (client, server), server.fileno(): (server, client)}
    for fd in open_ends:
        poller.register(fd, select.POLLIN)
    heads = AnswerHeads(done=entry.kind != "http")  # a tunnel's bytes are the client's own business
    while open_ends:
        for fd, _ in poller.poll():
            src, dst = open_ends[fd]
            data = src.recv(CHUNK)
            if not data:
                poller.unregister(fd)
                del open_ends[fd]
                if src is server and heads.held:  # the endpoint ended inside its head: pass on what came
                    client.sendall(heads.held)
                _shut(dst, socket.SHUT_WR)
                if src is server:  # the endpoint is done: nothing more to send it either
                    return
                continue
            if src is client:
                if entry.kind == "http" and heads.done:
                    continue  # a request after the answer said close: never to this endpoint
                dst.sendall(data)
                entry.sent += len(data)
                continue
            entry.received += len(data)
            try:
                dst.sendall(heads.feed(data))
            except HeadTooLarge:
                entry.detail = f"the endpoint's answer head is over {MAX_HEAD} bytes"
                _answer(client, 502, entry.detail)
                return
            entry.status, entry.retry_after = heads.status, heads.retry_after


def _shut(sock: socket.socket, how: int = socket.SHUT_RDWR) -> None:
    try:
        sock.shutdown(how)
    except OSError:  # already closed or never connected: nothing left to stop
        return

