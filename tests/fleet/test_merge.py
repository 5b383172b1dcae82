"""merge RUN_DIR...: shards that belong together become the run one machine would have produced."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import make_repo, set_severity
from tests.suite.test_trees import crlf_checkout

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "block/marketing-spend-sync",
            "pass/ab-test-readout", "warn/churn-cohort-query"]
TASKS = ["block-missing-description", "overlay-missing-name"]


def _newest(repo: Path) -> Path:
    return max((repo / "reports").iterdir(), key=lambda p: p.stat().st_mtime_ns)


def _run(repo: Path, *args: str):
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--trials", "2", *args])
    return result, _newest(repo)


def _shards(repo: Path, n: int = 3) -> list[Path]:
    dirs = []
    for k in range(1, n + 1):
        result, run_dir = _run(repo, "--shard", f"{k}/{n}")
        assert result.exit_code == 0, result.output
        dirs.append(run_dir)
    return dirs


def _merge(repo: Path, dirs: list[Path]):
    return CliRunner().invoke(main, ["merge", "--repo", str(repo), *map(str, dirs)])


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", fixtures=FIXTURES, tasks=TASKS)


def test_a_missing_shard_exits_2_naming_it(suite):
    dirs = _shards(suite)
    result = _merge(suite, [dirs[0], dirs[2]])
    assert result.exit_code == 2
    assert "shard(s) 2/3 missing" in result.output and len(result.output.strip().splitlines()) == 1


def test_a_shard_given_twice_exits_2(suite):
    dirs = _shards(suite)
    copy = dirs[1].parent / "copy-of-shard-2"
    shutil.copytree(dirs[1], copy)
    result = _merge(suite, [*dirs, copy])
    assert result.exit_code == 2 and "shard 2/3 is also" in result.output


def test_a_folder_that_is_not_a_shard_exits_2(suite):
    _, single = _run(suite)
    result = _merge(suite, [single])
    assert result.exit_code == 2 and "not a shard run (no shard.json)" in result.output


def test_shards_of_different_rubrics_do_not_merge(suite):
    first = _shards(suite, 2)[0]
    set_severity(suite, "fm-description-required", "warning")
    second = _shards(suite, 2)[1]
    result = _merge(suite, [first, second])
    assert result.exit_code == 2 and "reviewer: differs from" in result.output


def test_shards_merged_in_a_crlf_checkout_of_their_commit_name_core_autocrlf(suite):
    # A merge job on a runner with core.autocrlf=true (Git for Windows' default) read the
    # reviewer as another (its digest is of the bytes) and said only "differs".
    dirs = _shards(suite, 2)
    crlf_checkout(suite)  # reports/ is ignored: the shards stay
    result = _merge(suite, dirs)
    assert result.exit_code == 2 and "differs from this repository's" in result.output, result.output
    assert "core.autocrlf=true in this checkout" in result.output and len(result.output.splitlines()) == 1


def test_shards_of_another_shard_count_do_not_merge(suite):
    two, three = _shards(suite, 2), _shards(suite, 3)
    result = _merge(suite, [two[0], three[1], three[2]])
    assert result.exit_code == 2 and "count: differs from" in result.output


def test_a_baseline_changed_after_the_shards_ran_is_refused(suite):
    dirs = _shards(suite)
    stored = json.loads((suite / "baseline.json").read_text())
    stored["rates"]["verdict"] = 0.5
    (suite / "baseline.json").write_text(json.dumps(stored))
    result = _merge(suite, dirs)
    assert result.exit_code == 2 and "baseline_digest: differs from this repository's" in result.output


def test_shards_an_older_rubricgate_ran_are_refused_for_that_not_for_an_edited_case(suite):
    # An older rubricgate recorded no case digest: the merge said the case "differs from this
    # repository's" and sent the user to a checkout of the commit the shards ran, which differs too.
    dirs = _shards(suite)
    path = dirs[0] / "summary.json"
    data = json.loads(path.read_text())
    for case in data["cases"]:
        case.pop("digest", None)
    path.write_text(json.dumps(data))
    result = _merge(suite, dirs)
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert f"case {data['cases'][0]['id']} has no case digest: an older rubricgate ran the shard" in result.output
    assert "differs from this repository's" not in result.output and "run the shards again" in result.output


def test_a_tampered_shard_that_ran_another_shards_case_is_refused(suite):
    dirs = _shards(suite)
    path = dirs[0] / "shard.json"
    record = json.loads(path.read_text())
    other = json.loads((dirs[1] / "shard.json").read_text())["jobs"][0]
    record["jobs"].append(other)
    path.write_text(json.dumps(record))
    result = _merge(suite, dirs)
    assert result.exit_code == 2 and f"case {other[0]} was also run by" in result.output


def test_a_shard_trial_marked_a_confirmation_is_refused(suite):
    """A shard runs a fixed design: a trial marked a confirmation by hand was merged and then left
    out of every rate (and of a baseline updated from the merged run), a failing one hidden so."""
    dirs = _shards(suite)
    path = dirs[0] / "summary.json"
    summary = json.loads(path.read_text())
    summary["cases"][0]["trials"][0]["confirmation"] = True
    path.write_text(json.dumps(summary))
    result = _merge(suite, dirs)
    assert result.exit_code == 2 and "is marked a confirmation trial, which a shard never runs" in result.output


def _comparable(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in ("run_id", "started_at", "finished_at"):
        summary.pop(key)
    for case in summary["cases"]:
        for trial in case["trials"]:
            trial.pop("duration_s")
    return summary


def _failure_lines(output: str) -> list[str]:
    """The terminal summary's failures block (progress lines on stderr are left out)."""
    return [line for line in output.splitlines() if line.startswith("  ") and "wrong_tier" in line]


def test_three_shards_merged_equal_one_run(suite):
    set_severity(suite, "fm-description-required", "warning")  # a regression: failures to compare
    single_result, single = _run(suite)
    assert single_result.exit_code == 1, single_result.output
    dirs = _shards(suite)
    merged_result = _merge(suite, dirs)
    assert merged_result.exit_code == 1, merged_result.output
    merged = _newest(suite)
    one, joined = _comparable(single), _comparable(merged)
    assert sorted(joined.pop("counted_runs")) == sorted(d.name for d in dirs) and one.pop("counted_runs") == []
    assert joined["decision"]["status"] == "regression"
    assert joined["rates"] == one["rates"] and joined["decision"] == one["decision"]
    assert [c["id"] for c in joined["cases"]] == [c["id"] for c in one["cases"]]
    assert joined == one  # everything else too: tags, intervals, pass@k, cost, failures' reasons
    failures = _failure_lines(single_result.output)
    assert len(failures) == 2 and failures == _failure_lines(merged_result.output)
    events = [json.loads(line) for line in (merged / "events.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "run_started" and events[-1]["event"] == "run_completed"
    assert sum(e["event"] == "trial_result" for e in events) == sum(len(c["trials"]) for c in one["cases"])
    assert sorted(p.name for p in (merged / "transcripts").iterdir()) == sorted(p.name for p in (single / "transcripts").iterdir())
    assert sorted(p.name for p in merged.iterdir()) == sorted(p.name for p in single.iterdir())


def test_shards_of_selected_cases_run_and_merge_beside_a_left_out_case_held_as_an_lfs_pointer(suite):
    # A run reads only its selected cases' files for LFS pointers: each shard's record and the
    # merge read the same selection (they read every case: each shard ran its trials, then
    # exited 2 without its shard.json, so nothing could merge).
    (suite / "fixtures/block/data-loader/SKILL.md").write_bytes(
        b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"1" * 64 + b"\nsize 12\n")
    dirs = []
    for k in (1, 2):
        result, run_dir = _run(suite, "--only", "weekly", "--only", "marketing", "--shard", f"{k}/2")
        assert result.exit_code == 0 and (run_dir / "shard.json").is_file(), result.output
        dirs.append(run_dir)
    merged = _merge(suite, dirs)
    assert merged.exit_code == 0, merged.output
    assert {c["id"] for c in json.loads((_newest(suite) / "summary.json").read_text())["cases"]} == {
        "fixture-weekly-revenue-summary", "fixture-marketing-spend-sync"}


def test_shards_that_could_not_judge_merge_into_a_run_that_cannot_either(suite):
    """--max-cost 0 refuses every trial: each shard exits 2, and so does the merge, as one run would."""
    single_result, single = _run(suite, "--max-cost", "0")
    assert single_result.exit_code == 2
    dirs = []
    for k in (1, 2):
        result, run_dir = _run(suite, "--max-cost", "0", "--shard", f"{k}/2")
        assert result.exit_code == 2, result.output
        dirs.append(run_dir)
    merged_result = _merge(suite, dirs)
    assert merged_result.exit_code == 2, merged_result.output
    one, joined = _comparable(single), _comparable(_newest(suite))
    assert joined["decision"] == one["decision"] and joined["cost"] == one["cost"] and joined["complete"] is False


def test_shards_run_with_other_options_do_not_merge(suite):
    first = _shards(suite, 2)[0]
    result, second = _run(suite, "--only", "fixture", "--shard", "2/2")
    assert result.exit_code == 0, result.output
    merged = _merge(suite, [first, second])
    assert merged.exit_code == 2 and "plan: differs from" in merged.output


def test_one_copy_only_shard_makes_the_merged_run_copy_only(suite):
    dirs = _shards(suite, 2)
    path = dirs[1] / "summary.json"
    summary = json.loads(path.read_text())
    summary.update(isolation="copy-only", isolation_reason="bubblewrap missing on that runner")
    path.write_text(json.dumps(summary))
    result = _merge(suite, dirs)
    merged = json.loads((_newest(suite) / "summary.json").read_text())
    assert result.exit_code == 0, result.output
    assert merged["isolation"] == "copy-only"
    assert any("copy-only isolation" in w for w in merged["decision"]["warnings"])


def test_a_run_its_shards_and_the_merged_run_each_write_their_viewer_index(suite, monkeypatch):
    from rubricgate.view.catalog import Catalog

    result, single = _run(suite)
    assert result.exit_code == 0, result.output
    dirs = _shards(suite, 2)
    assert _merge(suite, dirs).exit_code == 0
    merged = _newest(suite)
    kinds = {p.name: json.loads((p / "view-index.json").read_text())["kind"] for p in [single, *dirs, merged]}
    assert kinds == {single.name: "run", dirs[0].name: "shard", dirs[1].name: "shard", merged.name: "merged"}
    monkeypatch.setattr(Catalog, "summary", lambda self, ref: pytest.fail("the viewer parsed a summary"))
    cat = Catalog.of([suite / "reports"])
    assert {h.run_id: h.kind for h in cat.heads()} == kinds
    assert all(cat.cases(cat.ref(name)) for name in kinds)


def test_a_shard_json_whose_count_is_past_its_bound_is_refused_at_once(suite):
    dirs = _shards(suite, 2)
    for d in dirs:  # past the bound in every shard, so they agree (10**12 made merge list 10**12 shards)
        record = json.loads((d / "shard.json").read_text())
        (d / "shard.json").write_text(json.dumps({**record, "count": 200_000}))
    result = _merge(suite, dirs)
    assert result.exit_code == 2 and "shard.json: count" in result.output and "missing" not in result.output


def test_a_merge_in_progress_shows_in_the_viewer_as_going_not_stopped(suite, monkeypatch):
    """The viewer reads a run's events file that no process holds as a run killed before its
    summary: the merge wrote its log unlocked, so one it was still writing showed as stopped."""
    from rubricgate.fleet import merge
    from rubricgate.view.catalog import Catalog

    dirs = _shards(suite, 2)
    seen = []
    real = merge.finish_run_reports

    def looking_while_it_writes(summary, run_dir, **kw):
        live, stopped = Catalog.of([suite / "reports"]).unsummarised()  # before its reports and summary
        seen.append(([r.key for r in live], [r.key for r in stopped], run_dir.name))
        return real(summary, run_dir, **kw)

    monkeypatch.setattr(merge, "finish_run_reports", looking_while_it_writes)
    assert _merge(suite, dirs).exit_code == 0
    [(live, stopped, name)] = seen
    assert live == [name] and stopped == []
    assert Catalog.of([suite / "reports"]).unsummarised() == ([], [])


def test_shards_of_other_setups_merge_into_a_run_no_baseline_of_one_setup_pools(suite):
    """A shard run with an endpoint variable pointed at another model made the merged run's setup
    unrecorded (""): `baseline update --from` pooled its trials with a baseline of any setup, and
    the pooled baseline kept no setup, so every later run of any endpoint pooled with it too."""
    measured = CliRunner().invoke(main, ["baseline", "update", "--repo", str(suite)])
    assert measured.exit_code == 0, measured.output
    dirs = _shards(suite, 2)
    path = dirs[1] / "summary.json"
    summary = json.loads(path.read_text())
    summary["reviewer"]["setup"] = "0123456789abcdef"  # run with its endpoint variable at another model
    path.write_text(json.dumps(summary))
    assert _merge(suite, dirs).exit_code == 0
    merged = _newest(suite)
    setup = json.loads((merged / "summary.json").read_text())["reviewer"]["setup"]
    before = json.loads((suite / "baseline.json").read_text())["measured_with"]["setup"]
    assert setup and setup not in (before, "0123456789abcdef")
    pooled = CliRunner().invoke(main, ["baseline", "update", "--repo", str(suite), "--from", str(merged)])
    assert pooled.exit_code == 0 and "trials pooled" not in pooled.output, pooled.output
    assert json.loads((suite / "baseline.json").read_text())["measured_with"]["setup"] == setup
