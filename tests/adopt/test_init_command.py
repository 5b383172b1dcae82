"""`init --agent command`: your own reviewer program, its key and endpoint, the files layout, and
workflows with three trials, the key and a fork job that validates (failure paths first)."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.adopt.workflows import render_workflow
from rubricgate.cli import main

COMMAND = "python3 reviewer/review.py {changed_files} {workspace}"


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "reviewer").mkdir()
    for name in ("pr_review.toml", "rules.j2", "review.py"):
        (tmp_path / "reviewer" / name).write_text("x\n")
    return tmp_path


def init(repo, *args):
    return CliRunner().invoke(main, ["init", "--repo", str(repo), *args])


@pytest.mark.parametrize(("args", "needle"), [
    (["--agent", "command", "--prompt", "reviewer/pr_review.toml"], "--agent command needs the command"),
    (["--agent", "command", "--command", COMMAND], "--agent command needs the reviewer's prompt file"),
    (["--agent", "command", "--command", "python3 'unclosed", "--prompt", "reviewer/pr_review.toml"], "cannot split"),
    # a misspelt placeholder was written into the config; validate then refused what init had set up
    (["--agent", "command", "--command", "python3 {workspce}/reviewer/review.py {changed_files}", "--prompt",
      "reviewer/pr_review.toml"], "--command: unknown placeholder {workspce} in '{workspce}/reviewer/review.py'"),
    (["--agent", "command", "--command", COMMAND, "--prompt", "reviewer/nope.toml"], "'reviewer/nope.toml' does not exist"),
    (["--agent", "claude", "--command", COMMAND], "--command, --secret and --endpoint-env are for --agent command"),
    # `python -m bot` names no file: the prompt stood in for the program, and an edit to the
    # program passed `changed` unseen (the pull request's gate was skipped)
    (["--agent", "command", "--command", "python3 -m reviewer {changed_files}", "--prompt", "reviewer/pr_review.toml"],
     "--skill: the command names no file of the repository"),
])
def test_a_command_reviewer_needs_its_command_and_prompt_and_nothing_is_written_without(repo, args, needle):
    got = init(repo, *args)
    assert got.exit_code == 2 and needle in got.output and "Traceback" not in got.output
    assert not (repo / "rubricgate.yaml").exists()


def test_the_config_runs_the_program_reads_its_stdout_and_uses_the_files_layout(repo):
    got = init(repo, "--agent", "command", "--command", COMMAND, "--prompt", "reviewer/pr_review.toml",
               "--rubric", "reviewer/rules.j2", "--secret", "REVIEW_API_KEY", "--endpoint-env", "REVIEW_BASE_URL",
               "--pip", "rubricgate==0.1.0")
    assert got.exit_code == 0, got.output
    # the program was found in the command, not given: saying "as given" hid where it came from
    assert "reviewer skill: reviewer/review.py (the program --command runs)" in got.output
    assert "reviewer rubric: reviewer/rules.j2 (as given)" in got.output
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    assert config["agent"]["command"] == ["python3", "reviewer/review.py", "{changed_files}", "{workspace}"]
    assert config["agent"]["format"] == "text" and config["agent"]["secret_env"] == ["REVIEW_API_KEY"]
    assert "REVIEW_BASE_URL" in config["agent"]["env_allowlist"]
    assert config["suite"]["layout"] == "files" and config["trials"] == 3
    assert config["reviewer"] == {"prompt": "reviewer/pr_review.toml", "skill": "reviewer/review.py",
                                  "rubric": "reviewer/rules.j2", "changed_files": "reviewer/.changed-files.txt"}
    assert config["gate"]["method"] == "statistical" and "verdict" not in config  # written commented, for you
    assert "# verdict:" in (repo / "rubricgate.yaml").read_text()
    assert (repo / "fixtures/block/.gitkeep").is_file() and not list((repo / "fixtures").rglob("SKILL.md"))
    assert "reviewer/.changed-files.txt" in (repo / ".gitignore").read_text()
    pr = yaml.safe_load((repo / ".github/workflows/rubricgate-pr.yml").read_text())
    steps = pr["jobs"]["gate"]["steps"]
    assert any(s.get("env", {}).get("REVIEW_API_KEY") == "${{ secrets.REVIEW_API_KEY }}" for s in steps)


@pytest.mark.parametrize("command", ["sh -c 'python3 reviewer/review.py {changed_files}'",
                                     "sh -c 'cd {workspace} && python3 {workspace}/reviewer/review.py'"])
def test_the_program_a_shell_line_runs_is_found_as_the_closure_finds_it(repo, command):
    """A command naming its program inside `sh -c` was refused ('the command names no file of the
    repository'), though the closure gates that program by the same words."""
    got = init(repo, "--agent", "command", "--command", command, "--prompt", "reviewer/pr_review.toml")
    assert got.exit_code == 0, got.output
    assert yaml.safe_load((repo / "rubricgate.yaml").read_text())["reviewer"]["skill"] == "reviewer/review.py"


def test_the_rules_file_defaults_to_the_prompt_and_says_so(repo):
    got = init(repo, "--agent", "command", "--command", COMMAND, "--prompt", "reviewer/pr_review.toml")
    assert got.exit_code == 0, got.output
    assert "reviewer rubric: reviewer/pr_review.toml (the prompt: --rubric names another file)" in got.output


def test_the_command_workflows_install_no_cli_run_three_trials_and_validate_forks():
    for name in ("rubricgate-pr.yml", "rubricgate-weekly.yml"):
        text = render_workflow(name, "command", "rubricgate==0.1.0", "OPENAI_API_KEY")
        assert "npm install" not in text and not re.search(r"@[A-Z]+@", text)  # every placeholder filled
        assert "--trials 3" in text and "secrets.OPENAI_API_KEY" in text
    fork = yaml.safe_load(render_workflow("rubricgate-pr.yml", "command"))["jobs"]["offline"]
    runs = [s["run"] for s in fork["steps"] if "run" in s]
    assert "rubricgate validate" in runs and not any("--agent builtin" in r for r in runs)
    claude = render_workflow("rubricgate-pr.yml", "claude")
    assert "rubricgate run --agent builtin" in claude and "npm install" in claude  # unchanged for a CLI
