"""The Copilot CLI adapter: the native binary started directly, offline custom-provider mode,
tokens from the usage file only when the CLI writes one, the harness's turn limit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rubricgate.agents.claude import SPEC as CLAUDE_SPEC
from rubricgate.agents.copilot import (
    SPEC,
    CopilotAgent,
    apply_usage,
    limit_watch,
    native_binary,
    parse_copilot_stream,
    writes_usage_file,
)
from rubricgate.agents.normalize import Draft
from rubricgate.models.config import AgentConfig
from tests.agent_recordings import DATA, agent_request


def test_the_native_binary_is_found_beside_the_npm_loader(tmp_path: Path) -> None:
    package = tmp_path / "lib/node_modules/@github/copilot"
    native = package / "node_modules/@github/copilot-linux-x64/copilot"
    native.parent.mkdir(parents=True)
    native.write_text("#!/bin/sh\n")
    native.chmod(0o755)
    (package / "npm-loader.js").write_text("")
    (tmp_path / "bin").mkdir()
    os.symlink(package / "npm-loader.js", tmp_path / "bin/copilot")
    if os.uname().machine in ("x86_64", "amd64"):
        assert native_binary(str(tmp_path / "bin/copilot")) == str(native)
    assert native_binary("copilot") == "copilot"  # not found on PATH: left as it is
    assert native_binary(str(native)) == str(native)


def test_the_version_is_read_from_the_version_line() -> None:
    """`copilot --version` says "GitHub Copilot CLI 1.0.102." (and a second line about updates)."""
    assert SPEC.version_from("GitHub Copilot CLI 1.0.102.") == "1.0.102"
    assert SPEC.version_from("GitHub Copilot CLI 1.0.40") == "1.0.40"
    assert SPEC.version_from("GitHub Copilot CLI 1.1.0-beta.2.") == "1.1.0-beta.2"
    assert SPEC.version_from("copilot (build abc)") == "copilot (build abc)"  # unrecognised: as it is
    assert SPEC.version_from(None) is None
    assert CLAUDE_SPEC.version_from("2.1.332 (Claude Code)") == "2.1.332 (Claude Code)"  # no pattern


def test_usage_file_only_from_1_0_80() -> None:
    assert writes_usage_file("GitHub Copilot CLI 1.0.102.") and writes_usage_file("1.0.80")
    assert not writes_usage_file("GitHub Copilot CLI 1.0.40.") and not writes_usage_file(None)


@pytest.mark.parametrize("text", ["", "not json", "[1]", '{"modelMetrics": 3}', '{"modelMetrics": {"m": {"usage": {}}}}'])
def test_no_usable_usage_file_means_unknown_tokens(text: str) -> None:
    draft = Draft(agent="copilot", input_tokens=7)
    apply_usage(draft, text)
    assert not draft.tokens_known


def test_usage_file_tokens_are_summed_over_models() -> None:
    draft = Draft(agent="copilot")
    apply_usage(draft, json.dumps({"modelMetrics": {
        "a": {"usage": {"inputTokens": 10, "outputTokens": 2}}, "b": {"usage": {"inputTokens": 5, "outputTokens": 1}}}}))
    assert draft.tokens_known and (draft.input_tokens, draft.output_tokens) == (15, 3)


def test_offline_only_with_a_custom_provider_and_every_run_headless(tmp_path: Path) -> None:
    agent = CopilotAgent(AgentConfig(name="copilot", model="m1"))
    byok = agent.agent_env(agent_request(tmp_path, env={"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:1/v1"}))
    assert byok["COPILOT_OFFLINE"] == "true" and byok["COPILOT_AUTO_UPDATE"] == "false"
    assert "COPILOT_OFFLINE" not in agent.agent_env(agent_request(tmp_path, env={}))
    argv = agent.argv(agent_request(tmp_path, allowed_tools=["read", "grep", "glob"]), "-p")
    assert argv[1] == "--prompt=-p" and "--allow-all-tools" in argv and "--no-auto-update" in argv
    assert "--available-tools=view,grep,glob" in argv and argv[argv.index("--model") + 1] == "m1"
    assert "--available-tools=" in agent.argv(agent_request(tmp_path, allowed_tools=[]), "x")


@pytest.mark.parametrize("stream", [
    '{"type":"result","exitCode":"0"}',
    '{"type":"tool.execution_complete","data":{"toolCallId":"zz","success":false,"error":3}}',
    '{"type":"assistant.message","data":[1,2]}\n{"type":"session.error","data":{"statusCode":{"a":1}}}',
    '{"type":"tool.execution_start","data":{"toolName":null,"arguments":"x"}}',
])
def test_malformed_events_never_raise(stream: str) -> None:
    assert parse_copilot_stream(stream).termination in ("completed", "crashed", "api_error")


def test_a_result_with_an_error_exit_and_no_session_error_is_a_crash() -> None:
    draft = parse_copilot_stream('{"type":"result","exitCode":3}')
    assert (draft.termination, draft.saw_result) == ("crashed", False)


def test_watch_stops_at_the_first_turn_past_the_limit() -> None:
    watch = limit_watch(4)
    lines = (DATA / "copilot-1.0.102" / "review_ok.ndjson").read_bytes().splitlines()
    stops = [s for s in (watch(line) for line in lines) if s]
    assert stops[0] == "max_turns: turn 5 exceeds max_steps 4"


def test_watch_stops_at_the_second_request_that_never_reached_the_provider() -> None:
    """Recorded against a closed port (1.0.102): failures 1 to 8 s apart, about 30 s of retries."""
    lines = (DATA / "copilot-1.0.102" / "unreachable.ndjson").read_bytes().splitlines()
    watch = limit_watch(None)
    stops = [s for s in (watch(line) for line in lines) if s]
    assert len(stops) == 1 and stops[0].startswith("model_unreachable: copilot could not reach its model server")
    assert "retry after" in stops[0]


def test_watch_stops_at_the_second_failure_the_provider_answered_too() -> None:
    """Against a 429 or 503 with retry-after 10 the CLI waits it before each of its 5 retries (about a
    minute); stopped at its second failure, with the wait between the two for the harness's retry."""
    lines = (DATA / "copilot-1.0.102" / "api_error.ndjson").read_bytes().splitlines()  # 6 failures, status 500
    watch = limit_watch(None)
    said = [watch(line) for line in lines]
    failures = [i for i, line in enumerate(lines) if b'"model.call_failure"' in line]
    first = next(i for i, s in enumerate(said) if s)
    assert first == failures[1], (first, failures)
    stops = [s for s in said if s]
    assert stops[0].startswith("endpoint_error: copilot would retry a model request the endpoint answered with "
                               "API 500 (scripted upstream failure); retry after "), stops[0]


def _failure(at: str, status: int | None = None) -> bytes:
    data = {"statusCode": status} if status else {"errorMessage": "error sending request"}
    return json.dumps({"type": "model.call_failure", "data": data, "timestamp": at}).encode()


def test_only_failures_of_one_turn_count() -> None:
    """A failure its first retry recovered from, then one in a later turn: no outage."""
    watch = limit_watch(None)
    turn = b'{"type":"assistant.turn_start","data":{}}'
    assert watch(turn) is None and watch(_failure("2026-12-03T21:00:00Z", 503)) is None
    assert watch(turn) is None and watch(_failure("2026-12-03T21:00:05Z", 503)) is None
    stop = watch(_failure("2026-12-03T21:00:17Z", 429))
    assert stop is not None and "API 429" in stop and stop.endswith("retry after 12.0 s")
