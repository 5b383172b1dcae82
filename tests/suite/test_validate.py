"""`validate` tells everything: every problem in every file in one pass, nothing skipped silently."""

from __future__ import annotations

import os
import shutil

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import write_task

SKILL = "fixtures/block/data-loader/SKILL.md"
GOOD = {"id": "t", "review": [SKILL], "expect": {"tier": "BLOCK"}}


def validate(repo, *args):
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo), *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def errors(repo) -> list[str]:
    code, out = validate(repo)
    assert code == 2, out
    return [line for line in out.splitlines() if line.startswith("error:")]


def has(lines: list[str], *needles: str) -> bool:
    return any(all(n in line for n in needles) for line in lines)


def set_config(repo, **changes) -> None:
    path = repo / "rubricgate.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg.update(changes)
    path.write_text(yaml.safe_dump(cfg))


# --- failure paths first -----------------------------------------------------------------------
def test_unknown_key_is_named_with_did_you_mean_not_hidden_by_missing_field(repo) -> None:
    write_task(repo, {"id": "t", "review": [SKILL], "expct": {"tier": "BLOCK"}})
    lines = errors(repo)
    assert has(lines, "evals/tasks/t.yaml", "expct", "unknown key", "did you mean 'expect'")
    assert has(lines, "evals/tasks/t.yaml", "expect: Field required")


def test_a_drift_allowance_not_below_the_margin_is_one_line_with_its_own_fix(repo) -> None:
    write_task(repo, GOOD)
    set_config(repo, gate={"method": "statistical", "margin": 0.05, "drift_allowance": 0.06})
    lines = errors(repo)
    assert has(lines, "rubricgate.yaml", "gate", "drift_allowance 0.06 is not below margin 0.05",
               "fix: lower gate.drift_allowance, or 0 to turn it off")
    assert not has(lines, "drift_allowance", "rubricgate schema")


def test_the_removed_min_trials_key_is_an_unknown_key_with_the_fix(repo) -> None:
    write_task(repo, GOOD)
    set_config(repo, gate={"method": "statistical", "min_trials": 3})
    assert has(errors(repo), "rubricgate.yaml", "gate.min_trials", "unknown key", "remove it")


def test_every_problem_in_one_file_is_reported(repo) -> None:
    write_task(repo, {**GOOD, "review": ["fixtures/none/SKILL.md"], "tagz": ["x"],
                      "expect": {"tier": "BLOCK", "rules": ["no-such-rule"]}})
    lines = errors(repo)
    assert has(lines, "tagz", "did you mean 'tags'")
    assert has(lines, "review[0]", "does not exist")
    assert has(lines, "expect.rules", "unknown rule id 'no-such-rule'")


@pytest.mark.parametrize("make, needles", [
    (lambda r: (r / "fixtures/warning/x").mkdir(parents=True) or (r / "fixtures/warning/x/SKILL.md").write_text("x"),
     ("fixtures/warning", "unknown tier folder", "did you mean 'warn'")),
    (lambda r: (r / "fixtures/pass/group/x").mkdir(parents=True) or (r / "fixtures/pass/group/x/SKILL.md").write_text("x"),
     ("fixtures/pass/group", "nested", "move it up")),
    (lambda r: (r / "fixtures/pass/low").mkdir(parents=True) or (r / "fixtures/pass/low/skill.md").write_text("x"),
     ("fixtures/pass/low", "'skill.md'", "rename it to SKILL.md")),
    (lambda r: (r / "fixtures/pass/only").mkdir(parents=True) or (r / "fixtures/pass/only/expect.yaml").write_text("rules: []"),
     ("fixtures/pass/only", "no SKILL.md", "add SKILL.md")),
    (lambda r: (r / "evals/tasks/sub").mkdir() or (r / "evals/tasks/sub/x.yaml").write_text("id: x"),
     ("evals/tasks/sub", "1 task file(s) that are not loaded", "move task files")),
    (lambda r: (r / "evals/tasks/notes.txt").write_text("x"),
     ("evals/tasks/notes.txt", "not a task file")),
    (lambda r: (r / "fixtures/pass/README.md").write_text("x"),
     ("fixtures/pass/README.md", "not a case")),
])
def test_misplaced_files_are_errors_naming_file_and_fix(repo, make, needles) -> None:
    make(repo)
    lines = errors(repo)
    assert has(lines, *needles), lines
    assert all("fix:" in line for line in lines)


def test_symlinks_out_of_the_repository_are_rejected_for_task_and_fixture_files(repo, tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t.yaml").write_text(yaml.safe_dump(GOOD))
    (outside / "SKILL.md").write_text("---\nname: x\n---\n")
    os.symlink(outside / "t.yaml", repo / "evals/tasks/t.yaml")
    (repo / "fixtures/pass/linked").mkdir()
    os.symlink(outside / "SKILL.md", repo / "fixtures/pass/linked/SKILL.md")
    lines = errors(repo)
    assert has(lines, "evals/tasks/t.yaml", "a task file that is a symbolic link")  # refused, never read
    assert has(lines, "fixtures/pass/linked/SKILL.md", "outside the repository")


def test_files_key_under_a_file_is_rejected(repo) -> None:
    write_task(repo, {**GOOD, "files": {f"{SKILL}/extra.md": "x", "new/a": "x", "new/a/b": "y"}})
    lines = errors(repo)
    assert has(lines, f"files.{SKILL}/extra.md", "parent", "is a file")
    assert has(lines, "files.new/a/b", "parent 'new/a' is a file")


@pytest.mark.parametrize("reports", [".", "reviewer", "fixtures", "evals/tasks/out"])
def test_reports_must_be_a_dedicated_folder(repo, reports) -> None:
    set_config(repo, reports=reports)
    assert has(errors(repo), "rubricgate.yaml", "reports")


def test_problems_in_many_files_come_in_one_pass(repo) -> None:
    write_task(repo, {"id": "a", "review": [SKILL], "expct": {}}, name="a")
    write_task(repo, {**GOOD, "id": "b", "review": ["nope.md"]}, name="b")
    (repo / "fixtures/warning/x").mkdir(parents=True)
    (repo / "fixtures/warning/x/SKILL.md").write_text("x")
    lines = errors(repo)
    assert has(lines, "evals/tasks/a.yaml") and has(lines, "evals/tasks/b.yaml") and has(lines, "fixtures/warning")


# --- the happy path ------------------------------------------------------------------------------
def test_validate_ends_with_case_counts_and_lists_every_case_id(repo) -> None:
    write_task(repo, GOOD)
    code, out = validate(repo)
    assert code == 0, out
    assert "tasks: 1 (BLOCK 1)" in out and "fixtures: 2 (PASS 1, BLOCK 1)" in out
    code, out = validate(repo, "--list")
    lines = out.splitlines()
    ids = [line.split()[0] for line in lines[3:next(i for i, t in enumerate(lines) if t.startswith("rule coverage:"))]]
    from rubricgate.pipeline import load_all

    assert code == 0 and sorted(ids) == sorted(c.id for c in load_all(repo).cases) and "t" in ids and len(ids) == 3


def test_the_builtin_reviewers_scope_note_only_where_the_builtin_reviews(repo) -> None:
    """The note says which rules the builtin's verdicts leave out: about a command reviewer it
    would be untrue."""
    code, out = validate(repo)
    assert code == 0 and "note: the builtin reviewer judges" in out, out
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": ["/bin/true"], "format": "text"}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    code, out = validate(repo)
    assert code == 0 and "builtin reviewer" not in out, out


def test_hidden_files_are_not_cases_or_errors(repo) -> None:
    (repo / "fixtures/pass/.gitkeep").write_text("")
    shutil.copy(repo / "rubricgate.yaml", repo / "evals/tasks/.rubricgate.yaml.bak")
    assert validate(repo)[0] == 0
