"""agents/preflight.py: a failed preflight under the network allowlist names the proxy's view of it."""

from __future__ import annotations

from rubricgate.agents.preflight import network_problem
from rubricgate.isolation.netaccess import NetworkAccess
from rubricgate.isolation.sandbox import SandboxPolicy
from rubricgate.models.transcript import NetworkConnection

ALLOWLIST = SandboxPolicy("bwrap", network=NetworkAccess("allowlist"))


def _conn(host: str, outcome: str, detail: str = "") -> NetworkConnection:
    return NetworkConnection(host=host, port=443, kind="tunnel", outcome=outcome, detail=detail)  # type: ignore[arg-type]


def test_a_refused_host_names_network_allow_and_the_endpoint_variable() -> None:
    problem = network_problem("claude", [_conn("api.anthropic.com", "refused", "not in the allowlist")], ALLOWLIST, {})
    assert problem is not None
    line = problem.one_line()
    assert "refused api.anthropic.com:443" in line and "agent.network_allow" in line and "ANTHROPIC_BASE_URL" in line
    assert "agent.sandbox_network" in line


def test_an_unreachable_endpoint_says_what_the_proxy_saw() -> None:
    problem = network_problem("codex", [_conn("gw.corp", "unreachable", "Connection refused")], ALLOWLIST,
                              {"OPENAI_BASE_URL": "https://gw.corp/v1"})
    assert problem is not None
    line = problem.one_line()
    assert "cannot reach https://gw.corp/v1" in line and "Connection refused" in line and "OPENAI_BASE_URL" in line


def test_once_the_endpoint_answered_or_outside_the_allowlist_the_cli_error_decides() -> None:
    relayed = [_conn("api.anthropic.com", "refused"), _conn("127.0.0.1", "relayed")]
    assert network_problem("claude", relayed, ALLOWLIST, {}) is None
    assert network_problem("claude", [_conn("x", "refused")], SandboxPolicy("bwrap", network=NetworkAccess("shared")),
                           {}) is None
    assert network_problem("claude", [], ALLOWLIST, {}) is None
