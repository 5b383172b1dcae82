"""No pass by accident: turns from the stream's structure, the final message as the only answer,
every tool block type counted. Every stream here is derived from a REAL Claude Code recording."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rubricgate.agents import get_agent
from rubricgate.agents.claude import parse_claude_stream
from rubricgate.graders import grade_trial
from rubricgate.models.config import AgentConfig
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric, ToolUseRubric, TrajectoryRubric
from rubricgate.suite.rubric import load_rubric
from rubricgate.graders.contract import parse_verdict
from tests.agent_recordings import agent_request, replay_recording

DATA = Path(__file__).parents[1] / "data" / "transcripts" / "claude"
ROOT = Path(__file__).resolve().parents[2]


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / f"{name}.ndjson").read_text().splitlines() if line.strip()]


def dump(evs: list[dict]) -> bytes:
    return ("\n".join(json.dumps(e) for e in evs) + "\n").encode()


def replay(name: str, evs: list[dict] | None = None):
    stream = None if evs is None else dump(evs)
    return replay_recording("claude", name, lambda d, m: parse_claude_stream(d, allowed=m["allowed_tools"]), stream)


def with_ids(evs: list[dict], new_id) -> list[dict]:
    """Every model message gets id new_id(old) (None removes it)."""
    out = []
    for e in json.loads(json.dumps(evs)):
        msg = e.get("message") or {}
        if e.get("type") == "assistant" and msg.get("model") != "<synthetic>":
            if new_id(msg.get("id")) is None:
                msg.pop("id", None)
            else:
                msg["id"] = new_id(msg["id"])
        out.append(e)
    return out


def case(max_steps: int = 20, allowed=("read", "grep", "glob")) -> CaseSpec:
    return CaseSpec(id="c", source="task", origin="t.yaml", review=["x"], expect=Expect(tier="BLOCK"),
                    rubric=Rubric(tool_use=ToolUseRubric(allowed=list(allowed)),
                                  trajectory=TrajectoryRubric(max_steps=max_steps)))


def grades(t, max_steps: int = 20):
    rubric = load_rubric(ROOT / "reviewer/evaluator/references/rubric.md", "rubric.md")
    return grade_trial(case(max_steps), t, parse_verdict(t.final_text, rubric))


# --- failure paths first -------------------------------------------------------------------
@pytest.mark.parametrize("ids", [lambda old: "msg_same", lambda old: None])
def test_reused_or_missing_ids_cannot_hide_turns(ids) -> None:
    t = replay("review_ok", with_ids(events("review_ok"), ids))
    assert t.steps == 4 == replay("review_ok").steps
    g = grades(t, max_steps=2)["trajectory"]
    assert (g.passed, g.category) == (False, "too_many_steps")


def test_a_stream_claiming_fewer_turns_than_its_structure_is_recorded() -> None:
    evs = with_ids(events("review_ok"), lambda old: "msg_same")
    evs[-1]["num_turns"] = 1
    t = replay("review_ok", evs)
    assert t.steps == 4 and t.reported_turns == 1
    assert t.notes and "num_turns 1" in t.notes[0] and "shows 4" in t.notes[0]


@pytest.mark.parametrize("name", ["review_ok", "max_turns", "max_turns_after_verdict", "api_error",
                                  "api_error_retries", "forbidden_tool", "permission_denied", "malformed_verdict"])
def test_real_recordings_agree_with_the_cli_count_at_the_measured_offsets(name) -> None:
    t = replay(name)
    assert t.reported_turns is not None and t.notes == []


def test_limit_watch_counts_turns_by_structure(tmp_path: Path) -> None:
    stream = tmp_path / "same-ids.ndjson"
    stream.write_bytes(dump(with_ids(events("review_ok"), lambda old: "msg_same")))
    script = tmp_path / "emit.py"
    script.write_text("import sys,time\nfor line in open(sys.argv[1], 'rb'):\n"
                      "    sys.stdout.buffer.write(line); sys.stdout.flush(); time.sleep(0.1)\n")
    agent = get_agent("command", AgentConfig(name="command", command=[sys.executable, str(script), str(stream)],
                                             format="claude"))
    import os
    t = agent.run(agent_request(tmp_path, env={"PATH": os.environ["PATH"]}, max_steps=2))
    assert t.termination == "max_turns" and "turn 3 exceeds max_steps 2" in t.error


def test_an_empty_final_answer_is_no_verdict_whatever_came_earlier() -> None:
    evs = events("review_ok")
    verdict_text = next(b["text"] for e in evs if e.get("type") == "assistant"
                        for b in e["message"]["content"] if "```json" in b.get("text", ""))
    for e in evs:  # the verdict moves to turn 2's text; the final turn becomes tool-only
        for b in (e.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("text") == "Reading the skill.":
                b["text"] = verdict_text
    evs = [e for e in evs if not (e.get("type") == "assistant" and e["message"]["id"] == "msg_scripted_0008")]
    evs[-1]["result"] = ""
    t = replay("review_ok", evs)
    assert t.final_text == ""
    g = grades(t)["verdict"]
    assert (g.passed, g.category) == (False, "no_verdict")


def test_server_and_mcp_tool_blocks_count() -> None:
    evs = events("review_ok")
    for e in evs:
        for b in (e.get("message") or {}).get("content") or []:
            if isinstance(b, dict) and b.get("name") == "Grep":
                b.update(type="server_tool_use", name="web_search")
            elif isinstance(b, dict) and b.get("name") == "Glob":
                b.update(type="mcp_tool_use", name="fetch", server_name="net")
    t = replay("review_ok", evs)
    assert [c.name for c in t.tool_calls] == ["read", "read", "websearch", "mcp__net__fetch"]
    g = grades(t)["tool_use"]
    assert (g.passed, g.category) == (False, "forbidden_tool") and "web_search" in g.reason


def test_tool_calls_inside_synthetic_messages_count() -> None:
    evs = events("api_error")
    synthetic = next(e for e in evs if e.get("type") == "assistant" and e["message"]["model"] == "<synthetic>")
    synthetic["message"]["content"].append({"type": "tool_use", "id": "toolu_syn", "name": "Bash",
                                            "input": {"command": "rm -rf /"}})
    t = replay("api_error", evs)
    assert "bash" in [c.name for c in t.tool_calls] and t.steps == 1


def test_run_error_after_a_verdict_is_graded_and_recorded() -> None:
    from rubricgate.graders.failures import outcome_fields

    t = replay("max_turns_after_verdict")
    parsed_ok = True
    fields = outcome_fields(t, parsed_ok)
    assert t.termination == "max_turns" and "```json" in t.final_text
    assert fields["errored"] is False and fields["run_error"]


def test_claude_retry_delay_is_kept_for_the_harness_retry() -> None:
    t = replay("api_error_retries")  # real api_retry event: retry_delay_ms 609.19...
    assert t.termination == "api_error" and t.retry_after_s is not None and 0.6 < t.retry_after_s < 0.62
