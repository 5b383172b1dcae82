"""`changed --base` names the rules (stated in the reviewer's files, named in rubricgate.yaml) that
an edit rewords, deletes or adds; a reviewer with a rubric table lists files only, as before."""

from __future__ import annotations

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.isolation.reaping import child_pids
from tests.conftest import git, make_repo

PROMPT = "# Review\n\n- Flag SQL injection: queries built from strings.\n- Flag new code without tests.\n"
RULES = [{"id": "sql-injection", "severity": "critical", "match": "(?i)sql injection"},
         {"id": "missing-tests", "severity": "warning", "match": "(?i)missing tests", "statement": "(?i)without tests"},
         {"id": "naming", "severity": "suggestion", "match": "(?i)naming", "statement": "(?im)^- flag naming"}]


def commit(repo, message):
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", message)


def changed(repo):
    return CliRunner().invoke(main, ["changed", "--repo", str(repo), "--base", "main"])


def rules_in_the_prompt_on_a_pr_branch(tmp_path):
    """A repository whose prompt states RULES, committed on main, checked out on branch `pr`."""
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["verdict"] = {"format": "yaml", "rules": RULES}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    (repo / "reviewer/prompts/evaluate.md").write_text(PROMPT)
    commit(repo, "rules in the prompt")
    git(repo, "checkout", "-qb", "pr")
    return repo


def test_an_edit_of_stated_rules_is_named_rule_by_rule(tmp_path):
    repo = rules_in_the_prompt_on_a_pr_branch(tmp_path)
    (repo / "reviewer/prompts/evaluate.md").write_text(
        "# Review\n\n- Report changes that add code without tests.\n- Flag naming that hides intent.\n")
    got = changed(repo)
    assert got.exit_code == 0, got.output
    lines = got.output.splitlines()
    assert "  reviewer/prompts/evaluate.md  (reviewer.prompt)" in lines
    assert "  rule sql-injection: removed from the reviewer's files (was: '- Flag SQL injection: queries built from strings.')" in lines
    assert ("  rule missing-tests: statement '- Flag new code without tests.' -> "
            "'- Report changes that add code without tests.'") in lines
    assert "  rule naming: stated now ('- Flag naming that hides intent.')" in lines


def test_reading_the_rules_at_the_merge_base_leaves_no_git_process_running(tmp_path):
    # `changed` read the base's statements through `git cat-file --batch` and left it running.
    repo = rules_in_the_prompt_on_a_pr_branch(tmp_path)
    (repo / "reviewer/prompts/evaluate.md").write_text(PROMPT.replace("without tests", "lacking tests"))
    before = child_pids()
    got = changed(repo)
    assert got.exit_code == 0 and "rule missing-tests: removed" in got.output, got.output
    assert child_pids() - before == set()


def test_a_rubric_table_reviewer_lists_the_changed_files_only(repo):
    git(repo, "checkout", "-qb", "pr")
    rubric = repo / "reviewer/evaluator/references/rubric.md"
    rubric.write_text(rubric.read_text() + "\n")
    got = changed(repo)
    assert got.exit_code == 0 and "rule " not in got.output and "rubric.md" in got.output
