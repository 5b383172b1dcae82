"""Issue 28, findings 2 and 8: `merge` trusts nothing a shard folder says.

A shard folder is another machine's output. Its transcript paths must not write outside the
merged run folder (a `../` path or a linked transcripts/ planted a git hook in the checkout),
and its summary must add up: grades its transcripts earn, each planned trial once, no case of
another shard, no trial outside the plan, no negative cost. Each is refused in one line, exit 2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import make_repo

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "pass/ab-test-readout", "warn/churn-cohort-query"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A repository and its two shard folders, copied out of reports/ as a CI artifact would be."""
    root = tmp_path_factory.mktemp("merge-trust")
    repo = make_repo(root / "repo", fixtures=FIXTURES)
    dirs = []
    for k in (1, 2):
        before = set((repo / "reports").glob("*")) if (repo / "reports").is_dir() else set()
        result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--trials", "2", "--shard", f"{k}/2"])
        assert result.exit_code == 0, result.output
        (new,) = set((repo / "reports").glob("*")) - before
        dirs.append(shutil.move(str(new), str(root / "artifacts" / f"shard-{k}" / new.name)) and
                    root / "artifacts" / f"shard-{k}" / new.name)
    return repo, dirs


@pytest.fixture
def copies(shards, tmp_path: Path) -> tuple[Path, list[Path]]:
    repo, dirs = shards
    out = []
    for d in dirs:
        dest = tmp_path / "artifacts" / d.parent.name / d.name
        shutil.copytree(d, dest, symlinks=True)
        out.append(dest)
    return repo, out


def _merge(repo: Path, dirs: list[Path]):
    return CliRunner().invoke(main, ["merge", "--repo", str(repo), *map(str, dirs)])


def _edit(run_dir: Path, change) -> None:
    path = run_dir / "summary.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _one_line_exit_2(result) -> str:
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output, result.output
    return result.output


def test_the_untouched_shards_merge(copies) -> None:
    repo, dirs = copies
    assert _merge(repo, dirs).exit_code == 0


def test_a_dot_dot_transcript_path_plants_no_git_hook(copies, tmp_path: Path) -> None:
    repo, dirs = copies
    hook_rel = "transcripts/../../../.git/hooks/pre-commit"
    source = (dirs[0] / hook_rel)
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("#!/bin/sh\necho pwned\n")
    source.chmod(0o755)
    _edit(dirs[0], lambda d: d["cases"][0]["trials"][0].update(transcript=hook_rel))
    _one_line_exit_2(_merge(repo, dirs))
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_a_linked_transcripts_folder_is_refused(copies, tmp_path: Path) -> None:
    repo, dirs = copies
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(dirs[0] / "transcripts", elsewhere)
    shutil.rmtree(dirs[0] / "transcripts")
    (dirs[0] / "transcripts").symlink_to(elsewhere)
    assert "transcripts" in _one_line_exit_2(_merge(repo, dirs))


def _flip(data: dict) -> None:
    for case in data["cases"]:
        for t in case["trials"]:
            for grade in t["grades"].values():
                grade["passed"] = not grade["passed"]


def _forged(how: str):
    """Every grade flipped, and the first trial dressed so that it would skip the regrade."""
    def change(data: dict) -> None:
        _flip(data)
        t = data["cases"][0]["trials"][0]
        if how == "no-transcript":
            t["transcript"] = ""
        elif how == "not-run":
            next(iter(t["grades"].values()))["category"] = "not_run"
        else:  # the repository-changed reason, without the ": <paths>" merge counts as a violation
            for grade in t["grades"].values():
                grade.update(passed=True, reason="the original repository changed during this trial")
    return change


@pytest.mark.parametrize("change, says", [
    (_flip, "grades its transcript does not earn"),
    (_forged("no-transcript"), "has grades but no transcript that earns them"),
    (_forged("not-run"), "mixes not-run grades with graded ones"),
    (_forged("tree-changed"), "says it wrote to the repository, but not in every grade"),
    (lambda d: d["cases"][0]["trials"].append(dict(d["cases"][0]["trials"][0])), "counted twice"),
    (lambda d: d["cases"][0]["trials"][0].update(cost_usd=-99.99), "cost_usd"),
    (lambda d: d["cases"][0]["trials"].append({**d["cases"][0]["trials"][0], "trial": 99, "transcript": ""}),
     "not in this shard's plan"),
    (lambda d: d["cases"][0]["trials"].pop(), "missing from a shard that says it completed"),
], ids=["flipped-grades", "forged-no-transcript", "forged-not-run", "forged-tree-changed", "duplicated-trial", "negative-cost", "unplanned-trial", "missing-trial"])
def test_a_summary_that_does_not_add_up_is_refused(copies, change, says: str) -> None:
    repo, dirs = copies
    _edit(dirs[0], change)
    assert says in _one_line_exit_2(_merge(repo, dirs))


def test_a_case_of_another_shard_is_refused(copies) -> None:
    repo, dirs = copies
    other = json.loads((dirs[1] / "summary.json").read_text())["cases"][0]
    _edit(dirs[0], lambda d: d["cases"].append(other))
    assert "not in this shard's plan" in _one_line_exit_2(_merge(repo, dirs))
