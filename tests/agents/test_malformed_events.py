"""A line of a CLI's event stream that began as an event and did not parse is the stream's failure
(design.md: a malformed stream is infrastructure), never graded: the event it held may be a tool
call. Banner and progress lines that are no event stay counted and harmless; a last line cut off
by a kill or the cap is the kill's or the cap's, one cut before the result with neither the CLI's."""

from __future__ import annotations

from pathlib import Path

from rubricgate.agents.claude import parse_claude_stream
from rubricgate.agents.ending import finish
from rubricgate.agents.gemini import parse_gemini_stream
from rubricgate.agents.normalize import parse_stream
from rubricgate.graders.failures import is_infra_failure
from rubricgate.isolation.process import ProcessResult

RECORDED = Path(__file__).resolve().parents[1] / "data/transcripts/claude-2.1.332"
GEMINI = RECORDED.parent / "gemini-0.61.0"


def _proc() -> ProcessResult:
    return ProcessResult(exit_code=0, timed_out=False, stdout_truncated=False, stderr_tail="", duration_s=0.5)


def _lines(name: str) -> list[str]:
    return (RECORDED / f"{name}.ndjson").read_text().splitlines()


def test_a_forbidden_tool_call_cut_by_three_characters_errs_the_run_instead_of_passing_it() -> None:
    lines = _lines("forbidden_tool")
    at = next(i for i, line in enumerate(lines) if '"name":"Bash"' in line)
    lines[at] = lines[at][:-3]  # the Bash call no longer parses
    t = finish(parse_claude_stream("\n".join(lines)), _proc(), version=None)
    assert "Bash" not in [c.raw_name for c in t.tool_calls]  # what grading would have seen
    assert t.failure == "malformed_event" and t.termination == "crashed" and is_infra_failure(t)
    assert t.error.startswith("1 line(s) of the CLI's event stream began as an event and did not parse")


def test_a_forbidden_tool_call_behind_an_escape_sequence_errs_the_run_instead_of_passing_it() -> None:
    """`\\x1b[?25l` (a spinner hiding the cursor) or a progress word left without its newline
    before an event: the line began as no event, was counted as a harmless banner, and the Bash
    call it held vanished from the parser and the live watch (a command reviewer's run passed)."""
    for prefix in ("\x1b[?25l", "Reading file...", "\ufeff", "data: ", 'a {"b" '):
        lines = _lines("forbidden_tool")
        at = next(i for i, line in enumerate(lines) if '"name":"Bash"' in line)
        lines[at] = prefix + lines[at]
        t = finish(parse_claude_stream("\n".join(lines)), _proc(), version=None)
        assert "Bash" not in [c.raw_name for c in t.tool_calls]
        assert t.failure == "malformed_event" and is_infra_failure(t), prefix


def test_a_banner_quoting_json_that_is_no_object_stays_harmless() -> None:
    assert parse_stream('{"a": 1}\nsaid {"oops and ["x"]\n{"c": 3}\n')[1:] == (1, 0)


def test_banner_lines_that_are_no_event_are_counted_and_harmless() -> None:
    lines = _lines("review_ok")
    stream = "\n".join(["(node:42) ExperimentalWarning: fetch is experimental", *lines, "bye"])
    t = finish(parse_claude_stream(stream), _proc(), version=None)
    assert t.skipped_lines == 2 and t.failure is None and t.termination == "completed"


def test_node_s_console_log_of_an_object_is_a_log_line_not_a_malformed_event() -> None:
    """`{ level: 'warn', msg: 'deprecated option' }` before the stream made every trial errored."""
    lines = _lines("review_ok")
    stream = "\n".join(["{ level: 'warn', msg: 'deprecated option' }", *lines])
    t = finish(parse_claude_stream(stream), _proc(), version=None)
    assert t.failure is None and t.termination == "completed" and t.skipped_lines == 1


def test_only_lines_before_the_last_count_as_malformed() -> None:
    assert parse_stream('{"a": 1}\n{"b": \n{"c": 3}\n{"cut')[1:] == (2, 1)
    assert parse_stream('{ "a": \n{}x\n{"c": 3}\n')[1:] == (2, 2)
    assert parse_stream('{"a": 1}\n[1, 2]\n{"c": 3}\n')[1:] == (1, 0)


def _cut_before_result(lines: list[str]) -> str:
    """The stream up to its verdict message, that message cut in half and no result after it."""
    return "\n".join([*lines[:-2], lines[-2][: len(lines[-2]) // 2]])


def test_a_stream_cut_mid_event_that_rubricgate_did_not_cut_is_the_cli_s_failure_not_the_reviewer_s() -> None:
    """A CLI killed mid-write behind a wrapper's pipeline (`sh -c 'cli | tee log'`: exit 0, the
    signal lost) was the reviewer's `agent_error`, its verdict lost and the run a REGRESSION."""
    for parse, lines in ((parse_claude_stream, _lines("review_ok")),
                         (parse_gemini_stream, (GEMINI / "review_ok.ndjson").read_text().splitlines())):
        for code in (0, 1):
            t = finish(parse(_cut_before_result(lines)), ProcessResult(
                exit_code=code, timed_out=False, stdout_truncated=False, stderr_tail="", duration_s=0.5), version=None)
            assert t.failure == "malformed_event" and is_infra_failure(t), (parse, code)
            assert "truncated output" in t.error


def test_a_stream_the_output_cap_cut_stays_the_reviewer_s() -> None:
    proc = ProcessResult(exit_code=None, timed_out=False, stdout_truncated=True, stderr_tail="", duration_s=0.5,
                         stdout_bytes=100, stopped="output_cap")
    t = finish(parse_claude_stream(_cut_before_result(_lines("review_ok"))), proc, version=None)
    assert t.failure == "stopped" and not is_infra_failure(t)
