"""Replay adapter: recordings per case and trial; missing or bad recordings are bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rubricgate.agents import get_agent
from rubricgate.agents.base import AgentRequest
from rubricgate.errors import GateInputError
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import ToolCall, Transcript

CLAUDE_DATA = Path(__file__).parents[1] / "data" / "transcripts" / "claude"


def _request(tmp_path: Path, case: str = "case-a", trial: int = 1) -> AgentRequest:
    p = tmp_path / "p.md"
    return AgentRequest(case_id=case, trial=trial, workspace=tmp_path, prompt_file=p, rubric_file=p,
                        changed_files_file=p, scratch=tmp_path / "s", allowed_tools=["read", "grep", "glob"])


def test_missing_dir_and_missing_setting_are_gate_input_errors(tmp_path: Path) -> None:
    with pytest.raises(GateInputError, match="agent.replay_dir"):
        get_agent("replay", AgentConfig(name="replay"))
    with pytest.raises(GateInputError, match="is not a directory"):
        get_agent("replay", AgentConfig(name="replay", replay_dir=str(tmp_path / "nope")))


def test_missing_recording_names_case_and_trial(tmp_path: Path) -> None:
    agent = get_agent("replay", AgentConfig(name="replay", replay_dir=str(tmp_path)))
    with pytest.raises(GateInputError) as err:
        agent.run(_request(tmp_path, "case-a", 2))
    assert "case case-a trial 2" in str(err.value) and "case-a-2.json" in str(err.value)


def test_invalid_transcript_json_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "case-a-1.json").write_text('{"agent": "x", "steps": "many"}')
    agent = get_agent("replay", AgentConfig(name="replay", replay_dir=str(tmp_path)))
    with pytest.raises(GateInputError) as err:
        agent.run(_request(tmp_path))
    assert "case-a-1.json" in str(err.value) and "\n" not in str(err.value)


def test_run_directory_transcripts_are_served_per_trial(tmp_path: Path) -> None:
    (tmp_path / "transcripts").mkdir()
    for trial in (1, 2):
        t = Transcript(agent="claude", steps=trial, final_text=f"trial {trial}",
                       tool_calls=[ToolCall(raw_name="Read", name="read")])
        (tmp_path / "transcripts" / f"case-a-{trial}.json").write_text(t.model_dump_json())
    agent = get_agent("replay", AgentConfig(name="replay", replay_dir=str(tmp_path)))
    assert [agent.run(_request(tmp_path, "case-a", n)).final_text for n in (1, 2)] == ["trial 1", "trial 2"]


def test_native_claude_stream_with_meta(tmp_path: Path) -> None:
    shutil.copy(CLAUDE_DATA / "max_turns_after_verdict.ndjson", tmp_path / "case-a-1.ndjson")
    shutil.copy(CLAUDE_DATA / "max_turns_after_verdict.meta.json", tmp_path / "case-a-1.meta.json")
    t = get_agent("replay", AgentConfig(name="replay", replay_dir=str(tmp_path))).run(_request(tmp_path))
    assert t.termination == "max_turns" and t.exit_code == 1 and '"tier": "PASS"' in t.final_text
    assert t.agent == "replay" and t.agent_version.startswith("2.1.")


def test_relative_replay_dir_is_relative_to_the_repository(repo, tmp_path, monkeypatch):
    import yaml
    from rubricgate.suite.config import load_config
    data = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    data["agent"]["replay_dir"] = "recordings"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)
    assert load_config(repo).agent.replay_dir == str(repo / "recordings")


def test_replaying_a_native_codex_stream_keeps_sandbox_refused_commands(tmp_path: Path) -> None:
    codex = CLAUDE_DATA.parent / "codex"
    for suffix in (".ndjson", ".rollout.jsonl", ".meta.json"):
        shutil.copy(codex / f"forbidden_tool{suffix}", tmp_path / f"case-a-1{suffix}")
    agent = get_agent("replay", AgentConfig(name="replay", replay_dir=str(tmp_path), format="codex"))
    t = agent.run(_request(tmp_path))
    touch = next(c for c in t.tool_calls if "touch" in c.input.get("command", ""))
    assert (touch.name, touch.status) == ("bash", "denied") and t.steps == 3
    (tmp_path / "case-a-1.rollout.jsonl").unlink()  # without the rollout the stream hides it
    assert [c.name for c in agent.run(_request(tmp_path)).tool_calls] == ["read"]
