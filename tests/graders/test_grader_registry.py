"""The grader registry (models/dimensions.py, graders/registry.py): one row per dimension, every
grader module registered, and adding a grader: one module and one row, the baseline kept."""

from __future__ import annotations

import inspect
import json
import pkgutil
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import rubricgate.graders
from rubricgate.cli import main
from rubricgate.graders import grade_trial
from rubricgate.graders.registry import grader_for
from rubricgate.models import dimensions
from rubricgate.models.dimensions import DIMENSIONS, DimensionSpec
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric, ToolUseRubric, TrajectoryRubric
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict import ParsedVerdict, Verdict
from tests.conftest import make_repo

# Modules of rubricgate/graders/ that are not a dimension's grader.
NOT_GRADERS = {"contract", "failures", "registry", "extract", "finding_names", "extractors", "hook", "shared"}


def test_every_registered_dimension_has_a_grader_with_the_grader_signature():
    for name in dimensions.names():
        grade = grader_for(name)
        assert list(inspect.signature(grade).parameters) == ["case", "transcript", "parsed"], name


def test_every_grader_module_is_registered_and_the_list_is_written_once():
    modules = {m.name for m in pkgutil.iter_modules(rubricgate.graders.__path__)} - NOT_GRADERS
    registered = {d.grader.partition(":")[0].rsplit(".", 1)[-1] for d in dimensions.REGISTRY}
    assert modules == registered
    assert DIMENSIONS == dimensions.names() and len(set(DIMENSIONS)) == len(DIMENSIONS)
    assert all(d.rubric in (None, "tool_use", "trajectory") for d in dimensions.REGISTRY)


def test_an_unknown_dimension_has_no_grader():
    with pytest.raises(KeyError):
        grader_for("finding_quality")


def _case() -> CaseSpec:
    return CaseSpec(id="c", source="task", origin="t.yaml", review=["a.md"], expect=Expect(tier="PASS"),
                    rubric=Rubric(tool_use=ToolUseRubric(allowed=["read"], required=["read"]),
                                  trajectory=TrajectoryRubric(max_steps=1)))


def test_a_trial_is_graded_on_the_given_dimensions_only():
    parsed = ParsedVerdict(status="ok", reported_tier="PASS", effective_tier="PASS", verdict=Verdict(tier="PASS"))
    grades = grade_trial(_case(), Transcript(agent="t", steps=5), parsed, ["verdict"])
    assert list(grades) == ["verdict"] and grades["verdict"].passed
    every = grade_trial(_case(), Transcript(agent="t", steps=5), parsed)
    assert list(every) == list(DIMENSIONS) and not every["tool_use"].passed and not every["trajectory"].passed


GRADER = '''
from rubricgate.models.results import Grade


def grade(case, transcript, parsed):
    """Every finding carries an issue text."""
    findings = parsed.verdict.findings if parsed.verdict else []
    bare = [f.rule for f in findings if not f.issue.strip()]
    return Grade(passed=not bare, category=None if not bare else "missed_rule",
                 reason="every finding explains itself" if not bare else f"no issue text: {bare}")
'''


@pytest.fixture
def add_grader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Adds a grader the documented way: its module, and one row in the registry."""
    def add() -> str:
        folder = tmp_path / "plugins"
        folder.mkdir()
        (folder / "finding_quality.py").write_text(textwrap.dedent(GRADER))
        monkeypatch.syspath_prepend(str(folder))
        row = DimensionSpec("finding_quality", "finding_quality:grade", "verdict", None, "findings explain themselves")
        monkeypatch.setattr(dimensions, "REGISTRY", [*dimensions.REGISTRY, row])
        return row.name

    yield add
    sys.modules.pop("finding_quality", None)


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_adding_a_grader_keeps_the_baseline_and_its_history(tmp_path: Path, add_grader):
    repo = make_repo(tmp_path / "repo")
    assert _cli("baseline", "update", "--repo", str(repo)).exit_code == 0
    before = json.loads((repo / "baseline.json").read_text())
    fourth_grader = add_grader()

    # Not measured yet: validate and run go on, the new dimension reads "no baseline".
    assert _cli("validate", "--repo", str(repo)).exit_code == 0
    run = _cli("run", "--repo", str(repo))
    assert run.exit_code == 0, run.output
    assert "no baseline" in run.output and fourth_grader in run.output
    summary = next(s for s in map(json.loads, (p.read_text() for p in (repo / "reports").glob("*/summary.json")))
                   if s["kind"] == "run")
    assert summary["rates"][fourth_grader]["status"] == "no_baseline"
    assert summary["rates"]["verdict"]["status"] == "ok"

    # baseline update measures it and keeps every earlier entry of the history.
    update = _cli("baseline", "update", "--repo", str(repo))
    assert update.exit_code == 0, update.output
    after = json.loads((repo / "baseline.json").read_text())
    assert after["history"][:len(before["history"])] == before["history"]
    assert len(after["history"]) == len(before["history"]) + 1
    assert fourth_grader in after["rates"] and all(fourth_grader in dims for dims in after["cases"].values())
    assert _cli("run", "--repo", str(repo)).exit_code == 0
