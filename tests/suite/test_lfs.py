"""rubricgate.suite.lfs: a reviewer file checked out as its git LFS pointer is refused, never reviewed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.errors import GateInputError
from rubricgate.suite.lfs import POINTER_START, is_lfs_pointer, refuse_lfs_pointers
from tests.conftest import invoke_with_prompt_link, make_repo, write_task

POINTER = POINTER_START + b"oid sha256:" + b"1" * 64 + b"\nsize 1234\n"


def test_a_pointer_among_the_files_is_named_and_other_files_pass(tmp_path: Path) -> None:
    (tmp_path / "rules.md").write_bytes(b"# Rules\n- no TODO\n")
    (tmp_path / "policy.md").write_bytes(POINTER)
    with pytest.raises(GateInputError, match="policy.md: main's reviewer: a git LFS pointer") as caught:
        refuse_lfs_pointers(tmp_path, ["missing.md", "rules.md", "policy.md"], "main's reviewer")
    assert "lfs: true" in caught.value.one_line()
    refuse_lfs_pointers(tmp_path, ["rules.md", "missing.md"], "main's reviewer")
    assert is_lfs_pointer(POINTER) and not is_lfs_pointer(b"version 1\n" + POINTER)


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_rubric_checked_out_as_its_pointer_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    # actions/checkout without `lfs: true` writes the pointer: the reviewer read a hash as its rules.
    repo = make_repo(tmp_path / "repo")
    (repo / "reviewer/evaluator/references/rubric.md").write_bytes(POINTER)
    got = CliRunner().invoke(main, [command, "--repo", str(repo)])
    assert got.exit_code == 2
    assert got.output.startswith("error: rubricgate.yaml: reviewer.rubric: a git LFS pointer"), got.output


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_file_the_prompt_links_to_held_as_a_pointer_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    # Only the prompt, skill and rubric were looked at: a policy the prompt links to, checked out
    # without LFS content, reached the reviewer as a hash and run went on to grade it.
    repo = make_repo(tmp_path / "repo")
    (repo / "reviewer/prompts/policy.md").write_bytes(POINTER)
    got = invoke_with_prompt_link(repo, command, "policy.md")
    assert got.exit_code == 2, got.output
    assert "'reviewer/prompts/policy.md' (linked from reviewer/prompts/evaluate.md) is a git LFS pointer" \
        in got.output and "lfs: true" in got.output, got.output


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


def test_a_task_reviewing_a_pointer_or_recorded_with_one_names_its_entry_and_fix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "skills/big").mkdir(parents=True)
    (repo / "skills/big/SKILL.md").write_bytes(POINTER)
    expect = {"tier": "PASS"}
    write_task(repo, {"id": "on-disk", "review": ["fixtures/pass/weekly-revenue-summary/SKILL.md",
                                                  "skills/big/SKILL.md"], "expect": expect})
    # `record --head REF` reads git's blobs: a file LFS stores was recorded as its pointer.
    write_task(repo, {"id": "recorded", "review": ["skills/rec/SKILL.md"], "expect": expect,
                      "files": {"skills/rec/SKILL.md": POINTER.decode()}})
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    lines = got.output.splitlines()
    assert lines[0].startswith("error: evals/tasks/on-disk.yaml: review[1]: 'skills/big/SKILL.md' is a git LFS "
                               "pointer") and "git lfs pull" in lines[0], got.output
    assert lines[1].startswith("error: evals/tasks/recorded.yaml: review[0]: 'skills/rec/SKILL.md' is a git LFS "
                               "pointer") and "--head WORKTREE" in lines[1] and len(lines) == 2, got.output
