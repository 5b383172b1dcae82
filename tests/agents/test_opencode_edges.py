"""OpenCode edge cases on REAL recordings (tests/e2e/record_opencode_permissions.py)."""

from __future__ import annotations

import json
from pathlib import Path

from rubricgate.agents.opencode import parse_opencode_stream
from rubricgate.graders.tool_use import grade_tool_use
from rubricgate.models.task import ToolUseRubric
from tests.agent_recordings import replay_recording

DATA = Path(__file__).parents[1] / "data" / "transcripts" / "opencode"
VERDICT = 'Review done.\n\n```json\n{"tier": "PASS", "summary": "s", "files_reviewed": [], "findings": []}\n```\n'


def replay(name: str, stream: bytes | None = None, **proc: object):
    return replay_recording("opencode", name, lambda d, m: parse_opencode_stream(d, allowed=m["allowed_tools"]), stream,
                            **proc)


def test_a_run_ending_after_a_tool_calls_step_is_not_completed() -> None:
    t = replay("ask_ends_run")
    assert t.exit_code == 0 and t.termination != "completed"
    assert "tool-calls" in t.error
    assert [(c.name, c.status) for c in t.tool_calls][-1] == ("bash", "denied")


def test_when_rubricgate_stopped_the_run_its_reason_explains_where_the_stream_ends() -> None:
    """The step-limit watch kills OpenCode mid-turn: whether the kill lands before or after the
    step that asked for tools was written is a race, and must not change the grade."""
    t = replay("ask_ends_run", exit_code=None, stopped="max_turns: step 7 exceeds max_steps 6")
    assert t.termination == "max_turns" and "stopped by rubricgate: max_turns" in t.error
    cut = replay("ask_ends_run", (DATA / "ask_ends_run.ndjson").read_bytes()[:-40], exit_code=None,
                 stopped="max_turns: step 7 exceeds max_steps 6")
    assert cut.termination == "max_turns"  # a line cut by the kill is not a truncated stream either


def test_text_before_the_pending_tool_call_does_not_make_it_completed() -> None:
    lines = (DATA / "ask_ends_run.ndjson").read_text().splitlines()
    last_tool = max(i for i, ln in enumerate(lines) if json.loads(ln)["type"] == "tool_use")
    text = json.loads(lines[last_tool])
    text.update(type="text", part={"type": "text", "text": VERDICT})
    lines.insert(last_tool, json.dumps(text))
    t = replay("ask_ends_run", ("\n".join(lines) + "\n").encode())
    assert t.termination == "crashed" and "tool-calls" in t.error
    assert "```json" in t.final_text  # the verdict is still graded; the run error is recorded beside it


def test_invalid_tool_is_recorded_under_its_real_name() -> None:
    t = replay("invalid_tool")
    assert [(c.name, c.raw_name, c.status) for c in t.tool_calls] == [
        ("read", "read", "ok"), ("bash", "bash", "denied")]
    g = grade_tool_use(ToolUseRubric(allowed=None, forbidden=["bash"]), t)
    assert (g.passed, g.category) == (False, "forbidden_tool")


def test_only_the_final_step_text_is_the_answer() -> None:
    lines = (DATA / "review_ok.ndjson").read_text().splitlines()
    final_text = next(i for i, ln in enumerate(lines) if json.loads(ln)["type"] == "text")
    moved = lines.pop(final_text)
    lines.insert(1, moved)  # the verdict now comes in step 1; the final step has no text
    t = replay("review_ok", ("\n".join(lines) + "\n").encode())
    assert t.final_text == ""


def test_the_api_retry_delay_is_kept_for_the_harness_retry() -> None:
    t = replay("api_error")  # real headers: retry-after: 0, retry-after-ms: 20
    assert t.termination == "api_error" and t.retry_after_s == 0.02
