"""suite.layout: files: fixtures of any file names, the reviewed files declared in expect.yaml or
all of them; the skills layout (the default) is unchanged."""

from __future__ import annotations

import pytest
import yaml

from rubricgate.errors import GateInputErrors
from rubricgate.suite.load import load_all
from tests.conftest import make_repo

DIFF = "--- a/app/db.py\n+++ b/app/db.py\n@@ -1 +1 @@\n-q = run(sql, args)\n+q = run(sql % args)\n"


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path / "repo", fixtures=[])
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["suite"].update({"layout": "files", "review_root": "changes"})
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    (repo / "baseline.json").unlink()
    return repo


def fixture(repo, tier: str, name: str, files: dict[str, str]):
    folder = repo / "fixtures" / tier / name
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def problems(repo) -> list[str]:
    with pytest.raises(GateInputErrors) as err:
        load_all(repo, require_baseline=False)
    return [e.one_line() for e in err.value.errors]


def test_a_folder_with_nothing_to_review_is_an_error(repo):
    fixture(repo, "block", "empty", {"expect.yaml": "rules: []\n"})
    assert any("fixtures/block/empty: no file to review in this fixture folder" in p for p in problems(repo))


@pytest.mark.parametrize("declared", [["missing.diff"], ["../other/x.diff"], ["expect.yaml"]])
def test_a_declared_review_file_must_be_a_file_of_the_folder(repo, declared):
    fixture(repo, "block", "sqli", {"change.diff": DIFF, "expect.yaml": yaml.safe_dump({"review": declared})})
    assert any("expect.yaml: review[0]" in p and "is not a file of this fixture folder" in p for p in problems(repo))


def test_any_file_names_every_file_reviewed_by_default_the_answer_key_never(repo):
    fixture(repo, "block", "sqli", {"change.diff": DIFF, "app/db.py": "q = run(sql % args)\n",
                                     "expect.yaml": "why: string-built SQL\n"})
    case = load_all(repo, require_baseline=False).cases[0]
    assert case.id == "fixture-sqli" and case.expect.tier == "BLOCK"
    assert case.review == ["fixtures/block/sqli/app/db.py", "fixtures/block/sqli/change.diff"]
    assert case.workspace_review == ["changes/sqli/app/db.py", "changes/sqli/change.diff"]
    assert set(case.workspace_paths) == {"changes/sqli/app/db.py", "changes/sqli/change.diff"}


def test_the_reviewed_files_declared_in_expect_yaml(repo):
    fixture(repo, "pass", "rename", {"rename.patch": DIFF, "context/notes.md": "why\n",
                                      "expect.yaml": yaml.safe_dump({"review": ["rename.patch"]})})
    case = load_all(repo, require_baseline=False).cases[0]
    assert case.workspace_review == ["changes/rename/rename.patch"]
    assert "changes/rename/context/notes.md" in case.workspace_paths  # beside it, not reviewed


def test_the_skills_layout_still_needs_a_skill_md(tmp_path):
    repo = make_repo(tmp_path / "skills-repo", fixtures=[])
    fixture(repo, "block", "sqli", {"change.diff": DIFF})
    assert any("no SKILL.md in this fixture folder" in p for p in problems(repo))


def test_a_skeleton_for_a_files_suite_is_a_patch_and_is_refused_until_written(repo):
    from rubricgate.suite.rubric import DEFAULT_VOCABULARY, RubricSpec, Rule
    from rubricgate.suite.skeletons import skeleton

    rule = Rule("sql-injection", "critical", "judgement", "- SQL injection: flag string-built queries.", 3, "p.toml")
    made = skeleton(rule, RubricSpec("p.toml", {rule.id: rule}, 3, DEFAULT_VOCABULARY), "files")
    assert made.tier == "block" and set(made.files) == {"change.diff", "expect.yaml"} and not made.written_out
    assert "sql-injection" in made.files["change.diff"] and "SKILL.md" not in made.files
    fixture(repo, made.tier, made.name, made.files)
    assert any(f"fixtures/block/{made.name}/change.diff:6: a fixture skeleton whose violation is not written yet" in p
               for p in problems(repo))


def _task(repo, removed: list[str]) -> None:
    (repo / "evals/tasks").mkdir(parents=True, exist_ok=True)
    (repo / "evals/tasks/rm.yaml").write_text(yaml.safe_dump({
        "id": "rm", "review": ["changes/x.diff"], "files": {"changes/x.diff": DIFF}, "removed": removed,
        "expect": {"tier": "PASS"}}))


def test_a_task_removes_repository_files_from_its_workspace(repo):
    (repo / "app").mkdir()
    (repo / "app/old.py").write_text("x\n")
    _task(repo, ["app/old.py", "app/./gone-already.py"])
    case = next(c for c in load_all(repo, require_baseline=False).cases if c.id == "rm")
    assert case.removed == ["app/old.py", "app/gone-already.py"]


@pytest.mark.parametrize(("removed", "problem"), [
    (["/etc/passwd"], "absolute path"),
    (["../outside.py"], "contains '..'"),
    (["changes/x.diff"], "is also reviewed or written under files:"),
    (["app"], "is a folder in the repository"),
    (["app/a\nb.py"], "no printable UTF-8 name"),
])
def test_a_removed_path_that_is_no_repository_file_is_an_error(repo, removed, problem):
    (repo / "app").mkdir()
    _task(repo, removed)
    assert any("evals/tasks/rm.yaml: removed[0]" in p and problem in p for p in problems(repo)), problems(repo)
