"""`rubricgate mutate` from the command line: the score, the survivors with their skeletons,
--min-score, and --cache replaying every trial of an unchanged mutant the second time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli.app import main

RULE = "body-present"  # three mutants, one of which survives on the small suite


def mutate(repo: Path, out: Path, *args: str):
    return CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--out", str(out), "--only-rules", RULE, *args])


@pytest.mark.long
def test_a_score_below_min_score_exits_1_with_the_report_still_shown(repo, tmp_path):
    result = mutate(repo, tmp_path / "out", "--min-score", "1")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("mutation score ") and (tmp_path / "out/mutation.json").is_file()


def test_the_terminal_shows_the_score_each_survivor_and_its_skeleton(repo, tmp_path):
    out = tmp_path / "out"
    result = mutate(repo, out)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "mutation.json").read_text())
    ran = [m for m in report["mutants"] if m["status"] not in ("error", "not_run")]
    lines = result.stdout.splitlines()  # the report; progress lines go to stderr
    assert lines[0].startswith(f"mutation score {report['score']:.1%} ({report['killed']}/{len(ran)} mutants caught)")
    survivor = next(m for m in report["mutants"] if m["status"] == "survived")
    at = lines.index(f"  survived {survivor['id']}: {survivor['description']} - {survivor['explanation']}")
    assert lines[at + 1] == f"           skeleton: {survivor['skeleton']}/"
    skeleton = Path(survivor["skeleton"])
    assert skeleton.is_relative_to(out / "skeletons") and (skeleton / "SKILL.md").is_file()
    assert RULE in (skeleton / "expect.yaml").read_text()
    assert lines[-1] == f"report: {out / 'mutation.json'}" and "replayed from the trial cache" not in result.output
    progress = result.stderr.splitlines()
    assert progress[0].startswith("mutate: control: started") and any(" mutants done" in p for p in progress)


@pytest.mark.long
def test_cache_replays_every_trial_of_an_unchanged_mutant_the_second_time(repo, tmp_path):
    cache = tmp_path / "cache"
    first = mutate(repo, tmp_path / "one", "--cache", "--cache-dir", str(cache))
    assert first.exit_code == 0, first.output
    entries = sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file())
    assert entries and "replayed from the trial cache" not in first.output
    second = mutate(repo, tmp_path / "two", "--cache", "--cache-dir", str(cache))
    assert second.exit_code == 0, second.output
    one, two = (json.loads((tmp_path / d / "mutation.json").read_text())["mutants"] for d in ("one", "two"))
    assert [(m["id"], m["status"]) for m in one] == [(m["id"], m["status"]) for m in two]
    ran = [m for m in two if m["trials"]]
    assert ran and all(m["cached_trials"] == 0 for m in one)
    assert all(m["cached_trials"] == m["trials"] for m in ran)
    total = sum(m["trials"] for m in ran)
    assert f"{total} of {total} mutant trials replayed from the trial cache" in second.output
    assert sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file()) == entries  # nothing new stored


@pytest.mark.long
def test_shards_split_the_mutants_between_them_and_together_cover_every_one(repo, tmp_path):
    whole = mutate(repo, tmp_path / "all")
    assert whole.exit_code == 0, whole.output
    every = [m["id"] for m in json.loads((tmp_path / "all/mutation.json").read_text())["mutants"]]
    parts = []
    for k in (1, 2):
        result = mutate(repo, tmp_path / f"part{k}", "--shard", f"{k}/2")
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / f"part{k}/mutation.json").read_text())
        assert report["shard"] == f"{k}/2"
        parts.append([m["id"] for m in report["mutants"]])
    assert parts[0] and parts[1] and sorted(parts[0] + parts[1]) == sorted(every)
