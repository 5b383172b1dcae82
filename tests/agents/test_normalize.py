"""Shared normalization: tool names, non-JSON lines, and the exit-status-is-not-a-verdict rule."""

from __future__ import annotations

from rubricgate.agents.ending import finish
import pytest

from rubricgate.agents.decoded_lines import shared_decoding
from rubricgate.agents.normalize import Draft, line_event, normalize_tool_name, parse_json_lines, parse_stream
from rubricgate.isolation.process import ProcessResult


def _proc(**kw: object) -> ProcessResult:
    base = dict(exit_code=0, timed_out=False, stdout_truncated=False, stderr_tail="", duration_s=0.5)
    return ProcessResult(**{**base, **kw})  # type: ignore[arg-type]


def test_tool_names_normalize() -> None:
    cases = {"Read": "read", "read": "read", "Grep": "grep", "Glob": "glob", "Bash": "bash",
             "Write": "write", "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit",
             "mcp__github__create_issue": "mcp__github__create_issue", "SomethingNew": "somethingnew"}
    assert {raw: normalize_tool_name(raw) for raw in cases} == cases


def test_non_json_truncated_and_non_object_lines_are_counted() -> None:
    data = b'banner\n{"type":"a"}\n\n[1,2]\n{"type":"b"\n\xff\xfe junk\n{"type":"c"}'
    events, skipped = parse_json_lines(data)
    assert [e["type"] for e in events] == ["a", "c"] and skipped == 4


def test_clean_exit_without_result_is_crashed() -> None:
    t = finish(Draft(agent="x"), _proc(), version=None)
    assert t.termination == "crashed" and t.exit_code == 0


def test_error_exit_with_result_keeps_answer() -> None:
    d = Draft(agent="x", final_text="answer", saw_result=True)
    d.fail("max_turns", "limit")
    t = finish(d, _proc(exit_code=1), version="1.0")
    assert t.final_text == "answer" and t.termination == "max_turns" and t.exit_code == 1


def test_timeout_overrides_and_start_error_is_crashed() -> None:
    assert finish(Draft(agent="x", saw_result=True), _proc(timed_out=True, exit_code=None), version=None).termination == "timeout"
    t = finish(Draft(agent="x"), _proc(exit_code=None, start_error="cannot start 'x'"), version=None)
    assert t.termination == "crashed" and "cannot start" in t.error


def test_watch_stop_maps_to_max_turns() -> None:
    t = finish(Draft(agent="x", steps=5), _proc(exit_code=None, stopped="max_turns: 5 > 4"), version=None)
    assert t.termination == "max_turns" and "stopped by rubricgate" in t.error


# Characters str.splitlines() cuts at but a JSON string may hold raw (JSON escapes only control
# characters below 0x20, the quote and the backslash; Node's JSON.stringify leaves U+2028 raw).
RAW_IN_JSON_STRINGS = ["\u2028", "\u2029", "\x85"]


def test_a_json_line_holding_line_separator_characters_is_one_event_not_two_skipped() -> None:
    import json

    for ch in RAW_IN_JSON_STRINGS:
        line = json.dumps({"type": "assistant", "text": f"a{ch}b"}, ensure_ascii=False)
        assert ch in line  # raw, as a CLI may write it
        events, skipped = parse_json_lines((line + "\n").encode())
        assert (events, skipped) == ([{"type": "assistant", "text": f"a{ch}b"}], 0), repr(ch)
    crlf = b'{"type":"a"}\r\n{"type":"b"}\r\n'  # Windows line ends still split and strip
    assert parse_json_lines(crlf) == ([{"type": "a"}, {"type": "b"}], 0)


def test_a_forbidden_tool_whose_input_holds_u2028_is_seen_by_the_parser_and_the_watch() -> None:
    """Dropping that line would hide a forbidden tool call from grading: a false pass."""
    import json

    from rubricgate.agents.claude import parse_claude_stream
    from rubricgate.agents.formats import claude_shape_watch

    call = {"type": "assistant", "message": {"id": "m1", "model": "m", "role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "rm -rf x\u2028y"}}]}}
    stream = json.dumps(call, ensure_ascii=False) + "\n"
    draft = parse_claude_stream(stream.encode(), allowed=["read", "grep", "glob"])
    assert [c.name for c in draft.tool_calls] == ["bash"] and draft.skipped_lines == 0
    watch = claude_shape_watch(None, ["read", "grep", "glob"])
    assert watch(stream.rstrip("\n").encode()).startswith("tool_denied: bash")


def test_an_idle_stop_is_an_infrastructure_failure_even_after_model_turns() -> None:
    from rubricgate.graders.failures import failure_kind, is_infra_failure

    draft = Draft(agent="x", steps=2)  # it had been talking to the model before going silent
    reason = "idle_timeout: the agent printed nothing on stdout or stderr for 120 s (agent.idle_timeout_s)"
    t = finish(draft, _proc(exit_code=None, stopped=reason), version=None)
    assert t.termination == "api_error" and t.error == f"stopped by rubricgate: {reason}"
    assert failure_kind(t) == "infra" and is_infra_failure(t)


def test_a_reviewer_stop_stays_the_reviewers_failure() -> None:
    from rubricgate.graders.failures import failure_kind

    t = finish(Draft(agent="x", steps=2), _proc(exit_code=None, stopped="tool_denied: bash x"), version=None)
    assert t.termination == "crashed" and failure_kind(t) == "reviewer"


_WATCHED_LINES = [b'{"type": "user"}', b'  {"type": "a"}\r', b"{}", b"", b"   ", b"Loading model...",
                  b'\x1b[?25l{"type": "assistant"}', b'{"type": "cut', b"[1, 2]", b'"text"', b"\xff\xfe{}",
                  '{"t": "a\u2028b"}'.encode(), b'{"a": 1}\n{"b": 2}', b"{\"deep\": " + b"[" * 300 + b"]" * 300 + b"}"]


@pytest.mark.parametrize("line", _WATCHED_LINES)
def test_a_watched_line_holds_the_event_the_stream_reading_finds(line):
    # The live watches read one line at a time through line_event; it must see the event
    # parse_json_lines sees (the first, or none), banners and escape-prefixed lines included.
    events, _ = parse_json_lines(line)
    assert line_event(line) == (events[0] if events else None)
    assert line_event(line.decode("utf-8", errors="replace")) == (events[0] if events else None)


def test_the_parser_counts_a_stream_the_watch_saw_as_it_counts_one_it_did_not():
    # The watch keeps each line's value for the parser: the parser's skipped, malformed and cut
    # counts are its own, the same with and without a watch before it.
    stream = b"\n".join(_WATCHED_LINES[:-2]) + b'\n{"type": "result"}\n{"cut'
    alone = parse_stream(stream)
    with shared_decoding() as decoded:
        for line in stream.split(b"\n"):
            line_event(line)
        decoded.parsing()
        shared = parse_stream(stream)
    assert shared == alone and alone[1:] == (7, 2)
