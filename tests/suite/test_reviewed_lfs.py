"""rubricgate.suite.reviewed_lfs: a file a case hands the reviewer, or one that a reviewed file
references, checked out as its git LFS pointer is refused, never reviewed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import make_repo, write_task

POINTER = (b"version https://git-lfs.github.com/spec/v1\n" + b"oid sha256:" + b"1" * 64 + b"\nsize 1234\n")
EXPECT = {"tier": "PASS"}


# --- the files a reviewed file references -----------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_reference_a_reviewed_skill_links_to_held_as_a_pointer_is_one_line_and_exit_2(
        tmp_path: Path, command: str) -> None:
    # Only the reviewed SKILL.md was looked at: the secret in references/connection-setup.md,
    # checked out without LFS content, reached the reviewer as a hash, and run graded a BLOCK
    # case's review of it (exit 1, REGRESSION) after validate said ok.
    repo = make_repo(tmp_path / "repo", fixtures=["block/marketing-spend-sync"], tasks=["block-secret-in-references"])
    (repo / "fixtures/block/marketing-spend-sync/references/connection-setup.md").write_bytes(POINTER)
    got = CliRunner().invoke(main, [command, "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    named = ("'fixtures/block/marketing-spend-sync/references/connection-setup.md' (linked from "
             "fixtures/block/marketing-spend-sync/SKILL.md) is a git LFS pointer, not the file's content")
    lines = got.output.splitlines()
    assert lines[0].startswith(f"error: evals/tasks/block-secret-in-references.yaml: review[0]: {named}"), got.output
    assert lines[1].startswith(f"error: fixtures/block/marketing-spend-sync/expect.yaml: {named}"), got.output
    assert len(lines) == 2 and "git lfs pull" in lines[0], got.output


def test_references_by_include_mention_or_code_span_are_refused_but_prose_binaries_and_the_suite_are_not(
        tmp_path: Path) -> None:
    # suite.workspace_exclude (`tests`) and a link leaving the repository are in no workspace.
    repo = make_repo(tmp_path / "repo")
    for rel in ("skills/rec/notes/a.md", "guides/b.md", "skills/rec/c.md", "docs/d.md", "skills/rec/logo.png",
                "tests/key.md", str(tmp_path / "outside.md")):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(POINTER)
    (repo / "skills/rec/away.md").symlink_to(tmp_path / "outside.md")  # leaves the repository: no workspace holds it
    os.mkfifo(repo / "skills/rec/pipe.md")  # never opened: a FIFO would hang the load
    skill = ("---\nname: rec\n---\nRead @notes/a.md, then `guides/b.md`.\n{% include \"c.md\" %}\n"
             "Prose docs/d.md is the artifact's own. ![logo](logo.png) [key](/tests/key.md)\n"
             "[away](away.md) [pipe](pipe.md) [recorded](e.md)\n")
    write_task(repo, {"id": "refs", "review": ["skills/rec/SKILL.md"], "expect": EXPECT,
                      "files": {"skills/rec/SKILL.md": skill, "skills/rec/e.md": POINTER.decode()}})
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    lines = got.output.splitlines()
    prefix = "error: evals/tasks/refs.yaml: review[0]: "
    assert [line[len(prefix):line.index(" is a git LFS")] for line in lines] == [
        "'skills/rec/e.md' (linked from skills/rec/SKILL.md)",
        "'skills/rec/c.md' (included by skills/rec/SKILL.md)",
        "'skills/rec/notes/a.md' (@-mentioned in skills/rec/SKILL.md)",
        "'guides/b.md' (named in a code span of skills/rec/SKILL.md)"], got.output
    assert all(line.startswith(prefix) for line in lines), got.output
    assert "--head WORKTREE" in lines[0] and "git lfs pull" in lines[1], got.output


# --- the files a case hands the reviewer to review ------------------------------------------


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_fixture_checked_out_as_its_pointer_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    # validate said ok, and run graded the review of three lines of hash: REGRESSION (exit 1) for a
    # BLOCK fixture, and a PASS one could pass on a hash.
    repo = make_repo(tmp_path / "repo")
    (repo / "fixtures/block/data-loader/SKILL.md").write_bytes(POINTER)
    got = CliRunner().invoke(main, [command, "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert got.output.startswith("error: fixtures/block/data-loader/expect.yaml: 'fixtures/block/data-loader/"
                                 "SKILL.md' is a git LFS pointer, not the file's content"), got.output
    assert got.output.count("\n") == 1 and "git lfs pull" in got.output


def test_a_run_selecting_cases_reads_theirs_alone_and_validate_every_case(tmp_path: Path) -> None:
    # Only the cases a run selects are read for pointers (a case left out is never reviewed): the
    # selected case's pointer, reviewed or referenced, is still refused; validate names each.
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary", "block/data-loader",
                                                  "block/marketing-spend-sync"])
    (repo / "fixtures/block/data-loader/SKILL.md").write_bytes(POINTER)
    (repo / "fixtures/block/marketing-spend-sync/references/connection-setup.md").write_bytes(POINTER)
    run = ["run", "--repo", str(repo), "--only"]
    for only, named in (("data-loader", "'fixtures/block/data-loader/SKILL.md' is a git LFS pointer"),
                        ("marketing", "'fixtures/block/marketing-spend-sync/references/connection-setup.md' "
                                      "(linked from fixtures/block/marketing-spend-sync/SKILL.md) is a git LFS")):
        got = CliRunner().invoke(main, [*run, only])
        assert got.exit_code == 2 and got.output.count("\n") == 1 and named in got.output, got.output
    got = CliRunner().invoke(main, [*run, "weekly-revenue"])
    assert got.exit_code == 0 and "LFS" not in got.output, got.output
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2 and got.output.count("is a git LFS pointer") == 2, got.output


def test_a_task_reviewing_a_pointer_or_recorded_with_one_names_its_entry_and_fix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "skills/big").mkdir(parents=True)
    (repo / "skills/big/SKILL.md").write_bytes(POINTER)
    write_task(repo, {"id": "on-disk", "review": ["fixtures/pass/weekly-revenue-summary/SKILL.md",
                                                  "skills/big/SKILL.md"], "expect": EXPECT})
    # `record --head REF` reads git's blobs: a file LFS stores was recorded as its pointer.
    write_task(repo, {"id": "recorded", "review": ["skills/rec/SKILL.md"], "expect": EXPECT,
                      "files": {"skills/rec/SKILL.md": POINTER.decode()}})
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    lines = got.output.splitlines()
    assert lines[0].startswith("error: evals/tasks/on-disk.yaml: review[1]: 'skills/big/SKILL.md' is a git LFS "
                               "pointer") and "git lfs pull" in lines[0], got.output
    assert lines[1].startswith("error: evals/tasks/recorded.yaml: review[0]: 'skills/rec/SKILL.md' is a git LFS "
                               "pointer") and "--head WORKTREE" in lines[1] and len(lines) == 2, got.output
