"""Events the parser fuzz (tests/fuzz, bench/fuzz_inputs.py) found raising out of an adapter's
parser or its limit watch: each now ends in a documented termination class, the event's odd
field read as absent (issues 37 and 38)."""

from __future__ import annotations

import json

import pytest

from rubricgate.agents.codex import parse_codex_stream
from rubricgate.agents.ending import finish
from rubricgate.agents.formats import parser_for, watch_for
from rubricgate.isolation.process import ProcessResult

RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 1}
TERMINATIONS = {"completed", "max_turns", "api_error", "timeout", "crashed"}


def _proc() -> ProcessResult:
    return ProcessResult(exit_code=0, timed_out=False, stdout_truncated=False, stderr_tail="", duration_s=0.5)


def _stream(*events: object) -> bytes:
    return "\n".join(json.dumps(e) for e in events).encode()


CLAUDE_SHAPE = [
    {"type": "assistant", "message": 1.5},
    {"type": "assistant", "message": {"id": "m", "content": 7}},
    {"type": "user", "message": 1},
    {"type": "system", "subtype": "init", "model": {"name": "m"}},
    {**RESULT, "usage": {"input_tokens": {"a": 1}, "output_tokens": "many"}},
    {**RESULT, "usage": ["x"]},
]


@pytest.mark.parametrize("fmt", ["claude", "cortex"])
@pytest.mark.parametrize("event", CLAUDE_SHAPE, ids=lambda e: json.dumps(e)[:60])
def test_claude_shaped_events_with_odd_fields_never_raise(fmt: str, event: dict) -> None:
    data = _stream(event, RESULT)
    t = finish(parser_for(fmt)(data, agent=fmt, allowed=["read"]), _proc(), version=None)
    assert t.termination in TERMINATIONS and t.usage.input_tokens >= 0
    watch = watch_for(fmt, 3, ["read"])
    for line in data.split(b"\n"):
        watch(line + b"\n")


@pytest.mark.parametrize("event", [
    {"type": "assistant", "message": {"id": "m", "content": True}},
    {"type": "assistant", "message": {"id": "m", "content": 2.5}},
    {"type": "user", "message": [1]},
], ids=["content-bool", "content-float", "user-message-list"])
def test_the_claude_shape_watch_reads_odd_content_as_none(event: dict) -> None:
    watch = watch_for("claude", 3, ["read"])
    assert watch(json.dumps(event).encode() + b"\n") is None


@pytest.mark.parametrize("event", [
    {"type": "item.completed", "item": {"id": "1", "type": {"a": 1}}},
    {"type": "item.started", "item": {"id": "1", "type": ["command_execution"]}},
    {"type": "turn.completed", "usage": {"input_tokens": "\ufffd\ufffd", "output_tokens": {"a": 1}}},
], ids=["type-dict", "type-list", "usage-not-numbers"])
def test_codex_events_with_odd_fields_never_raise(event: dict) -> None:
    t = finish(parse_codex_stream(_stream(event, {"type": "turn.completed", "usage": {}})), _proc(), version=None)
    assert t.termination in TERMINATIONS


@pytest.mark.parametrize("payload", [
    {"type": "function_call_output", "call_id": "c", "output": "Exit code: "},
    {"type": "function_call_output", "call_id": "c", "output": "Exit code: " + "9" * 5000},
    {"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": {"cmd": [1, None, "ls"]}},
], ids=["exit-code-cut", "exit-code-5000-digits", "cmd-not-strings"])
def test_codex_rollouts_with_odd_records_never_raise(payload: dict) -> None:
    call = {"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": '{"cmd": "ls"}'}
    rollout = _stream({"payload": call}, {"payload": payload}, {"payload": {"response_id": "r"}})
    t = finish(parse_codex_stream(_stream({"type": "turn.completed", "usage": {}}), rollout=rollout), _proc(),
               version=None)
    assert t.termination in TERMINATIONS and t.tool_calls


@pytest.mark.parametrize("fmt", ["claude", "cortex", "qwen"])
@pytest.mark.parametrize("result", [
    {**RESULT, "permission_denials": ["t1", 3]},
    {**RESULT, "permission_denials": "t1"},
    {**RESULT, "permission_denials": 7},
    {**RESULT, "subtype": "error_max_turns", "errors": [1, {"a": 2}]},
    {**RESULT, "subtype": "error_max_turns", "errors": "cut"},
], ids=["denials-strings", "denials-string", "denials-number", "errors-not-strings", "errors-string"])
def test_a_result_event_with_odd_lists_never_raises(fmt: str, result: dict) -> None:
    t = finish(parser_for(fmt)(_stream(result), agent=fmt, allowed=["read"]), _proc(), version=None)
    assert t.termination in TERMINATIONS


@pytest.mark.parametrize("fmt", ["claude", "cortex", "qwen"])
@pytest.mark.parametrize("event", [
    {"type": "assistant", "message": {"id": "m", "model": "<synthetic>", "content": [{"type": "text", "text": {"a": 1}}]}},
    {"type": "assistant", "message": {"id": "m", "content": 2.5}},
    {"type": "assistant", "message": {"id": "m", "content": 3}},
], ids=["synthetic-text-object", "content-float", "content-int"])
def test_claude_shaped_assistant_messages_with_odd_content_never_raise(fmt: str, event: dict) -> None:
    t = finish(parser_for(fmt)(_stream(event, RESULT), agent=fmt, allowed=["read"]), _proc(), version=None)
    assert t.termination in TERMINATIONS


def test_a_gemini_tool_result_whose_error_type_is_an_object_never_raises() -> None:
    use = {"type": "tool_use", "tool_name": "read_file", "tool_id": "t1", "parameters": {"file_path": "a"}}
    result = {"type": "tool_result", "tool_id": "t1", "status": "error", "error": {"type": {"a": 1}, "message": "x"}}
    t = finish(parser_for("gemini")(_stream(use, result), agent="gemini", allowed=["read"]), _proc(), version=None)
    assert t.termination in TERMINATIONS and t.tool_calls[0].status == "error"


@pytest.mark.parametrize("usage", [
    '{"modelMetrics": ' + "[" * 200_000 + "]" * 200_000 + "}",
    '{"modelMetrics": {"m": {"usage": {"inputTokens": NaN, "outputTokens": 1e999}}}}',
    '{"modelMetrics": {"m": {"usage": {"inputTokens": "\\ud800", "outputTokens": -5}}}}',
    '{"modelMetrics": {"m": {"usage": {"inputTokens": ' + "[" * 70 + "]" * 70 + "}}}}",
], ids=["nested-200000", "not-finite", "surrogate-negative", "nested-70"])
def test_a_copilot_usage_file_that_is_not_token_counts_never_raises(usage: str) -> None:
    """The usage file is written by the reviewer's process (--usage-output-file): read like its
    stream, a value nested past the bound is unreadable (tokens unknown), odd counts are 0."""
    stream = _stream({"type": "assistant.message", "data": {"content": "done"}})
    t = finish(parser_for("copilot")(stream, usage=usage), _proc(), version=None)
    assert t.termination in TERMINATIONS
    assert t.usage.input_tokens in (None, 0) and t.usage.output_tokens in (None, 0)


def test_a_copilot_failure_whose_error_message_is_json_nested_deep_never_raises_out_of_the_watch() -> None:
    """model.call_failure's errorMessage holds the endpoint's JSON body, as the CLI quotes it."""
    watch = watch_for("copilot", None, None)
    deep = "[" * 200_000 + "]" * 200_000
    failure = {"type": "model.call_failure", "timestamp": "2026-12-03T00:00:0{}Z", "data": {"errorMessage": deep}}
    lines = [json.dumps(failure).replace("{}", str(i)).encode() + b"\n" for i in range(2)]
    said = [watch(line) for line in lines]
    assert said[0] is None and (said[1] is None or "copilot" in said[1])
