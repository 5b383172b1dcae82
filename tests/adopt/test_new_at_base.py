"""The pull request adopting rubricgate: `changed` says the base has nothing to compare with,
and the PR workflow lets the run decide there, and only there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rubricgate.adopt.changed import changed_files
from rubricgate.adopt.new_at_base import new_at_base
from rubricgate.adopt.workflows import render_workflow
from rubricgate.models.config import Config
from tests.adopt.test_changed import commit, git
from tests.adopt.test_workflows import load, step

REVIEWER = {"reviewer/prompts/evaluate.md": "p\n", "reviewer/evaluator/SKILL.md": "s\n",
            "reviewer/evaluator/references/rubric.md": "r\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "origin"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    commit(r, {"README.md": "x\n"}, "base")
    return r


def test_a_base_with_a_config_is_never_new_even_when_the_pr_moves_the_reviewer(repo):
    """What a pull request cannot change decides: moving the prompt away makes REF lack a file at
    the head's path, and the comparison must still run (and refuse the move)."""
    commit(repo, {"rubricgate.yaml": "trials: 1\n", **REVIEWER}, "adopted")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "reviewer/prompts/evaluate.md", "reviewer/prompts/other.md")
    moved = Config.model_validate({"reviewer": {"prompt": "reviewer/prompts/other.md"}})
    assert not new_at_base(repo, base, moved)
    assert not changed_files(repo, "main", moved).new_at_base


def test_a_base_holding_the_reviewer_but_no_config_is_compared(repo):
    commit(repo, REVIEWER, "the reviewer, before rubricgate")
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"rubricgate.yaml": "trials: 1\n"}, "adopting")
    assert not new_at_base(repo, base, Config())


def test_the_config_named_by_config_counts_as_rubricgate_at_the_base(repo):
    commit(repo, {"ci/gate.yaml": "trials: 1\n"}, "a config elsewhere")
    assert not new_at_base(repo, git(repo, "rev-parse", "HEAD"), Config(), "ci/gate.yaml")
    assert new_at_base(repo, git(repo, "rev-parse", "HEAD"), Config())


def test_the_adopting_pull_request_is_new_at_base_and_changed_says_so(repo, tmp_path):
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "adopt")
    commit(repo, {"rubricgate.yaml": "trials: 1\n", "evals/tasks/.keep": "", "fixtures/.keep": "", **REVIEWER},
           "adopting")
    assert new_at_base(repo, base, Config())
    out = tmp_path / "gh_output"
    env = {**os.environ, "GITHUB_OUTPUT": str(out)}
    got = subprocess.run(["rubricgate", "changed", "--base", "main", "--repo", str(repo)], capture_output=True,
                         text=True, env=env, check=False)
    assert got.returncode == 0, got.stderr
    assert out.read_text() == "changed=true\nnew_at_base=true\n"
    assert "main has no rubricgate.yaml and not this reviewer's files" in got.stderr


def _decide(env: dict[str, str]) -> int:
    decision = step(load(render_workflow("rubricgate-pr.yml", "claude"))["jobs"]["gate"], "Gate decision")
    assert set(decision["env"]) == {"CODE", "RUN_CODE", "NEW_AT_BASE"}
    return subprocess.run(["bash", "-e", "-c", decision["run"]], env={"PATH": os.environ["PATH"], **env},
                          capture_output=True, check=False).returncode


@pytest.mark.parametrize(("env", "passes"), [
    ({"NEW_AT_BASE": "true", "RUN_CODE": "0", "CODE": ""}, True),
    ({"NEW_AT_BASE": "true", "RUN_CODE": "1", "CODE": ""}, False),
    ({"NEW_AT_BASE": "true", "RUN_CODE": "", "CODE": ""}, False),  # the run step died
    ({"NEW_AT_BASE": "false", "RUN_CODE": "0", "CODE": "2"}, False),  # elsewhere the comparison decides
    ({"NEW_AT_BASE": "false", "RUN_CODE": "1", "CODE": "0"}, True),
    ({"NEW_AT_BASE": "", "RUN_CODE": "0", "CODE": ""}, False),  # `changed` said nothing: never the run's
])
def test_the_gate_decision_is_the_runs_only_where_rubricgate_is_new(env, passes):
    assert (_decide(env) == 0) is passes


def test_the_comparison_step_is_skipped_only_where_rubricgate_is_new():
    gate = load(render_workflow("rubricgate-pr.yml", "claude"))["jobs"]["gate"]
    assert step(gate, "Judge head against base")["if"] == (
        "steps.changed.outputs.changed == 'true' && steps.changed.outputs.new_at_base != 'true'")
