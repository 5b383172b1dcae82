"""Codex adapter: parser over REAL recorded streams and session rollouts
(tests/e2e/record_openai_clis.py), command classification, config, argv and the limit watch.

Derived shapes (banner lines, truncated final line, empty output) are cut here from the real
recordings, so the parser never meets a stream written from memory.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.codex import CodexAgent, codex_config, item_result, limit_watch, parse_codex_stream
from rubricgate.agents.codex_rollout import output_status
from rubricgate.agents.shell_commands import classify_command, unwrap_shell
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import Transcript
from tests.agent_recordings import agent_request, replay_recording

DATA = Path(__file__).parents[1] / "data" / "transcripts" / "codex"


def replay(name: str, stream: bytes | None = None, rollout: bool = True, **proc: object) -> Transcript:
    """Parse a recording (stream + rollout) and fold in the process outcome it was recorded with."""
    roll = (DATA / f"{name}.rollout.jsonl").read_bytes() if rollout else None
    return replay_recording("codex", name, lambda d, m: parse_codex_stream(d, allowed=m["allowed_tools"], rollout=roll),
                            stream, **proc)


def request(tmp_path: Path, **kw: object) -> AgentRequest:
    return agent_request(tmp_path, **{"allowed_tools": ["read", "grep", "glob"], "max_steps": 4,
                                      "env": {"PATH": "/usr/bin:/bin"}, **kw})

# --- failure shapes first ---------------------------------------------------------------

def test_api_error_500_is_api_error_with_the_final_message_not_the_retry_notice() -> None:
    t = replay("api_error")
    assert (t.termination, t.exit_code, t.final_text) == ("api_error", 1, "")
    assert not t.error.startswith("Reconnecting") and "temporary errors" in t.error


def test_api_error_400_is_api_error() -> None:
    t = replay("api_error_400")
    assert t.termination == "api_error" and "scripted invalid request" in t.error


def test_broken_sse_stream_is_api_error() -> None:
    t = replay("malformed_stream")
    assert t.termination == "api_error" and "stream disconnected" in t.error


def test_max_turns_is_enforced_by_the_harness() -> None:
    t = replay("max_turns")
    assert t.termination == "max_turns" and t.exit_code is None and t.final_text == ""
    assert t.steps > 6 and "exceeds max_steps 6" in t.error


def test_sandbox_refused_write_hidden_from_the_stream_is_found_in_the_rollout() -> None:
    stream_only = replay("forbidden_tool", rollout=False)
    assert [c.name for c in stream_only.tool_calls] == ["read"]  # the CLI's stream hides it
    t = replay("forbidden_tool")
    touch = t.tool_calls[1]
    assert (touch.name, touch.status, touch.step) == ("bash", "denied", 2)
    assert "touch" in touch.input["command"] and t.steps == 3
    assert t.termination == "completed" and '"tier": "PASS"' in t.final_text


def test_redirect_write_is_bash_and_denied() -> None:
    t = replay("write_denied")
    assert (t.tool_calls[1].name, t.tool_calls[1].status) == ("bash", "denied")


def test_missing_file_is_a_tool_error() -> None:
    t = replay("missing_file")
    assert (t.tool_calls[1].name, t.tool_calls[1].status) == ("read", "error")


def test_malformed_verdict_is_still_the_final_text() -> None:
    t = replay("malformed_verdict")
    assert t.termination == "completed" and '"tier": "MAYBE"' in t.final_text


def test_banner_lines_are_skipped_and_counted() -> None:
    data = b"Reading additional input from stdin...\nWARNING: proceeding\n" + (DATA / "review_ok.ndjson").read_bytes()
    t = replay("review_ok", data)
    assert t.skipped_lines == 2 and t.termination == "completed"


def test_truncated_final_line_is_crashed_but_keeps_the_answer() -> None:
    lines = (DATA / "review_ok.ndjson").read_bytes().splitlines(keepends=True)
    t = replay("review_ok", b"".join(lines[:-1]) + lines[-1][:30], rollout=False)
    assert t.skipped_lines == 1 and t.termination == "crashed" and "truncated" in t.error
    assert '"tier": "PASS"' in t.final_text


def test_empty_output_with_clean_exit_is_crashed() -> None:
    t = replay("review_ok", b"", rollout=False)
    assert (t.termination, t.steps, t.final_text) == ("crashed", 0, "")


def test_empty_output_with_error_exit_names_stderr() -> None:
    t = replay("review_ok", b"", rollout=False, exit_code=1, stderr_tail="Error: config.toml: bad\n")
    assert t.termination == "crashed" and t.error == "exit 1: Error: config.toml: bad"


# --- the happy path ---------------------------------------------------------------------

def test_review_ok_classifies_shell_commands_and_counts_turns() -> None:
    for t in (replay("review_ok"), replay("review_ok", rollout=False)):
        assert t.termination == "completed" and t.exit_code == 0 and t.steps == 5
        assert [(c.name, c.status, c.step) for c in t.tool_calls] == [
            ("read", "ok", 1), ("read", "ok", 2), ("grep", "ok", 3), ("glob", "ok", 4)]
        assert t.usage.input_tokens > 0 and t.usage.output_tokens == 100
        assert t.final_text.rstrip().endswith("```")


# --- classification, config, argv, watch ------------------------------------------------

def test_classify_command() -> None:
    assert classify_command("/bin/bash -lc 'cat a.md'") == "read"
    assert classify_command("sed -n '1,20p' a.md") == "read"
    assert classify_command("sed -i s/a/b/ a.md") == "bash"
    assert classify_command("rg -n sk- skills") == "grep"
    assert classify_command("rg --files skills") == "glob"
    assert classify_command("find . -name x -delete") == "bash"
    assert classify_command("cat a.md | sh") == "bash"
    assert classify_command("cat a > b") == "bash"
    assert classify_command("grep -rn 'sk-|AKIA' skills") == "grep"  # quoted | is not a pipe
    assert classify_command("ls; rm -rf x") == "bash"
    assert classify_command("cat $(echo a)") == "bash"
    assert classify_command("python3 x.py") == "bash"
    assert classify_command("cat 'unterminated") == "bash"
    assert unwrap_shell("/bin/bash -lc 'ls -d x/*'") == "ls -d x/*"


def test_output_status() -> None:
    assert output_status("read", None) == "error"
    assert output_status("grep", "Process exited with code 1\nOutput:\n") == "ok"
    assert output_status("read", "Process exited with code 1\nOutput:\nno such file") == "error"
    assert output_status("bash", "Process exited with code 1\nRead-only file system") == "denied"


def test_config_has_sandbox_no_approvals_and_provider(tmp_path: Path) -> None:
    req = request(tmp_path, env={"PATH": "/bin", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                 "OPENAI_API_KEY": "sk-secret-value"}, model="scripted")
    text = codex_config(req, None)
    assert 'approval_policy = "never"' in text and 'sandbox_mode = "read-only"' in text
    assert 'model_provider = "rubricgate"' in text and 'base_url = "http://127.0.0.1:9/v1"' in text
    assert 'env_key = "OPENAI_API_KEY"' in text and "sk-secret-value" not in text
    assert "model_provider" not in codex_config(request(tmp_path), "gpt-5")


def test_argv_is_read_only_exec_with_last_message_file(tmp_path: Path) -> None:
    req = request(tmp_path, model="scripted")
    argv = CodexAgent(AgentConfig()).argv(req, "-prompt")
    assert argv[1:3] == ["exec", "--json"] and argv[-2:] == ["--", "-prompt"]
    assert argv[argv.index("-o") + 1] == str(req.last_message_file)
    assert argv[argv.index("-s") + 1] == "read-only" and argv[argv.index("-m") + 1] == "scripted"


def test_watch_stops_past_max_steps() -> None:
    lines = (DATA / "max_turns.ndjson").read_bytes().splitlines()
    watch = limit_watch(2)
    stops = [r for r in (watch(ln) for ln in lines) if r]  # type: ignore[misc]
    assert stops[0] == "max_turns: turn 3 exceeds max_steps 2"
    ok = limit_watch(6)
    assert not any(ok(ln) for ln in (DATA / "review_ok.ndjson").read_bytes().splitlines())  # type: ignore[misc]
    unlimited = limit_watch(None)
    assert not any(unlimited(ln) for ln in lines)  # no max_steps: turns are not limited


def test_reconnecting_for_ever_is_stopped_at_the_second_notice_as_an_outage() -> None:
    # A real stream: codex 0.171.0 with its model server down prints "Reconnecting..." for ever.
    lines = (DATA / "unreachable.ndjson").read_bytes().splitlines()
    watch = limit_watch(6)
    stops = [watch(ln) for ln in lines]
    assert stops[:4] == [None] * 4 and stops[4] is not None, stops
    assert stops[4].startswith("model_unreachable: codex kept reconnecting") and "waiting for network" in stops[4]
    t = replay("unreachable", rollout=False, timed_out=False, stopped=stops[4])
    assert t.termination == "api_error" and "kept reconnecting" in t.error
    from rubricgate.graders.failures import is_infra_failure

    assert is_infra_failure(t)


def test_one_reconnect_before_the_final_error_is_not_stopped() -> None:
    # The real 500 recording: "Reconnecting... 1/1", then the error that says what went wrong.
    watch = limit_watch(6)
    assert not any(watch(ln) for ln in (DATA / "api_error.ndjson").read_bytes().splitlines())


def test_the_command_format_codex_stops_an_endless_reconnect_well_before_the_timeout(tmp_path: Path) -> None:
    from rubricgate.agents import get_agent

    script = tmp_path / "codex-down.py"
    script.write_text("import sys,time\nfor line in open(sys.argv[1], 'rb'):\n"
                      "    sys.stdout.buffer.write(line); sys.stdout.flush()\ntime.sleep(120)\n")
    cfg = AgentConfig(name="command", format="codex", command=[sys.executable, str(script),
                                                               str(DATA / "unreachable.ndjson")])
    req = request(tmp_path, timeout_s=120)
    t = get_agent("command", cfg).run(req)
    assert t.termination == "api_error" and "model_unreachable" in t.error, t.error


def test_missing_cli_is_a_crashed_transcript_not_an_exception(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(CodexAgent, "binary", "codex-not-installed-here")
    req = request(tmp_path)
    req.prompt_file.write_text("review")
    t = CodexAgent(AgentConfig()).run(req)
    assert t.termination == "crashed" and "cannot start" in t.error


def test_each_command_keeps_its_output_from_the_stream_and_from_the_rollout() -> None:
    streamed = replay("review_ok", rollout=False).tool_calls
    assert [c.result for c in streamed][0] == "fixtures/pass/review_ok/SKILL.md\n"
    assert "name: weekly-revenue-summary" in (streamed[1].result or "")
    rolled = replay("review_ok").tool_calls
    assert all(c.result and "Process exited with code" in c.result for c in rolled)
    assert "fixtures/pass/review_ok/SKILL.md" in (rolled[0].result or "")


def test_an_mcp_call_keeps_its_error_and_a_file_change_has_no_result() -> None:
    assert item_result({"type": "mcp_tool_call", "result": None, "error": {"message": "<b>no</b>"}}) == \
        '{"message": "<b>no</b>"}'
    assert item_result({"type": "file_change", "changes": []}) is None
    assert item_result({"type": "command_execution", "status": "in_progress"}) is None


FIRST_ATTEMPT_THEN_NO_START = """#!/bin/sh
case "$1" in --version) echo "codex-cli 0.171.0"; exit 0;; esac
if [ ! -e "$CODEX_HOME/tried" ]; then
  touch "$CODEX_HOME/tried"
  mkdir -p "$CODEX_HOME/sessions/2026/12/07"
  cp ROLLOUT "$CODEX_HOME/sessions/2026/12/07/rollout-2026-12-07T09-00-00-a.jsonl"
  kill -SEGV $$
fi
echo "error: could not start" >&2
exit 1
"""


def test_a_retry_is_never_read_as_the_failed_attempts_session(tmp_path: Path, monkeypatch) -> None:
    """A retry runs in the same CODEX_HOME: an attempt that wrote no session of its own was given
    the failed one's calls and turns, and its failure to start became the reviewer's."""
    prefix = tmp_path / "bin"
    prefix.mkdir()
    (prefix / "codex").write_text(FIRST_ATTEMPT_THEN_NO_START.replace("ROLLOUT", str(DATA / "review_ok.rollout.jsonl")))
    (prefix / "codex").chmod(0o755)
    monkeypatch.setenv("PATH", f"{prefix}:{Path(sys.executable).parent}:/usr/bin:/bin")
    request = agent_request(tmp_path, env={"PATH": f"{prefix}:/usr/bin:/bin"})
    agent = CodexAgent(AgentConfig(name="codex"))
    first, retry = agent.run(request), agent.run(request)
    assert first.failure == "signal" and first.tool_calls
    assert retry.steps == 0 and retry.tool_calls == [] and retry.failure != "agent_error", retry
