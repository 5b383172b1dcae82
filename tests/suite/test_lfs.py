"""rubricgate.suite.lfs: a reviewer file checked out as its git LFS pointer is refused, never reviewed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.errors import GateInputError
from rubricgate.suite.lfs import POINTER_START, is_lfs_pointer, refuse_lfs_pointers
from tests.conftest import invoke_with_prompt_link, make_repo

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
