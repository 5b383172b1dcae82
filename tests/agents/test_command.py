"""Command adapter: template validation, placeholder filling, formats, harness-enforced limits."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from rubricgate.agents import get_agent
from rubricgate.agents.base import AgentRequest
from rubricgate.agents.command import CommandAgent, fill_template
from rubricgate.errors import GateInputError
from rubricgate.models.config import AgentConfig
from tests.agent_recordings import agent_request
from tests.timing import HANG_S

CLAUDE_DATA = Path(__file__).parents[1] / "data" / "transcripts" / "claude"


def _cfg(command: list[str] | None, fmt: str | None = "claude", **kw: object) -> AgentConfig:
    return AgentConfig(name="command", command=command, format=fmt, **kw)  # type: ignore[arg-type]


def _request(tmp_path: Path, **kw: object) -> AgentRequest:
    return agent_request(tmp_path, **{"env": {"PATH": os.environ["PATH"]}, **kw})


def _replayer(tmp_path: Path, recording: str, delay: float = 0.0) -> list[str]:
    """A stand-in CLI that prints a real recording line by line (optionally slowly)."""
    script = tmp_path / "emit.py"
    script.write_text("import sys,time\nfor line in open(sys.argv[1], 'rb'):\n"
                      f"    sys.stdout.buffer.write(line); sys.stdout.flush(); time.sleep({delay})\n")
    return [sys.executable, str(script), str(CLAUDE_DATA / f"{recording}.ndjson")]


@pytest.mark.parametrize("command, fmt, field", [
    (None, "claude", "agent.command"),
    (["x", "{prompt}"], "claude", "agent.command"),
    (["x"], "yaml", "agent.format"),
])
def test_bad_config_is_one_line_gate_input_error(command, fmt, field) -> None:
    with pytest.raises(GateInputError) as err:
        get_agent("command", _cfg(command, fmt))
    assert err.value.field == field and "\n" not in str(err.value) and "fix:" in str(err.value)


def test_fill_template_drops_valueless_placeholder_and_its_flag() -> None:
    tpl = ["agent", "--max-turns", "{max_steps}", "--file={prompt_file}", "--tools", "{allowed_tools}", "-q"]
    assert fill_template(tpl, {"max_steps": None, "prompt_file": "/p", "allowed_tools": "read,grep"}) == [
        "agent", "--file=/p", "--tools", "read,grep", "-q"]


def test_missing_executable_is_crashed(tmp_path: Path) -> None:
    t = get_agent("command", _cfg(["no-such-agent-cli-xyz", "{prompt_file}"])).run(_request(tmp_path))
    assert t.termination == "crashed" and "cannot start" in t.error


def test_claude_format_from_a_real_recording(tmp_path: Path) -> None:
    t = get_agent("command", _cfg(_replayer(tmp_path, "review_ok"))).run(_request(tmp_path))
    assert t.agent == "command" and t.termination == "completed" and t.steps == 4
    assert [c.name for c in t.tool_calls] == ["read", "read", "grep", "glob"]


def test_harness_enforces_max_steps_when_template_does_not(tmp_path: Path) -> None:
    agent = get_agent("command", _cfg(_replayer(tmp_path, "review_ok", delay=0.2)))
    t = agent.run(_request(tmp_path, max_steps=2))
    assert t.termination == "max_turns" and "stopped by rubricgate" in t.error and t.steps == 3


def test_harness_enforces_allowlist_when_template_does_not(tmp_path: Path) -> None:
    agent = get_agent("command", _cfg(_replayer(tmp_path, "forbidden_tool", delay=0.2)))
    t = agent.run(_request(tmp_path, allowed_tools=["read", "grep", "glob"]))
    assert "tool_denied: bash" in t.error
    assert [(c.name, c.status) for c in t.tool_calls][-1] == ("bash", "denied")
    assert "```json" not in t.final_text  # stopped before the answer


def test_a_forbidden_tool_hidden_behind_a_raw_u2028_is_still_stopped_and_recorded(tmp_path: Path) -> None:
    """A CLI written in Node leaves U+2028 raw in its JSON lines; a line cut there would hide
    the call from the watch and the grader alike (a false pass)."""
    stream = tmp_path / "u2028.ndjson"
    lines = [json.loads(line) for line in (CLAUDE_DATA / "forbidden_tool.ndjson").read_text().splitlines() if line]
    for event in lines:
        for block in (event.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("name") == "Bash":
                block["input"] = {"command": "cat /etc/hostname\u2028# looks like a comment"}
    stream.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in lines), encoding="utf-8")
    assert "\u2028" in stream.read_text(encoding="utf-8")
    agent = get_agent("command", _cfg(_replayer(tmp_path, "forbidden_tool", delay=0.2)[:2] + [str(stream)]))
    t = agent.run(_request(tmp_path, allowed_tools=["read", "grep", "glob"]))
    assert "tool_denied: bash" in t.error
    assert [(c.name, c.status) for c in t.tool_calls][-1] == ("bash", "denied") and t.skipped_lines == 0


def test_limits_in_template_are_left_to_the_cli(tmp_path: Path) -> None:
    cmd = _replayer(tmp_path, "review_ok") + ["{max_steps}", "{allowed_tools}"]
    t = get_agent("command", _cfg(cmd)).run(_request(tmp_path, max_steps=2, allowed_tools=["read"]))
    assert t.termination == "completed" and t.steps == 4


def test_text_format_and_last_message_file(tmp_path: Path) -> None:
    sh = shutil.which("sh")
    cmd = [sh, "-c", 'echo "stdout answer"; printf "file answer" > "$1"', "sh", "{last_message_file}"]
    t = get_agent("command", _cfg(cmd, "text")).run(_request(tmp_path))
    assert t.final_text == "file answer" and t.termination == "completed"
    t2 = get_agent("command", _cfg([sh, "-c", "echo hi; exit 3"], "text")).run(_request(tmp_path))
    assert t2.final_text.strip() == "hi" and t2.exit_code == 3


@pytest.mark.parametrize("script", [
    'echo "Reviewing 1 file..."; kill -SEGV $$',
    'printf "review:\\n  key_issues_to_review: []\\n"; kill -KILL $$',
])
def test_a_text_reviewer_killed_by_a_signal_after_some_output_is_infrastructure(tmp_path: Path, script: str) -> None:
    """Plain stdout has no end-of-run event: a reviewer printing a progress line, or half its
    answer, then killed by a signal was graded on that text as its finished answer (a malformed
    verdict, or a truncated one that passes), an outage counted against the reviewer."""
    t = get_agent("command", _cfg([shutil.which("sh"), "-c", script], "text")).run(_request(tmp_path))
    assert t.failure == "signal" and t.termination == "crashed", t


def test_a_retry_that_writes_no_last_message_is_not_read_as_the_failed_attempts(tmp_path: Path) -> None:
    """The first attempt wrote its answer to the last-message file and died by a signal; the retry,
    in the same scratch folder, wrote none and ended normally: it was graded on the first's answer."""
    sh = shutil.which("sh")
    marker = tmp_path / "attempted"
    script = ('if [ ! -e "$2" ]; then : > "$2"; printf "PASS (draft)" > "$1"; kill -SEGV $$; fi; '
              'echo "second attempt, no answer file"')
    agent = get_agent("command", _cfg([sh, "-c", script, "sh", "{last_message_file}", str(marker)], "text"))
    request = _request(tmp_path)
    first, retry = agent.run(request), agent.run(request)
    assert first.failure == "signal", first
    assert retry.final_text.strip() == "second attempt, no answer file", retry.final_text


def test_timeout_kills_the_command(tmp_path: Path) -> None:
    t = get_agent("command", _cfg([sys.executable, "-c", "import time; time.sleep(30)"], "text")).run(
        _request(tmp_path, timeout_s=0.5))
    assert t.termination == "timeout" and t.exit_code is None


def _emitter(tmp_path: Path, cli: str, recording: str, delay: float = 0.0) -> list[str]:
    """A stand-in CLI printing a real recording of `cli` line by line."""
    return _replayer(tmp_path, recording, delay)[:2] + [str(CLAUDE_DATA.parent / cli / f"{recording}.ndjson")]


@pytest.mark.parametrize("fmt", ["claude", "cortex", "opencode", "codex"])
def test_every_stream_format_builds_its_limit_watch(fmt: str) -> None:
    from rubricgate.agents.formats import watch_for

    watch = watch_for(fmt, 2, ["read", "grep", "glob"])
    assert callable(watch) and watch(b"not json") is None


def test_codex_format_max_steps_enforced_by_the_harness(tmp_path: Path) -> None:
    agent = get_agent("command", _cfg(_emitter(tmp_path, "codex", "review_ok", delay=0.1), "codex"))
    t = agent.run(_request(tmp_path, max_steps=1))
    assert t.termination == "max_turns" and "stopped by rubricgate" in t.error, t.error


def test_runaway_output_is_stopped_at_the_cap_and_reported(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('banner line\\n')"]
    # Without the cap the output would run until the timeout, twice the hang bound.
    t = get_agent("command", _cfg(cmd, "claude")).run(_request(tmp_path, output_cap_bytes=50_000, timeout_s=2 * HANG_S))
    assert t.output_truncated and t.termination == "crashed"
    assert "output exceeded the cap" in t.error and "output_cap_bytes" in t.error
    assert t.skipped_lines > 1000 and t.termination != "timeout"  # the cap stopped it, not the timeout


def test_secrets_are_scrubbed_from_every_file_rubricgate_keeps_in_scratch(tmp_path: Path) -> None:
    secret = "sk-test-scratch-secret-123"
    sh = shutil.which("sh")
    cmd = [sh, "-c", 'echo "$OPENAI_API_KEY"; printf "key %s" "$OPENAI_API_KEY" > "$1"', "sh", "{last_message_file}"]
    req = _request(tmp_path, env={"PATH": os.environ["PATH"], "OPENAI_API_KEY": secret})
    t = get_agent("command", _cfg(cmd, "text")).run(req)
    # The transcript is the agent's own (graders read it as given); what is kept on disk is not.
    assert t.final_text == f"key {secret}"
    kept = [p for p in req.scratch.iterdir() if p.is_file() and secret.encode() in p.read_bytes()]
    assert kept == []


def test_scrubbing_reads_only_what_rubricgate_keeps_and_at_most_the_cap(tmp_path: Path, monkeypatch) -> None:
    """Any other file of the scratch folder is the agent's own, as its HOME is: read whole to
    scrub it, a reviewer's gigabytes there held the harness for minutes after its trial."""
    secret = "sk-test-scratch-secret-456"
    junk = f"{secret} " + "x" * 100_000
    script = ('d=$(dirname "$1"); printf %s "$JUNK" > "$d/junk.txt"; '
              'printf "key %s %s" "$OPENAI_API_KEY" "$JUNK" > "$1"; echo done')
    cmd = [shutil.which("sh"), "-c", script, "sh", "{last_message_file}"]
    monkeypatch.setattr("rubricgate.agents.cli.DEFAULT_CAP", 1000, raising=False)
    req = _request(tmp_path, env={"PATH": os.environ["PATH"], "OPENAI_API_KEY": secret, "JUNK": junk},
                   output_cap_bytes=500)
    get_agent("command", _cfg(cmd, "text", env_allowlist=["JUNK"])).run(req)
    assert (req.scratch / "junk.txt").read_text() == junk  # never opened
    kept = req.last_message_file.read_bytes()
    assert len(kept) <= 1000 and secret.encode() not in kept and kept.startswith(b"key [REDACTED]")


def test_version_never_runs_an_unknown_wrapper(tmp_path):
    marker = tmp_path / "ran"
    wrapper = tmp_path / "my-agent"
    wrapper.write_text(f"#!/bin/sh\ntouch {marker}\necho 9.9\n")
    wrapper.chmod(0o755)
    agent = CommandAgent(AgentConfig(name="command", command=[str(wrapper), "{prompt_file}"], format="text"))
    assert agent.version() is None and not marker.exists()


def test_version_command_is_used_when_given(tmp_path):
    config = AgentConfig(name="command", command=["my-agent", "{prompt_file}"], format="text",
                         version_command=["echo", "my-agent 1.2.3"])
    assert CommandAgent(config).version() == "my-agent 1.2.3"


CODEX_DATA = Path(__file__).parents[1] / "data" / "transcripts" / "codex"
# The first attempt leaves a session rollout in HOME/.codex and dies; the retry cannot start.
CODEX_FIRST_ATTEMPT_THEN_NO_START = """if [ ! -e "$HOME/tried" ]; then
  touch "$HOME/tried"
  mkdir -p "$HOME/.codex/sessions/2026/12/07"
  cp ROLLOUT "$HOME/.codex/sessions/2026/12/07/rollout-2026-12-07T09-00-00-a.jsonl"
  kill -SEGV $$
fi
echo "error: could not start" >&2
exit 1
"""


def test_a_codex_format_retry_is_never_read_as_the_failed_attempts_session(tmp_path: Path) -> None:
    """A retry runs in the same HOME: a codex-format command that wrote no session of its own was
    given the failed attempt's calls and turns, and its failure to start became the reviewer's."""
    script = CODEX_FIRST_ATTEMPT_THEN_NO_START.replace("ROLLOUT", str(CODEX_DATA / "forbidden_tool.rollout.jsonl"))
    agent = get_agent("command", _cfg(["/bin/sh", "-c", script], "codex"))
    request = agent_request(tmp_path, env={"PATH": "/usr/bin:/bin"})
    first, retry = agent.run(request), agent.run(request)
    assert first.failure == "signal" and first.tool_calls
    assert retry.steps == 0 and retry.tool_calls == [] and retry.failure != "agent_error", retry


def test_a_codex_home_left_a_link_is_replaced_not_emptied_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sessions").mkdir(parents=True)
    (outside / "sessions" / "keep.txt").write_text("a host file\n")
    request = agent_request(tmp_path, env={"PATH": "/usr/bin:/bin"})
    request.home.mkdir(parents=True)
    (request.home / ".codex").symlink_to(outside)
    get_agent("command", _cfg(["/bin/sh", "-c", "exit 0"], "codex")).run(request)
    assert (outside / "sessions" / "keep.txt").read_text() == "a host file\n"
    assert not (request.home / ".codex").is_symlink()
