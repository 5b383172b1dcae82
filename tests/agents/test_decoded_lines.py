"""Each stream line of a trial decoded once (agents/decoded_lines.py): what the watches decoded
the parser takes, and the transcript is the one decoding twice gave."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rubricgate.agents import get_agent, normalize
from rubricgate.agents.claude import parse_claude_stream
from rubricgate.agents.decoded_lines import DecodedLines, decode_line, shared_decoding
from rubricgate.models.config import AgentConfig
from tests.agent_recordings import agent_request

DATA = Path(__file__).parents[1] / "data" / "transcripts" / "claude"


def _counting(calls: list[str]):
    def decode(line: str):
        calls.append(line)
        return {"line": line}
    return decode


def test_outside_a_trial_every_line_is_decoded_each_time():
    calls: list[str] = []
    first, second = decode_line("{}", _counting(calls)), decode_line("{}", _counting(calls))
    assert calls == ["{}", "{}"] and first is not second


def test_a_watched_line_is_taken_once_by_the_parser_and_a_line_held_twice_is_decoded_again():
    calls: list[str] = []
    decode = _counting(calls)
    with shared_decoding() as lines:
        watched = decode_line("a", decode)
        assert decode_line("a", decode) is watched  # a second watch reads the same value
        decode_line("b", decode)
        lines.parsing()
        assert decode_line("a", decode) is watched  # the parser takes it: not decoded again
        again = decode_line("a", decode)  # the stream holds the line twice: its own value
        assert again == watched and again is not watched
        decode_line("c", decode)  # never watched (past the output cap, a rollout file)
        assert calls == ["a", "b", "a", "c"]
        assert set(lines.values) == {"b"}  # taken values are not held
    assert lines.values == {}  # the trial's end drops what is left
    assert decode_line("b", decode) == {"line": "b"} and calls[-1] == "b"  # no trial: decoded


def test_a_value_is_found_only_by_its_lines_exact_text():
    lines = DecodedLines()
    lines.value_of('{"a": 1}', lambda line: {"a": 1})
    lines.parsing()
    assert lines.value_of('{"a": 1} ', lambda line: "decoded") == "decoded"


@pytest.mark.parametrize("recording", ["review_ok", "max_turns", "permission_denied"])
def test_a_trial_decodes_each_stream_line_once_and_parses_as_decoding_twice_did(tmp_path, monkeypatch, recording):
    """A command CLI in Claude's format prints a real recording: the watch that enforces the turn
    and tool limits and the parser together decode each line once, and the transcript equals
    the parse of the same stream with every line decoded afresh."""
    stream = (DATA / f"{recording}.ndjson").read_bytes()
    (tmp_path / "stream.ndjson").write_bytes(stream)
    decoded: list[str] = []
    real = normalize._loads
    monkeypatch.setattr(normalize, "_loads", lambda line: decoded.append(line) or real(line))
    command = ["sh", "-c", 'cat "$1"', "sh", str(tmp_path / "stream.ndjson"), "{prompt_file}"]
    agent = get_agent("command", AgentConfig(name="command", command=command, format="claude"))
    allowed = ["read", "grep", "glob", "bash", "write", "edit"]
    request = agent_request(tmp_path, env={"PATH": os.environ["PATH"]}, max_steps=50, allowed_tools=allowed)
    transcript = agent.run(request)
    lines = [line.strip() for line in stream.decode().split("\n") if line.strip()]
    assert sorted(decoded) == sorted(lines)  # every line once, though the watch saw them all
    decoded.clear()
    alone = parse_claude_stream(stream, agent="command", allowed=allowed)
    assert sorted(decoded) == sorted(lines)  # no trial: decoded here
    assert [c.model_dump() for c in transcript.tool_calls] == [c.model_dump() for c in alone.tool_calls]
    assert (transcript.final_text, transcript.steps) == (alone.final_text, alone.steps)
    assert transcript.tool_calls or recording == "review_ok"


def test_a_trial_keeps_the_values_of_its_first_keep_chars_of_lines_and_decodes_the_rest_twice(monkeypatch):
    """Kept values live while the CLI runs, in every trial at once: a stream built to decode large
    cannot make each trial hold all of it for its whole run."""
    from rubricgate.agents import decoded_lines

    monkeypatch.setattr(decoded_lines, "KEEP_CHARS", 10)
    calls: list[str] = []
    decode = _counting(calls)
    with shared_decoding() as lines:
        for line in ["aaaa", "bbbb", "cccc"]:  # the third would pass 10 characters
            decode_line(line, decode)
        assert set(lines.values) == {"aaaa", "bbbb"} and lines.kept_chars == 8
        decode_line("cc", decode)  # still within the budget
        lines.parsing()
        for line in ["aaaa", "bbbb", "cccc", "cc"]:
            decode_line(line, decode)
    assert calls == ["aaaa", "bbbb", "cccc", "cc", "cccc"]
