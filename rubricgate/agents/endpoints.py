"""The hosts each agent CLI needs to reach: its model endpoint, for the sandbox's network
allowlist (isolation/netaccess.py).

A CLI's endpoint is its endpoint variable (the spec's `endpoint.base_url`: ANTHROPIC_BASE_URL,
OPENAI_BASE_URL, ...) when the agent's environment sets it, else the public hosts the CLI talks
to by default (`endpoint.default_hosts`, port 443). `agent.network_allow` adds what no variable
names (a second provider, a gateway). A `command` agent gets the endpoint of its transcript
`format`'s CLI and every endpoint variable its environment sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rubricgate.agents.registry import cli_specs
from rubricgate.agents.spec import CliSpec
from rubricgate.isolation.netaccess import HostPort, endpoint_of, parse_host_port

HTTPS = 443
# OpenCode without a base URL calls the provider its `provider/model` names.
OPENCODE_PROVIDERS = {"anthropic": "api.anthropic.com", "openai": "api.openai.com"}
SNOWFLAKE_ACCOUNT = "SNOWFLAKE_ACCOUNT"  # Cortex names an account, not a URL
SNOWFLAKE_HOST = "{account}.snowflakecomputing.com"


def agent_endpoints(name: str, env: Mapping[str, str], model: str | None = None,
                    fmt: str | None = None) -> list[HostPort]:
    """The host:port entries agent `name` needs (see the module docstring)."""
    specs = cli_specs()
    if name == "command":
        found = [hp for spec in specs.values() if (hp := endpoint_of(env.get(spec.endpoint.base_url, ""))) is not None]
        by_format = next((s for s in specs.values() if s.format.name == fmt), None)
        return list(dict.fromkeys(found + (_spec_endpoints(by_format, env, model) if by_format is not None else [])))
    return _spec_endpoints(specs[name], env, model) if name in specs else []


def run_endpoints(agents: Iterable[tuple[str, str | None]], env: Mapping[str, str], extra: Iterable[str],
                  fmt: str | None = None) -> list[HostPort]:
    """Every endpoint of the run's agents, given as (name, model), plus agent.network_allow."""
    found = {hp for name, model in agents for hp in agent_endpoints(name, env, model, fmt)}
    return sorted(found | {parse_host_port(entry) for entry in extra})


def _spec_endpoints(spec: CliSpec, env: Mapping[str, str], model: str | None) -> list[HostPort]:
    point = spec.endpoint
    if point.base_url == SNOWFLAKE_ACCOUNT:
        account = env.get(SNOWFLAKE_ACCOUNT, "").strip().lower()
        return [HostPort(SNOWFLAKE_HOST.format(account=account), HTTPS)] if account else []
    named = endpoint_of(env.get(point.base_url, ""))
    if named is not None:
        return [named]
    hosts = point.default_hosts or ((OPENCODE_PROVIDERS.get(_provider(model), ""),) if spec.name == "opencode" else ())
    return [HostPort(host, HTTPS) for host in hosts if host]


def _provider(model: str | None) -> str:
    return model.split("/", 1)[0] if model and "/" in model else ""
