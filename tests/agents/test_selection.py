"""Agent selection (--agent > task `agent:` > agent.name) and agent config errors at plan time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import git, make_repo

TASK = "block-missing-description"
FIXTURE = "fixture-data-loader"


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _set_agent(repo: Path, **agent: object) -> None:
    path = repo / "rubricgate.yaml"
    config = yaml.safe_load(path.read_text())
    config["agent"].update(agent)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def _set_task_agent(repo: Path, name: str) -> Path:
    path = repo / "evals" / "tasks" / f"{TASK}.yaml"
    task = yaml.safe_load(path.read_text())
    task["agent"] = name
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def _commit(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "edit")


def _recorded_run(repo: Path) -> Path:
    """A builtin run whose stored transcripts are relabelled, so a replayed trial is recognisable."""
    result = _invoke("run", "--repo", str(repo))
    assert result.exit_code == 0, result.output
    run_dir = next((repo / "reports").iterdir())
    for path in (run_dir / "transcripts").iterdir():
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "agent": "recorded"}))
    return run_dir


def _agents_used(repo: Path, run_dir: Path) -> dict[str, str]:
    summary = json.loads((run_dir / "summary.json").read_text())
    return {c["id"]: json.loads((run_dir / c["trials"][0]["transcript"]).read_text())["agent"]
            for c in summary["cases"]}


def _new_run(repo: Path, before: set[Path]) -> Path:
    return next(p for p in (repo / "reports").iterdir() if p not in before)


def test_task_agent_beats_config_and_cli_agent_beats_task(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"], tasks=[TASK])
    recorded = _recorded_run(repo)
    _set_agent(repo, replay_dir=str(recorded))
    _set_task_agent(repo, "replay")
    _commit(repo)
    before = set((repo / "reports").iterdir())
    assert _invoke("run", "--repo", str(repo)).exit_code == 0
    assert _agents_used(repo, _new_run(repo, before)) == {TASK: "recorded", FIXTURE: "builtin"}
    before = set((repo / "reports").iterdir())
    assert _invoke("run", "--repo", str(repo), "--agent", "replay").exit_code == 0
    assert _agents_used(repo, _new_run(repo, before)) == {TASK: "recorded", FIXTURE: "recorded"}
    before = set((repo / "reports").iterdir())
    assert _invoke("run", "--repo", str(repo), "--agent", "builtin").exit_code == 0
    assert _agents_used(repo, _new_run(repo, before)) == {TASK: "builtin", FIXTURE: "builtin"}


def test_unknown_task_agent_names_the_task_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"], tasks=[TASK])
    _set_task_agent(repo, "claud")
    for command in ("run", "validate"):
        result = _invoke(command, "--repo", str(repo))
        assert result.exit_code == 2, result.output
        assert f"evals/tasks/{TASK}.yaml: agent: unknown agent 'claud'" in result.output
        assert "Traceback" not in result.output
    assert not (repo / "reports").exists()


def test_command_agent_without_command_is_one_line_exit_2_before_any_trial(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"])
    _set_agent(repo, name="command")
    for command in ("run", "validate"):
        result = _invoke(command, "--repo", str(repo))
        assert result.exit_code == 2, result.output
        lines = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
        assert lines == [lines[0]] and "rubricgate.yaml: agent.command:" in lines[0] and "fix:" in lines[0]
    assert not (repo / "reports").exists()


def test_replay_missing_recording_is_exit_2_at_plan_time_not_a_graded_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"], tasks=[TASK])
    recorded = _recorded_run(repo)
    _set_agent(repo, name="replay", replay_dir=str(recorded))
    _commit(repo)
    before = set((repo / "reports").iterdir())
    result = _invoke("run", "--repo", str(repo), "--trials", "2")
    assert result.exit_code == 2, result.output
    assert "agent.replay_dir: no recording for case" in result.output and "trial 2 (and 1 more)" in result.output
    assert set((repo / "reports").iterdir()) == before  # nothing ran, no partial run directory
    assert _invoke("validate", "--repo", str(repo)).exit_code == 0
    (recorded / "transcripts" / f"{TASK}-1.json").unlink()
    result = _invoke("validate", "--repo", str(repo))
    assert result.exit_code == 2 and f"no recording for case {TASK} trial 1" in result.output


@pytest.mark.parametrize("agent", [{"name": "claude"}, {"name": "codex"},
                                   {"name": "command", "command": ["no-such-reviewer-cli-xyz", "{prompt_file}"]}])
def test_missing_cli_is_exit_2_at_plan_time_and_in_validate(tmp_path: Path, monkeypatch, agent) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    _set_agent(repo, **agent)
    for command in ("run", "validate"):
        result = _invoke(command, "--repo", str(repo))
        assert result.exit_code == 2, result.output
        assert "not found on PATH" in result.output and "REGRESSION" not in result.output
        field = "agent.command" if agent["name"] == "command" else "agent.name"
        assert f"rubricgate.yaml: {field}:" in result.output
    assert not (repo / "reports").exists()


def test_missing_cli_named_by_agent_flag(tmp_path: Path, monkeypatch) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    result = _invoke("run", "--repo", str(repo), "--agent", "opencode")
    assert result.exit_code == 2 and "--agent" in result.output and "'opencode' not found" in result.output
