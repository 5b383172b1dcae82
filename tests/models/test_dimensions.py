"""gate.dimensions and the per-agent defaults (models/dimensions.py): failure paths first."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.config import Config
from rubricgate.models.dimensions import DIMENSIONS, default_dimensions, ordered
from tests.conftest import make_repo


def _validate(repo, **gate) -> tuple[int, str]:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config.setdefault("gate", {}).update(gate)
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    return result.exit_code, result.output


@pytest.mark.parametrize(("dims", "needle"), [
    (["verdikt"], "gate.dimensions: unknown dimension 'verdikt' (fix: use some of verdict, tool_use, trajectory)"),
    (["verdict", "verdict"], "gate.dimensions: a dimension is listed twice (fix: list each once)"),
    ([], "gate.dimensions"),
])
def test_a_bad_dimension_list_is_one_line_naming_the_field_and_fix(tmp_path, dims, needle):
    code, out = _validate(make_repo(tmp_path / "repo"), dimensions=dims)
    assert code == 2 and needle in out and "Traceback" not in out


def test_a_text_command_reviewer_is_graded_on_its_verdict_alone():
    """Its transcript shows no tool calls and one turn: tool_use and trajectory could never vary."""
    text = Config.model_validate({"agent": {"name": "command", "command": ["rev"], "format": "text"}})
    unset = Config.model_validate({"agent": {"name": "command", "command": ["rev"]}})
    stream = Config.model_validate({"agent": {"name": "command", "command": ["rev"], "format": "claude"}})
    assert text.graded_dimensions() == unset.graded_dimensions() == ("verdict",)
    assert stream.graded_dimensions() == Config().graded_dimensions() == DIMENSIONS
    assert default_dimensions("claude", None) == DIMENSIONS


def test_gate_dimensions_beats_the_default_and_keeps_registry_order():
    config = Config.model_validate({"gate": {"dimensions": ["trajectory", "verdict"]},
                                    "agent": {"name": "command", "command": ["rev"]}})
    assert config.graded_dimensions() == ("verdict", "trajectory")
    assert ordered({"zeta", "trajectory", "verdict"}) == ["verdict", "trajectory", "zeta"]


def test_a_verdict_only_suite_needs_no_tool_or_trajectory_rubric(tmp_path):
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config.pop("rubric", None)
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    code, out = _validate(repo)
    assert code == 2 and "no tool-use rubric for this case" in out  # every dimension graded: both needed
    code, out = _validate(repo, dimensions=["verdict"])
    assert code == 0, out


@pytest.mark.parametrize("dims", [["verdict", "tool_use"], ["trajectory"]])
def test_gating_what_a_text_command_reviewer_cannot_show_is_exit_2(tmp_path, dims):
    """Its transcript has no tool calls and one turn: such a dimension would pass every trial."""
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": ["rev", "{changed_files}"], "format": "text"}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    code, out = _validate(repo, dimensions=dims)
    assert code == 2 and f"rubricgate.yaml: gate.dimensions: {dims[-1]} cannot vary" in out, out
    assert "Traceback" not in out
    code, out = _validate(repo, dimensions=["verdict"])
    assert code == 0, out


@pytest.mark.parametrize("key", ["tool_use", "trajectory"])
def test_a_cases_own_rubric_a_text_command_reviewer_cannot_show_is_warned(tmp_path, key):
    """A task's own rubric.tool_use (rubric.trajectory) under an answer-only reviewer was never
    graded, and validate said nothing: it read as a check the case makes."""
    from tests.conftest import write_task

    repo = make_repo(tmp_path / "repo", tasks=["block-missing-description"])
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": ["rev", "{changed_files}"], "format": "text"}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    task = repo / "evals" / "tasks" / "block-missing-description.yaml"
    data = yaml.safe_load(task.read_text())
    data["rubric"] = {key: config["rubric"][key]}  # the config's own default: nothing the case adds
    write_task(repo, data, task.stem)
    code, out = _validate(repo)
    assert code == 0 and "never graded" not in out, out
    data["rubric"] = {key: {"tool_use": {"allowed": ["read"], "required": ["read"]}, "trajectory": {"max_steps": 1}}[key]}
    write_task(repo, data, task.stem)
    code, out = _validate(repo)
    assert code == 0 and (f"warning: 1 case(s) set their own rubric.{key}, never graded: the reviewer's transcript "
                          "shows no") in out and "block-missing-description" in out, out
    config["agent"]["format"] = "claude"  # a transcript of tool calls and turns: graded, nothing to say
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    code, out = _validate(repo)
    assert code == 0 and "never graded" not in out, out
