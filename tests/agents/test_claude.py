"""Claude Code adapter: parser over REAL recorded streams (tests/e2e/record_claude.py), argv, env.

Derived shapes (banner lines, truncated final line, empty output) are made here from the real
recordings, so the parser never meets a stream written from memory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rubricgate.agents import get_agent
from rubricgate.agents.base import AgentRequest
from rubricgate.agents.claude import ClaudeAgent, claude_tools, parse_claude_stream
from rubricgate.agents.formats import claude_shape_watch
from rubricgate.graders.contract import parse_verdict
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import MAX_RESULT_CHARS, Transcript
from rubricgate.suite.rubric import RubricSpec
from tests.agent_recordings import agent_request, replay_recording

DATA = Path(__file__).parents[1] / "data" / "transcripts" / "claude"


def replay(name: str, stream: bytes | None = None, **proc: object) -> Transcript:
    """Parse a recording and fold in the process outcome it was recorded with."""
    return replay_recording("claude", name, lambda d, m: parse_claude_stream(d, allowed=m["allowed_tools"]), stream, **proc)


def verdict_block(text: str) -> dict:
    return json.loads(text.rsplit("```json", 1)[1].split("```", 1)[0])


# --- failure shapes first -----------------------------------------------------------------
def test_api_error_is_success_subtype_with_is_error_and_has_no_answer() -> None:
    t = replay("api_error")
    assert t.termination == "api_error" and t.exit_code == 1
    # The CLI's "API Error" text is not the model's answer; what the model last said is kept.
    assert t.final_text == "Reading the changed-files list." and "API Error" not in t.final_text
    assert "400" in t.error and "scripted: invalid request" in t.error
    assert t.steps == 1  # the changed-list read; the synthetic error message is not a turn


def test_api_error_after_retries() -> None:
    t = replay("api_error_retries")
    assert t.termination == "api_error" and "500" in t.error and "```json" not in t.final_text


def _newest(name: str) -> Transcript:
    return replay_recording("claude-2.1.332", name, lambda d, m: parse_claude_stream(d, allowed=m["allowed_tools"]))


def test_an_answer_the_endpoint_cut_off_and_the_cli_resumed_is_one_whole_answer_in_one_turn() -> None:
    # 2.1.332 asks the model to resume a cut answer: graded on the result's tail alone, the trial was
    # the reviewer's no_verdict, and the resumed part counted as a step the reviewer took.
    t = _newest("cut_resume")
    assert t.termination == "completed" and t.steps == 3
    assert verdict_block(t.final_text)["tier"] == "PASS"
    assert any("resume" in n for n in t.notes)


# Claude Code's other resume request (in 2.1.332 and 2.1.337 alike): the cut part is not delivered
# and the model writes its answer again from the start.
RESTART = ("Your response above was cut off mid-stream and only your next message is delivered. "
           "Write the complete response again from the start \u2014 no apology, no mention of the cut-off.")


def _restarted_stream() -> tuple[bytes, str]:
    """The recorded cut-and-resume run, its resume request in the restart wording and the model's
    answer after it the whole answer again (the result event states that answer alone)."""
    events = [json.loads(line) for line in _newest_bytes("cut_resume").splitlines()]
    resumed = next(i for i, ev in enumerate(events) if ev.get("isSynthetic")) + 1
    cut = events[resumed - 2]["message"]["content"][0]["text"]
    whole = cut + events[resumed]["message"]["content"][0]["text"]
    events[resumed - 1]["message"]["content"][0]["text"] = RESTART
    events[resumed]["message"]["content"][0]["text"] = whole
    next(ev for ev in events if ev["type"] == "result")["result"] = whole
    return "".join(json.dumps(ev) + "\n" for ev in events).encode(), whole


def test_an_answer_the_cli_had_written_again_from_the_start_is_that_answer_alone() -> None:
    # The cut half went before the whole answer: its unclosed ```json block swallowed the verdict's
    # opening, and the reviewer's correct PASS was graded malformed_verdict.
    stream, whole = _restarted_stream()
    t = replay_recording("claude-2.1.332", "cut_resume", lambda d, m: parse_claude_stream(d, allowed=m["allowed_tools"]),
                         stream)
    assert t.final_text == whole and t.steps == 3
    assert parse_verdict(t.final_text, RubricSpec(path="rubric.md", rules={})).status == "ok"


def _newest_bytes(name: str) -> bytes:
    return (DATA.parent / "claude-2.1.332" / f"{name}.ndjson").read_bytes()


def test_the_clis_resume_turns_after_a_malformed_stream_are_not_the_reviewers_steps() -> None:
    # Three resume requests made 6 "steps" of a 3-turn review: graded too_many_steps at a limit of 4.
    t = _newest("stream_malformed_resumed")
    assert t.failure == "endpoint" and t.steps == 3
    data = (Path(__file__).parents[1] / "data/transcripts/claude-2.1.332/stream_malformed_resumed.ndjson").read_bytes()
    watch = claude_shape_watch(4, None)
    assert [w for w in (watch(line) for line in data.splitlines(keepends=True)) if w] == []


def test_max_turns_without_verdict() -> None:
    t = replay("max_turns")
    assert t.termination == "max_turns" and t.exit_code == 1
    assert t.steps == 3 and "```json" not in t.final_text


def test_max_turns_after_the_verdict_keeps_the_answer() -> None:
    t = replay("max_turns_after_verdict")
    assert t.termination == "max_turns" and t.exit_code == 1
    assert verdict_block(t.final_text)["tier"] == "PASS"


def test_forbidden_tool_is_recorded_and_denied() -> None:
    t = replay("forbidden_tool")
    bash = [c for c in t.tool_calls if c.name == "bash"]
    assert len(bash) == 1 and bash[0].raw_name == "Bash" and bash[0].status == "denied"
    assert t.termination == "completed" and verdict_block(t.final_text)["tier"] == "PASS"


def test_permission_denials_are_marked_denied() -> None:
    t = replay("permission_denied")
    status = {(c.name, c.input.get("file_path")): c.status for c in t.tool_calls}
    assert status[("read", "/etc/hostname")] == "denied"
    assert status[("write", "/workspace/notes.txt")] == "denied"
    assert status[("read", "/workspace/reviewer/.changed-skills.txt")] == "ok"


def test_malformed_verdict_is_still_the_final_text() -> None:
    t = replay("malformed_verdict")
    assert t.termination == "completed" and '"findings": [' in t.final_text
    with pytest.raises(ValueError):
        verdict_block(t.final_text)


def test_timeout_recording_keeps_partial_turns() -> None:
    t = replay("timeout")
    assert t.termination == "timeout" and t.exit_code is None and t.steps == 1
    assert [c.name for c in t.tool_calls] == ["read"]


def test_banner_lines_are_skipped_and_counted() -> None:
    real = (DATA / "review_ok.ndjson").read_bytes()
    noisy = b"Welcome to the CLI\n\xe2\x9c\x93 ready\n" + real + b"Goodbye\n"
    t, clean = replay("review_ok", noisy), replay("review_ok")
    assert t.skipped_lines == 3 and clean.skipped_lines == 0
    assert t.final_text == clean.final_text and t.steps == clean.steps


def test_truncated_final_line_loses_the_result_and_is_an_error() -> None:
    real = (DATA / "review_ok.ndjson").read_bytes()
    cut = real[: real.rstrip().rfind(b"\n") + 40]  # the result line, cut mid-object
    t = replay("review_ok", cut, exit_code=None, timed_out=True)
    assert t.skipped_lines == 1 and t.termination == "timeout"
    # The last thing the model said is kept for the verdict grader to judge.
    assert verdict_block(t.final_text)["tier"] == "BLOCK"


def test_output_cap_is_reported() -> None:
    real = (DATA / "review_ok.ndjson").read_bytes()
    t = replay("review_ok", real[:2000], stdout_truncated=True, stdout_bytes=2000, exit_code=-15)
    assert t.output_truncated and t.termination == "crashed" and "cap" in t.error


def test_empty_output_with_clean_exit_is_crashed_not_completed() -> None:
    t = replay("review_ok", b"", exit_code=0)
    assert t.termination == "crashed" and t.final_text == "" and "no result" in t.error


def test_a_clean_exit_after_model_turns_without_the_result_event_is_a_cut_stream_not_a_start_or_a_grade(
        tmp_path: Path) -> None:
    """Claude Code always ends its stream with a result event. Events that stop after model turns at
    exit 0 (a wrapper's pipeline cut the output) were graded on the last message's text, or the
    reviewer's `agent_error` when it had none: neither the reviewer's answer nor its failure."""
    from rubricgate.graders.failures import is_infra_failure

    agent, request = ClaudeAgent(AgentConfig(name="claude")), _request(tmp_path)
    lines = (DATA / "review_ok.ndjson").read_bytes().splitlines(keepends=True)
    for kept in (len(lines) - 1, 3, 2):  # the verdict message; a tool call's turn; a turn of text
        t = replay_recording("claude", "review_ok", lambda d, m: agent.parse(d, request), b"".join(lines[:kept]),
                             exit_code=0)
        assert t.steps >= 1 and t.termination == "crashed" and is_infra_failure(t), kept
        assert t.failure == "malformed_event" and "without its result event" in t.error
        assert t.evidence == f"no result event after {t.steps} model turn(s); exit 0"
    before_any_turn = replay("review_ok", lines[0], exit_code=0)  # the init event alone: did not start
    assert before_any_turn.failure == "start" and before_any_turn.steps == 0
    # The same stream from a `command` reviewer is its own: stopping early hides nothing from the grade.
    assert replay("review_ok", b"".join(lines[:3]), exit_code=0).failure is None


def test_empty_output_with_error_exit_names_stderr() -> None:
    t = replay("review_ok", b"", exit_code=1, stderr_tail="boot\nError: Invalid model name\n")
    assert t.termination == "crashed" and "Invalid model name" in t.error


# --- the happy path -----------------------------------------------------------------------
def test_review_ok_normalizes_turns_tools_usage() -> None:
    t = replay("review_ok")
    assert t.termination == "completed" and t.exit_code == 0 and t.agent_version.startswith("2.1.")
    assert t.steps == 4  # distinct message ids, text+tool_use lines of one turn counted once
    assert [(c.raw_name, c.name, c.step) for c in t.tool_calls] == [
        ("Read", "read", 1), ("Read", "read", 2), ("Grep", "grep", 3), ("Glob", "glob", 3)]
    assert all(c.status == "ok" for c in t.tool_calls)
    assert t.usage.input_tokens > 0 and t.usage.output_tokens > 0 and t.usage.cost_usd is not None
    assert verdict_block(t.final_text)["findings"][0]["rule"] == "fm-description-required"
    assert t.model == "claude-sonnet-4-6"


def test_recorded_secret_was_scrubbed() -> None:
    text = (DATA / "leak_key.ndjson").read_text()
    assert "my key is [REDACTED]" in text and "sk-ant-scripted" not in text


# --- argv and environment -----------------------------------------------------------------
def _request(tmp_path: Path, **kw: object) -> AgentRequest:
    return agent_request(tmp_path, **kw)


def test_argv_uses_hard_tool_list_and_turn_limit(tmp_path: Path) -> None:
    agent = ClaudeAgent(AgentConfig(name="claude", model="claude-x"))
    req = _request(tmp_path, allowed_tools=["read", "grep", "glob"], max_steps=7, extra_args=["--effort", "low"])
    argv = agent.argv(req, "PROMPT")
    assert argv[1:3] == ["-p", "PROMPT"]
    assert argv[argv.index("--tools") + 1] == "Read,Grep,Glob"
    assert "--allowedTools" not in argv and "--allowed-tools" not in argv
    assert argv[argv.index("--max-turns") + 1] == "7"
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--verbose" in argv
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--model") + 1] == "claude-x" and argv[-2:] == ["--effort", "low"]


def test_argv_without_rubric_limits_passes_none(tmp_path: Path) -> None:
    argv = ClaudeAgent(AgentConfig(name="claude")).argv(_request(tmp_path), "P")
    assert "--tools" not in argv and "--max-turns" not in argv and "--model" not in argv


def test_claude_tools_maps_names_and_empty_list_disables_all() -> None:
    assert claude_tools(["read", "edit", "write", "mcp__fs__read"]) == "Read,Edit,Write"
    assert claude_tools([]) == ""


def test_missing_cli_is_a_crashed_transcript_not_an_exception(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ClaudeAgent, "binary", "claude-definitely-not-installed")
    t = get_agent("claude", AgentConfig(name="claude")).run(_request(tmp_path, env={"PATH": "/usr/bin"}))
    assert t.termination == "crashed" and "cannot start" in t.error and t.agent_version is None


def test_unreadable_prompt_is_crashed(tmp_path: Path) -> None:
    req = _request(tmp_path)
    req.prompt_file = tmp_path / "nope.md"
    t = ClaudeAgent(AgentConfig(name="claude")).run(req)
    assert t.termination == "crashed" and "nope.md" in t.error


def test_env_is_isolated_and_secrets_scrubbed(tmp_path: Path, monkeypatch) -> None:
    """A stand-in `claude` on the run's PATH dumps its env and echoes the key."""
    monkeypatch.setenv("HARNESS_ONLY_VARIABLE", "must-not-leak")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "claude"
    fake.write_text("#!/bin/sh\nenv > \"$HOME/env.txt\"\n"
                    "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
                    "\"result\":\"HOME='$HOME' key='$ANTHROPIC_API_KEY' t='$CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC'\"}'\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "ANTHROPIC_API_KEY": "sk-live-abcdef123456"}
    req = _request(tmp_path, env=env)
    t = ClaudeAgent(AgentConfig(name="claude")).run(req)
    assert t.termination == "completed", t.error
    assert f"HOME={req.home}" in t.final_text and "t=1" in t.final_text
    assert "key=sk-live-abcdef123456" in t.final_text  # graded as given; scrubbed where written
    assert "sk-live-abcdef123456" not in req.raw_stream_file.read_text()
    seen = dict(line.split("=", 1) for line in (req.home / "env.txt").read_text().splitlines() if "=" in line)
    assert "HARNESS_ONLY_VARIABLE" not in seen
    assert seen["XDG_CONFIG_HOME"].startswith(str(req.home)) and seen["CLAUDE_CONFIG_DIR"].startswith(str(req.home))


def test_each_call_keeps_what_its_tool_returned() -> None:
    t = replay("review_ok")
    reads = [c for c in t.tool_calls if c.name == "read"]
    assert reads[0].result == "1\tfixtures/block/no-description/SKILL.md\n2\t"
    assert "name: no-description" in (reads[1].result or "")
    assert [c.result for c in t.tool_calls if c.name in ("grep", "glob")] == ["No files found", "No files found"]


def test_a_long_tool_result_is_capped_and_the_rest_counted() -> None:
    long = "x" * (MAX_RESULT_CHARS + 123)
    data = (DATA / "review_ok.ndjson").read_text().replace("No files found", long).encode()
    grep = next(c for c in replay("review_ok", data).tool_calls if c.name == "grep")
    assert grep.result == "x" * MAX_RESULT_CHARS and grep.result_cut == 123
