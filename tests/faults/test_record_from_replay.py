"""Issue 28, finding 5: `record --from` a hostile replay artifact.

A replay artifact is a file in a run folder (a CI artifact anyone can hand over). Its paths named
host files (absolute, `../..`) and `record` copied them into a committed task with exit 0; a
folder of binaries beside a "skill" was read whole. Now its paths must stay in the repository,
and only regular text files under a size cap are taken.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import make_repo, write_task


@pytest.fixture
def replayed(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader"])
    write_task(repo, {"id": "wrongly-passes", "review": ["fixtures/block/data-loader/SKILL.md"],
                      "expect": {"tier": "PASS"}})
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 1
    run_dir = max((repo / "reports").iterdir())
    (artifact,) = list((run_dir / "replay").glob("*.json"))
    return repo, run_dir, artifact


def _record(repo: Path, run_dir: Path):
    return CliRunner().invoke(main, ["record", "--repo", str(repo), "--expect", "BLOCK", "--from", str(run_dir),
                                     "--case", "wrongly-passes", "--id", "hostile", "--no-run"])


def _tamper(artifact: Path, change) -> None:
    data = json.loads(artifact.read_text())
    change(data)
    artifact.write_text(json.dumps(data))


def _workspace_paths(data: dict, target: str) -> None:
    case = data["case"]
    case["workspace_paths"] = {p: target for p in data["reviewed_files"]}


@pytest.mark.parametrize("change", [
    lambda d: d.update(reviewed_files={"/etc/passwd": "root:x:0:0"}),
    lambda d: d.update(reviewed_files={"../../../etc/SKILL.md": "x"}),
    lambda d: _workspace_paths(d, "../../../../../../etc/SKILL.md"),
], ids=["absolute", "dot-dot", "workspace-path-out"])
def test_a_path_out_of_the_repository_is_refused(replayed, change) -> None:
    repo, run_dir, artifact = replayed
    _tamper(artifact, change)
    got = _record(repo, run_dir)
    assert got.exit_code == 2, got.output
    assert len(got.output.strip().splitlines()) == 1 and "leaves the repository" in got.output
    assert not (repo / "evals" / "tasks" / "hostile.yaml").exists()


def test_binaries_and_big_files_beside_the_skill_are_not_taken(replayed) -> None:
    repo, run_dir, artifact = replayed
    folder = repo / "fixtures" / "block" / "data-loader"
    (folder / "tool.bin").write_bytes(bytes(range(256)) * 64)
    (folder / "huge.md").write_text("x" * 2_000_000)
    _tamper(artifact, lambda d: d["case"].update(files={}))
    got = _record(repo, run_dir)
    assert got.exit_code == 0, got.output
    text = (repo / "evals" / "tasks" / "hostile.yaml").read_text()
    assert "tool.bin" not in text and "huge.md" not in text
