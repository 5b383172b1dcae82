"""isolation/netaccess.py: allowlist entries, the user's proxy, and the sandbox's wiring."""

from __future__ import annotations

import socket

import pytest

from rubricgate.isolation.limits import Limits
from rubricgate.isolation.netaccess import (
    PROXY_PORT,
    HostPort,
    NetworkUnavailable,
    Upstream,
    endpoint_of,
    network_access,
    parse_host_port,
    reaches_this_host,
)
from rubricgate.isolation.sandbox import GATE_LINE, SandboxPolicy, agent_start, network_args, sandbox_env, wrap


@pytest.mark.parametrize("text", ["api.example.com", "api.example.com:", ":443", "api.example.com:0",
                                  "api.example.com:65536", "::1:443", "https://api.example.com:443",
                                  "user@host:443", "a b:1", "[]:80", "host:http"])
def test_bad_host_ports_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_host_port(text)


def test_host_ports_parse_and_print_back() -> None:
    assert parse_host_port("API.Example.com:443") == HostPort("api.example.com", 443)
    assert str(parse_host_port("[::1]:8080")) == "[::1]:8080" and parse_host_port("[::1]:8080").loopback
    for loop in ("127.0.0.1:1", "127.9.9.9:1", "localhost:1", "[::1]:1", "0.0.0.0:1", "[::ffff:127.0.0.1]:1"):
        assert parse_host_port(loop).loopback, loop
    assert not parse_host_port("api.example.com:443").loopback and not parse_host_port("10.0.0.1:1").loopback


def test_endpoint_urls_give_their_host_and_port() -> None:
    assert endpoint_of("https://api.anthropic.com") == HostPort("api.anthropic.com", 443)
    assert endpoint_of("http://127.0.0.1:8123/v1") == HostPort("127.0.0.1", 8123)
    assert endpoint_of("http://[::1]/x") == HostPort("::1", 80)
    for bad in ("", "api.anthropic.com", "ftp://x", "http://x:99999"):
        assert endpoint_of(bad) is None, bad


def test_an_upstream_proxy_that_cannot_be_chained_is_one_error_with_its_fix() -> None:
    with pytest.raises(NetworkUnavailable) as caught:
        network_access("allowlist", [], {"HTTPS_PROXY": "socks5://127.0.0.1:1080"})
    assert "HTTPS_PROXY" in str(caught.value) and "http://host:port" in caught.value.fix
    assert Upstream.parse("proxy.corp:3128", "HTTPS_PROXY") == Upstream("proxy.corp", 3128)


def test_the_in_sandbox_ports_put_a_loopback_endpoint_first() -> None:
    assert network_access("allowlist", [HostPort("api.anthropic.com", 443)], {}).ports == (PROXY_PORT,)
    access = network_access("allowlist", [HostPort("127.0.0.1", 9000), HostPort("localhost", 8000)], {})
    assert access.ports == (8000, 9000)
    assert network_access("allowlist", [HostPort("127.0.0.1", 80)], {}).ports == (80,)  # made by the harness
    assert access.sandbox_env()["HTTPS_PROXY"] == "http://127.0.0.1:8000"


def test_the_sandbox_gets_its_own_network_unless_shared() -> None:
    allow = network_access("allowlist", [], {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "x"})
    assert network_args(allow, 7) == ["--unshare-net", "--info-fd", "7"]
    assert network_args(network_access("none", [], {}), None) == ["--unshare-net"]
    assert network_args(network_access("shared", [], {}), None) == []
    with pytest.raises(ValueError):
        network_args(allow, None)
    env = sandbox_env(allow, {"PATH": "/usr/bin", "HTTPS_PROXY": "http://user:pw@proxy.corp:3128", "NO_PROXY": "x",
                              "ALL_PROXY": "socks5://y"})
    assert "user:pw" not in str(env) and "NO_PROXY" not in env and "ALL_PROXY" not in env
    assert env["https_proxy"] == env["HTTP_PROXY"] == f"http://127.0.0.1:{PROXY_PORT}" and env["PATH"] == "/usr/bin"


def test_a_sandbox_by_allowlist_is_always_gated_until_its_proxy_listens(tmp_path) -> None:
    policy = SandboxPolicy("bwrap", network=network_access("allowlist", [], {}))
    argv, payload = wrap(policy, ["/bin/true"], cwd=tmp_path, env={}, info_fd=9)
    args = payload.decode().split("\0")
    assert args[args.index("--unshare-net") + 1:args.index("--unshare-net") + 3] == ["--info-fd", "9"]
    start = list(agent_start(Limits(), gated=True))
    assert argv[-len(start) - 1:-1] == start and GATE_LINE in " ".join(start) and argv[-1] == "/bin/true"
    offline, _ = wrap(SandboxPolicy("bwrap", network=network_access("none", [], {})), ["/bin/true"], cwd=tmp_path,
                      env={})
    assert offline[-2:] == [offline[-2], "/bin/true"] and GATE_LINE not in " ".join(offline)


def test_a_connection_to_the_hosts_loopback_reaches_this_host() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname()) as sock:
            assert reaches_this_host(sock)
