"""Issue 28, finding 15 (the rest): inputs that ended in "internal error".

`merge` whose output folder is one of its shard folders, a reports folder that cannot be
written (for `run` and for `merge`), and a 300-character id (a `record --id`, a fixture folder
whose case id would name transcript files longer than the OS allows) each end in one line naming
the input and the fix, exit 2.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import git, make_repo

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]


def _one_line_exit_2(result, *names: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0] and "Traceback" not in result.output, result.output
    assert "fix:" in lines[0] and all(name in lines[0] for name in names), lines[0]
    return lines[0]


@pytest.fixture
def shards(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A repository and its two shard folders, left in its reports folder."""
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    for k in (1, 2):
        result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", f"{k}/2"])
        assert result.exit_code == 0, result.output
    return repo, sorted((repo / "reports").iterdir())


def read_only(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `folder` unwritable: its mode, and for root (whom the mode does not stop) a refusal
    to create anything in it, as a read-only mount gives."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    if os.geteuid() == 0:
        real = os.mkdir

        def mkdir(path, mode=0o777, *args, **kwargs):
            if Path(path).parent == folder:
                raise PermissionError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real(path, mode, *args, **kwargs)
        monkeypatch.setattr(os, "mkdir", mkdir)


def test_merge_into_one_of_its_shard_folders_is_refused(shards, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, dirs = shards
    before = {p: p.read_bytes() for p in dirs[0].rglob("*") if p.is_file()}
    monkeypatch.setattr("rubricgate.fleet.merge.new_run_id", lambda: dirs[0].name)  # the output is shard 1's folder
    result = CliRunner().invoke(main, ["merge", "--repo", str(repo), *map(str, dirs)])
    _one_line_exit_2(result, dirs[0].name)
    assert {p: p.read_bytes() for p in dirs[0].rglob("*") if p.is_file()} == before


def test_merge_into_a_read_only_reports_folder_is_refused(shards, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    repo, dirs = shards
    moved = [Path(shutil.move(str(d), str(tmp_path / "artifacts" / d.name))) for d in dirs]
    read_only(repo / "reports", monkeypatch)
    try:
        result = CliRunner().invoke(main, ["merge", "--repo", str(repo), *map(str, moved)])
    finally:
        (repo / "reports").chmod(0o755)
    _one_line_exit_2(result, str(repo / "reports"), "writable")


def test_run_into_a_read_only_reports_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    read_only(repo / "reports", monkeypatch)
    try:
        result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    finally:
        (repo / "reports").chmod(0o755)
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]  # the run's progress lines come first
    assert "internal error" not in result.output and str(repo / "reports") in last and "writable" in last, last
    assert list((repo / "reports").iterdir()) == []


def test_a_300_character_record_id_names_the_option(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    skill = repo / "skills" / "foo" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: foo\n---\n# Foo\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "a skill")
    result = CliRunner().invoke(main, ["record", "--repo", str(repo), "--base", "HEAD~1", "--head", "HEAD",
                                       "--expect", "block", "--rule", "fm-description-required", "--id", "a" * 300])
    line = _one_line_exit_2(result, "--id", "100 characters")
    assert "errors.pydantic.dev" not in line


def test_a_fixture_folder_whose_id_is_too_long_fails_validate(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    long_name = "b" * 250
    shutil.copytree(repo / "fixtures" / "block" / "data-loader", repo / "fixtures" / "block" / long_name)
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    [line] = [ln for ln in result.output.splitlines() if long_name in ln]
    assert "folder name" in line and "rename the folder to at most 92 characters" in line, line
