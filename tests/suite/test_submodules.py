"""rubricgate.suite.submodules: a reviewer file inside a git submodule is refused, never run without."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.errors import GateInputError
from rubricgate.suite.submodules import ignored_by_git, nested_repository, refuse_submodule_files
from tests.conftest import git, invoke_with_prompt_link, make_repo


def add_submodule(repo: Path, at: str, files: dict[str, str]) -> None:
    """A repository of `files` beside `repo`, added to it as the submodule `at` and committed."""
    module = repo.parent / f"module-{at.replace('/', '-')}"
    subprocess.run(["git", "init", "-q", "-b", "main", str(module)], check=True)
    for rel, text in files.items():
        (module / rel).write_text(text)
    commit = ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "module"]
    git(module, "add", "-A")
    git(module, *commit)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(module), at)
    git(repo, "add", "-A")
    git(repo, *commit)


def test_a_file_below_a_folder_holding_git_is_in_that_repository(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "a/b/.git").write_text("gitdir: ../../.git/modules/b\n")
    assert nested_repository(tmp_path, "a/b/c/rubric.md") == "a/b"
    assert nested_repository(tmp_path, "a/rubric.md") == "" and nested_repository(tmp_path, "rubric.md") == ""
    with pytest.raises(GateInputError, match="--base: main's reviewer: 'a/b/x.md' is inside 'a/b', a git submodule"):
        refuse_submodule_files(tmp_path, ["a/y.md", "a/b/x.md"], "main's reviewer")


def test_outside_git_a_nested_repository_is_copied_with_the_tree(tmp_path: Path) -> None:
    (tmp_path / "a/.git").mkdir(parents=True)  # tmp_path itself is no repository: a walk copies a/ whole
    assert nested_repository(tmp_path, "a/rubric.md") == ""


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_rubric_inside_a_submodule_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    # validate said ok, then every trial failed "rubric not found in workspace" (run: REGRESSION).
    repo = make_repo(tmp_path / "repo")
    add_submodule(repo, "policy", {"rubric.md": (repo / "reviewer/evaluator/references/rubric.md").read_text()})
    config = (repo / "rubricgate.yaml").read_text()
    (repo / "rubricgate.yaml").write_text(config.replace("reviewer/evaluator/references/rubric.md", "policy/rubric.md"))
    got = CliRunner().invoke(main, [command, "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert got.output.startswith("error: rubricgate.yaml: reviewer.rubric: 'policy/rubric.md' is inside 'policy', "
                                 "a git submodule"), got.output
    assert got.output.count("\n") == 1 and "fix: copy the file into the repository" in got.output



@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_file_the_prompt_links_to_inside_a_submodule_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    # The reviewer was told to read a policy no workspace holds: run passed (exit 0), and a PR
    # moving the submodule to a lenient policy passed with it.
    repo = make_repo(tmp_path / "repo")
    add_submodule(repo, "reviewer/vendor", {"rules.md": "Block every change.\n"})
    got = invoke_with_prompt_link(repo, command, "../vendor/rules.md")
    assert got.exit_code == 2, got.output
    assert "'reviewer/vendor/rules.md' (linked from reviewer/prompts/evaluate.md) is inside 'reviewer/vendor'" \
        in got.output and "fix: copy the file into the repository" in got.output, got.output

# --- a reviewer file git ignores --------------------------------------------------------------


def test_a_file_git_ignores_is_named_with_its_rule_and_a_negated_or_tracked_one_is_not(tmp_path: Path) -> None:
    from rubricgate.suite.submodules import ignored_by_git

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("policy/\n*.md\n!keep.md\n")
    for rel in ("policy/a.md", "keep.md", "b.md", "t.md"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    git(tmp_path, "add", "-f", "t.md")
    got = ignored_by_git(tmp_path, ["policy/a.md", "keep.md", "b.md", "t.md"])
    assert {rel: str(rule) for rel, rule in got.items()} == {
        "policy/a.md": ".gitignore:1 'policy/'", "b.md": ".gitignore:2 '*.md'"}


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_rubric_git_ignores_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    # validate said ok, then every trial failed "rubric not found in workspace" (run: REGRESSION).
    repo = make_repo(tmp_path / "repo")
    (repo / "policy").mkdir()
    (repo / "policy/rubric.md").write_text((repo / "reviewer/evaluator/references/rubric.md").read_text())
    (repo / ".gitignore").write_text("reports/\npolicy/\n")
    config = (repo / "rubricgate.yaml").read_text()
    (repo / "rubricgate.yaml").write_text(config.replace("reviewer/evaluator/references/rubric.md", "policy/rubric.md"))
    got = CliRunner().invoke(main, [command, "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert got.output == ("error: rubricgate.yaml: reviewer.rubric: 'policy/rubric.md' is ignored by git (.gitignore:2 "
                          "'policy/'), and a workspace holds only the files git lists (fix: un-ignore it in "
                          ".gitignore (line 2), or track it as it is: git add -f policy/rubric.md)\n")


def test_a_policy_the_prompt_links_to_that_git_ignores_is_exit_2_a_code_span_is_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "local").mkdir()
    (repo / "local/policy.md").write_text("Block every TODO.\n")
    (repo / "local/notes.md").write_text("scratch\n")
    (repo / ".gitignore").write_text("reports/\nlocal/\n")
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nNever open `local/notes.md`.\n")
    assert CliRunner().invoke(main, ["validate", "--repo", str(repo)]).exit_code == 0  # a mention, no link
    prompt.write_text(prompt.read_text() + "Apply [the policy](../../local/policy.md).\n")
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2 and got.output.count("\n") == 1, got.output
    assert ("'local/policy.md' is ignored by git (.gitignore:2 'local/'; linked from reviewer/prompts/evaluate.md)"
            in got.output and "git add -f local/policy.md" in got.output and "notes.md" not in got.output)


def test_a_file_ignored_by_info_exclude_or_the_global_excludes_file_names_that_file_in_its_fix(
        tmp_path: Path) -> None:
    # The fix said "un-ignore it in .gitignore" for a rule no .gitignore holds: the user looked
    # there, found nothing, and the rule stayed in .git/info/exclude.
    repo = make_repo(tmp_path / "repo")
    (repo / "local").mkdir()
    (repo / "local/policy.md").write_text("Block every TODO.\n")
    (repo / "local/rules.md").write_text("Block every FIXME.\n")
    with (repo / ".git/info/exclude").open("a") as exclude:
        exclude.write("local/policy.md\n")
    (tmp_path / "global-ignore").write_text("# mine\nrules.md\n")
    git(repo, "config", "core.excludesFile", str(tmp_path / "global-ignore"))
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nApply [the policy](../../local/policy.md) and "
                      "[the rules](../../local/rules.md).\n")
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    exclude_line = len((repo / ".git/info/exclude").read_text().splitlines())
    first, second = got.output.splitlines()
    assert first.endswith(f"(fix: un-ignore it in .git/info/exclude (line {exclude_line}), or track it as it is: "
                          "git add -f local/policy.md)"), got.output
    assert second.endswith(f"(fix: un-ignore it in {tmp_path / 'global-ignore'} (line 2), or track it as it is: "
                           "git add -f local/rules.md)"), got.output


def test_no_git_on_path_asks_nothing_and_raises_nothing(tmp_path: Path, monkeypatch) -> None:
    # validate with git missing ended in "internal error: FileNotFoundError: 'git'" here, hiding
    # the lines it exists to give (a missing CLI, a broken baseline).
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert ignored_by_git(tmp_path, ["policy/rubric.md"]) == {}
