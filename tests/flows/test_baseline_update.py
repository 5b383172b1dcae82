"""`baseline update`: inputs checked before running, progress shown, the run labelled as a
baseline run, and a partial run refused unless explicitly allowed."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import set_severity


def update(repo, *args):
    return CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), *args])


def runs(repo) -> list:
    folder = repo / "reports"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def test_blank_reason_is_refused_before_anything_runs(repo) -> None:
    result = update(repo, "--reason", "  ")
    assert result.exit_code == 2 and "--reason" in result.output and "empty" in result.output
    assert runs(repo) == []


def test_lowering_without_reason_keeps_the_run_and_says_how_to_finish(repo) -> None:
    set_severity(repo, "fm-description-required", "warning")
    result = update(repo)
    assert result.exit_code == 2 and "needs a reason" in result.output
    [run_dir] = runs(repo)
    assert f"--from {run_dir}" in result.output
    done = update(repo, "--from", str(run_dir), "--reason", "descriptions optional")
    assert done.exit_code == 0, done.output


def test_the_kept_runs_of_several_sessions_are_named_in_a_command_that_runs(repo) -> None:
    import shlex

    set_severity(repo, "fm-description-required", "warning")
    result = update(repo, "--sessions", "2")
    assert result.exit_code == 2 and "needs a reason" in result.output
    first, second = runs(repo)
    fix = result.output.split("(fix: the measured 2 runs are kept: ")[1].rsplit(")", 1)[0]
    # in the order they ran (two runs of one second sort by their random suffix, not by that)
    assert fix in (f"rubricgate baseline update --from {a} --from {b} --reason '...'"
                   for a, b in ((first, second), (second, first)))
    twice = update(repo, "--from", str(first), "--from", str(first), "--reason", "x")
    assert twice.exit_code == 2 and "a run is given twice" in twice.output
    done = update(repo, *shlex.split(fix.replace("'...'", "'descriptions optional'"))[3:])
    assert done.exit_code == 0, done.output
    data = json.loads((repo / "baseline.json").read_text())
    sessions = {len(c["verdict"]["sessions"]) for c in data["cases"].values()}
    assert sessions == {2}, sessions  # both runs pooled, one session each (a repeated --from kept only the last)


def test_the_run_folder_is_labelled_a_baseline_run_not_an_error(repo) -> None:
    result = update(repo)
    assert result.exit_code == 0, result.output
    [run_dir] = runs(repo)
    assert run_dir.name.endswith("-baseline")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["kind"] == "baseline" and summary["decision"]["status"] == "baseline"
    assert summary["decision"]["exit_code"] == 0
    assert "run finished" in result.output and "decision baseline" in result.output  # progress, on stderr
    trend = CliRunner().invoke(main, ["trend", "--all-kinds", str(run_dir)])
    assert "error" not in trend.output.lower() and "baseline" in trend.output
    alone = CliRunner().invoke(main, ["trend", str(run_dir)])  # not a run of the suite's trend by default
    assert alone.exit_code == 2 and "left out: 1 baseline" in alone.output
    report = CliRunner().invoke(main, ["report", "--repo", str(repo)])
    assert report.exit_code == 2 and "no run" in report.output  # a baseline run is not "the latest run"


def test_a_partial_run_is_refused_unless_allowed(repo) -> None:
    assert CliRunner().invoke(main, ["run", "--repo", str(repo), "--only", "data-loader"]).exit_code == 0
    [run_dir] = runs(repo)
    before = (repo / "baseline.json").read_text()
    result = update(repo, "--from", str(run_dir))
    assert result.exit_code == 2 and "covers 1 of 2 cases" in result.output and "--allow-partial" in result.output
    assert (repo / "baseline.json").read_text() == before
    result = update(repo, "--from", str(run_dir), "--allow-partial")
    assert result.exit_code == 0 and "partial run accepted" in result.output


def test_sigterm_during_baseline_update_ends_in_exit_2_with_the_partial_report(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    import uuid

    from tests.conftest import ROOT, make_repo
    from tests.faults.reviewers import live_pids_with, use_reviewer, write_reviewer

    marker = f"rg-bu-{uuid.uuid4().hex[:8]}"
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    slow = "import subprocess, time\nsubprocess.Popen(['sh', '-c', 'sleep 60 # MARKER'])\ntime.sleep(60)\n"
    use_reviewer(repo, write_reviewer(tmp_path / "agents", slow.replace("MARKER", marker)), sandbox="none")
    proc = subprocess.Popen([sys.executable, "-m", "rubricgate", "baseline", "update", "--repo", str(repo)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not live_pids_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, (out, err)
    assert "Traceback" not in err and "interrupted" in err
    summary = next((repo / "reports").glob("*/summary.json"))
    assert '"complete": false' in summary.read_text().replace('"complete":false', '"complete": false')


def test_a_session_whose_every_trial_errored_stops_the_update_and_names_the_cause(tmp_path) -> None:
    """An unreachable endpoint: the first session errors throughout. No second session runs, the
    one line names the trials' own error and a fix that applies (never --allow-partial or --from,
    which lead back here), and the progress counters never exceed the session's own totals."""
    import re
    import sys

    import yaml

    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo")
    script = tmp_path / "agents" / "unreachable.py"
    script.parent.mkdir()
    script.write_text("import sys\nsys.stderr.write('Error: Tunnel connection failed: 403 Forbidden\\n')\n"
                      "sys.exit(1)\n")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"] = {"method": "statistical"}
    # retries 0: each trial errors at once instead of after its backoff (what is checked is the session's end)
    config["agent"] = {"name": "command", "command": [sys.executable, str(script), "{prompt_file}"],
                       "format": "claude", "sandbox": "none", "timeout_s": 60, "retries": 0}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    before = (repo / "baseline.json").read_text()
    result = update(repo)
    assert result.exit_code == 2, result.output
    assert len(runs(repo)) == 1  # the second session never started
    last = result.output.strip().splitlines()[-1]
    assert "Tunnel connection failed: 403 Forbidden" in last and "rubricgate baseline update" in last, last
    assert "--allow-partial" not in last and "--from" not in last and "run the suite first" not in last
    for done, total in re.findall(r"(\d+)/(\d+) (?:cases|trials)", result.output):
        assert int(done) <= int(total), result.output
    assert (repo / "baseline.json").read_text() == before
    [run_dir] = runs(repo)
    again = update(repo, "--from", str(run_dir), "--reason", "x")  # the kept run cannot make a baseline either
    assert again.exit_code == 2 and "403 Forbidden" in again.output and "run the suite first" not in again.output


def test_an_update_finished_while_another_measured_keeps_its_history_entry(repo, monkeypatch) -> None:
    """Two updates side by side: each merges into the baseline as the other left it, so neither
    history entry is lost (both read the file before measuring, and the second write dropped the
    first's entry)."""
    from rubricgate.flows import baseline_update as flow

    real_run, calls = flow.run_suite, []

    def run_then_let_another_update_finish(options):
        outcome = real_run(options)
        calls.append(options)
        if len(calls) == 1:  # the other update measures and writes while this one is between
            flow.update_baseline(flow.BaselineRequest(repo=repo, reason="the other update", sessions=1, trials=1))
        return outcome

    monkeypatch.setattr(flow, "run_suite", run_then_let_another_update_finish)
    flow.update_baseline(flow.BaselineRequest(repo=repo, reason="this update", sessions=1, trials=1))
    reasons = [h["reason"] for h in json.loads((repo / "baseline.json").read_text())["history"]]
    assert any("the other update" in r for r in reasons) and any("this update" in r for r in reasons), reasons


def test_the_baseline_folder_is_locked_from_reading_the_baseline_to_writing_it(repo, monkeypatch) -> None:
    import fcntl
    import os

    import pytest

    from rubricgate.flows import baseline_update as flow

    real_write, tried = flow.write_baseline, []

    def write_while_checking_the_lock(path, baseline):
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(BlockingIOError):  # another update's merge waits here
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        tried.append(path)
        real_write(path, baseline)

    monkeypatch.setattr(flow, "write_baseline", write_while_checking_the_lock)
    flow.update_baseline(flow.BaselineRequest(repo=repo, reason="locked", sessions=1, trials=1))
    assert tried == [repo / "baseline.json"]


def test_a_baseline_in_a_folder_not_made_yet_is_written_and_one_under_a_file_named_before_measuring(repo) -> None:
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text().replace("baseline: baseline.json", "baseline: kept/baselines/baseline.json"))
    made = update(repo, "--sessions", "1", "--trials", "1")
    assert made.exit_code == 0, made.output
    assert json.loads((repo / "kept/baselines/baseline.json").read_text())["history"]
    (repo / "blocked").write_text("a file where the folder would be\n")
    config.write_text(config.read_text().replace("kept/baselines/", "blocked/"))
    before = runs(repo)
    refused = update(repo, "--sessions", "1", "--trials", "1")
    assert refused.exit_code == 2 and "baseline: cannot make the folder of blocked/baseline.json" in refused.output
    assert runs(repo) == before  # named before a measurement was spent


@pytest.mark.parametrize(("program", "retries", "field", "says"), [
    # answers in its own YAML with `verdict:` unset (init writes it commented): no answer is read
    ("print('review:\\n  verdict: approve\\n  key_issues_to_review: []')\n", 2, "verdict", "JSON contract"),
    # fails every trial (exit 1 and no verdict, a traceback say): agent_error, not errored
    ("import sys\nprint('review:\\n  key_issues_to_review: []')\nsys.exit(1)\n", 0, "agent", "exit 1"),
])
def test_a_measurement_that_read_no_answer_is_refused_not_a_baseline_of_zero(tmp_path, program, retries, field,
                                                                              says) -> None:
    """Every case measured 0%, and a baseline of that would pass every later run; the kept run
    cannot make one with --from either."""
    import sys

    import yaml

    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo")
    script = tmp_path / "agents" / "reviewer.py"
    script.parent.mkdir()
    script.write_text(program)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": [sys.executable, str(script)], "format": "text",
                       "sandbox": "none", "timeout_s": 60, "retries": retries}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    before = (repo / "baseline.json").read_text()
    result = update(repo, "--reason", "first measurement")
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(f"error: rubricgate.yaml: {field}: ") and says in last and "fix: " in last, last
    assert (repo / "baseline.json").read_text() == before
    [run_dir] = runs(repo)
    again = update(repo, "--from", str(run_dir), "--reason", "x")
    assert again.exit_code == 2 and f"rubricgate.yaml: {field}: " in again.output, again.output
    assert (repo / "baseline.json").read_text() == before


def test_a_run_whose_records_could_not_be_written_leaves_the_baseline_as_it_was(repo, monkeypatch) -> None:
    import errno
    import os

    from rubricgate.records import writing

    real = writing._create

    def full(path):  # the reports disk fills up: a transcript cannot be written
        if path.name.startswith(".fixture-data-loader-1.json."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path)

    monkeypatch.setattr(writing, "_create", full)
    before = (repo / "baseline.json").read_bytes()
    result = update(repo, "--reason", "re-measured")
    assert result.exit_code == 2, result.output
    assert "records were not all written" in result.output and "fixture-data-loader-1.json" in result.output
    assert (repo / "baseline.json").read_bytes() == before


def test_a_run_whose_report_could_not_read_a_record_is_no_measurement_either() -> None:
    """A report failure reads 'could not read <transcript>' where a record did not read back:
    the check matched 'could not write ' alone."""
    from rubricgate.flows.baseline_update import unrecorded
    from rubricgate.models.results import Decision
    from rubricgate.records.writing import WriteFailure
    from tests import reports_fixtures as rf

    line = WriteFailure("transcripts/a-1.json", "invalid JSON", "read").line()
    summary = rf.summary().model_copy(update={"decision": Decision(status="error", exit_code=2, reasons=[line])})
    refused = unrecorded(summary, "reports/run")
    assert refused is not None and "records were not all written" in str(refused), refused
