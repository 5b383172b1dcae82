"""agents/endpoints.py: which host:port each CLI needs, for the sandbox's network allowlist."""

from __future__ import annotations

import pytest

from rubricgate.agents.endpoints import agent_endpoints, run_endpoints
from rubricgate.agents.preflight import diagnose
from rubricgate.agents.registry import cli_specs
from rubricgate.isolation.netaccess import HostPort
from rubricgate.models.transcript import Transcript


def test_an_endpoint_variable_wins_over_the_public_default() -> None:
    assert agent_endpoints("claude", {}) == [HostPort("api.anthropic.com", 443)]
    assert agent_endpoints("claude", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8123"}) == [HostPort("127.0.0.1", 8123)]
    assert agent_endpoints("codex", {}) == [HostPort("api.openai.com", 443)]
    assert agent_endpoints("codex", {"OPENAI_BASE_URL": "https://gw.corp/v1"}) == [HostPort("gw.corp", 443)]


def test_opencode_without_a_base_url_reaches_its_models_provider_only() -> None:
    assert agent_endpoints("opencode", {}, model="anthropic/claude-x") == [HostPort("api.anthropic.com", 443)]
    assert agent_endpoints("opencode", {}, model="openai/gpt-x") == [HostPort("api.openai.com", 443)]
    assert agent_endpoints("opencode", {}, model=None) == []
    assert agent_endpoints("opencode", {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}) == [HostPort("127.0.0.1", 9)]


def test_cortex_reaches_its_snowflake_account() -> None:
    assert agent_endpoints("cortex", {"SNOWFLAKE_ACCOUNT": "MyOrg-Acct"}) == [
        HostPort("myorg-acct.snowflakecomputing.com", 443)]
    assert agent_endpoints("cortex", {}) == []


def test_a_command_agent_gets_its_formats_cli_and_every_endpoint_variable_set() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:7/v1"}
    assert agent_endpoints("command", env, fmt="claude") == [HostPort("127.0.0.1", 7), HostPort("api.anthropic.com", 443)]
    assert agent_endpoints("command", {}, fmt="text") == [] and agent_endpoints("builtin", env) == []


def test_a_run_allows_its_agents_endpoints_and_network_allow() -> None:
    got = run_endpoints([("claude", None), ("codex", None)], {}, ["[::1]:8080", "api.anthropic.com:443"])
    assert got == sorted({HostPort("api.anthropic.com", 443), HostPort("api.openai.com", 443), HostPort("::1", 8080)})
    with pytest.raises(ValueError):
        run_endpoints([], {}, ["nope"])


def test_qwen_without_a_base_url_reaches_dashscope_as_the_cli_does() -> None:
    # qwen 0.24.4 --auth-type openai with no OPENAI_BASE_URL looks up dashscope.aliyuncs.com only
    # (its DEFAULT_DASHSCOPE_BASE_URL): allowlisting api.openai.com left it unreachable.
    assert agent_endpoints("qwen", {}) == [HostPort("dashscope.aliyuncs.com", 443)]
    assert agent_endpoints("qwen", {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}) == [HostPort("127.0.0.1", 9)]
    line = diagnose("qwen", Transcript(agent="qwen", termination="crashed", exit_code=1, failure="unreachable",
                                       error="fetch failed"), {"OPENAI_API_KEY": "k"}, printed=True).problem
    assert "dashscope.aliyuncs.com" in line and "api.openai.com" not in line


@pytest.mark.parametrize("name", ["claude", "codex", "opencode", "gemini", "qwen", "copilot", "cortex", "command"])
def test_an_empty_endpoint_variable_reads_as_unset(name: str) -> None:
    # GitHub Actions expands an unset repository variable (`${{ vars.X }}`) to '': the workflows
    # pass every CLI's endpoint variables that way, so '' must allow what no variable does.
    spec = cli_specs().get(name)
    names = spec.endpoint.variables if spec else ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    empty = dict.fromkeys(names, "")
    assert agent_endpoints(name, empty, model="openai/x", fmt="claude") == agent_endpoints(name, {}, model="openai/x",
                                                                                         fmt="claude")
    if spec:
        line = diagnose(name, Transcript(agent=name, termination="crashed", exit_code=1, failure="unreachable",
                                         error="fetch failed"), empty | {spec.endpoint.key: "k"}, printed=True)
        assert f"cannot reach {spec.endpoint.default}" in line.problem
