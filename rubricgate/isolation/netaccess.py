"""What a sandboxed reviewer may reach over the network, and how its sandbox is wired for it.

`agent.sandbox_network`:

- `allowlist` (the default): the sandbox has a network namespace of its own, with nothing in it
  but its loopback. The reviewer reaches the outside only through rubricgate's proxy
  (isolation/proxy.py), which runs in the harness, outside the sandbox, and lets through only
  the allowed `host:port`s: the model endpoints of the run's CLIs (from their endpoint
  variables, or each CLI's public default) and `agent.network_allow`. The proxy's listening
  socket is made inside the sandbox's namespace (isolation/netns.py) before the agent may
  start, at 127.0.0.1:PORT there, and HTTP_PROXY / HTTPS_PROXY point the CLI at it; nothing
  runs in the sandbox for it. A loopback endpoint (a local gateway, a test's scripted server at
  127.0.0.1:PORT) is reachable at exactly the host:port named and nothing else of the host's
  loopback; the proxy listens on that port in the sandbox too, so a client that ignores proxy
  variables reaches it all the same. Abstract unix sockets are per network namespace: the
  host's are out of reach.
- `none`: a namespace of its own and no proxy: nothing outside the sandbox.
- `shared`: the host's network, every loopback service and abstract socket included: an
  explicit opt-out, warned in every report.

A user's own proxy (HTTPS_PROXY / HTTP_PROXY / NO_PROXY in agent.env_allowlist) is where the
harness's proxy connects to reach an allowed host: the chain keeps working behind a corporate
proxy, and the reviewer never sees its address or credentials.
"""

from __future__ import annotations

import base64
import ipaddress
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

NetworkMode = Literal["allowlist", "shared", "none"]
PROXY_PORT = 3128  # where the proxy listens in the sandbox, unless a loopback endpoint gives the port
# Every spelling of the proxy variables: clients read different ones (curl only the lowercase
# http_proxy). Inside the sandbox all are ours; the user's own are the harness's upstream.
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
CLEARED_VARS = ("ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy")
DEFAULT_PORTS = {"http": 80, "https": 443}


class NetworkUnavailable(ValueError):
    """The allowlist mode cannot be set up here (a user's proxy it cannot chain through); `fix` says how."""

    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.fix = fix


@dataclass(frozen=True, order=True)
class HostPort:
    """One allowed destination. `host` lowercased, an IPv6 address without brackets."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """Named as the host's loopback: `localhost`, 127.0.0.0/8, ::1 (or the unspecified
        address, which connects there too)."""
        return is_loopback_name(self.host)


def is_loopback_name(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (address.is_loopback or address.is_unspecified
            or bool(mapped and (mapped.is_loopback or mapped.is_unspecified)))


def reaches_this_host(sock: socket.socket) -> bool:
    """A connected socket whose other end is this machine: its loopback, or one of its own
    addresses (the connection's two ends are then the same address), where a service bound to
    every address answers as on 127.0.0.1."""
    peer = sock.getpeername()[0]
    return is_loopback_name(peer) or peer == sock.getsockname()[0]


def parse_host_port(text: str) -> HostPort:
    """`host:port` or `[v6]:port` -> HostPort; ValueError saying what is wrong."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not host:port (for example api.example.com:443)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets, [::1]:8080")
    if not host or any(c in host for c in "/@ \t?#[]"):
        raise ValueError(f"{text!r} is not host:port (for example api.example.com:443)")
    return HostPort(host.lower(), int(port))


def endpoint_of(url: str) -> HostPort | None:
    """The host:port an http(s) URL connects to (scheme's default port), None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname or port is None:
        return None
    return HostPort(parts.hostname.lower(), port)


@dataclass(frozen=True)
class Upstream:
    """The user's own proxy, which the harness's proxy goes through to reach an allowed host."""

    host: str
    port: int
    authorization: str = ""  # a Proxy-Authorization value from the URL's user:password
    tls: bool = False  # an https:// proxy (TLS to the proxy itself)

    @classmethod
    def parse(cls, url: str, variable: str) -> Upstream:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        try:
            port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
        except ValueError:
            port = None
        if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname or port is None:
            raise NetworkUnavailable(f"{variable} is not an http:// or https:// proxy URL the sandbox's proxy can "
                                     f"chain through (scheme {parts.scheme!r})",
                                     f"set {variable} to http://host:port, or leave it out of agent.env_allowlist")
        auth = ""
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            auth = "Basic " + base64.b64encode(pair.encode()).decode()
        return cls(parts.hostname, port, auth, parts.scheme.lower() == "https")


@dataclass(frozen=True)
class NetworkAccess:
    """A run's network decision for its sandboxed agents (see the module docstring)."""

    mode: NetworkMode = "allowlist"
    allow: tuple[HostPort, ...] = ()
    https_upstream: Upstream | None = None
    http_upstream: Upstream | None = None
    no_proxy: tuple[str, ...] = ()  # hosts the harness reaches directly, not through the upstream
    ports: tuple[int, ...] = (PROXY_PORT,)  # where the proxy listens in the sandbox: the proxy variables' first

    @property
    def proxied(self) -> bool:
        return self.mode == "allowlist"

    def allows(self, host: str, port: int) -> bool:
        return HostPort(host.lower().strip("[]"), port) in self.allow

    def upstream_for(self, target: HostPort, tunnel: bool) -> Upstream | None:
        """The user's proxy to reach `target` through (None: directly). A loopback target is
        always direct; so is one NO_PROXY names."""
        if target.loopback or _no_proxy_matches(self.no_proxy, target.host):
            return None
        return self.https_upstream if tunnel else (self.http_upstream or None)

    def sandbox_env(self) -> dict[str, str]:
        """The proxy variables inside the sandbox (the user's own are replaced)."""
        url = f"http://127.0.0.1:{self.ports[0]}"
        return {**dict.fromkeys(PROXY_VARS, url), "NODE_USE_ENV_PROXY": "1"}


def network_access(mode: NetworkMode, endpoints: Iterable[HostPort], env: Mapping[str, str]) -> NetworkAccess:
    """The run's NetworkAccess: `endpoints` allowed (the CLIs' and agent.network_allow), the
    user's proxy from `env` (the agent's allowlisted environment). Raises NetworkUnavailable
    when that proxy cannot be chained through."""
    if mode != "allowlist":
        return NetworkAccess(mode)
    allow = tuple(sorted(set(endpoints)))
    https = _first(env, "HTTPS_PROXY", "https_proxy")
    http = _first(env, "HTTP_PROXY", "http_proxy")
    no_proxy = tuple(h.strip().lower().lstrip(".") for h in (_first(env, "NO_PROXY", "no_proxy") or "").split(",")
                     if h.strip())
    return NetworkAccess(mode, allow, Upstream.parse(https, "HTTPS_PROXY") if https else None,
                         Upstream.parse(http, "HTTP_PROXY") if http else None, no_proxy, sandbox_ports(allow))


def sandbox_ports(allow: Iterable[HostPort]) -> tuple[int, ...]:
    """Where the proxy listens in the sandbox: each loopback endpoint's port (so a client that
    ignores the proxy variables reaches it all the same), the first of them being the one the
    proxy variables name; PROXY_PORT when no endpoint is on loopback."""
    loop = sorted({hp.port for hp in allow if hp.loopback})
    return tuple(loop) if loop else (PROXY_PORT,)


def _first(env: Mapping[str, str], *names: str) -> str:
    return next((env[n] for n in names if env.get(n)), "")


def _no_proxy_matches(entries: tuple[str, ...], host: str) -> bool:
    """NO_PROXY as curl reads it: `*`, an exact host, or a domain suffix (`example.com` and
    `.example.com` both cover `api.example.com`)."""
    host = host.lower()
    return any(e == "*" or host == e or host.endswith("." + e) for e in entries)

