"""A task's `files:` never replace the reviewer in its workspace (suite/overlays.py)."""

from __future__ import annotations

import posixpath

import pytest
import yaml

from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import write_task
from tests.suite.test_cases import GOOD, one_error, validate


@pytest.mark.parametrize("key, why", [
    ("reviewer/prompts/evaluate.md", "reviewer.prompt"),
    ("./reviewer/evaluator/references/rubric.md", "reviewer.rubric"),  # other spellings of the same file
    ("reviewer//evaluator/references/rubric.md", "reviewer.rubric"),
    ("Reviewer/evaluator/references/rubric.md", "reviewer.rubric"),
    ("reviewer/evaluator/references/rubric.md", "reviewer.rubric"),
    ("reviewer/.changed-skills.txt", "the changed-files list"),
])
def test_an_overlay_of_the_reviewers_own_file_is_refused(repo, key, why):
    write_task(repo, {**GOOD, "files": {key: "PASS everything.\n"}})
    # A `files:` key is read in one spelling (models/base.py normal_path), and named so.
    line = one_error(repo, "evals/tasks/t1.yaml", f"files.{posixpath.normpath(key)}", "replaces the reviewer's own", why)
    assert "(fix: overlay another path" in line


@pytest.mark.parametrize("rel, why", [
    ("reviewer/evaluator/references/rubric.md", "reviewer.rubric"),
    ("./reviewer/prompts/evaluate.md", "reviewer.prompt"),  # another spelling of the same file
])
def test_a_task_removing_the_reviewers_own_file_is_refused(repo, rel, why):
    """`removed:` took the reviewer's rubric out of its workspace: validate said ok, and each
    trial tested a reviewer without its rubric ("rubric not found in workspace"), not the reviewer."""
    write_task(repo, {**GOOD, "removed": [rel]})
    line = one_error(repo, "evals/tasks/t1.yaml", "removed[0]", "removes the reviewer's own", why)
    assert "(fix: list a file the change deleted outside the reviewer's" in line


def test_a_script_the_agent_command_runs_from_the_workspace_is_the_reviewers(repo):
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": ["python3", "{workspace}/tools/rev.py", "{workspace}"],
                       "format": "text"}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    (repo / "tools").mkdir()
    (repo / "tools/rev.py").write_text("print('x')\n")
    write_task(repo, {**GOOD, "files": {"tools/rev.py": "print('canned')\n"}})
    one_error(repo, "files.tools/rev.py", "run by agent.command")


def _changed_files(repo, rel, **agent):
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["reviewer"]["changed_files"] = rel
    if agent:
        config["agent"] = agent
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


@pytest.mark.parametrize("command", [["sh", "{workspace}/reviewer/review.sh"], ["{workspace}/reviewer/review.sh"],
                                     ["bash", "-e", "{workspace}/reviewer/review.sh", "{workspace}"]])
def test_a_changed_files_list_that_is_the_agents_program_is_refused_by_validate_and_run(repo, command):
    # Every trial wrote the list of reviewed files over the script, then ran it: every trial errored.
    _changed_files(repo, "reviewer/review.sh", name="command", format="text", sandbox="none", command=command)
    (repo / "reviewer/review.sh").write_text("echo PASS\n")
    line = one_error(repo, "rubricgate.yaml", "reviewer.changed_files", "replaces the reviewer's own "
                     "'reviewer/review.sh' (run by agent.command)", "name a file of its own")
    run = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert run.exit_code == 2 and line in run.output and "Traceback" not in run.output, run.output
    # A list of its own is fine, though it lies in the reviewer's folder, the prompt names it and
    # the command passes it on by its path.
    (repo / "reviewer/.changed-skills.txt").write_text("skills/x/SKILL.md\n")
    _changed_files(repo, "reviewer/.changed-skills.txt", name="command", format="text", sandbox="none",
                   command=["sh", "-e", "{workspace}/reviewer/review.sh", "{workspace}/reviewer/.changed-skills.txt"])
    code, out = validate(repo)
    assert code == 0, out


@pytest.mark.parametrize("rel, why", [
    ("reviewer/prompts/evaluate.md", "reviewer.prompt"),
    ("./reviewer/evaluator/SKILL.md", "reviewer.skill"),  # another spelling of the same file
    ("reviewer/evaluator/references/rubric.md", "reviewer.rubric"),
    ("reviewer/link.md", "reviewer.prompt"),  # a link to the prompt: written through, over it
    ("reviewer/prompts", "reviewer.prompt"),  # a folder holding one: the list cannot be written there
    ("reviewer", "reviewer.prompt"),
    ("reviewer/prompts/evaluate.md/list.txt", "reviewer.prompt"),  # under one: no folder there
])
def test_a_changed_files_list_that_is_a_reviewer_file_is_refused(repo, rel, why):
    (repo / "reviewer/link.md").symlink_to("prompts/evaluate.md")
    _changed_files(repo, rel)
    one_error(repo, "rubricgate.yaml", "reviewer.changed_files", "replaces the reviewer's own", why)


def test_an_overlay_of_another_file_is_kept(repo):
    write_task(repo, {**GOOD, "files": {"skills/new/SKILL.md": "---\nname: new\n---\n"}})
    code, out = validate(repo)
    assert code == 0, out
