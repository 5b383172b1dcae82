"""The Qwen Code adapter: what a Claude-shaped parser gets wrong on its stream (its own error
message dressed as a model turn), the turn limit that leaves no result event, its flags."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rubricgate.agents.claude import parse_claude_stream
from rubricgate.agents.qwen import (
    QWEN_SETTINGS,
    QwenAgent,
    api_error_text,
    debug_log_path,
    parse_qwen_stream,
    retry_watch,
    session_id,
    tool_args,
    turn_limit_watch,
)
from rubricgate.models.config import AgentConfig
from tests.agent_recordings import DATA, agent_request

OLD, NEW = "qwen-0.21.10", "qwen-0.24.4"


def recording(folder: str, name: str) -> bytes:
    return (DATA / folder / f"{name}.ndjson").read_bytes()


@pytest.mark.parametrize("folder", [OLD, NEW])
def test_the_claude_parser_miscounts_an_api_error_and_this_one_does_not(folder: str) -> None:
    data = recording(folder, "api_error")
    claude = parse_claude_stream(data)
    assert claude.steps == 2  # the CLI's "[API Error: ...]" message counted as a model turn
    qwen = parse_qwen_stream(data)
    assert (qwen.steps, qwen.termination, qwen.error) == (1, "api_error", "API 500: scripted upstream failure")
    assert qwen.final_text == ""


def test_on_0_21_the_claude_parser_even_takes_the_error_for_the_reviewers_answer() -> None:
    claude = parse_claude_stream(recording(OLD, "api_error"))
    assert claude.termination == "completed" and claude.final_text.startswith("[API Error")
    assert parse_qwen_stream(recording(OLD, "api_error")).termination == "api_error"


def test_retries_of_a_broken_stream_are_the_endpoints_fault_not_the_reviewers_steps() -> None:
    # Each retry's message counted as a step: "turn 7 exceeds max_steps 6", max_turns, exit 1.
    data = recording(NEW, "stream_retried")
    d = parse_qwen_stream(data, max_steps=6)
    assert (d.steps, d.termination, d.failure) == (3, "api_error", "endpoint")
    assert "without a finish reason" in d.error and any("retried 4" in n for n in d.notes)
    watch = turn_limit_watch(3)
    assert [r for r in (watch(line) for line in data.splitlines(keepends=True)) if r] == []


def test_an_api_error_the_cli_appends_to_a_half_answer_is_the_endpoints() -> None:
    # Its "[API Error: ...]" after the half answer's text was not seen: agent_error, the reviewer's.
    d = parse_qwen_stream(recording(NEW, "stream_error_mid_answer"), max_steps=6)
    assert (d.termination, d.failure) == ("api_error", "endpoint") and "overloaded mid-stream" in d.error
    assert "API Error" not in d.final_text


def test_on_0_21_a_half_answer_ended_by_the_clis_error_is_the_endpoints() -> None:
    # 0.21 ends a stream cut short (no finish reason) with a "successful" result: the half answer
    # with its "[API Error: ...]" appended, graded as the reviewer's answer (no verdict, exit 1).
    d = parse_qwen_stream(recording(OLD, "truncated_stream"), max_steps=5)
    assert (d.termination, d.failure) == ("api_error", "endpoint"), (d.termination, d.failure, d.final_text)
    assert "without a finish reason" in d.error and "API Error" not in d.final_text


def _answered_nothing(result_text: str) -> str:
    """A read, then a model that answers nothing after its result, as 0.21 (its "[API Error ...]"
    words in a successful result) and 0.24 (a successful empty result) end it."""
    read = {"type": "assistant", "parent_tool_use_id": None, "message": {
        "id": "m1", "content": [{"type": "tool_use", "id": "c1", "name": "read_file", "input": {"file_path": "/w/a"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 4}}}
    got = {"type": "user", "parent_tool_use_id": None, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "is_error": False, "content": "diff --git a/x b/x"}]}}
    said = [] if not result_text else [{"type": "assistant", "parent_tool_use_id": None, "message": {
        "id": "m2", "content": [{"type": "text", "text": result_text}], "stop_reason": None,
        "usage": {"input_tokens": 0, "output_tokens": 0}}}]
    result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 3, "result": result_text,
              "usage": {"input_tokens": 30, "output_tokens": 4}}
    return "\n".join(json.dumps(e) for e in (read, got, *said, result))


def test_on_0_21_a_model_that_answered_nothing_is_graded_as_0_24_grades_it() -> None:
    # The endpoint answered every request (200, a finish reason) with no text: the model's empty
    # answer, which 0.24 ends with a successful empty result and 0.21 with its own words, read as
    # an endpoint failure: the reviewer's silence errored (could not judge), never a failure of its own.
    newer = parse_qwen_stream(_answered_nothing(""))
    older = parse_qwen_stream(_answered_nothing(
        "[API Error: Model stream ended after a tool result without visible progress.]"))
    for d in (newer, older):
        assert (d.termination, d.failure, d.final_text, d.saw_result) == ("completed", None, "", True), d
    assert any("without visible progress" in n for n in older.notes)


def test_a_model_that_ends_its_text_with_api_error_words_is_still_graded() -> None:
    # Only the result's own error confirms an appended "[API Error ...]" is the CLI's: a model's
    # text ending so, in a run its turn limit stopped, was taken for the endpoint's failure.
    events = [json.loads(line) for line in recording(NEW, "max_turns").splitlines() if line.strip()]
    last = max(i for i, e in enumerate(events) if e["type"] == "assistant")
    said = json.loads(json.dumps(events[last]))
    said["message"].update(content=[{"type": "text", "text": "Still checking. [API Error: 500 overloaded]"}],
                           stop_reason=None, usage={"input_tokens": 0, "output_tokens": 0})
    stream = "\n".join(json.dumps(e) for e in [*events[:last], said, *events[last:]])
    d = parse_qwen_stream(stream, max_steps=5)
    assert d.termination != "api_error" and d.failure != "endpoint", (d.termination, d.failure, d.error)


def test_a_model_that_writes_api_error_text_is_still_the_model() -> None:
    turn = {"type": "assistant", "parent_tool_use_id": None, "message": {
        "id": "m1", "content": [{"type": "text", "text": "[API Error: 500 upstream]"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 4}}}
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "[API Error: 500 upstream]",
              "usage": {"input_tokens": 10, "output_tokens": 4}}
    draft = parse_qwen_stream("\n".join(json.dumps(e) for e in (turn, result)))
    assert (draft.termination, draft.steps, draft.saw_result) == ("completed", 1, True)
    assert draft.final_text == "[API Error: 500 upstream]"  # graded as the reviewer's (wrong) answer


def test_the_turn_limit_is_read_from_where_the_stream_stops() -> None:
    data = recording(NEW, "max_turns")
    assert parse_qwen_stream(data, max_steps=5).ending == (
        "max_turns", "the CLI stopped at its turn limit (--max-session-turns 5)")
    assert parse_qwen_stream(data, max_steps=9).ending is None  # not at the limit: no such claim
    assert parse_qwen_stream(data).ending is None


@pytest.mark.parametrize("stream", [
    '{"type":"assistant","message":1.5}',
    '{"type":"assistant","message":{"content":[{"type":"tool_use","name":7,"input":[1]}],"usage":"x"}}',
    '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":null,"content":{"a":1}}]}}',
    '{"type":"result","subtype":"success","usage":[1],"permission_denials":[1,null,{"tool_use_id":3}]}',
    '{"type":"result","subtype":5,"is_error":"yes","error":"nope"}',
])
def test_malformed_events_never_raise(stream: str) -> None:
    assert parse_qwen_stream(stream, max_steps=1).termination in ("completed", "crashed", "api_error", "max_turns")


def test_api_error_text() -> None:
    assert api_error_text("[API Error: 429 slow down]") == "API 429: slow down"
    assert api_error_text("[API Error: 429 slow down] Possible quota limitations.") == "API 429: slow down"
    assert api_error_text("[API Error: Connection error.]") == "Connection error."


def test_flags_restrict_tools_limit_turns_and_never_ask(tmp_path: Path) -> None:
    agent = QwenAgent(AgentConfig(name="qwen", model="m1"))
    argv = agent.argv(agent_request(tmp_path, allowed_tools=["read", "grep"], max_steps=4), "-x")
    assert argv[1] == "--prompt=-x"
    assert argv[argv.index("--approval-mode") + 1] == "default"  # never yolo: headless declines the rest
    assert argv[argv.index("--max-session-turns") + 1] == "4"
    assert argv[argv.index("--core-tools") + 1] == "read_file,read_many_files,grep_search"
    excluded = argv[argv.index("--exclude-tools") + 1].split(",")
    assert "run_shell_command" in excluded and "write_file" in excluded and "read_file" not in excluded
    assert tool_args([])[:1] == ["--exclude-tools"]
    session = argv[argv.index("--session-id") + 1]  # names its debug log
    again = agent.argv(agent_request(tmp_path, allowed_tools=["read", "grep"], max_steps=4), "-x")
    # A retry, in the same HOME as the attempt before it, starts a session of its own: Qwen Code
    # refuses an id it already has a session for.
    assert len(session) == len(session_id()) == 36 and again[again.index("--session-id") + 1] != session


def test_settings_and_environment_keep_it_quiet(tmp_path: Path) -> None:
    env = QwenAgent(AgentConfig(name="qwen")).agent_env(agent_request(tmp_path))
    assert env["QWEN_USAGE_STATISTICS_ENABLED"] == "false" and env["QWEN_CODE_NO_RELAUNCH"] == "1"
    assert env["QWEN_DEBUG_LOG_FILE"] == "1"  # where its retries show (retry_watch)
    assert QWEN_SETTINGS["privacy"] == {"usageStatisticsEnabled": False}
    assert QWEN_SETTINGS["model"] == {"generationConfig": {"maxRetries": 0}}


def test_watch_counts_turns_like_the_parser() -> None:
    watch = turn_limit_watch(2)
    assert watch is not None
    lines = [line for line in recording(NEW, "review_ok").splitlines() if line.strip()]
    said = [watch(line) for line in lines]
    stops = [s for s in said if s]
    assert stops and stops[0] == "max_turns: turn 3 exceeds max_steps 2"


# --------------------------------------------------------------- its silent retries
# Debug logs of the real CLIs (QWEN_DEBUG_LOG_FILE=1, a plain file), recorded by the failure modes
# of tests/e2e/failure_modes.py: a 503 with retry-after 10 (0.24.4, through the sandbox's proxy),
# and a closed port with the host's network shared (both versions). Trial folders read /trial.


def stops(folder: str, name: str) -> list[str]:
    watch = retry_watch()
    lines = (DATA / folder / f"{name}.log").read_bytes().splitlines()
    return [s for s in (watch(line) for line in lines) if s]


def test_a_retry_after_the_endpoint_asked_for_stops_at_its_first_notice() -> None:
    found = stops(NEW, "debug-log-503-retry-after")
    assert found[0] == ("endpoint_error: qwen would retry a model request the endpoint answered with API 503 "
                        "(503 The server is overloaded); retry after 10.0 s")


@pytest.mark.parametrize("folder", [OLD, NEW])
def test_a_refused_connection_is_unreachable_once_its_backoff_is_long(folder: str) -> None:
    """Its backoff starts at 1.5 s and doubles: the short first waits are left to it (a blip costs
    no restart), the first wait of 5 s or more stops it."""
    found = stops(folder, "debug-log-refused")
    assert found[0].startswith("model_unreachable: qwen could not reach its model server and would retry "
                               "(Connection error. (cause: connect ECONNREFUSED 127.0.0.1:"), found[0]
    assert float(found[0].rsplit("retry after ", 1)[1].removesuffix(" s")) >= 5
    log = (DATA / folder / "debug-log-refused.log").read_text()
    assert "Attempt 1 failed. Retrying with backoff in 2s" in log  # a short wait came first, left to it


def test_the_debug_log_is_a_fifo_the_run_is_stopped_from(tmp_path: Path) -> None:
    """The adapter's wiring without the real CLI: a stand-in `qwen` writes a retry notice to the
    debug log its --session-id names under HOME, as the CLI does, then waits; the run stops at
    the notice with the endpoint's class and wait, and the FIFO is gone afterwards."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "qwen"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != --session-id ]; do shift; done\n'
                    'log="$HOME/.qwen/debug/$2.txt"\n'
                    'echo "2026-12-03T21:21:23.300Z [ERROR] [OPENAI_ERROR] OpenAI API Error: 429 slow down {" >> "$log"\n'
                    'echo "2026-12-03T21:21:23.334Z [WARN] [RETRY] Attempt 1 failed with status 429. '
                    'Retrying after explicit delay of 30000ms... {" >> "$log"\nexec sleep 60\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    request = agent_request(tmp_path, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}, timeout_s=60)
    transcript = QwenAgent(AgentConfig(name="qwen")).run(request)
    assert (transcript.failure, transcript.api_status, transcript.retry_after_s) == ("rate_limit", 429, 30.0), transcript
    assert transcript.error.startswith("stopped by rubricgate: endpoint_error: qwen would retry"), transcript.error
    assert not list(debug_log_path(request, "*").parent.iterdir())  # the FIFO is gone
