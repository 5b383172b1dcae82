"""The Gemini CLI adapter: its parser on REAL recorded streams of the oldest and newest tested
versions (tests/e2e/record_gemini_qwen_copilot.py), and the settings and policy it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubricgate.agents.gemini import (
    GeminiAgent,
    admin_policy,
    api_error_text,
    gemini_settings,
    parse_gemini_stream,
    turn_limit_watch,
)
from rubricgate.models.config import AgentConfig
from tests.agent_recordings import DATA, agent_request, replay_recording

FOLDERS = sorted(p.name for p in DATA.glob("gemini-*") if p.is_dir())


def replay(folder: str, name: str, **proc: object):
    return replay_recording(folder, name, lambda d, m: parse_gemini_stream(d, allowed=m["allowed_tools"]), **proc)


@pytest.mark.parametrize("folder", FOLDERS)
def test_errors_and_exit_codes_are_read(folder: str) -> None:
    assert replay(folder, "api_error").error == "API 500: scripted upstream failure"
    assert replay(folder, "api_error").exit_code == 244  # the HTTP status modulo 256
    assert replay(folder, "api_error_400").error == "API 400: scripted invalid request"
    assert "max session turns" in replay(folder, "max_turns").error


def test_a_denied_call_keeps_what_the_cli_said() -> None:
    bash = replay(FOLDERS[-1], "forbidden_tool").tool_calls[1]
    assert "not found" in (bash.result or "")


# --------------------------------------------------------------- hostile and broken streams


@pytest.mark.parametrize("stream", [
    '{"type":"result","status":"success","stats":1.5}',
    '{"type":"tool_result","tool_id":"nope","status":"error","error":7}',
    '{"type":"message","role":"assistant","content":{"x":1}}\n{"type":"result","status":"error","error":"x"}',
    '{"type":"tool_use","tool_name":3,"parameters":[1,2]}\n{"type":"tool_result","tool_id":null}',
    '{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: not json]"}}',
])
def test_malformed_events_never_raise(stream: str) -> None:
    draft = parse_gemini_stream(stream)
    assert draft.termination in ("completed", "api_error", "crashed", "max_turns")


def test_a_stream_cut_mid_line_is_not_a_finished_run() -> None:
    whole = (DATA / FOLDERS[-1] / "review_ok.ndjson").read_text()
    draft = parse_gemini_stream(whole[: whole.rindex('{"type":"result"') + 30])
    assert not draft.saw_result and draft.ending is not None and draft.ending[0] == "crashed"


def test_the_turn_limit_event_is_max_turns_although_the_result_says_success() -> None:
    stream = "\n".join(json.dumps(e) for e in [
        {"type": "tool_use", "tool_name": "read_file", "tool_id": "a", "parameters": {}},
        {"type": "tool_result", "tool_id": "a", "status": "success"},
        {"type": "error", "severity": "error", "message": "Maximum session turns exceeded"},
        {"type": "result", "status": "success", "stats": {"input_tokens": 5, "output_tokens": 1}}])
    draft = parse_gemini_stream(stream)
    assert draft.termination == "max_turns" and not draft.saw_result and draft.steps == 1


def test_api_error_text_reads_the_quoted_body_and_keeps_anything_else() -> None:
    assert api_error_text('{"error":{"code":429,"message":"slow down"}}') == "API 429: slow down"
    assert api_error_text('{"error":{"code":429,"message":"slow"}}] Please wait.') == "API 429: slow"
    assert api_error_text("fetch failed") == "fetch failed"
    assert api_error_text("Expected property name] more") == "Expected property name"
    assert api_error_text("[1, 2]") == "[1, 2]"


# --------------------------------------------------------------- what the adapter writes


def test_settings_pick_api_key_auth_only_with_a_key_and_carry_the_turn_limit(tmp_path: Path) -> None:
    with_key = gemini_settings(agent_request(tmp_path, env={"GEMINI_API_KEY": "k"}, max_steps=7))
    assert with_key["security"]["auth"] == {"selectedType": "gemini-api-key"}
    assert with_key["model"] == {"maxSessionTurns": 7} and with_key["general"] == {"maxAttempts": 1}
    assert with_key["privacy"] == {"usageStatisticsEnabled": False}
    without = gemini_settings(agent_request(tmp_path, env={}))
    assert "auth" not in without["security"] and "model" not in without


def test_admin_policy_denies_everything_but_the_allowlist() -> None:
    policy = admin_policy(["read", "grep", "glob"])
    assert 'toolName = "*"\ndecision = "deny"' in policy
    assert 'toolName = ["glob", "grep_search", "read_file", "read_many_files", "search_file_content"]' in policy
    assert "allow" not in admin_policy([])


def test_argv_passes_a_dash_prompt_as_one_value_and_the_policy_only_with_an_allowlist(tmp_path: Path) -> None:
    agent = GeminiAgent(AgentConfig(name="gemini", model="m1"))
    argv = agent.argv(agent_request(tmp_path, allowed_tools=["read"]), "---\nfront: matter")
    assert argv[1] == "--prompt=---\nfront: matter" and "--admin-policy" in argv
    assert argv[argv.index("--model") + 1] == "m1"
    assert "--admin-policy" not in agent.argv(agent_request(tmp_path, allowed_tools=None), "x")


def test_watch_stops_at_the_first_turn_past_the_limit() -> None:
    watch = turn_limit_watch(1)
    assert watch is not None and turn_limit_watch(None) is None
    lines = [{"type": "tool_use", "tool_id": "a"}, {"type": "tool_use", "tool_id": "b"},
             {"type": "tool_result", "tool_id": "a"}, {"type": "message", "role": "assistant", "content": "x"}]
    said = [watch(json.dumps(e).encode()) for e in lines]
    assert said[:3] == [None, None, None] and said[3] == "max_turns: turn 2 exceeds max_steps 1"
