"""`rubricgate record`: a real review becomes a task, from a PR (fake GitHub API), git refs or a replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.adopt.record import overlay_paths, task_yaml
from rubricgate.adopt.record_sources import Reviewed, skill_folder_of
from rubricgate.models.task import TaskFile
from rubricgate.suite.trees import FULL_HISTORY
from rubricgate.view.catalog import Catalog
from tests.conftest import git, make_repo, write_task
from tests.fake_github import FakeGitHub

CLEAN = ("---\nname: orders-loader\ndescription: Loads yesterday's orders export into staging. Use when someone "
         "asks to reload orders or the nightly load failed.\n---\n\n# Reload orders\n\n1. Download the export.\n"
         "2. Run the COPY into staging.orders.\n3. Report the row count.\n")
LEAKY_REF = "Connect with\n\n    token: ghp_abcdefghijklmnopqrstuvwxyz0123\n"
REDACTED_REF = "Connect with\n\n    token: ghp_REDACTEDbyRUBRICGATE\n"


def cli(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", message)


@pytest.fixture
def feature(tmp_path: Path) -> Path:
    """A repository whose branch `feature` adds a skill with a token in its references."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-qb", "feature")
    (repo / "team/skills/orders-loader/references").mkdir(parents=True)
    (repo / "team/skills/orders-loader/SKILL.md").write_text(CLEAN)
    (repo / "team/skills/orders-loader/references/setup.md").write_text(LEAKY_REF)
    (repo / "reviewer/prompts/evaluate.md").write_text((repo / "reviewer/prompts/evaluate.md").read_text() + "\n")
    commit(repo, "add orders-loader")
    return repo


def task_of(repo: Path, task_id: str) -> dict:
    return yaml.safe_load((repo / "evals/tasks" / f"{task_id}.yaml").read_text())


# --- failure paths first --------------------------------------------------------------------


@pytest.mark.parametrize("args, problem", [
    ([], "no source"),
    (["--pr", "3", "--base", "main", "--head", "feature"], "several sources: --pr, --base/--head"),
    (["--head", "feature"], "--base is needed"),
    (["--case", "x"], "both are needed"),
])
def test_exactly_one_complete_source(feature, args, problem):
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", *args)
    assert got.exit_code == 2 and problem in got.output and "Traceback" not in got.output


def test_unknown_ref_is_exit_2_naming_it(feature):
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "nope")
    assert got.exit_code == 2
    assert got.output.strip() == ("error: --head: REF: 'nope' is not a commit in this repository "
                                  "(fix: fetch it or check the name)")


@pytest.mark.parametrize("head", [[], ["--head", "HEAD"]])
def test_a_shallow_clone_without_the_fork_point_says_to_fetch_the_history(feature, tmp_path, head):
    # CI's default checkout (fetch-depth 1) holds the base's tip and HEAD, not where they meet:
    # git merge-base then fails with nothing on stderr, and record said only "failed".
    git(feature, "checkout", "-q", "main")
    (feature / "README.md").write_text("main moved on\n")
    commit(feature, "main moves")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", f"file://{feature}", str(shallow))
    git(shallow, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    (shallow / "evals/tasks").mkdir(parents=True, exist_ok=True)  # empty in the repository: git keeps no folder
    got = cli("record", "--repo", str(shallow), "--expect", "BLOCK", "--base", "origin/main", *head, "--no-run")
    assert got.exit_code == 2, got.output
    assert got.output.strip().splitlines() == [
        "error: --base: REF: origin/main and HEAD meet in no commit this shallow clone has "
        f"(fix: {FULL_HISTORY})"]


def test_unknown_rule_leaves_no_task_behind(feature):
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--rule", "no-such-rule",
              "--base", "main", "--head", "feature", "--redact", "--id", "t1", "--no-run")
    assert got.exit_code == 2 and "unknown rule id 'no-such-rule'" in got.output
    assert not (feature / "evals/tasks/t1.yaml").exists()


def test_never_overwrites_a_task(feature):
    write_task(feature, {"id": "t1", "review": ["fixtures/block/data-loader/SKILL.md"], "expect": {"tier": "BLOCK"}})
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "feature", "--redact",
              "--id", "t1", "--no-run")
    assert got.exit_code == 2 and "a task with this id exists" in got.output


def test_a_credential_in_the_recorded_content_stops_with_the_file_and_line(feature):
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "feature", "--no-run")
    assert got.exit_code == 2
    lines = got.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: team/skills/orders-loader/references/setup.md:3: credential in clear (GitHub token)")
    assert "--redact" in lines[0] and "ghp_" not in got.output
    assert not (feature / "evals/tasks").exists() or not list((feature / "evals/tasks").glob("*feature*"))


def test_a_password_under_a_prefixed_name_stops_the_recording(feature):
    git(feature, "checkout", "-qb", "db")
    (feature / "team/skills/orders-loader/references/setup.md").write_text("Connect with\n\n    DB_PASSWORD=Tr0ub4dor-and-3\n")
    commit(feature, "a database password")
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "db", "--no-run")
    assert got.exit_code == 2 and "setup.md:3: credential in clear (credential assignment)" in got.output
    assert "Tr0ub4dor" not in got.output and not list((feature / "evals/tasks").glob("*db*"))


def test_no_changed_skill_is_exit_2(feature):
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "main")
    assert got.exit_code == 2 and "no changed skill found" in got.output


def test_pr_source_api_error_is_one_line(feature):
    with FakeGitHub() as gh:
        got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--pr", "9", env=gh.env())
    assert got.exit_code == 2
    assert got.output.count("\n") == 1 and "HTTP 404 Not Found" in got.output and gh.requests == [("GET", "/repos/octo/repo/pulls/9")]


def test_replay_source_without_artifact_is_exit_2(repo, tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "replay").mkdir(parents=True)
    got = cli("record", "--repo", str(repo), "--expect", "BLOCK", "--from", str(run_dir), "--case", "x")
    assert got.exit_code == 2 and "no replay artifact for this case" in got.output


# --- the three sources --------------------------------------------------------------------


def test_git_source_snapshots_head_not_the_work_tree_and_runs_once(feature):
    (feature / "team/skills/orders-loader/references/setup.md").write_text("edited later, not committed\n")
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--rule", "secret-in-file",
              "--base", "main", "--head", "feature", "--why", "a token in references must block", "--redact")
    assert got.exit_code == 0, got.output
    task = task_of(feature, "block-secret-in-file-feature")
    assert task["review"] == ["skills/orders-loader/SKILL.md"]  # under suite.review_root, not fixtures/
    assert task["files"] == {"skills/orders-loader/SKILL.md": CLEAN, "skills/orders-loader/references/setup.md": REDACTED_REF}
    assert "ghp_abcdefgh" not in (feature / "evals/tasks/block-secret-in-file-feature.yaml").read_text()
    assert "redacted 1 credential(s): team/skills/orders-loader/references/setup.md:3" in got.output
    assert task["expect"] == {"tier": "BLOCK", "rules": ["secret-in-file"]}
    assert task["why"] == "a token in references must block"
    assert not any(p.startswith("skills/prompts") or "reviewer" in p for p in task["files"])  # the reviewer is not a skill
    assert "recorded evals/tasks/block-secret-in-file-feature.yaml from git main..feature" in got.output
    assert "the current reviewer gets it right today" in got.output
    assert cli("validate", "--repo", str(feature)).exit_code == 0


@pytest.mark.parametrize("changed", ["team/skills/orders-loader/forms.md", "team/skills/orders-loader/docs/deep/x.md"])
def test_a_change_to_any_file_under_a_skill_folder_records_that_skill(feature, changed):
    git(feature, "checkout", "-qb", "forms")
    (feature / changed).parent.mkdir(parents=True, exist_ok=True)
    (feature / changed).write_text("# Forms\n\nFill the form fields.\n")
    commit(feature, "a file beside SKILL.md, not under references/")
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "feature", "--head", "forms", "--redact",
              "--id", "forms-change", "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(feature, "forms-change")
    assert task["review"] == ["skills/orders-loader/SKILL.md"]
    assert "skills/orders-loader/" + changed.removeprefix("team/skills/orders-loader/") in task["files"]


def test_says_which_other_cases_the_single_run_included(feature):
    write_task(feature, {"id": "blocks-feature-too", "review": ["fixtures/block/data-loader/SKILL.md"],
                         "expect": {"tier": "BLOCK"}})
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "feature", "--redact", "--id", "blocks")
    assert got.exit_code == 0, got.output
    assert "note: the run also included blocks-feature-too (their ids contain 'blocks')" in got.output


def test_reports_when_the_reviewer_gets_it_wrong_today(feature):
    got = cli("record", "--repo", str(feature), "--expect", "PASS", "--base", "main", "--head", "feature", "--redact", "--id", "wrong")
    assert got.exit_code == 0
    assert "the current reviewer gets it WRONG today" in got.output
    assert "verdict: wrong_tier: expected PASS, got BLOCK" in got.output


def test_pr_source_reads_changed_skills_and_references_at_the_head(feature):
    head = "a" * 40
    files = {"team/skills/orders-loader/SKILL.md": CLEAN, "team/skills/orders-loader/references/setup.md": LEAKY_REF,
             "team/skills/orders-loader/references/deep/more.md": "more\n", "README.md": "x\n",
             "reviewer/evaluator/SKILL.md": "---\nname: evaluator\n---\n"}
    changed = {"team/skills/orders-loader/references/setup.md": "modified", "README.md": "modified",
               "reviewer/evaluator/SKILL.md": "modified", "team/skills/gone/SKILL.md": "removed"}
    with FakeGitHub() as gh:
        gh.add_pull(12, head, files, changed)
        got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--rule", "secret-in-file", "--pr", "12",
                  "--no-run", env=gh.env(GITHUB_REPOSITORY="someone/else"))
        assert got.exit_code == 2 and "HTTP 404" in got.output  # the wrong repository is not silently empty
        got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--rule", "secret-in-file", "--pr", "12",
                  "--no-run", "--github-repo", "octo/repo", "--redact", env=gh.env(GITHUB_REPOSITORY="someone/else"))
    assert got.exit_code == 0, got.output
    task = task_of(feature, "block-secret-in-file-pr-12")
    assert task["review"] == ["skills/orders-loader/SKILL.md"]
    assert task["files"] == {"skills/orders-loader/SKILL.md": CLEAN,
                             "skills/orders-loader/references/deep/more.md": "more\n",
                             "skills/orders-loader/references/setup.md": REDACTED_REF}
    assert "from pull request #12 at aaaaaaaaaaaa" in got.output


def test_replay_source_records_what_the_reviewer_saw(repo, tmp_path):
    write_task(repo, {"id": "wrongly-passes", "review": ["fixtures/block/data-loader/SKILL.md"],
                      "expect": {"tier": "PASS"}})
    ran = cli("run", "--repo", str(repo))
    assert ran.exit_code == 1
    run_dir = max((repo / "reports").iterdir())
    (repo / "fixtures/block/data-loader/SKILL.md").write_text("changed after the run\n")
    (repo / "evals/tasks/wrongly-passes.yaml").unlink()
    got = cli("record", "--repo", str(repo), "--expect", "BLOCK", "--from", str(run_dir), "--case", "wrongly-passes",
              "--id", "data-loader-blocks", "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(repo, "data-loader-blocks")
    assert task["review"] == ["skills/data-loader/SKILL.md"]
    assert task["files"]["skills/data-loader/SKILL.md"] != "changed after the run\n"
    assert task["files"]["skills/data-loader/SKILL.md"].startswith("---")
    assert task["why"].startswith("recorded from replay")


def test_the_working_tree_is_recorded_uncommitted_and_untracked_changes_included(feature):
    git(feature, "checkout", "-q", "main")
    skill = feature / "team/skills/invoices"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text(CLEAN.replace("orders-loader", "invoices"))
    (skill / "references/notes.md").write_text("uncommitted notes  \n")
    (skill / "scratch.log").write_text("ignored\n")
    (feature / ".gitignore").write_text("reports/\n*.log\n")
    got = cli("record", "--repo", str(feature), "--expect", "PASS", "--base", "main", "--head", "WORKTREE",
              "--id", "wt", "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(feature, "wt")
    assert task["review"] == ["skills/invoices/SKILL.md"]
    assert task["files"] == {"skills/invoices/SKILL.md": CLEAN.replace("orders-loader", "invoices"),
                             "skills/invoices/references/notes.md": "uncommitted notes  \n"}  # never the ignored log
    assert "from git main..WORKTREE (the working tree, uncommitted changes included)" in got.output


def test_without_head_the_working_tree_is_read_and_an_edit_of_a_committed_skill_counts(feature):
    (feature / "team/skills/orders-loader/references/setup.md").write_text("now read from an env var\n")
    got = cli("record", "--repo", str(feature), "--expect", "PASS", "--base", "main", "--id", "edited", "--no-run")
    assert got.exit_code == 0, got.output
    files = task_of(feature, "edited")["files"]
    assert files["skills/orders-loader/references/setup.md"] == "now read from an env var\n"
    assert "from git main..WORKTREE" in got.output


def test_a_working_tree_skill_md_that_is_not_text_is_exit_2_naming_it(feature):
    (feature / "team/skills/orders-loader/SKILL.md").write_bytes(b"\xff\xfe not utf-8\n")
    got = cli("record", "--repo", str(feature), "--expect", "PASS", "--base", "main", "--no-run")
    assert got.exit_code == 2
    assert got.output.startswith("error: team/skills/orders-loader/SKILL.md: not a regular UTF-8 file")


def test_a_committed_skill_md_that_is_not_text_is_exit_2_naming_it(feature):
    (feature / "team/skills/orders-loader/SKILL.md").write_bytes(b"caf\xe9 skill\n")
    commit(feature, "latin-1 skill")
    got = cli("record", "--repo", str(feature), "--expect", "PASS", "--base", "main", "--head", "feature", "--no-run")
    assert got.exit_code == 2, got.output
    assert got.output.startswith("error: team/skills/orders-loader/SKILL.md: not UTF-8 text at HEAD")


def test_an_image_in_a_committed_skill_folder_is_left_out_of_the_snapshot(feature):
    (feature / "team/skills/orders-loader/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff" * 32)
    commit(feature, "logo")
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "feature",
              "--redact", "--id", "with-logo", "--no-run")
    assert got.exit_code == 0, got.output
    assert set(task_of(feature, "with-logo")["files"]) == {"skills/orders-loader/SKILL.md",
                                                          "skills/orders-loader/references/setup.md"}


def test_the_working_tree_with_nothing_changed_since_base_records_nothing(feature):
    got = cli("record", "--repo", str(feature), "--expect", "PASS", "--base", "feature", "--no-run")
    assert got.exit_code == 2 and "no changed skill found" in got.output


# --- the pieces ---------------------------------------------------------------------------


@pytest.mark.parametrize("path, folder", [("a/b/SKILL.md", "a/b"), ("a/b/references/x.md", "a/b"),
                                          ("a/b/scripts/deep/run.sh", "a/b"), ("README.md", None), ("a/notes.md", None)])
def test_skill_folder_of(path, folder):
    assert skill_folder_of(path) == folder


def test_overlay_paths_keep_two_skills_with_one_name_apart():
    reviewed = Reviewed("x", ["a/tool/SKILL.md", "b/tool/SKILL.md"],
                        {"a/tool/SKILL.md": "1", "b/tool/SKILL.md": "2", "b/tool/references/r.md": "3"})
    assert overlay_paths(reviewed, "skills") == {"a/tool/SKILL.md": "skills/tool/SKILL.md",
                                                 "b/tool/SKILL.md": "skills/tool-2/SKILL.md",
                                                 "b/tool/references/r.md": "skills/tool-2/references/r.md"}


def test_task_yaml_reads_back_exactly_even_with_awkward_text():
    files = {"skills/a/SKILL.md": "line one\n  indented\n\n", "skills/a/t.md": "trailing space \nx",
             "skills/a/one.md": "no newline"}
    task = TaskFile(id="t", review=["skills/a/SKILL.md"], files=files, expect={"tier": "BLOCK"})
    assert yaml.safe_load(task_yaml(task))["files"] == files
    assert "skills/a/SKILL.md: |" in task_yaml(task)


def test_the_single_run_is_a_record_run_and_the_viewer_lists_it_as_one(feature):
    got = cli("record", "--repo", str(feature), "--expect", "BLOCK", "--base", "main", "--head", "feature", "--id", "rec",
              "--redact")
    assert got.exit_code == 0, got.output
    run_dir = max((feature / "reports").iterdir())
    assert run_dir.name.endswith("-record")
    assert json.loads((run_dir / "summary.json").read_text())["kind"] == "record"
    assert json.loads((run_dir / "view-index.json").read_text())["kind"] == "record"  # indexed by the run itself
    assert [h.kind for h in Catalog.of([feature / "reports"]).heads()] == ["record"]
    report = cli("report", "--repo", str(feature))
    assert report.exit_code == 2 and "no run" in report.output  # a record run is not "the latest run"


def test_snapshots_with_trailing_spaces_and_tabs_are_still_block_scalars():
    # Markdown's hard line break is two trailing spaces; scripts indent with tabs.
    files = {"skills/a/SKILL.md": "---\nname: a\n---\n\nFirst line  \nsecond line\n",
             "skills/a/scripts/run.sh": "if true; then\n\techo ok \t\nfi\n", "skills/a/blank.md": "a\n   \nb\n"}
    task = TaskFile(id="t", review=["skills/a/SKILL.md"], files=files, expect={"tier": "BLOCK"})
    text = task_yaml(task)
    assert yaml.safe_load(text)["files"] == files
    for path in files:
        assert f"{path}: |" in text, text
    assert "\\n" not in text and "\\t" not in text  # nothing escaped onto one line


def test_text_a_block_scalar_cannot_hold_stays_quoted_and_reads_back():
    files = {"skills/a/SKILL.md": "windows\r\nline\r\n", "skills/a/ctl.md": "bell\x07here\n"}
    task = TaskFile(id="t", review=["skills/a/SKILL.md"], files=files, expect={"tier": "BLOCK"})
    assert yaml.safe_load(task_yaml(task))["files"] == files


def test_a_file_over_the_bounds_is_named_as_the_sources_not_an_options(feature):
    """A pull request's reference of over a million characters blamed --expect/--rule/--id and
    said to change them."""
    files = {"team/skills/orders-loader/SKILL.md": CLEAN,
             "team/skills/orders-loader/references/dump.md": "x" * 1_000_001 + "\n"}
    with FakeGitHub() as gh:
        gh.add_pull(13, "b" * 40, files, {"team/skills/orders-loader/SKILL.md": "added"})
        got = cli("record", "--repo", str(feature), "--expect", "PASS", "--pr", "13", "--no-run", env=gh.env())
    assert got.exit_code == 2, got.output
    assert "record: files: " in got.output and "holds more than 1,000,000 characters" in got.output, got.output
    assert "--expect/--rule/--id" not in got.output and "record the change without it" in got.output


def test_a_binary_file_in_a_pull_requests_skill_is_left_out_as_from_git(feature):
    """The PR source decoded every file with U+FFFD for each byte that was not UTF-8: an image
    beside SKILL.md was snapshotted into the task as text, where git and the working tree leave it out."""
    files = {"team/skills/orders-loader/SKILL.md": CLEAN, "team/skills/orders-loader/logo.png": b"\x89PNG\r\n\x1a\n\0\xff",
             "team/skills/orders-loader/notes.md": "notes\n"}
    with FakeGitHub() as gh:
        gh.add_pull(14, "c" * 40, files, {"team/skills/orders-loader/SKILL.md": "added"})
        got = cli("record", "--repo", str(feature), "--expect", "PASS", "--pr", "14", "--id", "bin", "--no-run",
                  env=gh.env())
        assert got.exit_code == 0, got.output
        assert set(task_of(feature, "bin")["files"]) == {"skills/orders-loader/SKILL.md", "skills/orders-loader/notes.md"}
        gh.add_pull(15, "d" * 40, {"team/skills/orders-loader/SKILL.md": b"---\nname: x\xff\n---\n"},
                    {"team/skills/orders-loader/SKILL.md": "added"})
        bad = cli("record", "--repo", str(feature), "--expect", "PASS", "--pr", "15", "--id", "bad", "--no-run",
                  env=gh.env())
    assert bad.exit_code == 2 and "SKILL.md: not UTF-8 text at the pull request's head" in bad.output, bad.output


def test_a_task_landing_between_the_check_and_the_write_is_never_overwritten(tmp_path: Path, monkeypatch) -> None:
    """Two records of one id at once: both saw no file, and the later write replaced the other's
    task; the file was also written in place, so a record killed mid-write left half a task."""
    from rubricgate.adopt import record
    from rubricgate.errors import GateInputError

    folder = tmp_path / "evals" / "tasks"
    folder.mkdir(parents=True)
    real_load = yaml.safe_load

    def other_record_lands(text):  # read after the check that no such task exists, before the write
        (folder / "t1.yaml").write_text("id: t1  # the other record's\n")
        return real_load(text)

    monkeypatch.setattr(record.yaml, "safe_load", other_record_lands)
    task = TaskFile(id="t1", review=["skills/a/SKILL.md"], files={"skills/a/SKILL.md": "x\n"}, expect={"tier": "BLOCK"})
    with pytest.raises(GateInputError, match="a task with this id exists"):
        record.write_task(tmp_path, "evals/tasks", task)
    assert (folder / "t1.yaml").read_text() == "id: t1  # the other record's\n"
    assert sorted(p.name for p in folder.iterdir()) == ["t1.yaml"]  # no temp file left beside it


def test_recording_from_git_refs_a_skill_lfs_stores_writes_no_task(tmp_path: Path) -> None:
    # `git show REF:path` is the stored blob, the pointer whatever the checkout holds: the task
    # was written with three lines of hash as the skill and run, graded as if reviewed.
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-qb", "pr")
    (repo / "skills/big").mkdir(parents=True)
    (repo / "skills/big/SKILL.md").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:"
                                              + "1" * 64 + "\nsize 4321\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "skill in LFS")
    got = CliRunner().invoke(main, ["record", "--repo", str(repo), "--base", "main", "--head", "pr",
                                    "--expect", "PASS"])
    assert got.exit_code == 2, got.output
    assert "'skills/big/SKILL.md' is a git LFS pointer" in got.output and "--head WORKTREE" in got.output
    assert not list((repo / "evals/tasks").iterdir())
