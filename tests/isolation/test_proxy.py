"""isolation/proxy.py: one trial's door. What is not allowed is refused and logged; what is, is
relayed (and, for plain http, the endpoint's status read as it passes); the user's own proxy is
chained through; nothing is left once the door closes. Every server here is on 127.0.0.1."""

from __future__ import annotations

import base64
import errno
import http.client
import socket
import time
from pathlib import Path

import pytest

from rubricgate.isolation import proxy
from rubricgate.isolation.netaccess import HostPort, NetworkAccess, network_access
from rubricgate.isolation.proxy import open_door
from tests.loopback import AnsweringServer


@pytest.fixture
def endpoint():
    server = AnsweringServer(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 12\r\nContent-Length: 5\r\n\r\nslow!")
    yield server
    server.close()


def _door(tmp_path: Path, access: NetworkAccess):
    """A door listening on a loopback port of this namespace (in a trial: the sandbox's own)."""
    door = open_door(access)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    door.listen([listener])
    door.port = listener.getsockname()[1]  # type: ignore[attr-defined]
    return door


def _connect(door) -> socket.socket:
    return socket.create_connection(("127.0.0.1", door.port), timeout=10)


def _ask(door, request: bytes) -> bytes:
    with _connect(door) as client:
        client.sendall(request)
        data = b""
        while chunk := client.recv(65536):
            data += chunk
        return data


def _allow(*ports: int, env: dict[str, str] | None = None) -> NetworkAccess:
    return network_access("allowlist", [HostPort("127.0.0.1", p) for p in ports], env or {})


# -- failure paths first ------------------------------------------------------------------------

@pytest.mark.parametrize("request_head", [
    b"CONNECT 127.0.0.1:{other} HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET http://127.0.0.1:{other}/secret HTTP/1.1\r\nHost: 127.0.0.1:{other}\r\n\r\n",
    b"GET /secret HTTP/1.1\r\nHost: 127.0.0.1:{other}\r\n\r\n",
    b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n",
])
def test_a_destination_not_allowed_is_refused_and_logged(tmp_path, endpoint, request_head) -> None:
    other = AnsweringServer(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nSECRET")
    door = _door(tmp_path, _allow(endpoint.port))
    try:
        answer = _ask(door, request_head.replace(b"{other}", str(other.port).encode()))
    finally:
        log, omitted = door.close()
        other.close()
    assert answer.startswith(b"HTTP/1.1 403 ") and b"SECRET" not in answer and b"agent.network_allow" in answer
    assert other.got == [] and omitted == 0
    assert len(log) == 1 and log[0].outcome == "refused" and "network_allow" in log[0].detail


@pytest.mark.parametrize("request_head, why", [
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "not an HTTP/1 request"),
    (b"GET https://127.0.0.1:1/ HTTP/1.1\r\n\r\n", "only CONNECT and http://"),
    (b"CONNECT user:pw@127.0.0.1:1 HTTP/1.1\r\n\r\n", "credentials"),
    (b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", "not host:port"),
])
def test_what_is_not_a_request_it_relays_is_a_bad_request(tmp_path, request_head, why) -> None:
    door = _door(tmp_path, _allow(1))
    try:
        answer = _ask(door, request_head)
    finally:
        log, _ = door.close()
    assert answer.startswith(b"HTTP/1.1 400 ") and why.encode() in answer
    assert log[0].outcome == "bad_request"


def test_a_request_head_past_the_limit_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(proxy, "MAX_HEAD", 1024)
    door = _door(tmp_path, _allow(1))
    try:
        answer = _ask(door, b"GET http://127.0.0.1:1/ HTTP/1.1\r\n" + b"X: " + b"a" * 4000 + b"\r\n\r\n")
    finally:
        log, _ = door.close()
    assert answer.startswith(b"HTTP/1.1 431 ") and log[0].outcome == "bad_request"


def test_an_allowed_endpoint_that_is_down_is_unreachable_with_why(tmp_path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens once it is closed
    door = _door(tmp_path, _allow(port))
    try:
        answer = _ask(door, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
    finally:
        log, _ = door.close()
    assert answer.startswith(b"HTTP/1.1 502 ")
    assert log[0].outcome == "unreachable" and log[0].detail == "Connection refused"


def test_a_name_that_resolves_to_the_hosts_loopback_is_refused(tmp_path, endpoint, monkeypatch) -> None:
    # DNS is below the proxy: a name allowed as a remote host that points at 127.0.0.1.
    real = proxy._dial
    monkeypatch.setattr(proxy, "_dial", lambda host, port, via="": real("127.0.0.1", endpoint.port, via))
    access = network_access("allowlist", [HostPort("api.example.com", 443)], {})
    door = _door(tmp_path, access)
    try:
        answer = _ask(door, b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n")
    finally:
        log, _ = door.close()
    assert answer.startswith(b"HTTP/1.1 403 ") and b"resolves to the host's loopback" in answer
    assert log[0].outcome == "refused"



def test_past_the_open_limit_a_connection_is_turned_away_and_the_door_stays_bounded(tmp_path, monkeypatch) -> None:
    # A reviewer holding connections open must not take the harness's threads and descriptors.
    monkeypatch.setattr(proxy, "MAX_OPEN", 3)
    door = _door(tmp_path, _allow(1))
    held = [_connect(door) for _ in range(3)]
    try:
        answer = _ask(door, b"")
        assert answer.startswith(b"HTTP/1.1 503 ") and b"more than 3 connections" in answer
        assert len(door._threads) <= 3
        for client in held:
            client.close()
        for _ in range(100):  # the held ones end: the door serves again
            if not door._threads:
                break
            time.sleep(0.02)
        assert _ask(door, b"CONNECT 127.0.0.2:9 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403 ")
    finally:
        log, _ = door.close()
    assert [c.detail for c in log if c.outcome == "refused"][0] == "more than 3 connections open at once"


def test_a_door_out_of_descriptors_for_a_moment_keeps_accepting(tmp_path, endpoint) -> None:
    # EMFILE from accept (another trial took the harness's descriptors) is passing, not the end.
    class Starved:
        def __init__(self, real: socket.socket):
            self.real, self.failures = real, 2

        def accept(self):
            if self.failures:
                self.failures -= 1
                raise OSError(errno.EMFILE, "Too many open files")
            return self.real.accept()

        def __getattr__(self, name):
            return getattr(self.real, name)

    door = open_door(_allow(endpoint.port))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    door.port = listener.getsockname()[1]  # type: ignore[attr-defined]
    door.listen([Starved(listener)])  # type: ignore[list-item]
    try:
        answer = _ask(door, f"GET http://127.0.0.1:{endpoint.port}/ HTTP/1.1\r\n\r\n".encode())
    finally:
        door.close()
        listener.close()
    assert b"slow!" in answer



def test_a_name_that_resolves_to_one_of_the_hosts_own_addresses_is_refused(monkeypatch) -> None:
    # A service bound to every address answers at the host's own LAN address as on 127.0.0.1.
    class ToItself:
        closed = False

        def getpeername(self):
            return ("192.0.2.7", 443)

        def getsockname(self):
            return ("192.0.2.7", 51000)

        def close(self):
            self.closed = True

    sock = ToItself()
    monkeypatch.setattr(proxy, "_dial", lambda host, port, via="": sock)
    with pytest.raises(proxy.Refused, match="one of its own addresses"):
        proxy.connect(HostPort("api.example.com", 443), None, True)
    assert sock.closed


# -- what is allowed ----------------------------------------------------------------------------

def test_plain_http_is_forwarded_one_request_at_a_time_and_its_status_logged(tmp_path, endpoint) -> None:
    door = _door(tmp_path, _allow(endpoint.port))
    head = (f"POST http://127.0.0.1:{endpoint.port}/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{endpoint.port}\r\n"
            "Proxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi").encode()
    try:
        answer = _ask(door, head)
    finally:
        log, _ = door.close()
    assert answer.endswith(b"slow!") and b"429" in answer
    sent = endpoint.got[0]
    assert sent.startswith(b"POST /v1/messages HTTP/1.1\r\n")  # origin form to the endpoint
    assert b"Proxy-Authorization" not in sent and b"keep-alive" not in sent and b"Connection: close" in sent
    entry = log[0]
    assert (entry.kind, entry.outcome, entry.status, entry.retry_after) == ("http", "relayed", 429, "12")
    assert entry.received == len(answer) - len(b"Connection: close\r\n") and entry.sent > 0  # the endpoint's bytes


@pytest.mark.parametrize("answer_head", [b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n"
                                         b"Keep-Alive: timeout=5\r\n"])
def test_a_plain_http_answer_tells_the_client_the_connection_closes(tmp_path, answer_head) -> None:
    """The endpoint was asked to close: a client told nothing (HTTP/1.1 keeps connections) would
    send its next request into the closed socket and fail with ECONNRESET."""
    body = b'{"ok": true}'
    keeps = AnsweringServer(answer_head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    door = _door(tmp_path, _allow(keeps.port))
    try:
        answer = _ask(door, f"POST http://127.0.0.1:{keeps.port}/v1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
                      .encode())
    finally:
        log, _ = door.close()
        keeps.close()
    head, _, got = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 200 OK" and got == body
    assert [line for line in lines if line.lower().startswith((b"connection", b"keep-alive"))] == [b"Connection: close"]
    assert log[0].status == 200


def test_a_keep_alive_client_sends_request_after_request_through_the_proxy(tmp_path) -> None:
    """As an agent CLI's HTTP client does between turns: it keeps a connection unless told it closes."""
    body = b'{"ok": true}'
    endpoint = AnsweringServer(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    door = _door(tmp_path, _allow(endpoint.port))
    client = http.client.HTTPConnection("127.0.0.1", door.port, timeout=10)
    try:
        answers = []
        for turn in range(3):
            client.request("POST", f"http://127.0.0.1:{endpoint.port}/v1/messages", body=b"turn %d" % turn)
            answers.append(client.getresponse().read())
    finally:
        client.close()
        log, _ = door.close()
        endpoint.close()
    assert answers == [body] * 3 and [e.status for e in log] == [200] * 3


def test_a_request_sent_after_the_answer_on_the_same_connection_never_reaches_that_endpoint(tmp_path) -> None:
    """An endpoint that keeps its connection (and answers with a bare-LF head) cannot catch the
    client's next request, meant for another host: the proxy relays one request per connection."""
    keeps = AnsweringServer(b"HTTP/1.1 200 OK\nContent-Length: 2\nConnection: keep-alive\n\nok", keep_reading=True)
    door = _door(tmp_path, _allow(keeps.port))
    try:
        with _connect(door) as client:
            client.sendall(f"GET http://127.0.0.1:{keeps.port}/a HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            answer = b""
            while not answer.endswith(b"ok"):
                answer += client.recv(65536)
            client.sendall(b"GET http://other.example/api HTTP/1.1\r\nAuthorization: Bearer OTHER-SECRET\r\n\r\n")
            client.shutdown(socket.SHUT_WR)  # the endpoint reads on until the client is done
            assert client.recv(65536) == b""
    finally:
        log, _ = door.close()
        keeps.close()
    assert b"Connection: close\r\n" in answer and len(keeps.got) == 1 and b"OTHER-SECRET" not in keeps.got[0]
    assert log[0].sent == len(keeps.got[0]) and keeps.got[0].startswith(b"GET /a HTTP/1.1")


def test_an_answer_head_past_the_limit_is_a_502_for_the_client(tmp_path) -> None:
    huge = AnsweringServer(b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * (70 * 1024) + b"\r\n\r\nok")
    door = _door(tmp_path, _allow(huge.port))
    try:
        answer = _ask(door, f"GET http://127.0.0.1:{huge.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    finally:
        log, _ = door.close()
        huge.close()
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"X-Pad" not in answer
    assert "answer head is over" in log[0].detail


def test_an_answer_cut_inside_its_head_is_passed_on_as_it_came(tmp_path) -> None:
    cut = AnsweringServer(b"HTTP/1.1 502 Bad Gat")
    door = _door(tmp_path, _allow(cut.port))
    try:
        answer = _ask(door, f"GET http://127.0.0.1:{cut.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    finally:
        log, _ = door.close()
        cut.close()
    assert answer == b"HTTP/1.1 502 Bad Gat" and log[0].outcome == "relayed" and log[0].received == len(answer)


def test_a_client_that_ignored_the_proxy_variables_reaches_a_loopback_endpoint_by_its_host(tmp_path, endpoint) -> None:
    door = _door(tmp_path, _allow(endpoint.port))
    try:
        answer = _ask(door, f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{endpoint.port}\r\n\r\n".encode())
    finally:
        log, _ = door.close()
    assert answer.endswith(b"slow!") and endpoint.got[0].startswith(b"GET /v1/models HTTP/1.1")
    assert log[0].outcome == "relayed" and log[0].status == 429


def test_a_tunnel_relays_bytes_both_ways_and_counts_them(tmp_path) -> None:
    echo = AnsweringServer(b"pong", keep_reading=True)
    door = _door(tmp_path, _allow(echo.port))
    try:
        with _connect(door) as client:
            client.sendall(f"CONNECT 127.0.0.1:{echo.port} HTTP/1.1\r\n\r\n".encode())
            assert client.recv(100) == b"HTTP/1.1 200 Connection established\r\n\r\n"
            client.sendall(b"ping\r\n\r\n")
            assert client.recv(100) == b"pong"
    finally:
        log, _ = door.close()
        echo.close()
    assert (log[0].kind, log[0].outcome, log[0].sent, log[0].received, log[0].status) == ("tunnel", "relayed", 8, 4, None)


def test_the_users_own_proxy_is_chained_with_its_credentials(tmp_path) -> None:
    upstream = AnsweringServer(b"HTTP/1.1 200 Connection established\r\n\r\nfrom-upstream")
    env = {"HTTPS_PROXY": f"http://alice:s%40cret@127.0.0.1:{upstream.port}"}
    access = network_access("allowlist", [HostPort("api.example.com", 443)], env)
    door = _door(tmp_path, access)
    try:
        answer = _ask(door, b"CONNECT api.example.com:443 HTTP/1.1\r\nProxy-Authorization: Basic bm9wZQ==\r\n\r\n")
    finally:
        log, _ = door.close()
        upstream.close()
    assert answer == b"HTTP/1.1 200 Connection established\r\n\r\nfrom-upstream"
    asked = upstream.got[0]
    assert asked.startswith(b"CONNECT api.example.com:443 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic " + base64.b64encode(b"alice:s@cret") in asked and b"bm9wZQ" not in asked
    assert log[0].outcome == "relayed"


def test_the_users_proxy_refusing_is_unreachable_and_says_so(tmp_path) -> None:
    upstream = AnsweringServer(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
    access = network_access("allowlist", [HostPort("api.example.com", 443)],
                            {"https_proxy": f"http://127.0.0.1:{upstream.port}"})
    door = _door(tmp_path, access)
    try:
        answer = _ask(door, b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n")
    finally:
        log, _ = door.close()
        upstream.close()
    assert answer.startswith(b"HTTP/1.1 502 ")
    assert log[0].outcome == "unreachable" and "upstream proxy answered 407" in log[0].detail


def test_plain_http_goes_to_the_users_http_proxy_in_absolute_form(tmp_path) -> None:
    upstream = AnsweringServer(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
    access = network_access("allowlist", [HostPort("models.example.com", 80)],
                            {"HTTP_PROXY": f"http://bob:pw@127.0.0.1:{upstream.port}"})
    door = _door(tmp_path, access)
    try:
        _ask(door, b"GET http://models.example.com/v1 HTTP/1.1\r\nHost: models.example.com\r\n\r\n")
    finally:
        log, _ = door.close()
        upstream.close()
    sent = upstream.got[0]
    assert sent.startswith(b"GET http://models.example.com:80/v1 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic " + base64.b64encode(b"bob:pw") in sent
    assert log[0].status == 503


def test_no_proxy_and_loopback_endpoints_skip_the_users_proxy(endpoint) -> None:
    env = {"HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "internal.example.com,.corp"}
    access = network_access("allowlist", [], env)
    assert access.upstream_for(HostPort("api.example.com", 443), True) is not None
    for host in ("internal.example.com", "a.internal.example.com", "x.corp", "127.0.0.1", "localhost"):
        assert access.upstream_for(HostPort(host, 443), True) is None, host


def test_closing_the_door_ends_what_is_open_and_stops_listening(tmp_path) -> None:
    silent = AnsweringServer(b"", keep_reading=True)
    door = _door(tmp_path, _allow(silent.port))
    client = _connect(door)
    client.sendall(f"CONNECT 127.0.0.1:{silent.port} HTTP/1.1\r\n\r\n".encode())
    assert client.recv(100).startswith(b"HTTP/1.1 200")
    log, _ = door.close(grace_s=5)
    assert client.recv(100) == b""  # the proxy ended its side
    client.close()
    silent.close()
    with pytest.raises(OSError):
        _connect(door)  # nothing listens any more
    assert [c.outcome for c in log] == ["relayed"]


def test_past_the_log_limit_connections_are_counted(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(proxy, "MAX_LOGGED", 2)
    door = _door(tmp_path, _allow(1))
    try:
        for _ in range(4):
            _ask(door, b"CONNECT 127.0.0.2:1 HTTP/1.1\r\n\r\n")
    finally:
        log, omitted = door.close()
    assert len(log) == 2 and omitted == 2


def test_past_the_log_limit_the_request_still_open_at_the_end_is_kept(tmp_path, monkeypatch) -> None:
    # A trial's timeout is judged by its last connection (an endpoint that never answered): the
    # connections before it are what is dropped, never it.
    monkeypatch.setattr(proxy, "MAX_LOGGED", 2)
    silent = AnsweringServer(b"", keep_reading=True)
    endpoint_port = silent.port
    door = _door(tmp_path, _allow(endpoint_port))
    try:
        for port in (1, 2, 3):
            _ask(door, f"CONNECT 127.0.0.2:{port} HTTP/1.1\r\n\r\n".encode())
        hung = _connect(door)
        hung.sendall(f"CONNECT 127.0.0.1:{silent.port} HTTP/1.1\r\n\r\n".encode())
        assert hung.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        log, omitted = door.close()
        silent.close()
    # Each refused connection is logged when its thread ends, which need not be in the order sent.
    kept = [(c.port, c.outcome) for c in log]
    assert len(kept) == 2 and omitted == 2 and (endpoint_port, "relayed") in kept, kept
    assert next(c for c in log if c.port == endpoint_port).received == 0
