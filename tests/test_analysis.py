"""rubricgate.analysis: the run, case and trial frames over real run folders, and `export`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from rubricgate import analysis
from rubricgate.cli import main
from rubricgate.gating.compare import summary_counts
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.records.files import read_summary
from tests.conftest import make_repo, set_severity


def _pd():
    """pandas, imported where a test reads a frame (not by every test worker while collecting)."""
    import pandas

    return pandas

BLOCK_CASE = "fixture-data-loader"


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory):
    """Two runs of the builtin reviewer, 2 trials a case: as committed, then with the critical
    rule lowered to a warning (the BLOCK fixture then gets WARN: a verdict regression)."""
    repo = make_repo(tmp_path_factory.mktemp("analysis") / "repo")
    first = run_suite(RunOptions(repo=repo, trials=2))
    set_severity(repo, "fm-description-required", "warning")
    second = run_suite(RunOptions(repo=repo, trials=2))
    assert (first.exit_code, second.exit_code) == (0, 1)
    return [first.run_dir, second.run_dir]


def test_trials_df_has_a_row_per_trial_with_its_grades(run_dirs):
    frame = analysis.trials_df(run_dirs)
    assert list(frame.columns[:len(analysis.TRIAL_COLUMNS)]) == analysis.TRIAL_COLUMNS
    summaries = [read_summary(d) for d in run_dirs]
    assert len(frame) == sum(len(c.trials) for s in summaries for c in s.cases) == 8
    assert list(frame["run_id"].unique()) == [s.run_id for s in summaries]
    block = frame[frame["case_id"] == BLOCK_CASE].set_index(["run_id", "trial"])
    after = block.loc[summaries[1].run_id]
    assert list(after["verdict_passed"]) == [False, False] and set(after["verdict_category"]) == {"wrong_tier"}
    assert list(after["reported_tier"]) == ["WARN", "WARN"] and set(after["expected_tier"]) == {"BLOCK"}
    assert block.loc[summaries[0].run_id]["verdict_passed"].all()
    assert frame["counted"].all() and (frame["steps"] > 0).all() and frame["tool_use_passed"].all()


def test_cases_df_counts_what_the_gate_counts(run_dirs):
    frame = analysis.cases_df(run_dirs)
    assert list(frame.columns[:len(analysis.CASE_COLUMNS)]) == analysis.CASE_COLUMNS
    for summary in (read_summary(d) for d in run_dirs):
        rows = frame[frame["run_id"] == summary.run_id].set_index("case_id")
        assert list(rows.index) == [c.id for c in summary.cases]
        for case_id, dims in summary_counts(summary).items():  # the gate's own per-case counts
            for dim, (passes, trials) in dims.items():
                assert (rows.loc[case_id, f"{dim}_passes"], rows.loc[case_id, f"{dim}_trials"]) == (passes, trials)
    last = frame[frame["run_id"] == read_summary(run_dirs[1]).run_id].set_index("case_id")
    assert last.loc[BLOCK_CASE, "verdict_rate"] == 0.0 and last.loc[BLOCK_CASE, "all_passed"] == 0
    assert analysis.case_counts(read_summary(run_dirs[1])) == summary_counts(read_summary(run_dirs[1]))


def test_cases_df_leaves_errored_trials_out_of_the_counts(run_dirs):
    summary = read_summary(run_dirs[0])
    case = summary.cases[0]
    broken = case.trials[0].model_copy(update={"errored": True, "outcome": "ERROR"})
    summary = summary.model_copy(update={"cases": [case.model_copy(update={"trials": [broken, case.trials[1]]})]})
    row = analysis.cases_df(summary).iloc[0]
    assert (row["trials"], row["counted_trials"], row["verdict_trials"]) == (2, 1, 1)
    assert analysis.trials_df(summary)["counted"].tolist() == [False, True]


def test_runs_df_has_a_row_per_run_with_rates_and_decision(run_dirs):
    frame = analysis.runs_df(run_dirs + [run_dirs[1] / "summary.json"])
    assert list(frame.columns[:len(analysis.RUN_COLUMNS)]) == analysis.RUN_COLUMNS
    summaries = [read_summary(d) for d in run_dirs]
    assert list(frame["decision"]) == ["pass", "regression", "regression"]
    assert list(frame["exit_code"]) == [0, 1, 1]
    assert list(frame["verdict_rate"][:2]) == [s.rates["verdict"].rate for s in summaries]
    assert frame.loc[1, "verdict_status"] == "regression" and list(frame["trials"]) == [4, 4, 4]


def test_a_folder_without_a_summary_is_one_line_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["export", str(tmp_path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no summary.json here" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_writes_the_three_frames(run_dirs, tmp_path, fmt):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", *map(str, run_dirs), "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    read = {"csv": _pd().read_csv, "parquet": _pd().read_parquet,
            "jsonl": lambda p: _pd().read_json(p, orient="records", lines=True)}[fmt]
    trials = read(out / f"trials.{fmt}")
    assert len(trials) == 8 and list(trials.columns) == list(analysis.trials_df(run_dirs).columns)
    assert len(read(out / f"runs.{fmt}")) == 2 and len(read(out / f"cases.{fmt}")) == 4
    assert result.output.count("wrote ") == 3


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_that_fails_part_way_leaves_the_earlier_set_as_it_was(run_dirs, tmp_path, fmt):
    """A run that cannot be read after others were written: cases and trials of the new export
    were left beside runs of the old one (out of step), or the old files were gone."""
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["export", str(run_dirs[0]), "--format", fmt, "--out", str(out)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = CliRunner().invoke(main, ["export", *map(str, run_dirs), str(tmp_path / "absent"), "--format", fmt,
                                       "--out", str(out)])
    assert result.exit_code == 2 and "no summary.json here" in result.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_two_exports_into_one_folder_at_once_leave_the_set_of_one(run_dirs, tmp_path, monkeypatch):
    """Each export renamed its three files into place on its own: two at once into one folder (a
    scheduled one and one by hand) interleaved their renames, and runs.csv of one was left beside
    cases.csv and trials.csv of the other."""
    import fcntl
    import os
    import threading

    out, real_replace, real_flock = tmp_path / "out", os.replace, fcntl.flock
    go_on, errors = threading.Event(), []

    def second_export():
        try:
            analysis.export(run_dirs, "csv", out)
        except BaseException as exc:  # noqa: BLE001 - said by the assertion below
            errors.append(exc)
        finally:
            go_on.set()

    second = threading.Thread(target=second_export)

    def flock(fd, op):
        if threading.current_thread() is second:
            go_on.set()  # it waits for the first export's set to be whole
        return real_flock(fd, op)

    def replace(src, dst):
        real_replace(src, dst)
        if threading.current_thread() is threading.main_thread() and os.path.basename(dst) == "runs.csv":
            second.start()  # the second export runs to its end while the first is between renames
            go_on.wait()

    monkeypatch.setattr(fcntl, "flock", flock)
    monkeypatch.setattr(analysis.os, "replace", replace)
    analysis.export(run_dirs[:1], "csv", out)
    second.join()
    assert not errors, errors
    rows = tuple(len(_pd().read_csv(out / f"{name}.csv")) for name in ("runs", "cases", "trials"))
    assert rows == (2, 4, 8)  # the second export's whole set, written after the first's


def test_parquet_without_pyarrow_is_one_line_exit_2(run_dirs, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    result = CliRunner().invoke(main, ["export", str(run_dirs[0]), "--format", "parquet", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "pyarrow is not installed" in result.output
    assert "rubricgate[parquet]" in result.output and not list(tmp_path.iterdir())


def test_pandas_loads_only_when_a_frame_is_built():
    code = ("import sys, rubricgate.analysis, rubricgate.reports.trend, rubricgate.cli.export_cmd;"
            "import json; print(json.dumps('pandas' in sys.modules))")
    assert json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True).stdout) is False


def test_csv_cells_a_spreadsheet_would_run_are_shown_as_text() -> None:
    from rubricgate.analysis import csv_safe

    for cell in ("=HYPERLINK(\"x\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"):
        assert csv_safe(cell) == "'" + cell
    assert [csv_safe(v) for v in ("ok", "", 3, -1.5, None)] == ["ok", "", 3, -1.5, None]


def test_export_holds_one_run_at_a_time(run_dirs, tmp_path, monkeypatch):
    """Streamed: when a run's summary is read, no earlier run's summary is still in memory (the
    frames of every run built at once took 2.48 GB for 50 runs of 2,000 cases)."""
    import gc
    import weakref

    loaded: list[weakref.ref] = []
    alive_at_read: list[int] = []

    def reading(path):
        gc.collect()
        alive_at_read.append(sum(ref() is not None for ref in loaded))
        summary = read_summary(path)
        loaded.append(weakref.ref(summary))
        return summary

    monkeypatch.setattr(analysis, "read_summary", reading)
    analysis.export([*run_dirs, *run_dirs], "csv", tmp_path / "out")
    assert alive_at_read == [0, 0, 0, 0]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_of_a_later_run_with_another_dimension_has_its_columns_for_every_run(run_dirs, tmp_path, fmt):
    from rubricgate.models.results import Grade

    first, second = (read_summary(d) for d in run_dirs)
    for case in second.cases:
        for trial in case.trials:
            trial.grades["cites_rule"] = Grade(passed=trial.trial == 1)
    paths = analysis.export([first, second], fmt, tmp_path / "out")
    read = {"csv": _pd().read_csv, "parquet": _pd().read_parquet,
            "jsonl": lambda p: _pd().read_json(p, orient="records", lines=True)}[fmt]
    trials, cases = read(paths[2]), read(paths[1])
    assert list(trials.columns) == list(analysis.trials_df([first, second]).columns)
    assert "cites_rule_passed" in trials.columns and len(trials) == 8
    assert trials["cites_rule_passed"].isna().sum() == 4  # the first run's trials have no such grade
    assert list(cases["cites_rule_passes"]) == [0, 0, 1, 1]
    assert trials["exit_code"].dtype.kind in "iu" or trials["exit_code"].isna().all()


def test_export_of_a_reports_glob_takes_a_comparisons_runs_and_leaves_a_mutation_test_out(run_dirs, tmp_path):
    """`export reports/*` stopped at the first compare-* folder (no summary.json) and wrote nothing."""
    import shutil

    reports = tmp_path / "reports"
    compare = reports / "compare-x"
    for side, run in zip(("base", "head"), run_dirs, strict=True):
        shutil.copytree(run, compare / side / run.name)
    (compare / "comparison.json").write_text("{}")
    (reports / "mutate-x").mkdir()
    (reports / "mutate-x" / "mutation.json").write_text("{}")
    shutil.copytree(run_dirs[0], reports / run_dirs[0].name)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", *map(str, sorted(reports.iterdir())), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(_pd().read_csv(out / "runs.csv")) == 3  # both sides of the comparison, and the run
    assert f"note: left out: {reports / 'mutate-x'} (a mutation test" in result.output


def test_cases_df_counts_the_trials_the_gate_compared_not_its_confirmations(tmp_path) -> None:
    """cases_df (and export's cases table, trend's counts) said verdict 154/170 of a run whose rate
    was 146/160: the confirmation trials, kept apart from the rates, were counted too."""
    from tests.conftest import confirming_repo

    outcome = run_suite(RunOptions(repo=confirming_repo(tmp_path / "repo")))
    assert any(t.confirmation for c in outcome.summary.cases for t in c.trials)
    cases = analysis.cases_df([outcome.run_dir])
    assert int(cases["verdict_trials"].sum()) == outcome.summary.rates["verdict"].trials
    assert int(cases["verdict_passes"].sum()) == outcome.summary.rates["verdict"].passes
    assert summary_counts(outcome.summary)["fixture-data-loader"]["verdict"][1] == \
        int(cases.set_index("case_id").loc["fixture-data-loader", "verdict_trials"])


def test_a_run_exported_with_its_regrade_is_named_as_counted_twice(tmp_path) -> None:
    """A run and its regrade exported together: trials.csv held the run's trials twice, and the
    note that names a continuation said nothing of a regrade."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import reports_fixtures as rf

    first = rf.write_run_dir(tmp_path / "r1", rf.summary(run_id="r1"))
    again = rf.write_run_dir(tmp_path / "r2", rf.summary(run_id="r2", counted_runs=["r1"],
                                                         config={"regraded_from": "r1"}))
    got = CliRunner().invoke(main, ["export", str(first), str(again), "--out", str(tmp_path / "out")])
    assert got.exit_code == 0, got.output
    assert "note: r2 regraded or merged r1 and holds its trials: count one of the two" in got.output
    assert list(_pd().read_csv(tmp_path / "out" / "runs.csv", keep_default_na=False)["continues"]) == ["", "r1"]


def test_a_run_exported_with_its_continuation_is_named_as_counted_twice(tmp_path) -> None:
    """A run and its continuation exported together: trials.csv held the first run's trials twice
    (once under each run), with nothing saying so."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import reports_fixtures as rf

    from rubricgate.models.results import GateDetail

    first = rf.write_run_dir(tmp_path / "r1", rf.summary(run_id="r1"))
    later = rf.write_run_dir(tmp_path / "r2", rf.summary(run_id="r2", gate=GateDetail(continues=["r1"])))
    out = tmp_path / "out"
    got = CliRunner().invoke(main, ["export", str(first), str(later), "--out", str(out)])
    assert got.exit_code == 0, got.output
    assert "note: r2 continues r1 and holds its trials: count one of the two" in got.output
    runs = _pd().read_csv(out / "runs.csv", keep_default_na=False)
    assert list(runs["continues"]) == ["", "r1"]
    alone = CliRunner().invoke(main, ["export", str(later), "--out", str(tmp_path / "alone")])
    assert alone.exit_code == 0 and "note:" not in alone.output


def test_export_of_a_reports_glob_leaves_a_run_killed_before_its_summary_out_with_a_note(run_dirs, tmp_path):
    """`export reports/*` exited 2 "no summary.json here" on the folder of a run killed outright
    (SIGKILL: its events.jsonl and no summary); named alone, that folder is still the error."""
    import shutil

    killed = tmp_path / "reports" / "20991231T000000Z-dead00"
    killed.mkdir(parents=True)
    shutil.copy(run_dirs[0] / "events.jsonl", killed / "events.jsonl")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(run_dirs[0]), str(killed), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(_pd().read_csv(out / "runs.csv")) == 1
    assert f"note: left out: {killed} (a run that ended without a summary.json, killed outright" in result.output
    for alone in ([str(killed)], [str(killed), str(killed)]):  # named alone, or nothing else left
        result = CliRunner().invoke(main, ["export", *alone, "--out", str(tmp_path / "none")])
        assert result.exit_code == 2 and "no summary.json here" in result.output, result.output


def test_export_of_a_reports_glob_takes_the_runs_of_a_comparison_that_kept_no_record(run_dirs, tmp_path):
    """A `compare --base` folder with no comparison.json beside its sides (an older rubricgate
    kept none) stopped `export reports/*` with "no summary.json here": its sides' runs are read."""
    import shutil

    reports = tmp_path / "reports"
    for side, run in zip(("base", "head"), run_dirs, strict=True):
        shutil.copytree(run, reports / "compare-old" / side / run.name)
    shutil.copytree(run_dirs[0], reports / run_dirs[0].name)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", *map(str, sorted(reports.iterdir())), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(_pd().read_csv(out / "runs.csv")) == 3  # both sides of the comparison, and the run


def test_a_run_interrupted_before_any_trial_ended_exports_as_a_run_without_cases(tmp_path) -> None:
    """A run stopped (Ctrl-C, SIGTERM) before its first trial ended writes a summary.json with no
    cases; `export` of it, or of a reports/* glob holding it, was an internal error (KeyError: the
    empty trial frame's mask selected no columns), and so was cases_df."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import reports_fixtures as rf

    from rubricgate.models.results import Decision

    stopped = rf.write_run_dir(tmp_path / "r0", rf.summary(
        run_id="r0", complete=False, cases=[], flaky_cases=[],
        decision=Decision(status="error", exit_code=2, reasons=["run interrupted after 0 of 36 trials"])))
    finished = rf.write_run_dir(tmp_path / "r1", rf.summary(run_id="r1"))
    assert analysis.cases_df([stopped]).empty
    got = CliRunner().invoke(main, ["export", str(stopped), str(finished), "--out", str(tmp_path / "out")])
    assert got.exit_code == 0, got.output
    assert list(_pd().read_csv(tmp_path / "out" / "runs.csv")["run_id"]) == ["r0", "r1"]
    assert set(_pd().read_csv(tmp_path / "out" / "trials.csv")["run_id"]) == {"r1"}


def test_export_of_a_reports_glob_takes_a_comparison_killed_on_its_base_side(run_dirs, tmp_path):
    """`compare --base` killed outright on its base side leaves base/ alone: `export reports/*`
    exited 2 'no summary.json here' on it; its side's finished runs (none here) are what it holds."""
    import shutil

    reports = tmp_path / "reports"
    (reports / "compare-killed" / "base" / "20991231T000000Z-dead00" / "transcripts").mkdir(parents=True)
    shutil.copytree(run_dirs[0], reports / run_dirs[0].name)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", *map(str, sorted(reports.iterdir())), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(_pd().read_csv(out / "runs.csv")) == 1
