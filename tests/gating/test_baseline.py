"""baseline update: raise freely, lower only with a reason that is kept."""

import json

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.models.dimensions import DIMENSIONS
from tests.conftest import set_severity


def update(repo, *args):
    return CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), *args])


def rates(repo):
    return json.loads((repo / "baseline.json").read_text())


def test_lowering_without_reason_is_refused(repo):
    set_severity(repo, "fm-description-required", "warning")
    before = (repo / "baseline.json").read_text()
    result = update(repo)
    assert result.exit_code == 2 and "needs a reason" in result.output and "--reason" in result.output
    assert (repo / "baseline.json").read_text() == before


def test_lowering_with_reason_is_kept_in_history(repo):
    set_severity(repo, "fm-description-required", "warning")
    result = update(repo, "--reason", "descriptions are optional for internal skills")
    assert result.exit_code == 0, result.output
    data = rates(repo)
    assert data["rates"]["verdict"] == 0.5
    assert data["history"][-1]["reason"] == "descriptions are optional for internal skills"


def test_raising_needs_no_reason(repo):
    (repo / "baseline.json").write_text(json.dumps({"format_version": 1, "rates": {"verdict": 0.5, "tool_use": 0.5, "trajectory": 0.5}, "trials": 1, "history": []}))
    result = update(repo)
    assert result.exit_code == 0 and rates(repo)["rates"]["verdict"] == 1.0
    assert "raised" in rates(repo)["history"][-1]["reason"]


def test_a_dimension_measured_for_the_first_time_is_said_so_not_raised(repo):
    # A baseline that never measured tool_use: its first measurement raises nothing, whatever its
    # rate (at 0% the history said "raised: the suite passes at the higher rate").
    assert update(repo).exit_code == 0
    data = rates(repo)
    del data["rates"]["tool_use"]
    for dims in data["cases"].values():
        del dims["tool_use"]
    for change in data["history"]:
        del change["rates"]["tool_use"]
    data["measured_with"]["reviewer_digest"] = "another reviewer"  # not pooled: the reason is the automatic one
    (repo / "baseline.json").write_text(json.dumps(data))
    result = update(repo)
    assert result.exit_code == 0, result.output
    assert rates(repo)["history"][-1]["reason"] == "tool_use measured for the first time"


def test_a_remeasurement_at_the_same_rates_is_not_recorded_as_raised(repo):
    # README: without a reason the history says what happened; a new reviewer measured at the
    # rates the baseline had was recorded as "raised: the suite passes at the higher rate".
    assert update(repo).exit_code == 0
    data = rates(repo)
    data["measured_with"]["reviewer_digest"] = "another reviewer"  # not pooled: the reason is the automatic one
    (repo / "baseline.json").write_text(json.dumps(data))
    result = update(repo)
    assert result.exit_code == 0, result.output
    assert rates(repo)["rates"] == data["rates"]
    assert rates(repo)["history"][-1]["reason"] == "re-measured: no rate changed"


def test_update_from_a_stored_run(repo):
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0
    run_dir = next((repo / "reports").iterdir())
    result = update(repo, "--from", str(run_dir))
    assert result.exit_code == 0 and rates(repo)["history"][-1]["run_id"] == run_dir.name


def test_missing_run_dir_is_one_line_error(repo, tmp_path):
    result = update(repo, "--from", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "no summary.json here" in result.output


def test_schema_commands_print_json_schema():
    for which, key in (("task", "expect"), ("baseline", "rates"), ("config", "agent"), ("expect", "absent_rules")):
        result = CliRunner().invoke(main, ["schema", which])
        assert result.exit_code == 0 and key in json.loads(result.output)["properties"]


@pytest.mark.parametrize("rates, needle", [
    ({"verdict": True, "tool_use": 1.0, "trajectory": 1.0}, "rates.verdict"),
    ({"verdict": "1.0", "tool_use": 1.0, "trajectory": 1.0}, "rates.verdict"),
    ({"verdict": 1.0, "tool_use": 1.0, "trajectory": 1.0, "verdikt": 0.5}, "unknown dimension 'verdikt' (did you mean 'verdict'?)"),
])
def test_baseline_values_are_numbers_for_known_dimensions(tmp_path, rates, needle) -> None:
    import json as _json

    from rubricgate.errors import GateInputError
    from rubricgate.suite.baseline_file import load_baseline

    path = tmp_path / "baseline.json"
    path.write_text(_json.dumps({"format_version": 1, "rates": rates, "trials": 1, "history": []}))
    with pytest.raises(GateInputError) as err:
        load_baseline(path, "baseline.json")
    assert needle in str(err.value)


def test_a_case_naming_an_unregistered_dimension_is_refused_and_a_missing_one_is_not(tmp_path) -> None:
    from rubricgate.errors import GateInputError
    from rubricgate.suite.baseline_file import load_baseline

    one = {"passes": 1, "trials": 1}
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"format_version": 2, "rates": {"verdict": 1.0}, "cases": {"a": {"verdict": one}}}))
    assert set(load_baseline(path, "baseline.json").cases["a"]) == {"verdict"}  # a grader added since: not an error
    path.write_text(json.dumps({"format_version": 2, "rates": {"verdict": 1.0},
                                "cases": {"a": {"verdict": one, "tool_uze": one}}}))
    with pytest.raises(GateInputError) as err:
        load_baseline(path, "baseline.json")
    assert "cases.*.tool_uze: unknown dimension 'tool_uze' (did you mean 'tool_use'?)" in str(err.value)


# -- format 2: per-case counts, merging, migration --------------------------------------------

def test_update_writes_format_2_with_per_case_counts_and_what_it_was_measured_with(repo):
    result = update(repo)
    assert result.exit_code == 0, result.output
    data = rates(repo)
    assert data["format_version"] == 4
    assert data["cases"] and all(set(dims) == set(DIMENSIONS) for dims in data["cases"].values())
    some = next(iter(data["cases"].values()))["verdict"]
    assert some == {"passes": 1, "trials": 1}
    measured = data["measured_with"]
    assert measured["agent"] == "builtin" and len(measured["reviewer_digest"]) == 64


def _format_1(repo) -> None:
    (repo / "baseline.json").write_text(json.dumps({"format_version": 1, "history": [], "trials": 1,
                                                    "rates": dict.fromkeys(DIMENSIONS, 1.0)}))


def test_a_format_1_baseline_is_exit_2_with_the_command_that_re_measures_it(repo):
    _format_1(repo)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2
    line = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "baseline.json: format_version: format 1" in line[0]
    assert "rubricgate baseline update --reason" in line[0]


def test_the_re_measure_command_migrates_a_format_1_baseline(repo):
    _format_1(repo)
    result = update(repo, "--reason", "re-measured per case")
    assert result.exit_code == 0, result.output
    data = rates(repo)
    assert data["format_version"] >= 2 and "re-measured per case" in data["history"][-1]["reason"]
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0


def test_update_from_an_only_run_merges_its_cases_and_keeps_the_others(repo):
    assert update(repo).exit_code == 0
    before = rates(repo)["cases"]
    one = sorted(before)[0]
    earlier = set((repo / "reports").iterdir())
    assert CliRunner().invoke(main, ["run", "--repo", str(repo), "--only", one, "--trials", "3"]).exit_code == 0
    (run_dir,) = set((repo / "reports").iterdir()) - earlier
    assert update(repo, "--from", str(run_dir)).exit_code == 2  # partial: refused unless asked for
    result = update(repo, "--from", str(run_dir), "--allow-partial")
    assert result.exit_code == 0, result.output
    after = rates(repo)
    # same setup: 1/1 + 3/3 pooled, each measurement a session of its own
    assert after["cases"][one]["verdict"] == {"passes": 4, "trials": 4, "sessions": [[1, 1], [3, 3]]}
    assert {c: v for c, v in after["cases"].items() if c != one} == {c: v for c, v in before.items() if c != one}
    assert after["history"][-1]["cases"] == [one]


def test_a_lower_case_rate_needs_a_reason_and_names_the_case(repo):
    assert update(repo).exit_code == 0
    set_severity(repo, "fm-description-required", "warning")  # one block fixture now fails
    result = update(repo)
    assert result.exit_code == 2 and "needs a reason" in result.output and "verdict 1/1 -> 0/1" in result.output


def test_cases_no_longer_in_the_suite_are_dropped(repo):
    assert update(repo).exit_code == 0
    data = rates(repo)
    data["cases"]["fixture-gone"] = data["cases"][sorted(data["cases"])[0]]
    (repo / "baseline.json").write_text(json.dumps(data))
    assert update(repo).exit_code == 0
    assert "fixture-gone" not in rates(repo)["cases"]


def test_malformed_format_2_is_a_one_line_error(repo):
    assert update(repo).exit_code == 0
    data = rates(repo)
    case = sorted(data["cases"])[0]
    data["cases"][case]["verdict"] = {"passes": 4, "trials": 3}
    (repo / "baseline.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2 and "baseline.json" in result.output and "Traceback" not in result.output


def test_re_measuring_the_same_setup_pools_trials_and_a_changed_reviewer_replaces_them(repo):
    assert update(repo).exit_code == 0
    result = update(repo)
    assert result.exit_code == 0 and "trials pooled" in result.output
    data = rates(repo)
    assert {v["verdict"]["trials"] for v in data["cases"].values()} == {2}
    assert data["history"][-1]["reason"].startswith("re-measured with the same reviewer")
    set_severity(repo, "fm-description-required", "warning")  # a different reviewer: counts replaced
    assert update(repo, "--reason", "descriptions optional").exit_code == 0
    assert {v["verdict"]["trials"] for v in rates(repo)["cases"].values()} == {1}


def test_re_measuring_through_another_endpoint_replaces_the_trials_never_pools_them(repo, monkeypatch):
    """An endpoint variable pointed at another model is another design for `run --continue`, but
    `baseline update` pooled its trials with the old model's as "the same reviewer, agent, CLI
    version and model"."""
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config.setdefault("agent", {})["env_allowlist"] = ["PATH", "REVIEW_ENDPOINT"]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("REVIEW_ENDPOINT", "https://models.example/strong")
    assert update(repo).exit_code == 0
    monkeypatch.setenv("REVIEW_ENDPOINT", "https://models.example/cheap")
    result = update(repo)
    assert result.exit_code == 0 and "trials pooled" not in result.output, result.output
    assert {v["verdict"]["trials"] for v in rates(repo)["cases"].values()} == {1}
    assert update(repo).exit_code == 0  # the same endpoint again: pooled
    assert {v["verdict"]["trials"] for v in rates(repo)["cases"].values()} == {2}


# -- format 3: the reviewer and the rules its reviewer cited -----------------------------------

def test_update_writes_format_3_with_rule_table_threshold_and_citations(repo):
    assert update(repo).exit_code == 0
    data = rates(repo)
    assert data["format_version"] == 4 and data["tier_threshold"] == 3
    assert data["rubric_rules"]["secret-in-file"] == {"severity": "critical", "kind": "mechanical"}
    assert "reviewer/evaluator/references/rubric.md" in data["reviewer_digests"]
    assert data["cited"]["fixture-data-loader"] == ["fm-description-required"]
    assert data["cited"]["fixture-weekly-revenue-summary"] == []


def test_a_format_2_baseline_still_loads_and_gates(repo):
    assert update(repo).exit_code == 0
    data = rates(repo)
    for key in ("reviewer_digests", "rubric_rules", "tier_threshold", "cited"):
        data.pop(key)
    data["format_version"] = 2
    (repo / "baseline.json").write_text(json.dumps(data))
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0


def test_the_same_run_given_again_is_refused_not_pooled_twice(repo):
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0
    run_dir = next((repo / "reports").iterdir())
    assert update(repo, "--from", str(run_dir)).exit_code == 0
    counted = (repo / "baseline.json").read_text()
    again = update(repo, "--from", str(run_dir))
    assert again.exit_code == 2 and "already counted in baseline.json" in again.output, again.output
    assert (repo / "baseline.json").read_text() == counted


def test_pooling_a_run_that_lowers_a_rate_needs_a_reason_too(repo):
    """README: lowering needs a reason. Pooling (`--from` a run of the same reviewer) lowers a
    rate when the run's trials failed more often; it was accepted silently."""
    assert update(repo).exit_code == 0
    clean = (repo / "fixtures/pass/weekly-revenue-summary/SKILL.md").read_text()
    (repo / "fixtures/block/data-loader/SKILL.md").write_text(clean)  # the suite, not the reviewer: same setup
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 1
    run_dir = max(p for p in (repo / "reports").iterdir() if not p.name.endswith("-baseline"))  # the run, not the update's
    refused = update(repo, "--from", str(run_dir))
    assert refused.exit_code == 2, refused.output
    # An edited case's counts are replaced, not pooled (tests/gating/test_case_edits.py); its lower
    # rate needs a reason all the same.
    assert "pooling this run lowers fixture-data-loader verdict 1/1 -> 0/1 (edited since) and needs a reason" \
        in refused.output
    kept = update(repo, "--from", str(run_dir), "--reason", "the loader fixture was simplified on purpose")
    assert kept.exit_code == 0, kept.output
    last = rates(repo)["history"][-1]["reason"]
    assert last.startswith("re-measured with the same reviewer") and "simplified on purpose" in last


def test_a_statistical_baseline_is_measured_in_sessions_with_what_a_collapse_needs(repo):
    """Two separate runs by default (so within-run dependence can be checked), at least 10
    trials a case in all; --sessions and --trials choose otherwise."""
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    (repo / "baseline.json").unlink()
    assert update(repo).exit_code == 0
    data = rates(repo)
    counts = [dims["verdict"] for dims in data["cases"].values()]
    assert all(c["trials"] == 10 and c["sessions"] == [[5, 5], [5, 5]] for c in counts), counts
    assert "+" in data["history"][-1]["run_id"]  # both sessions' runs are recorded
    assert update(repo, "--sessions", "3", "--trials", "3", "--reason", "more sessions").exit_code == 0
    again = rates(repo)["cases"]
    assert all(len(dims["verdict"]["sessions"]) == 5 for dims in again.values())  # the same setup: pooled


def _runs(repo) -> set:
    reports = repo / "reports"
    return {p for p in reports.iterdir() if p.is_dir()} if reports.is_dir() else set()


def test_a_shard_then_the_run_merged_from_it_counts_the_shards_trials_once(repo):
    """`--from shard1 --allow-partial`, then `--from merged`: one trial became two sessions (3/3 -> 5/5)."""
    shards = []
    for k in (1, 2):
        before = _runs(repo)
        assert CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", f"{k}/2"]).exit_code == 0
        shards += list(_runs(repo) - before)
    before = _runs(repo)
    assert CliRunner().invoke(main, ["merge", "--repo", str(repo), *map(str, shards)]).exit_code == 0
    (merged,) = _runs(repo) - before
    assert update(repo, "--from", str(shards[0]), "--allow-partial").exit_code == 0
    counted = (repo / "baseline.json").read_text()
    again = update(repo, "--from", str(merged))
    assert again.exit_code == 2 and f"--from: {shards[0].name}: this run's trials are already counted" in again.output
    assert (repo / "baseline.json").read_text() == counted


def test_one_session_of_a_measurement_given_again_is_refused(repo):
    assert update(repo, "--sessions", "2").exit_code == 0
    first = sorted(p for p in _runs(repo) if p.name.endswith("-baseline"))[0]
    again = update(repo, "--from", str(first))
    assert again.exit_code == 2 and "already counted in baseline.json" in again.output, again.output


def test_a_run_and_the_run_that_continued_it_given_together_count_its_trials_once(repo):
    a, b = _run_and_continuation(repo)
    got = update(repo, "--from", str(a), "--from", str(b), "--allow-partial")
    assert got.exit_code == 2 and "this run's trials are in two of the runs given" in got.output, got.output


def test_a_runs_confirmation_trials_are_not_counted_in_the_baseline_it_updates(tmp_path) -> None:
    """Confirmation trials run only for a case that failed, and stop at its first pass: pooled
    with `--from`, they lowered that case's baseline (fixture-ok3 verdict 10/10 -> 20/23, 3 of them
    re-tries)."""
    from rubricgate.gating.baseline import summary_counts
    from rubricgate.pipeline import RunOptions, run_suite
    from tests.conftest import confirming_repo

    summary = run_suite(RunOptions(repo=confirming_repo(tmp_path / "repo"))).summary
    case = next(c for c in summary.cases if c.id == "fixture-data-loader")
    assert any(t.confirmation for t in case.trials)
    design = [t for t in case.trials if not t.confirmation]
    assert summary_counts(summary)["fixture-data-loader"]["verdict"].trials == len(design)


def test_a_continued_run_given_to_baseline_update_is_the_sessions_it_ran_in(repo):
    """A continuation holds the trials of the run it took up: read as one session, the two runs'
    trials of a case summed into one, and the dependence check (gating/dependence.py), which
    compares sessions, found half the intra-run correlation of a reviewer that repeats answers."""
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    run = ["run", "--repo", str(repo)]
    assert CliRunner().invoke(main, run).exit_code == 2  # too few baseline trials to PASS: INCONCLUSIVE
    old = next((repo / "reports").iterdir())
    continued = CliRunner().invoke(main, [*run, "--continue", str(old)])
    new = next(p for p in (repo / "reports").iterdir() if p.is_dir() and p != old)
    assert json.loads((new / "summary.json").read_text())["gate"]["continues"] == [old.name], continued.output
    ran = {c["id"]: sum(not t["confirmation"] for t in c["trials"])
           for c in json.loads((old / "summary.json").read_text())["cases"]}
    result = update(repo, "--from", str(new), "--reason", "measured")
    assert result.exit_code == 0, result.output
    for case, dims in rates(repo)["cases"].items():
        count = dims["verdict"]
        assert [n for _, n in count.get("sessions", [])] == [ran[case], ran[case]], (case, count)


def _as_older_rubricgate_wrote_it(run_dir) -> None:
    """A summary.json as rubricgate wrote it before `counted_runs` (gate.continues alone)."""
    path = run_dir / "summary.json"
    data = json.loads(path.read_text())
    data.pop("counted_runs", None)
    path.write_text(json.dumps(data, indent=2))


def _run_and_continuation(repo):
    """An INCONCLUSIVE statistical run and the run that continued it."""
    cfg = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    cfg["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(cfg))
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 2  # INCONCLUSIVE at this size
    first = _runs(repo)
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code in (0, 2)  # continues the first
    (a,), (b,) = first, _runs(repo) - first
    return a, b


def _continued_pair(repo):
    """An INCONCLUSIVE statistical run and the run that continued it, written as an older
    rubricgate wrote them."""
    a, b = _run_and_continuation(repo)
    assert json.loads((b / "summary.json").read_text())["gate"]["continues"] == [a.name]
    _as_older_rubricgate_wrote_it(b)
    return a, b


def test_an_older_continuation_and_the_run_it_continued_count_its_trials_once(repo):
    """Its summary named the continued run in gate.continues only: read as naming none, --from A
    --from B pooled A's trials twice (a case's baseline 1/1 + 2/2 + 4/4, B holding A's 2)."""
    a, b = _continued_pair(repo)
    got = update(repo, "--from", str(a), "--from", str(b), "--allow-partial")
    assert got.exit_code == 2 and "this run's trials are in two of the runs given" in got.output, got.output


def test_an_older_continuation_of_a_run_counted_already_is_refused(repo):
    a, b = _continued_pair(repo)
    assert update(repo, "--from", str(a), "--allow-partial").exit_code == 0
    counted = (repo / "baseline.json").read_text()
    again = update(repo, "--from", str(b), "--allow-partial")
    assert again.exit_code == 2 and f"--from: {a.name}: this run's trials are already counted" in again.output
    assert (repo / "baseline.json").read_text() == counted


def test_an_older_regrade_and_the_run_it_regraded_count_its_trials_once(repo):
    """An older regrade named its run in config.regraded_from only."""
    assert CliRunner().invoke(main, ["run", "--repo", str(repo)]).exit_code == 0
    first = _runs(repo)
    assert CliRunner().invoke(main, ["regrade", "--repo", str(repo), str(*first)]).exit_code == 0
    (a,), (b,) = first, _runs(repo) - first
    _as_older_rubricgate_wrote_it(b)
    got = update(repo, "--from", str(a), "--from", str(b))
    assert got.exit_code == 2 and "this run's trials are in two of the runs given" in got.output, got.output


def _as_measured_before_config_sections(repo) -> None:
    """baseline.json as rubricgate wrote it before it recorded rubricgate.yaml's sections beside
    the reviewer's files: the files' digests alone, and their fingerprint."""
    from rubricgate.gating.baseline import reviewer_fingerprint

    assert update(repo).exit_code == 0
    data = rates(repo)
    data["reviewer_digests"] = {k: v for k, v in data["reviewer_digests"].items() if "#" not in k}
    data["measured_with"]["reviewer_digest"] = reviewer_fingerprint(data["reviewer_digests"])
    (repo / "baseline.json").write_text(json.dumps(data, indent=2))


def test_a_baseline_measured_before_config_sections_were_recorded_is_pooled_with_the_same_reviewer(repo):
    """The first update after an upgrade read the same reviewer as changed: its counts replaced."""
    _as_measured_before_config_sections(repo)
    before = rates(repo)["cases"]["fixture-data-loader"]["verdict"]["trials"]
    result = update(repo)
    assert result.exit_code == 0 and "trials pooled" in result.output, result.output
    assert rates(repo)["cases"]["fixture-data-loader"]["verdict"]["trials"] == before + 1


def test_a_baseline_measured_before_config_sections_still_sees_a_changed_reviewer_file(repo):
    _as_measured_before_config_sections(repo)
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nOne more line.\n")
    result = update(repo)
    assert result.exit_code == 0 and "trials pooled" not in result.output, result.output
