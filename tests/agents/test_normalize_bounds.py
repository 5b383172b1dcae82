"""Reviewer data at the parsers' boundary: deep lines, lone surrogates and numbers that are not
amounts become data (a placeholder, an escape, unknown), never an exception (issue 37)."""

from __future__ import annotations

import json

import pytest

from rubricgate.agents.claude import parse_claude_stream
from rubricgate.agents.ending import finish
from rubricgate.agents.normalize import Draft, parse_json_lines
from rubricgate.boundary import VALUE_DEPTH
from rubricgate.isolation.process import ProcessResult


def _proc() -> ProcessResult:
    return ProcessResult(exit_code=0, timed_out=False, stdout_truncated=False, stderr_tail="", duration_s=0.5)


def _deep(levels: int) -> str:
    return '{"a": [' * levels + '"x"' + "]}" * levels


def test_a_line_nested_200000_levels_deep_keeps_its_event() -> None:
    line = '{"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t", ' \
           '"name": "Bash", "input": ' + _deep(200_000) + "}]}}"
    events, skipped = parse_json_lines(line.encode())
    assert skipped == 0 and events[0]["message"]["content"][0]["name"] == "Bash"


def test_a_tool_input_deeper_than_the_bound_is_cut_with_a_note_and_writable() -> None:
    stream = "\n".join([
        json.dumps({"type": "system", "subtype": "init", "model": "m\ud800"}),
        '{"type": "assistant", "message": {"id": "m1", "model": "m", "content": [{"type": "tool_use", "id": "t1", '
        '"name": "Read", "input": ' + _deep(300) + "}]}}",
        json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 1,
                    "total_cost_usd": 0.5, "usage": {"input_tokens": 3, "output_tokens": 2}}),
    ])
    t = finish(parse_claude_stream(stream), _proc(), version=None)
    [call] = t.tool_calls
    assert call.name == "read" and "nested deeper than" in json.dumps(call.input)
    assert any(f"deeper than {VALUE_DEPTH} levels" in n for n in t.notes)
    assert t.model == "m\\ud800"
    t.model_dump_json().encode("utf-8")  # the transcript is writable as it is


@pytest.mark.parametrize("cost", [-1e9, float("nan"), float("inf"), True])
def test_a_cost_that_is_not_an_amount_is_unknown_with_a_note(cost) -> None:
    t = finish(Draft(agent="x", saw_result=True, final_text="a", cost_usd=cost), _proc(), version=None)
    assert t.usage.cost_usd is None and any("not an amount" in n for n in t.notes)


@pytest.mark.parametrize("tokens", [-5, 10**400, 2.5, "12"])
def test_a_token_count_that_is_not_a_count_is_zero_with_a_note(tokens) -> None:
    t = finish(Draft(agent="x", saw_result=True, final_text="a", input_tokens=tokens), _proc(), version=None)
    assert t.usage.input_tokens == 0 and any("not a count" in n for n in t.notes)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-1e999"])
def test_non_finite_costs_in_the_stream_read_as_unknown(text: str) -> None:
    stream = '{"type": "result", "subtype": "success", "is_error": false, "result": "x", "total_cost_usd": ' + text + "}"
    assert finish(parse_claude_stream(stream), _proc(), version=None).usage.cost_usd is None


@pytest.mark.parametrize("stopped, exit_code, stderr", [
    ("model_unreachable: qwen could not reach its model server and would retry (cause: \rconnect "
     "ECONNREFUSED \x1b]0;owned\x07127.0.0.1:1); retry after 6.0 s", None, ""),
    ("", 1, "fatal:\x1b[2J the CLI's last words\r\n"),
], ids=["stop-quoting-a-log-line", "stderr-last-line"])
def test_a_trials_reason_quoting_the_cli_is_one_line_without_terminal_escapes(stopped, exit_code, stderr) -> None:
    """The reason and evidence are printed on the console as one line (found by bench/fuzz_inputs.py:
    a carriage return in Qwen Code's debug log reached the transcript's error)."""
    proc = ProcessResult(exit_code=exit_code, timed_out=False, stdout_truncated=False, stderr_tail=stderr,
                         duration_s=0.5, stopped=stopped)
    t = finish(Draft(agent="qwen"), proc, version=None)
    assert t.error and t.termination in ("api_error", "crashed")
    for text in (t.error, t.evidence):
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text), text
    assert "\\x1b" in t.error
