"""`record` of a change to any files (suite.layout: files): a commit range of a code repository,
a .diff file; and `record --from` of a fixture, which never takes its answer key."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.adopt.test_record import cli, commit, task_of
from tests.conftest import git, make_repo, set_severity
from tests.fake_github import FakeGitHub

APP = "def load(conn, user):\n    return conn.execute('SELECT * FROM t WHERE id = %s' % user)\n"
APP_FIXED = "def load(conn, user):\n    return conn.execute('SELECT * FROM t WHERE id = ?', (user,))\n"


@pytest.fixture
def code_repo(tmp_path: Path) -> Path:
    """A code repository (layout files) whose branch `feature` edits app/db.py and adds a file."""
    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["suite"].update({"layout": "files", "review_root": "changes"})
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    for rel in ("fixtures/pass/weekly-revenue-summary", "fixtures/block/data-loader"):
        (repo / rel / "expect.yaml").unlink(missing_ok=True)
    (repo / "app").mkdir()
    (repo / "app/db.py").write_text(APP_FIXED)
    commit(repo, "code")
    git(repo, "checkout", "-qb", "feature")
    (repo / "app/db.py").write_text(APP)
    (repo / "app/new.py").write_text("X = 1\n")
    (repo / "reviewer/prompts/evaluate.md").write_text((repo / "reviewer/prompts/evaluate.md").read_text() + "\n")
    commit(repo, "unsafe query")
    git(repo, "checkout", "-q", "main")
    return repo


# --- failure paths first --------------------------------------------------------------------


def test_a_range_that_changes_no_reviewed_file_is_exit_2(code_repo):
    git(code_repo, "checkout", "-qb", "only-reviewer")
    (code_repo / "reviewer/prompts/evaluate.md").write_text("x\n")
    commit(code_repo, "reviewer only")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", "only-reviewer",
              "--no-run")
    assert got.exit_code == 2 and "no changed file found (outside the reviewer and the suite)" in got.output


@pytest.mark.parametrize(("content", "problem"), [
    (b"just some notes\n", "not a unified diff"),
    (b"\xff\xfe--- a\n", "not UTF-8 text"),
    # it has the marks of one, but git reads no hunk in it (it was recorded, exit 0)
    (b"--- a/x\n+++ b/x\n@@ garbage @@\nthis is not a hunk line\n", "not a patch git can read (No valid patches"),
    (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\x00\x00\n", "not a patch git can read (it holds a NUL byte)"),
    # a whole-file CRLF diff: git warns of an added line's trailing space before the header it
    # cannot read (a new empty file's), and the warning was named as the cause
    (b"diff --git a/f.txt b/f.txt\r\n--- a/f.txt\r\n+++ b/f.txt\r\n@@ -1,2 +1,2 @@\r\n a\r\n-c\r\n+b \r\n"
     b"diff --git a/zz.txt b/zz.txt\r\nnew file mode 100644\r\nindex 0000000..e69de29\r\n",
     "not a patch git can read (git diff header lacks filename information"),
])
def test_a_diff_file_that_is_not_a_patch_is_exit_2(code_repo, tmp_path, content, problem):
    path = tmp_path / "notes.diff"
    path.write_bytes(content)
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--diff", str(path), "--no-run")
    assert got.exit_code == 2 and problem in got.output and "Traceback" not in got.output


def _record_diff_capped(repo: Path, diff: str) -> subprocess.CompletedProcess[str]:
    """`record --diff` in a child whose address space is capped at 2 GiB: reading the input whole
    ends in MemoryError there, not in the OOM killer on the machine running the tests."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    return subprocess.run([sys.executable, "-m", "rubricgate", "record", "--repo", str(repo), "--expect", "BLOCK",
                           "--diff", diff, "--no-run"], capture_output=True, text=True, preexec_fn=cap, timeout=600)


def test_a_diff_that_never_ends_is_refused_at_the_cap_not_read_whole(code_repo):
    got = _record_diff_capped(code_repo, "/dev/zero")
    assert got.returncode == 2, got.stderr[-1000:]
    assert got.stderr.strip() == "error: /dev/zero: --diff: over 2,000,000 bytes (fix: record a smaller change)"


def test_a_sparse_diff_file_over_the_cap_is_refused_by_its_size(code_repo, tmp_path):
    path = tmp_path / "huge.diff"
    with path.open("wb") as fh:
        fh.truncate(64 << 30)  # 64 GiB that take no disk: a file read whole would need them in memory
    got = _record_diff_capped(code_repo, str(path))
    assert got.returncode == 2, got.stderr[-1000:]
    assert got.stderr.strip() == f"error: {path}: --diff: over 2,000,000 bytes (fix: record a smaller change)"


def test_a_task_id_that_holds_a_secret_is_refused_before_its_file_is_written(code_repo, tmp_path, monkeypatch):
    # `record --id` with a secret in it printed "recorded evals/tasks/rec-<secret>.yaml", then the
    # run refused the case and exited 2 ("not recorded"), leaving the file named by the secret.
    config = yaml.safe_load((code_repo / "rubricgate.yaml").read_text())
    config["agent"]["secret_env"] = ["RG_ODD_SECRET"]
    (code_repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("RG_ODD_SECRET", "zq9fk2mp7vl4nr8t")
    path = tmp_path / "change.diff"
    path.write_text(git(code_repo, "diff", "main", "feature", "--", "app/db.py"))
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--diff", str(path), "--id",
              "rec-zq9fk2mp7vl4nr8t", "--no-run")
    assert got.exit_code == 2, got.output
    assert "record: --id: the case id holds the value of RG_ODD_SECRET" in got.output
    assert "zq9fk2mp7vl4nr8t" not in got.output
    assert [p.name for p in code_repo.rglob("*zq9fk2mp7vl4nr8t*")] == []


def _binary_and_latin1(repo: Path, latin1: bool) -> None:
    """Branch `assets` of `repo`: a PNG (git's binary) and, with `latin1`, a Latin-1 source file."""
    git(repo, "checkout", "-qb", "assets")
    (repo / "app/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xd8" * 64)
    (repo / "app/db.py").write_text(APP)
    if latin1:
        (repo / "app/legacy.py").write_bytes(b"NAME = 'caf\xe9'\n")
    commit(repo, "assets")


@pytest.mark.parametrize("head", ["feature", "WORKTREE"])
def test_a_change_of_more_files_than_a_task_reviews_is_exit_2_not_cut(code_repo, head):
    # The first 300 files by name were recorded, "301 file(s) reviewed", exit 0: the patch lost
    # the rest, zz_query.py's injection with them, under a task expecting BLOCK.
    git(code_repo, "checkout", "-q", "feature")
    (code_repo / "gen").mkdir()
    for n in range(300):
        (code_repo / f"gen/m{n:03}.py").write_text(f"V = {n}\n")
    (code_repo / "gen/zz_query.py").write_text(APP)
    if head == "feature":
        commit(code_repo, "many files")
        git(code_repo, "checkout", "-q", "main")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", head, "--no-run")
    assert got.exit_code == 2, got.output
    assert "303 changed files (outside the reviewer and the suite), over the 300 one task reviews" in got.output
    assert not list((code_repo / "evals/tasks").glob("*.yaml"))


@pytest.mark.parametrize("head", ["assets", "WORKTREE"])
def test_a_change_with_a_file_in_another_encoding_is_exit_2_naming_it(code_repo, head):
    _binary_and_latin1(code_repo, latin1=True)
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", head, "--no-run")
    assert got.exit_code == 2, got.output
    assert "app/legacy.py" in got.output and "not UTF-8" in got.output and "internal error" not in got.output


def test_a_diff_with_a_credential_stops_naming_the_line(code_repo, tmp_path):
    path = tmp_path / "leak.diff"
    path.write_text("--- a/app/x.py\n+++ b/app/x.py\n@@ -1 +1 @@\n-X = 1\n+TOKEN = 'ghp_abcdefghijklmnopqrstuvwxyz0123'\n")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--diff", str(path), "--no-run")
    assert got.exit_code == 2 and "changes/leak.diff:5" in got.output


# --- what a recorded change holds ----------------------------------------------------------


def test_a_commit_range_of_a_code_repository_becomes_a_task_reviewing_its_patch(code_repo):
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", "feature",
              "--id", "unsafe-query", "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "unsafe-query")
    sha = git(code_repo, "rev-parse", "feature").strip()[:12]
    assert task["review"] == [f"changes/{sha}.diff", "app/db.py", "app/new.py"]
    patch = task["files"][f"changes/{sha}.diff"]
    assert "diff --git a/app/db.py b/app/db.py" in patch and "+    return conn.execute('SELECT * FROM t WHERE id = %s' % user)" in patch
    assert task["files"]["app/db.py"] == APP and task["files"]["app/new.py"] == "X = 1\n"
    assert "reviewer/" not in patch  # the reviewer's own files are gated, not reviewed
    assert "3 file(s) reviewed" in got.output


def test_the_recorded_change_runs_as_a_case(code_repo):
    got = cli("record", "--repo", str(code_repo), "--expect", "PASS", "--base", "main", "--head", "feature",
              "--id", "unsafe-query")
    assert got.exit_code == 0, got.output
    assert "the current reviewer gets it" in got.output


def test_a_diff_file_becomes_a_task_reviewing_the_patch_alone(code_repo, tmp_path):
    diff = git(code_repo, "diff", "main", "feature", "--", "app/db.py")
    path = tmp_path / "unsafe query.patch"
    path.write_text(diff)
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--diff", str(path), "--id", "from-diff",
              "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "from-diff")
    assert task["review"] == ["changes/unsafe-query.patch"] and task["files"] == {"changes/unsafe-query.patch": diff}


def _recorded_block(code_repo, head: str, task_id: str) -> dict:
    """`record` of main..`head` as task `task_id` expecting BLOCK, not run: the task written."""
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", head,
              "--id", task_id, "--no-run")
    assert got.exit_code == 0, got.output
    return task_of(code_repo, task_id)


@pytest.mark.parametrize("head", ["assets", "WORKTREE"])
def test_a_binary_file_in_a_recorded_change_is_in_the_patch_only(code_repo, head):
    _binary_and_latin1(code_repo, latin1=False)
    task = _recorded_block(code_repo, head, "assets")
    assert "app/logo.png" not in task["files"] and task["files"]["app/db.py"] == APP
    assert "Binary files /dev/null and b/app/logo.png differ" in task["files"][task["review"][0]]


@pytest.mark.parametrize("head", ["links", "WORKTREE"])
def test_a_symbolic_link_in_a_recorded_change_is_in_the_patch_only(code_repo, head):
    # From a commit range the link was snapshotted as a file holding its target's name: the
    # reviewer read app/current.py as a Python file whose text is "db.py".
    git(code_repo, "checkout", "-qb", "links", "feature")
    (code_repo / "app/current.py").symlink_to("db.py")
    if head == "links":
        commit(code_repo, "a link")
    task = _recorded_block(code_repo, head, "links")
    assert "app/current.py" not in task["files"] and task["files"]["app/db.py"] == APP
    assert "diff --git a/app/current.py b/app/current.py\nnew file mode 120000" in task["files"][task["review"][0]]


@pytest.mark.parametrize("head", ["suite-too", "WORKTREE"])
def test_the_baseline_and_the_config_a_change_touches_are_not_recorded(code_repo, head):
    git(code_repo, "checkout", "-qb", "suite-too")
    (code_repo / "app/db.py").write_text(APP)
    (code_repo / "baseline.json").write_text('{"edited": true}\n')
    (code_repo / "rubricgate.yaml").write_text((code_repo / "rubricgate.yaml").read_text() + "# edited\n")
    commit(code_repo, "code, baseline and config")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", head,
              "--id", "suite-too", "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "suite-too")
    assert task["review"][1:] == ["app/db.py"] and set(task["files"]) == {task["review"][0], "app/db.py"}
    assert "baseline.json" not in task["files"][task["review"][0]]  # the answer key is gated, not reviewed


@pytest.mark.parametrize("head", ["crlf", "WORKTREE"])
def test_a_file_with_crlf_line_ends_is_recorded_byte_for_byte(code_repo, head):
    git(code_repo, "checkout", "-qb", "crlf")
    (code_repo / "app/db.py").write_bytes(APP.replace("\n", "\r\n").encode())
    commit(code_repo, "windows line ends")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", head,
              "--id", "crlf", "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "crlf")
    assert task["files"]["app/db.py"] == APP.replace("\n", "\r\n")  # a rule on line ends sees them
    assert "+def load(conn, user):\r\n" in task["files"][task["review"][0]]


def test_the_working_tree_change_includes_untracked_files(code_repo):
    (code_repo / "app/db.py").write_text(APP)
    (code_repo / "app/extra.py").write_text("Y = 2\n")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--id", "wt", "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "wt")
    assert task["review"] == ["changes/worktree.diff", "app/db.py", "app/extra.py"]
    assert "+Y = 2" in task["files"]["changes/worktree.diff"]


@pytest.mark.parametrize("head", ["feature", "WORKTREE"])
def test_a_change_in_a_monorepos_folder_is_its_files_and_patch_named_from_the_folder(tmp_path, head):
    # git names a diff's files from the top (team/app/db.py): nothing matched the folder's names,
    # the reviewer's own edit was not left out, and `record --base main` found no changed file.
    top = tmp_path / "mono"
    team = make_repo(top / "team", commit=False)
    config = yaml.safe_load((team / "rubricgate.yaml").read_text())
    config["suite"].update({"layout": "files", "review_root": "changes"})
    (team / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    (team / "app").mkdir()
    (team / "app/db.py").write_text(APP_FIXED)
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], check=True)
    commit(top, "init")
    git(top, "checkout", "-qb", "feature")
    (team / "app/db.py").write_text(APP)
    (team / "reviewer/prompts/evaluate.md").write_text((team / "reviewer/prompts/evaluate.md").read_text() + "\n")
    (top / "other").mkdir()
    (top / "other/x.py").write_text("Z = 3\n")
    commit(top, "unsafe query")
    got = cli("record", "--repo", str(team), "--expect", "BLOCK", "--base", "main", "--head", head, "--id", "mono",
              "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(team, "mono")
    assert task["review"][1:] == ["app/db.py"] and task["files"]["app/db.py"] == APP
    assert "diff --git a/app/db.py b/app/db.py" in task["files"][task["review"][0]]
    assert "reviewer/" not in task["files"][task["review"][0]]


def test_a_pull_request_becomes_a_task_reviewing_its_patch_and_changed_files(code_repo):
    hunks = "@@ -1,2 +1,2 @@\n def load(conn, user):\n-    return conn.execute('... = ?', (user,))\n+    return conn.execute('... = %s' % user)"
    with FakeGitHub() as gh:
        gh.add_pull(21, "b" * 40, {"app/db.py": APP, "reviewer/prompts/evaluate.md": "x\n"},
                    {"app/db.py": "modified", "app/old.py": "removed", "reviewer/prompts/evaluate.md": "modified"},
                    {"app/db.py": hunks})
        got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--pr", "21", "--id", "pr-task", "--no-run",
                  env=gh.env())
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "pr-task")
    assert task["review"] == ["changes/pr-21.diff", "app/db.py"] and task["files"]["app/db.py"] == APP
    patch = task["files"]["changes/pr-21.diff"]
    assert "+++ b/app/db.py\n@@ -1,2 +1,2 @@" in patch and "--- a/app/old.py\n+++ /dev/null" in patch
    assert "evaluate.md" not in patch  # the reviewer's own files are gated, not reviewed


@pytest.mark.parametrize("head", ["gone", "WORKTREE"])
def test_a_change_that_deletes_or_renames_files_removes_them_from_the_workspace(code_repo, head):
    # The task wrote the head's files over the current checkout and said nothing of app/old.py
    # (deleted) or app/keep.py (renamed away): both stayed in the reviewer's workspace.
    (code_repo / "app/old.py").write_text("OLD = 1\n")
    (code_repo / "app/keep.py").write_text("KEEP = 1\n")
    commit(code_repo, "two files")
    git(code_repo, "checkout", "-qb", "gone")
    (code_repo / "app/old.py").unlink()
    (code_repo / "app/keep.py").rename(code_repo / "app/kept.py")
    if head == "gone":
        commit(code_repo, "delete and rename")
        git(code_repo, "checkout", "-q", "main")
    got = cli("record", "--repo", str(code_repo), "--expect", "PASS", "--base", "main", "--head", head, "--id", "rm",
              "--no-run")
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "rm")
    assert task["removed"] == ["app/keep.py", "app/old.py"] and task["files"]["app/kept.py"] == "KEEP = 1\n"


def test_a_change_that_deletes_a_file_the_prompt_links_to_is_recorded_without_removing_it(code_repo):
    # The deleted file went into the task's removed:, which the suite refuses for a reviewer file
    # (a case testing the reviewer without it): record exited 2 and wrote no task.
    prompt = code_repo / "reviewer/prompts/evaluate.md"
    (code_repo / "docs").mkdir()
    (code_repo / "docs/guide.md").write_text("# Guide\n")
    (code_repo / "app/old.py").write_text("OLD = 1\n")
    prompt.write_text(prompt.read_text() + "\nSee [the guide](../../docs/guide.md).\n")
    commit(code_repo, "a guide")
    git(code_repo, "checkout", "-qb", "no-guide")
    (code_repo / "docs/guide.md").unlink()
    (code_repo / "app/old.py").unlink()
    (code_repo / "app/db.py").write_text(APP)
    commit(code_repo, "drop the guide")
    git(code_repo, "checkout", "-q", "main")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", "no-guide",
              "--id", "no-guide", "--no-run")
    assert got.exit_code == 0, got.output
    assert [line for line in got.output.splitlines() if line.startswith("note:")] == [
        "note: left out of removed: the reviewer's own docs/guide.md (the change deletes it; each trial's "
        "workspace holds the reviewer as it is in the repository)"]
    task = task_of(code_repo, "no-guide")
    assert task["removed"] == ["app/old.py"]  # the patch still shows the guide deleted
    assert any("+++ /dev/null" in text and "docs/guide.md" in text for text in task["files"].values())
    path = code_repo / "evals/tasks/no-guide.yaml"  # written by hand, the same removal is still refused
    path.write_text(path.read_text().replace("- app/old.py", "- app/old.py\n- docs/guide.md"))
    refused = cli("validate", "--repo", str(code_repo))
    assert refused.exit_code == 2 and "removed[1]: removes the reviewer's own 'docs/guide.md'" in refused.output


def test_a_pull_request_that_deletes_a_file_removes_it_from_the_workspace(code_repo):
    with FakeGitHub() as gh:
        gh.add_pull(22, "b" * 40, {"app/db.py": APP}, {"app/db.py": "modified", "app/old.py": "removed"},
                    {"app/db.py": "@@ -1 +1 @@\n-a\n+b"})
        got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--pr", "22", "--id", "pr-rm", "--no-run",
                  env=gh.env())
    assert got.exit_code == 0, got.output
    assert task_of(code_repo, "pr-rm")["removed"] == ["app/old.py"]


def test_a_pull_request_file_past_the_fourth_page_is_read(code_repo):
    # 410 fixture files filled the four pages read; app/zz_query.py, the 411th, was dropped
    # unsaid, and the task recorded the rest as the whole change.
    changed = {f"fixtures/block/gen/m{n:03}.md": "modified" for n in range(410)} | {"app/zz_query.py": "added"}
    with FakeGitHub() as gh:
        gh.add_pull(23, "b" * 40, {"app/zz_query.py": APP}, changed, {"app/zz_query.py": "@@ -0,0 +1 @@\n+x"})
        got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--pr", "23", "--id", "late", "--no-run",
                  env=gh.env())
    assert got.exit_code == 0, got.output
    assert task_of(code_repo, "late")["review"] == ["changes/pr-23.diff", "app/zz_query.py"]


def test_a_pull_request_at_githubs_cap_of_listed_files_is_exit_2(code_repo):
    with FakeGitHub() as gh:
        gh.add_pull(24, "b" * 40, {}, {f"reviewer/gen/m{n:04}.md": "modified" for n in range(3000)})
        got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--pr", "24", "--no-run", env=gh.env())
    assert got.exit_code == 2 and "Traceback" not in got.output
    assert got.output.strip().splitlines() == ["error: --pr: 24: GitHub lists at most 3,000 changed files of a pull "
                                               "request, and this one has that many: the list may be cut (fix: record "
                                               "the change from a local clone with --base and --head)"]


def test_a_pull_requests_pure_rename_is_a_rename_in_the_patch(code_repo):
    # It read "Binary files differ, or too large to show", and the old path stayed in the workspace.
    with FakeGitHub() as gh:
        gh.add_pull(25, "b" * 40, {"app/kept.py": "K = 1\n", "app/db.py": APP},
                    {"app/kept.py": "renamed", "app/db.py": "modified"}, {"app/db.py": "@@ -1 +1 @@\n-a\n+b"})
        gh.pulls[25]["files"][0]["previous_filename"] = "app/keep.py"
        got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--pr", "25", "--id", "moved", "--no-run",
                  env=gh.env())
    assert got.exit_code == 0, got.output
    task = task_of(code_repo, "moved")
    patch = task["files"]["changes/pr-25.diff"]
    assert "diff --git a/app/keep.py b/app/kept.py\nsimilarity index 100%\nrename from app/keep.py\n" \
           "rename to app/kept.py\n" in patch and "Binary files differ" not in patch
    assert task["removed"] == ["app/keep.py"]


def test_a_pull_request_in_a_monorepos_folder_is_its_files_named_from_the_folder(tmp_path):
    # GitHub names a PR's files from the top (team/fixtures/...): the fixtures, the reviewer and
    # the answer key left out are named from the folder, so none matched and expect.yaml was recorded.
    team = make_repo(tmp_path / "mono" / "team", commit=False)
    config = yaml.safe_load((team / "rubricgate.yaml").read_text())
    config["suite"].update({"layout": "files", "review_root": "changes"})
    (team / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path / "mono")], check=True)
    commit(tmp_path / "mono", "init")
    key = "team/fixtures/block/data-loader/expect.yaml"
    head = {"team/app/db.py": APP, key: "tier: BLOCK\n", "team/reviewer/prompts/evaluate.md": "x\n", "other/x.py": "Z\n"}
    with FakeGitHub() as gh:
        gh.add_pull(22, "c" * 40, head, dict.fromkeys(head, "modified"), {"team/app/db.py": "@@ -1 +1 @@\n-a\n+b"})
        got = cli("record", "--repo", str(team), "--expect", "BLOCK", "--pr", "22", "--id", "mono-pr", "--no-run",
                  env=gh.env())
    assert got.exit_code == 0, got.output
    task = task_of(team, "mono-pr")
    assert task["review"] == ["changes/pr-22.diff", "app/db.py"] and task["files"]["app/db.py"] == APP
    patch = task["files"]["changes/pr-22.diff"]
    assert patch.startswith("diff --git a/app/db.py b/app/db.py\n")
    assert not any(name in patch for name in ("expect.yaml", "evaluate.md", "x.py\n"))


# --- record --from a fixture: the answer key stays out --------------------------------------


def test_record_from_a_fixture_replay_never_snapshots_its_expect_yaml(tmp_path):
    """The README tour: break the rubric, run, record the failed fixture from its replay."""
    repo = make_repo(tmp_path / "repo")
    assert (repo / "fixtures/block/data-loader/expect.yaml").is_file()
    set_severity(repo, "fm-description-required", "warning")
    ran = cli("run", "--repo", str(repo))
    assert ran.exit_code == 1, ran.output
    run_dir = max((repo / "reports").iterdir())
    got = cli("record", "--repo", str(repo), "--expect", "BLOCK", "--from", str(run_dir), "--case",
              "fixture-data-loader", "--id", "data-loader-replayed", "--no-run")
    assert got.exit_code == 0, got.output
    files = task_of(repo, "data-loader-replayed")["files"]
    assert not any(Path(p).name == "expect.yaml" for p in files), sorted(files)
    assert "skills/data-loader/SKILL.md" in files and any("/references/" in p for p in files)


def _failed_run_of_a_change(repo: Path) -> Path:
    """The record run of the feature range (plus a top-level file) expected WARN: the reviewer fails it."""
    git(repo, "checkout", "-q", "feature")
    (repo / "setup_db.py").write_text(APP)
    commit(repo, "a top-level file")
    git(repo, "checkout", "-q", "main")
    got = cli("record", "--repo", str(repo), "--expect", "WARN", "--base", "main", "--head", "feature",
              "--id", "unsafe-query")
    assert got.exit_code == 0 and "WRONG today" in got.output, got.output
    return max((repo / "reports").iterdir())


def test_record_from_a_replay_of_a_change_that_deleted_a_file_removes_it_again(code_repo):
    git(code_repo, "checkout", "-q", "feature")
    (code_repo / "app/old.py").write_text("OLD = 1\n")
    commit(code_repo, "old")
    git(code_repo, "checkout", "-qb", "gone")
    (code_repo / "app/old.py").unlink()
    commit(code_repo, "delete")
    got = cli("record", "--repo", str(code_repo), "--expect", "WARN", "--base", "feature", "--head", "gone",
              "--id", "deleted")
    assert got.exit_code == 0 and "WRONG today" in got.output, got.output
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--from", str(max((code_repo / "reports")
              .iterdir())), "--case", "deleted", "--id", "deleted-again", "--no-run")
    assert got.exit_code == 0, got.output
    assert task_of(code_repo, "deleted-again")["removed"] == ["app/old.py"]


def test_record_from_a_changes_replay_keeps_the_paths_the_reviewer_saw_and_nothing_else(code_repo):
    # The replay was recorded as a skill's: each reviewed file moved to changes/<folder>[-n]/ (the
    # patch to changes/changes/, app/new.py apart from app/db.py), and a top-level file's folder,
    # the repository, snapshotted whole: baseline.json, the fixtures' expect.yaml and .git shown.
    run_dir = _failed_run_of_a_change(code_repo)
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--from", str(run_dir), "--case",
              "unsafe-query", "--id", "unsafe-query-replayed", "--no-run")
    assert got.exit_code == 0, got.output
    recorded, replayed = task_of(code_repo, "unsafe-query"), task_of(code_repo, "unsafe-query-replayed")
    assert replayed["review"] == recorded["review"] and replayed["files"] == recorded["files"]
    assert "4 file(s) reviewed, 4 file(s) snapshotted" in got.output


def test_a_pull_request_of_more_files_than_a_task_reviews_is_exit_2_not_cut(code_repo):
    head = {f"gen/m{n:03}.py": f"V = {n}\n" for n in range(300)} | {"gen/zz_query.py": APP}
    with FakeGitHub() as gh:
        gh.add_pull(23, "e" * 40, head, dict.fromkeys(head, "added"))
        got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--pr", "23", "--no-run", env=gh.env())
    assert got.exit_code == 2 and "301 changed files" in got.output, got.output


def test_a_change_adding_a_file_whose_name_holds_a_line_break_is_exit_2_and_leaves_no_task(code_repo):
    git(code_repo, "checkout", "-qb", "newline")
    (code_repo / "app/new\nline.py").write_text(APP)
    commit(code_repo, "a name of two lines")
    got = cli("record", "--repo", str(code_repo), "--expect", "BLOCK", "--base", "main", "--head", "newline",
              "--id", "two-lines", "--no-run")
    assert got.exit_code == 2 and "'app/new\\\\x0aline.py' is no printable UTF-8 name" in got.output, got.output
    assert len(got.output.strip().splitlines()) == 1 and not (code_repo / "evals/tasks/two-lines.yaml").exists()
