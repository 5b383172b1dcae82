"""trend: ordering, rate deltas between runs, and agent / CLI version / model drift flags."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.errors import GateInputError  # noqa: E402
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.reports.trend import drifts, load_summaries, render_trend  # noqa: E402


def _write(tmp: Path, name: str, summary) -> Path:
    run = tmp / name
    run.mkdir()
    (run / "summary.json").write_text(summary.model_dump_json())
    return run


def test_no_summaries_is_input_error():
    with pytest.raises(GateInputError, match="no summaries given"):
        load_summaries([])


def test_missing_summary_names_path(tmp_path):
    with pytest.raises(GateInputError, match="no summary.json here"):
        load_summaries([tmp_path])


def test_corrupt_summary_is_input_error(tmp_path):
    bad = tmp_path / "summary.json"
    bad.write_text('{"run_id": 3}')
    with pytest.raises(GateInputError, match="summary.json"):
        load_summaries([bad])


def test_sorted_oldest_first_regardless_of_argument_order(tmp_path):
    old = _write(tmp_path, "a", rf.passing_summary().model_copy(update={"run_id": "r-old", "started_at": "2026-01-01T00:00:00Z"}))
    new = _write(tmp_path, "b", rf.summary(run_id="r-new", started_at="2026-01-08T00:00:00Z"))
    assert [s.run_id for s in load_summaries([new, old / "summary.json"])] == ["r-old", "r-new"]


def test_version_and_model_changes_are_flagged():
    a = rf.summary(run_id="w1", started_at="2026-01-01T00:00:00Z")
    b = rf.summary(run_id="w2", started_at="2026-01-08T00:00:00Z", agent_version="1.1.0")
    c = rf.summary(run_id="w3", started_at="2026-01-15T00:00:00Z", agent_version="1.1.0", model="m-2")
    found = drifts([a, b, c])
    assert [(d.what, d.before, d.after, d.to_run) for d in found] == [
        ("agent CLI version", "1.0.0", "1.1.0", "w2"), ("model", "m-1", "m-2", "w3")]
    text = render_trend([a, b, c])
    assert "WARNING: agent CLI version changed: 1.0.0 → 1.1.0 (between w1 and w2)" in text
    assert "| w2 (changed) |" in text and "| w1 |" in text


def test_no_drift_and_rate_deltas():
    a = rf.passing_summary().model_copy(update={"run_id": "w1"})
    b = rf.summary(run_id="w2")
    text = render_trend([a, b])
    assert "No change of agent, CLI version or model" in text
    assert "75.0% [30.1%–95.4%] (-25.0 pp)" in text and "100.0% [51.0%–100.0%] (0.0 pp)" in text
    assert "| 2 × 1 |" in text and "| 2 × 2 |" in text  # cases x trials per case
    assert "CHANGED" not in text.split("A move (in brackets")[0]  # 2 cases: a 25-point move is noise


def test_cases_times_trials_counts_the_trials_the_gate_compared_not_confirmations():
    """An adaptive run's confirmation trials are in no rate: its shape said 2 x 2/3 beside rates
    over 2 trials a case."""
    run = rf.summary(run_id="w2")
    case = run.cases[0]
    confirming = case.trials[-1].model_copy(update={"trial": len(case.trials) + 1, "confirmation": True})
    run = run.model_copy(update={"cases": [case.model_copy(update={"trials": [*case.trials, confirming]}),
                                           *run.cases[1:]]})
    assert "| 2 × 2 |" in render_trend([run])


def _run(run_id: str, outcomes: dict[str, list[bool]]):
    from rubricgate.models.results import CaseSummary, Decision, Grade, RateRow, Summary, TrialResult

    def trial(cid, i, ok):
        return TrialResult(case_id=cid, trial=i, outcome="PASS",
                           grades={d: Grade(passed=ok or d != "verdict") for d in DIMENSIONS})
    cases = [CaseSummary(id=c, source="task", trials=[trial(c, i + 1, ok) for i, ok in enumerate(oks)])
             for c, oks in outcomes.items()]
    n = sum(len(v) for v in outcomes.values())
    x = sum(sum(v) for v in outcomes.values())
    rates = {"verdict": RateRow(rate=x / n, passes=x, trials=n), "tool_use": RateRow(rate=1.0, passes=n, trials=n),
             "trajectory": RateRow(rate=1.0, passes=n, trials=n)}
    return Summary(run_id=run_id, started_at=run_id, agent="builtin", decision=Decision(status="pass", exit_code=0),
                   rates=rates, cases=cases)


def test_a_move_is_flagged_only_when_the_test_says_so():
    steady = {f"c{i}": [True, True, False] for i in range(10)}
    wobble = {f"c{i}": [True, False, False] if i < 3 else [True, True, False] for i in range(10)}
    broken = {f"c{i}": [False] * 3 if i < 6 else [True, True, False] for i in range(10)}
    from rubricgate.reports.trend import moves
    noise = moves(_run("a", steady), _run("b", wobble))["verdict"]
    assert noise.delta == pytest.approx(-0.1) and not noise.changed and noise.p_value > 0.05
    real = moves(_run("a", steady), _run("b", broken))["verdict"]
    assert real.changed and real.p_value <= 0.05
    text = render_trend([_run("a", steady), _run("b", wobble), _run("c", steady), _run("d", broken)])
    assert text.count("CHANGED (p=") == 1


def test_the_delta_is_over_the_cases_both_runs_hold():
    full = {**{f"c{i}": [True, True, True] for i in range(5)}, **{f"h{i}": [False, False, True] for i in range(5)}}
    only_stable = {f"c{i}": [True, True, True] for i in range(5)}  # an --only run: pooled rate 100% vs 66.7%
    from rubricgate.reports.trend import moves
    move = moves(_run("a", full), _run("b", only_stable))["verdict"]
    assert move.delta == 0.0 and not move.changed


def test_series_control_holds_across_every_move_of_the_table():
    from rubricgate.reports.trend import series_moves
    runs = [_run(f"r{k}", {f"c{i}": [True, True, False] for i in range(10)}) for k in range(6)]
    broken = _run("r6", {f"c{i}": [False] * 3 for i in range(10)})
    steps = series_moves([*runs, broken])
    assert len(steps) == 7 and steps[0] == {}
    # Holm over 6 steps x 3 dimensions: the real break's p is multiplied across the series, not per step.
    alone = series_moves([runs[0], broken])[1]["verdict"].p_value
    assert steps[-1]["verdict"].p_value >= alone and steps[-1]["verdict"].changed


# -- the model a run used comes from the agent when rubricgate.yaml does not pin one -----------

from conftest import make_repo  # noqa: E402

from rubricgate.agents.builtin import BuiltinAgent  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402


class ModelReportingAgent(BuiltinAgent):
    """The builtin reviewer, claiming to be whatever model the CLI defaulted to this week."""

    reported = "model-a"

    def run(self, request):  # type: ignore[no-untyped-def]
        return super().run(request).model_copy(update={"model": ModelReportingAgent.reported})


def test_default_model_change_is_flagged_when_no_model_is_configured(tmp_path, monkeypatch):
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: ModelReportingAgent(cfg))
    repo = make_repo(tmp_path / "repo", commit=False)
    runs = []
    for model in ("model-a", "model-b"):
        ModelReportingAgent.reported = model
        runs.append(run_suite(RunOptions(repo=repo)).summary)
    assert [s.model for s in runs] == ["model-a", "model-b"]
    assert all(t.model == "model-b" for c in runs[1].cases for t in c.trials)
    assert [(d.what, d.before, d.after) for d in drifts(runs)] == [("model", "model-a", "model-b")]
    assert "WARNING: model changed: model-a → model-b" in render_trend(runs)


# --- which runs a trend is about ------------------------------------------------------------------


def test_a_run_of_some_of_the_cases_is_no_point_of_the_suite_trend(tmp_path):
    """`run --only` one case was a point of the suite's trend: its one case's rate read as a jump
    of the suite's (a record run's one case is left out for that reason)."""
    from rubricgate.view.catalog import Catalog
    from rubricgate.view.pages import branch_series

    repo = make_repo(tmp_path / "repo")
    whole = run_suite(RunOptions(repo=repo))
    some = run_suite(RunOptions(repo=repo, only=["data-loader"]))
    chosen = suite_runs([whole.run_dir, some.run_dir])
    assert [s.run_id for s in chosen.runs] == [whole.summary.run_id] and chosen.left_out == {"subset": 1}
    viewed = [h.run_id for hs in branch_series(Catalog.of([repo / "reports"])).values() for h in hs]
    assert viewed == [whole.summary.run_id]

from click.testing import CliRunner  # noqa: E402

from rubricgate.cli import main  # noqa: E402
from rubricgate.reports.trend import suite_runs  # noqa: E402


def _kinds(tmp: Path) -> list[Path]:
    """Two runs of the suite, and a record run, a baseline run and a shard beside them."""
    tmp.mkdir(parents=True, exist_ok=True)

    def at(run_id: str, minute: int, **extra):
        return rf.passing_summary().model_copy(update={"run_id": run_id, "started_at": f"2026-01-01T00:{minute:02d}:00Z", **extra})
    paths = [_write(tmp, "a", at("run-a", 1)), _write(tmp, "b", at("run-b", 5)),
             _write(tmp, "rec", at("rec-1", 2, kind="record")), _write(tmp, "base", at("base-1", 3, kind="baseline")),
             _write(tmp, "shard", at("shard-1", 4))]
    (tmp / "shard" / "shard.json").write_text("{}")
    return paths


def test_record_baseline_and_shard_runs_are_left_out_and_counted(tmp_path):
    chosen = suite_runs(_kinds(tmp_path))
    assert [s.run_id for s in chosen.runs] == ["run-a", "run-b"]
    assert chosen.left_out == {"baseline": 1, "record": 1, "shard": 1}
    text = render_trend(chosen.runs, left_out=chosen.left_out)
    assert "rec-1" not in text and "base-1" not in text and "shard-1" not in text
    assert "Left out 3 run(s) that are not runs of the whole suite: 1 baseline, 1 record, 1 shard" in text
    every = suite_runs(_kinds(tmp_path / "again"), all_kinds=True)
    assert [s.run_id for s in every.runs] == ["run-a", "rec-1", "base-1", "shard-1", "run-b"] and every.left_out == {}


def test_nothing_but_partial_runs_is_exit_2_saying_what_was_left_out(tmp_path):
    rec = _write(tmp_path, "rec", rf.passing_summary().model_copy(update={"run_id": "rec-1", "kind": "record"}))
    got = CliRunner().invoke(main, ["trend", str(rec)])
    assert got.exit_code == 2
    assert "no run of the whole suite among these (left out: 1 record)" in got.output and "--all-kinds" in got.output


def test_the_trend_command_and_its_chart_leave_record_runs_out(tmp_path):
    paths = _kinds(tmp_path / "runs")
    chart = tmp_path / "trend.svg"
    got = CliRunner().invoke(main, ["trend", *map(str, paths), "--chart", str(chart)])
    assert got.exit_code == 0, got.output
    assert "rec-1" not in got.output and "Left out 3 run(s)" in got.output
    assert "2 runs" in chart.read_text() and "rec-1" not in chart.read_text()
    every = CliRunner().invoke(main, ["trend", *map(str, paths), "--all-kinds"])
    assert every.exit_code == 0 and "rec-1" in every.output and "Left out" not in every.output


def test_each_branch_is_a_series_of_its_own_and_a_partial_run_is_no_rate_point():
    from rubricgate.models.results import Decision

    main = [rf.passing_summary().model_copy(update={"run_id": f"main-{i}", "started_at": f"2026-01-0{i + 1}T00:00:00Z",
                                                    "config": {"branch": "main"}}) for i in range(3)]
    pr = rf.summary(run_id="pr-1", started_at="2026-01-02T12:00:00Z", config={"branch": "rubric/tighten", "pr": 7})
    cut = main[1].model_copy(update={"complete": False, "decision": Decision(status="error", exit_code=2)})
    text = render_trend([main[0], pr, cut, main[2]])
    first, second = text.split("### Branch ")[1:3]
    assert first.startswith("main (3 run(s))") and "pr-1" not in first
    assert second.startswith("rubric/tighten (1 run(s))") and "main-" not in second
    row = next(line for line in first.splitlines() if line.startswith("| main-1"))
    assert row.count("partial: not a rate point") == 3 and "error (partial)" in row
    moved = next(line for line in first.splitlines() if line.startswith("| main-2"))
    assert "(0.0 pp)" in moved  # compared with main-0, the judged run before it


def test_the_viewers_trend_is_per_branch_with_main_first(tmp_path):
    from rubricgate.view import urls
    from rubricgate.view.site import site_for

    reports = tmp_path / "reports"
    rf.write_run_dir(reports / "r1", rf.summary(run_id="r1", config={"branch": "main"}))
    rf.write_run_dir(reports / "r2", rf.summary(run_id="r2", started_at="2026-01-02T00:00:00Z", config={"branch": "feature-x"}))
    rf.write_run_dir(reports / "r3", rf.summary(run_id="r3", started_at="2026-01-03T00:00:00Z", config={"branch": "feature-x"}))
    site = site_for([reports])
    default = site.page(urls.trend()).body.decode()
    assert '<code id="branch">main</code>' in default and 'data-run="r1"' in default and 'data-run="r2"' not in default
    assert urls.trend("feature-x").split("/", 1)[1] in default  # a link to the other branch's trend
    other = site.page(urls.trend("feature-x")).body.decode()
    assert 'data-run="r2"' in other and 'data-run="r3"' in other and 'data-run="r1"' not in other
    assert site.page("trend/nope.html").status == 404


def test_a_run_and_its_regrade_are_one_point_the_regrades(tmp_path):
    """A run and its regrade were two points of one series holding the same trials, the move
    between them a test of those trials against themselves (compare and baseline refuse the pair)."""
    def at(run_id: str, **extra):
        return rf.passing_summary().model_copy(update={"run_id": run_id, "started_at": "2026-01-01T00:01:00Z",
                                                        **extra})
    paths = [_write(tmp_path, "a", at("run-a")),
             _write(tmp_path, "r", at("run-r", counted_runs=["run-a"], config={"regraded_from": "run-a"}))]
    chosen = suite_runs(paths)
    assert [s.run_id for s in chosen.runs] == ["run-r"] and chosen.left_out == {"continued": 1}
    assert "regraded" in render_trend(chosen.runs, left_out=chosen.left_out)


def test_two_regrades_of_one_run_are_one_point_the_newer_regrades(tmp_path):
    """Regrading a run twice (its grading edited in between) left both regrades as points holding
    the same trials, the move between them marked CHANGED: a test of one run's trials against
    themselves, read as the reviewer moving."""
    from rubricgate.view import urls
    from rubricgate.view.site import site_for

    def at(run_id: str, **extra):
        return rf.passing_summary().model_copy(update={"run_id": run_id, "started_at": "2026-01-01T00:01:00Z",
                                                        **extra})
    held = {"counted_runs": ["run-a"], "config": {"regraded_from": "run-a"}}
    runs = {"a": at("run-a"), "r1": at("run-r1", **held), "r2": at("run-r2", **held)}
    chosen = suite_runs([_write(tmp_path, name, s) for name, s in runs.items()])
    assert [s.run_id for s in chosen.runs] == ["run-r2"] and chosen.left_out == {"continued": 2}
    for s in runs.values():
        rf.write_run_dir(tmp_path / "reports" / s.run_id, s)
    page = site_for([tmp_path / "reports"]).page(urls.trend()).body.decode()
    assert 'data-run="run-r2"' in page and 'data-run="run-r1"' not in page and 'data-run="run-a"' not in page


def test_of_two_regrades_started_in_one_second_the_one_that_ended_later_is_the_point(tmp_path):
    """Run ids of one second sort by their random suffix: two regrades a script ran in one second
    kept the older one's rates as the point (grading edited in between) about half the time."""
    from rubricgate.view import urls
    from rubricgate.view.site import site_for

    def at(run_id: str, ended: str, **extra):
        return rf.passing_summary().model_copy(update={"run_id": run_id, "started_at": "2026-01-01T00:01:00Z",
                                                        "finished_at": ended, **extra})
    held = {"counted_runs": ["20260101T000100Z-aaaaaa"], "config": {"regraded_from": "20260101T000100Z-aaaaaa"}}
    runs = {"a": at("20260101T000100Z-aaaaaa", "2026-01-01T00:01:00.100Z"),
            "older": at("20260101T000101Z-ffffff", "2026-01-01T00:01:01.200Z", **held),
            "newer": at("20260101T000101Z-000000", "2026-01-01T00:01:01.900Z", **held)}
    chosen = suite_runs([_write(tmp_path, name, s) for name, s in runs.items()])
    assert [s.run_id for s in chosen.runs] == ["20260101T000101Z-000000"], chosen.runs
    for s in runs.values():
        rf.write_run_dir(tmp_path / "reports" / s.run_id, s)
    page = site_for([tmp_path / "reports"]).page(urls.trend()).body.decode()
    assert 'data-run="20260101T000101Z-000000"' in page and 'data-run="20260101T000101Z-ffffff"' not in page


def test_a_run_a_later_run_continued_is_one_point_the_continuations(tmp_path):
    """The continued run and its continuation were two points, 24/24 then 48/48 holding the same
    24 trials, and the changed test between them compared those trials with themselves."""
    from rubricgate.models.results import GateDetail

    def at(run_id: str, minute: int, **extra):
        return rf.passing_summary().model_copy(update={"run_id": run_id, "started_at": f"2026-01-01T00:{minute:02d}:00Z",
                                                        **extra})
    paths = [_write(tmp_path, "a", at("run-a", 1)), _write(tmp_path, "b", at("run-b", 2)),
             _write(tmp_path, "c", at("run-c", 3, gate=GateDetail(continues=["run-b"])))]
    for all_kinds in (False, True):
        chosen = suite_runs(paths, all_kinds)
        assert [s.run_id for s in chosen.runs] == ["run-a", "run-c"] and chosen.left_out == {"continued": 1}
    text = render_trend(chosen.runs, left_out=chosen.left_out)
    assert "Left out 1 run(s) a later run continued (`run --continue`)" in text and "run-b" not in text
    alone = suite_runs(paths[:2])  # without its continuation, the run is a point of its own
    assert [s.run_id for s in alone.runs] == ["run-a", "run-b"] and alone.left_out == {}


def test_a_trend_of_run_folders_leaves_a_run_killed_before_its_summary_out_with_a_note(tmp_path):
    """`trend reports/*` exited 2 "no summary.json here" on the folder of a run killed outright
    (its events.jsonl and no summary); named alone, that folder is still the error."""
    paths = _kinds(tmp_path / "runs")
    killed = tmp_path / "runs" / "killed"
    killed.mkdir()
    (killed / "events.jsonl").write_text('{"event": "run_started"}\n')
    got = CliRunner().invoke(main, ["trend", *map(str, [*paths, killed])])
    assert got.exit_code == 0, got.output
    assert f"note: left out: {killed} (a run that ended without a summary.json, killed outright" in got.output
    assert "run-a" in got.output and "run-b" in got.output
    for alone in ([str(killed)], [str(killed), str(killed)]):  # named alone, or nothing else left
        got = CliRunner().invoke(main, ["trend", *alone])
        assert got.exit_code == 2 and "no summary.json here" in got.output, got.output


def test_a_trend_of_run_folders_leaves_a_comparison_and_a_mutation_test_out_with_a_note(tmp_path):
    """`compare --base` and `mutate` write their folders into reports/ by default: `trend reports/*`
    exited 2 "no summary.json here" on them, as `export` of the same glob did not."""
    paths = _kinds(tmp_path / "runs")
    compared, mutated = tmp_path / "runs" / "compare-x", tmp_path / "runs" / "mutate-x"
    for folder, name in ((compared, "comparison.json"), (mutated, "mutation.json")):
        folder.mkdir()
        (folder / name).write_text("{}")
    got = CliRunner().invoke(main, ["trend", *map(str, [*paths, compared, mutated])])
    assert got.exit_code == 0, got.output
    assert f"note: left out: {compared} (a comparison, not a run of the suite" in got.output
    assert f"note: left out: {mutated} (a mutation test, not a run" in got.output
    assert "run-a" in got.output and "run-b" in got.output


def test_a_trend_of_run_folders_leaves_out_a_comparison_that_kept_no_record(tmp_path):
    """A `compare --base` folder with its sides but no comparison.json (an older rubricgate kept
    none; a comparison stopped before deciding has none yet) made `trend reports/*` exit 2 "no
    summary.json here", every later trend of the folder with it."""
    import shutil

    paths = _kinds(tmp_path / "runs")
    compared = tmp_path / "runs" / "compare-old"
    for side in ("base", "head"):
        shutil.copytree(paths[0], compared / side / "r1")
    got = CliRunner().invoke(main, ["trend", *map(str, [*paths, compared])])
    assert got.exit_code == 0, got.output
    assert f"note: left out: {compared} (a comparison, not a run of the suite" in got.output
    assert "run-a" in got.output and "run-b" in got.output


def test_a_trend_of_run_folders_leaves_out_a_comparison_killed_on_its_base_side(tmp_path):
    """A `compare --base` killed outright while its base side ran leaves base/ alone (its run with
    no summary.json, no head/, no comparison.json): `trend reports/*` exited 2 on it."""
    paths = _kinds(tmp_path / "runs")
    killed = tmp_path / "runs" / "compare-killed"
    (killed / "base" / "20991231T000000Z-dead00" / "transcripts").mkdir(parents=True)
    (killed / "base" / "20991231T000000Z-dead00" / "events.jsonl").write_text("")
    got = CliRunner().invoke(main, ["trend", *map(str, [*paths, killed])])
    assert got.exit_code == 0, got.output
    assert f"note: left out: {killed} (a comparison, not a run of the suite" in got.output


def test_a_run_that_ran_every_trial_and_could_not_judge_is_not_called_partial():
    """The repository modified during a run: every trial ran (complete), the decision is error.
    Its row said "partial: not a rate point", as for an interrupted run."""
    from rubricgate.models.results import Decision

    runs = [rf.passing_summary().model_copy(update={"run_id": f"r-{i}", "started_at": f"2026-01-0{i + 1}T00:00:00Z"})
            for i in range(2)]
    unjudged = runs[1].model_copy(update={"decision": Decision(status="error", exit_code=2)})
    row = next(line for line in render_trend([runs[0], unjudged]).splitlines() if line.startswith("| r-1"))
    assert "could not judge: not a rate point" in row and "partial" not in row, row
