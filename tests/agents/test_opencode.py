"""OpenCode adapter: parser over REAL recorded streams (tests/e2e/record_openai_clis.py), config,
argv and the step-limit watch.

Derived shapes (banner lines, truncated final line, empty output) are cut here from the real
recordings, so the parser never meets a stream written from memory.
"""

from __future__ import annotations

import json
from pathlib import Path

from rubricgate.agents import get_agent
from rubricgate.agents.base import AgentRequest
from rubricgate.agents.opencode import OpenCodeAgent, parse_opencode_stream, permissions, step_limit_watch, tool_status
from rubricgate.graders.failures import failure_class
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import Transcript
from tests.agent_recordings import agent_request, replay_recording

DATA = Path(__file__).parents[1] / "data" / "transcripts" / "opencode"


def replay(name: str, stream: bytes | None = None, **proc: object) -> Transcript:
    """Parse a recording and fold in the process outcome it was recorded with."""
    return replay_recording("opencode", name, lambda d, m: parse_opencode_stream(d, allowed=m["allowed_tools"]),
                            stream, **proc)


def request(tmp_path: Path, **kw: object) -> AgentRequest:
    return agent_request(tmp_path, **{"allowed_tools": ["read", "grep", "glob"], "max_steps": 4,
                                      "env": {"PATH": "/usr/bin:/bin"}, **kw})

# --- failure shapes first ---------------------------------------------------------------

def test_api_error_500_after_retries_is_api_error_without_answer() -> None:
    t = replay("api_error")
    assert (t.termination, t.exit_code, t.final_text) == ("api_error", 1, "")
    assert t.error == "APIError 500: scripted upstream failure"
    assert t.steps == 1 and [c.name for c in t.tool_calls] == ["read"]


def test_api_error_400_is_api_error() -> None:
    t = replay("api_error_400")
    assert t.termination == "api_error" and "400" in t.error


def test_broken_sse_stream_is_api_error() -> None:
    t = replay("malformed_stream")
    assert t.termination == "api_error" and t.error.startswith("UnknownError: JSON parsing failed")


def test_streams_cut_short_are_the_endpoints_not_steps_of_the_reviewer() -> None:
    """OpenCode asks the model again, for ever, after a stream that ended without a finish reason
    (step reason "unknown"): counted as the reviewer's steps, an endpoint cutting every stream
    short ran the reviewer into max_steps, graded as its failure (a REGRESSION, exit 1)."""
    t = replay("truncated_stream")
    assert failure_class(t) == "endpoint" and t.termination == "api_error", (t.failure, t.error)
    assert t.steps == 1 and "ended without a finish reason" in t.error
    assert any("not counted as steps" in n for n in t.notes), t.notes


def test_a_run_ending_on_a_stream_cut_short_is_the_endpoints() -> None:
    """Its last step ended without a finish reason: a half answer, never the reviewer's result."""
    lines = (DATA / "truncated_stream.ndjson").read_bytes().splitlines()
    t = replay("truncated_stream", stream=b"\n".join(lines[:6]) + b"\n", stopped="", exit_code=0)
    assert failure_class(t) == "endpoint" and "ended without a finish reason" in t.error, (t.failure, t.error)


def test_step_watch_stops_at_the_second_stream_cut_short() -> None:
    lines = (DATA / "truncated_stream.ndjson").read_bytes().splitlines()
    stops = [r for r in map(step_limit_watch(6), lines) if r]
    assert stops and stops[0].startswith("endpoint_error: opencode would retry"), stops


def test_max_turns_is_enforced_by_the_harness() -> None:
    t = replay("max_turns")
    assert t.termination == "max_turns" and t.exit_code is None
    assert t.steps == 7 and "exceeds max_steps 6" in t.error
    assert t.final_text == ""


def test_forbidden_tool_is_recorded_as_denied() -> None:
    t = replay("forbidden_tool")
    bash = [c for c in t.tool_calls if c.name == "bash"]
    assert len(bash) == 1 and bash[0].status == "denied" and bash[0].step == 2
    assert t.termination == "completed" and '"tier": "PASS"' in t.final_text


def test_write_tool_is_normalized_and_denied() -> None:
    t = replay("write_denied")
    assert [(c.raw_name, c.name, c.status) for c in t.tool_calls][1] == ("write", "write", "denied")


def test_permission_rule_denial_is_denied_even_for_an_allowed_tool() -> None:
    t = replay("permission_denied")
    read = t.tool_calls[1]
    assert (read.name, read.status, read.input) == ("read", "denied", {"filePath": "/etc/hostname"})


def test_missing_file_is_a_tool_error_not_a_denial() -> None:
    t = replay("missing_file")
    assert t.tool_calls[1].status == "error" and t.termination == "completed"


def test_malformed_verdict_is_still_the_final_text() -> None:
    t = replay("malformed_verdict")
    assert t.termination == "completed" and '"tier": "MAYBE"' in t.final_text


def test_banner_lines_are_skipped_and_counted() -> None:
    data = b"opencode v1.18.33\n\x1b[2mloading\x1b[0m\n" + (DATA / "review_ok.ndjson").read_bytes()
    t = replay("review_ok", data)
    assert t.skipped_lines == 2 and t.termination == "completed" and t.steps == 5


def test_truncated_final_line_loses_the_end_and_is_an_error() -> None:
    lines = (DATA / "review_ok.ndjson").read_bytes().splitlines(keepends=True)
    cut = b"".join(lines[:-1]) + lines[-1][:40]
    t = replay("review_ok", cut)
    assert t.skipped_lines == 1
    # Without the final step_finish the run never said it stopped: no result, so crashed...
    assert t.termination == "crashed" and "truncated" in t.error
    # ...but the model's last text survives for the verdict grader.
    assert '"tier": "PASS"' in t.final_text


def test_a_failed_start_names_the_cause_its_advice_line_follows() -> None:
    # Copilot printed the cause, then advice; the advice alone reached the preflight's one line.
    stderr = ("Error: Classic Personal Access Tokens (ghp_) are not supported by Copilot.\n"
              "\u2022 Unset GITHUB_TOKEN and start 'copilot', then use the '/login' command\n")
    t = replay("review_ok", b"", exit_code=1, stderr_tail=stderr)
    assert t.error.startswith("exit 1: Error: Classic Personal Access Tokens (ghp_) are not supported")
    assert "Unset GITHUB_TOKEN" in t.error


def test_empty_output_with_clean_exit_is_crashed() -> None:
    t = replay("review_ok", b"")
    assert (t.termination, t.steps, t.final_text) == ("crashed", 0, "")


def test_empty_output_with_error_exit_names_stderr() -> None:
    t = replay("review_ok", b"", exit_code=1, stderr_tail="boot\nError: provider not found\n")
    assert t.termination == "crashed" and t.error == "exit 1: Error: provider not found"


def test_output_cap_is_reported() -> None:
    t = replay("review_ok", stdout_truncated=True, stdout_bytes=100)
    assert t.output_truncated and t.termination == "crashed"


def test_tool_status_mapping() -> None:
    assert tool_status({"status": "completed"}) == "ok"
    assert tool_status({"status": "error", "error": "File not found: x"}) == "error"
    assert tool_status({"status": "error", "error": "Model tried to call unavailable tool 'invalid'"}) == "denied"
    assert tool_status({"status": "running"}) == "error"  # killed mid-call


# --- the happy path ---------------------------------------------------------------------

def test_review_ok_normalizes_steps_tools_usage() -> None:
    t = replay("review_ok")
    assert t.termination == "completed" and t.exit_code == 0 and t.error == ""
    assert t.steps == 5
    assert [(c.name, c.status, c.step) for c in t.tool_calls] == [
        ("read", "ok", 1), ("read", "ok", 2), ("grep", "ok", 3), ("glob", "ok", 4)]
    assert t.usage.input_tokens > 0 and t.usage.output_tokens == 100 and t.usage.cost_usd == 0.0
    assert t.final_text.rstrip().endswith("```")


# --- config, argv, watch ----------------------------------------------------------------

def test_permissions_deny_everything_outside_the_allowlist() -> None:
    assert permissions(["read", "grep", "write"]) == {
        "*": "deny", "external_directory": "deny", "read": "allow", "grep": "allow", "edit": "allow"}
    assert permissions(None) == {"*": "allow"}
    assert "ask" not in json.dumps(permissions(["bash"]))


def test_config_points_at_custom_provider_and_sets_soft_steps(tmp_path: Path) -> None:
    agent = OpenCodeAgent(AgentConfig(name="opencode", model="scripted"))
    req = request(tmp_path, env={"PATH": "/bin", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    cfg = agent.opencode_config(req)
    assert cfg["model"] == "rubricgate/scripted" and cfg["agent"]["build"]["steps"] == 4
    provider = cfg["provider"]["rubricgate"]
    assert provider["options"]["baseURL"] == "http://127.0.0.1:9/v1"
    assert provider["options"]["apiKey"] == "{env:OPENAI_API_KEY}"  # never the key itself
    assert cfg["autoupdate"] is False and cfg["share"] == "disabled"


def test_config_without_base_url_uses_the_model_as_given(tmp_path: Path) -> None:
    agent = OpenCodeAgent(AgentConfig(name="opencode", model="anthropic/claude-sonnet-4-5"))
    cfg = agent.opencode_config(request(tmp_path, max_steps=None, allowed_tools=None))
    assert "provider" not in cfg and cfg["agent"] == {"title": {"disable": True}}
    assert cfg["model"] == "anthropic/claude-sonnet-4-5"


def test_argv_ends_with_the_prompt_after_double_dash(tmp_path: Path) -> None:
    agent = get_agent("opencode", AgentConfig(name="opencode"))
    argv = agent.argv(request(tmp_path, extra_args=["--log-level", "ERROR"]), "---\nprompt")
    assert argv[1:5] == ["run", "--format", "json", "--pure"]
    assert argv[-2:] == ["--", "---\nprompt"] and "--log-level" in argv


def test_env_is_quiet_and_points_at_the_run_config(tmp_path: Path) -> None:
    env = OpenCodeAgent(AgentConfig()).agent_env(request(tmp_path))
    assert env["OPENCODE_CONFIG"] == str(tmp_path / "scratch" / "opencode" / "opencode.json")
    assert env["OPENCODE_DISABLE_MODELS_FETCH"] == env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1"


def test_step_watch_stops_on_the_first_step_past_the_limit() -> None:
    lines = [ln for ln in (DATA / "max_turns.ndjson").read_bytes().splitlines()]
    watch = step_limit_watch(2)
    assert watch is not None
    reasons = [watch(ln) for ln in lines]
    stops = [r for r in reasons if r]
    assert stops[0] == "max_turns: step 3 exceeds max_steps 2"
    # a text line that merely mentions step_start is not a step
    assert step_limit_watch(1)(b'{"type":"text","part":{"text":"\\"step_start\\""}}') is None  # type: ignore[misc]
    no_limit = step_limit_watch(None)
    assert not any(no_limit(ln) for ln in lines)


def test_missing_cli_is_a_crashed_transcript_not_an_exception(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(OpenCodeAgent, "binary", "opencode-not-installed-here")
    req = request(tmp_path)
    req.prompt_file.write_text("review")
    t = OpenCodeAgent(AgentConfig()).run(req)
    assert t.termination == "crashed" and "cannot start" in t.error and t.agent_version is None


def test_unreadable_prompt_is_crashed(tmp_path: Path) -> None:
    t = OpenCodeAgent(AgentConfig()).run(request(tmp_path, prompt_file=tmp_path / "missing.md"))
    assert t.termination == "crashed" and "cannot read prompt" in t.error


def test_each_call_keeps_its_output() -> None:
    calls = replay("review_ok").tool_calls
    assert "1: fixtures/pass/review_ok/SKILL.md" in (calls[0].result or "")
    assert [c.result for c in calls if c.name == "grep"] == ["No files found"]
    assert (calls[-1].result or "").endswith("references/a.md")
