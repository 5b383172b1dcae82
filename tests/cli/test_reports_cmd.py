"""The report commands end to end: regrade, report, publish, trend, changed; plus the summary.json golden."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
from conftest import DATA_LOADER_TASK, confirming_repo, data_loader_run, make_repo, set_severity, write_task  # noqa: E402,E501
from fake_github import FakeGitHub  # noqa: E402

from rubricgate.cli import main  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402
from rubricgate.reports.comment import MARKER  # noqa: E402
from rubricgate.runner.cache import default_cache_dir, remember_run  # noqa: E402

TASK = DATA_LOADER_TASK


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def ran(tmp_path):
    """A real run of the builtin reviewer on a small repo: (repo, run_dir)."""
    return data_loader_run(tmp_path)


# --- failures first ---------------------------------------------------------------------

def test_report_on_missing_run_dir_exits_2_with_one_line(tmp_path):
    got = invoke("report", str(tmp_path / "nope"))
    assert got.exit_code == 2 and got.output.count("\n") == 1 and "no summary.json here" in got.output


def test_regrade_of_a_foreign_run_exits_2(ran, tmp_path):
    repo, _ = ran
    foreign = rf.write_run_dir(tmp_path / "foreign")
    got = invoke("regrade", str(foreign), "--repo", str(repo))
    assert got.exit_code == 2 and "no case of this run is in the current suite" in got.output


def test_regrade_after_expectation_change_fails_without_running_an_agent(ran, monkeypatch):
    repo, run_dir = ran
    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda *a: pytest.fail("regrade started an agent"))
    write_task(repo, TASK | {"expect": {"tier": "PASS"}})
    got = invoke("regrade", str(run_dir), "--repo", str(repo))
    assert got.exit_code == 1, got.output
    new_dir = Path(got.output.split(" -> ")[1].split(" · ")[0])
    summary = json.loads((new_dir / "summary.json").read_text())
    assert summary["config"]["regraded_from"] == run_dir.name and summary["decision"]["status"] == "regression"
    replay = json.loads((new_dir / "replay" / "data-loader-needs-description-1.json").read_text())
    assert replay["case"]["expect"]["tier"] == "PASS" and replay["trial"]["grades"]["verdict"]["category"] == "wrong_tier"
    assert (new_dir / "report.html").is_file() and MARKER in (new_dir / "comment.md").read_text()
    assert json.loads((run_dir / "summary.json").read_text())["decision"]["status"] == "pass"  # old run untouched


def test_regrade_unchanged_passes_and_warns_about_dropped_cases(ran):
    repo, run_dir = ran
    (repo / "evals/tasks/data-loader-needs-description.yaml").unlink()
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 0, got.output
    assert "warning: case data-loader-needs-description is no longer in the suite" in got.output


def _regraded(output: str) -> dict:
    return json.loads((Path(output.split(" -> ")[1].split(" · ")[0]) / "summary.json").read_text())


def test_regrade_of_an_unchanged_run_of_adaptive_rounds_decides_as_the_run_did(tmp_path):
    """Regraded as one look over every trial pooled, confirmation trials among the design's, a run
    of adaptive rounds was judged anew: an INCONCLUSIVE one could PASS (exit 0), and a collapse
    read verdict 2/7 where the run had compared 2/3."""
    repo = confirming_repo(tmp_path / "repo")
    outcome = run_suite(RunOptions(repo=repo))
    assert outcome.summary.gate is not None and outcome.summary.gate.looks, outcome.summary.decision
    got = CliRunner().invoke(main, ["regrade", str(outcome.run_dir), "--repo", str(repo)])
    again = _regraded(got.output)
    assert got.exit_code == outcome.exit_code, got.output
    assert again["decision"]["status"] == outcome.summary.decision.status
    assert again["rates"]["verdict"]["trials"] == outcome.summary.rates["verdict"].trials
    assert again["gate"]["looks"] == outcome.summary.gate.looks
    assert [t["confirmation"] for c in again["cases"] for t in c["trials"]] == \
        [t.confirmation for c in outcome.summary.cases for t in c.trials]


@pytest.mark.parametrize("first", ["together", "the-run-before"])
def test_a_run_and_its_regrade_are_never_both_pooled_into_the_baseline(ran, first):
    """A regrade holds the run's own trials: pooled beside the run (or after it), every trial
    counted twice (verdict 9/10 -> 18/20), as two sessions that agree on every answer."""
    repo, run_dir = ran
    again = _regraded(CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)]).output)
    regraded = run_dir.parent / again["run_id"]
    if first == "the-run-before":
        assert invoke("baseline", "update", "--repo", str(repo), "--from", str(run_dir)).exit_code == 0
        got = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--from", str(regraded)])
        assert got.exit_code == 2 and "already counted in baseline.json" in got.output, got.output
    else:
        got = CliRunner().invoke(main, ["baseline", "update", "--repo", str(repo), "--from", str(run_dir),
                                        "--from", str(regraded)])
        assert got.exit_code == 2 and "this run's trials are in two of the runs given" in got.output, got.output


def test_compare_of_a_run_and_a_run_holding_its_trials_cannot_judge(ran):
    """A run against its own regrade (or the run that continued it) was two independent samples to
    the test: the same trials on both sides, PASS (exit 0) "the drop is at most 3.3 points"."""
    repo, run_dir = ran
    again = _regraded(CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)]).output)
    got = CliRunner().invoke(main, ["compare", str(run_dir), str(run_dir.parent / again["run_id"]),
                                    "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    assert f"the two runs share the trials of {run_dir.name}" in got.output, got.output


def test_compare_of_a_run_and_itself_or_its_copy_cannot_judge(ran, tmp_path):
    """A run against itself, or a copy of its folder, was two independent samples to the test: the
    same trials on both sides, PASS (exit 0) 'the drop is at most 3.7 points'."""
    repo, run_dir = ran
    copy = tmp_path / "copied" / run_dir.name
    shutil.copytree(run_dir, copy)
    for other in (run_dir, copy):
        got = CliRunner().invoke(main, ["compare", str(run_dir), str(other), "--repo", str(repo)])
        assert got.exit_code == 2, got.output
        assert f"the two runs share the trials of {run_dir.name}" in got.output, got.output


def test_regrade_of_an_edit_to_a_rule_no_case_exercises_cannot_judge_it_as_run_cannot(ran):
    repo, _ = ran
    assert invoke("baseline", "update", "--repo", str(repo)).exit_code == 0  # records the rule table
    run_dir = run_suite(RunOptions(repo=repo)).run_dir
    set_severity(repo, "fm-name-required", "suggestion")
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    summary = _regraded(got.output)
    assert summary["decision"]["status"] == "inconclusive"
    assert any("fm-name-required" in r and "no case exercises it" in r for r in summary["decision"]["reasons"])
    assert [c["rule"] for c in summary["rule_changes"]] == ["fm-name-required"]
    assert run_suite(RunOptions(repo=repo)).summary.decision.status == "inconclusive"  # as a run decides


def test_regrade_carries_the_coverage_table_as_run_does(ran):
    repo, run_dir = ran
    got = CliRunner().invoke(main, ["regrade", str(run_dir), "--repo", str(repo)])
    assert got.exit_code == 0, got.output
    coverage = json.loads((run_dir / "summary.json").read_text())["coverage"]
    assert coverage and coverage["rules"] and _regraded(got.output)["coverage"] == coverage
    new_dir = Path(got.output.split(" -> ")[1].split(" · ")[0])
    assert json.loads((new_dir / "view-index.json").read_text())["run_id"] == new_dir.name  # indexed for the viewer


def test_report_rerenders_every_format(ran, tmp_path):
    _, run_dir = ran
    step = tmp_path / "step.md"
    got = invoke("report", str(run_dir), "--history", str(run_dir), env={"GITHUB_STEP_SUMMARY": str(step)})
    assert got.exit_code == 0, got.output
    assert 'id="chart-trend"' in (run_dir / "report.html").read_text()
    assert (run_dir / "junit.xml").read_text().startswith("<?xml")
    assert "rubricgate **PASS**" in step.read_text()


@pytest.mark.usefixtures("bwrap_ready")
def test_summary_json_golden(tmp_path):
    """A real run with something to show: two trials, a wrong tier, a step-limit failure, a regression."""
    repo = make_repo(tmp_path / "repo", commit=False)
    write_task(repo, TASK)
    write_task(repo, TASK | {"id": "data-loader-judged-clean", "expect": {"tier": "PASS"}})
    write_task(repo, TASK | {"id": "data-loader-in-one-step",
                             "rubric": {"tool_use": {"allowed": ["read", "grep", "glob"]}, "trajectory": {"max_steps": 1}}})
    outcome = run_suite(RunOptions(repo=repo, trials=2))
    assert outcome.exit_code == 1
    text = rf.scrub((outcome.run_dir / "summary.json").read_text(), [repo])
    assert '"category": "wrong_tier"' in text and '"category": "too_many_steps"' in text
    rf.assert_golden("summary.json", text)


# --- publish ------------------------------------------------------------------------------

def test_publish_without_token_exits_2(ran):
    _, run_dir = ran
    got = invoke("publish", str(run_dir), "--pr", "3", env={"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": "o/r"})
    assert got.exit_code == 2 and "GITHUB_TOKEN: not set" in got.output


def test_publish_api_failure_exits_2_loudly(ran):
    _, run_dir = ran
    with FakeGitHub() as gh:
        gh.fail[("POST", r"/comments$")] = (403, "Resource not accessible by integration")
        got = invoke("publish", str(run_dir), "--pr", "3", env=gh.env())
    assert got.exit_code == 2 and "HTTP 403 Resource not accessible by integration" in got.output


def test_publish_creates_then_updates_latest_run(ran):
    repo, _ = ran
    with FakeGitHub() as gh:
        first = invoke("publish", "--pr", "3", "--repo", str(repo), env=gh.env())
        second = invoke("publish", "--pr", "3", "--repo", str(repo), env=gh.env())
    assert first.exit_code == 0 and "created on PR #3" in first.output
    assert second.exit_code == 0 and "updated on PR #3" in second.output and len(gh.issue_comments(3)) == 1


def compare_record(path: Path, status: str, exit_code: int, reason: str) -> Path:
    """What `compare --base REF --json FILE` writes: the decision that gates the pull request."""
    from rubricgate.models.comparison import ComparisonRecord, TestRecord
    from rubricgate.models.results import Decision

    record = ComparisonRecord(
        base="reviewer at origin/main", head="working tree", counts={"regressed": 1, "unchanged": 3},
        tests=[TestRecord(dimension="verdict", cases=4, base_passes=12, base_trials=12, head_passes=9,
                          head_trials=12, p_value=0.11, status=status)],
        decision=Decision(status=status, exit_code=exit_code, method="statistical", reasons=[reason]))
    path.write_text(record.model_dump_json(), encoding="utf-8")
    return path


def test_report_with_compare_states_the_comparisons_decision_not_the_runs(ran, tmp_path):
    """The PR workflow's run against baseline.json said PASS (exit 0) while the interleaved
    comparison that gates the PR said INCONCLUSIVE (exit 2): the step summary and comment.md
    said PASS on a failing job."""
    repo, run_dir = ran
    record = compare_record(tmp_path / "compare.json", "inconclusive", 2, "verdict: a drop of 25 points not ruled out")
    step = tmp_path / "step.md"
    got = invoke("report", "--repo", str(repo), "--compare", str(record), env={"GITHUB_STEP_SUMMARY": str(step)})
    assert got.exit_code == 0, got.output
    for text in (step.read_text(), (run_dir / "comment.md").read_text()):
        first = next(line for line in text.splitlines() if line.startswith("###"))
        assert first.startswith("### ❔ rubricgate **INCONCLUSIVE**") and "exit 2" in first, text
        assert "a drop of 25 points not ruled out" in first
        assert "rubricgate **PASS**" not in text  # the run's PASS is context, never the headline
        assert "the run against baseline.json said PASS (exit 0)" in text
    assert (run_dir / "comment.md").read_text().startswith(MARKER)


def test_report_with_a_missing_compare_record_says_could_not_judge(ran, tmp_path):
    repo, run_dir = ran
    step = tmp_path / "step.md"
    got = invoke("report", "--repo", str(repo), "--compare", str(tmp_path / "compare.json"),
                 env={"GITHUB_STEP_SUMMARY": str(step)})
    assert got.exit_code == 0 and "warning: --compare:" in got.output, got.output
    assert step.read_text().startswith("### ⚠️ rubricgate **COULD NOT JUDGE**"), step.read_text()
    assert "no comparison record" in step.read_text() and "rubricgate **PASS**" not in step.read_text()


@pytest.mark.parametrize(("status", "exit_code", "label_after", "action"), [
    ("inconclusive", 2, {"rubricgate-regression"}, "untouched"),  # the run's PASS removed it
    ("regression", 1, {"rubricgate-regression"}, "added"),
    ("pass", 0, set(), "removed"),
])
def test_publish_with_compare_comments_and_labels_by_the_comparison(ran, tmp_path, status, exit_code, label_after,
                                                                  action):
    repo, _ = ran  # the run against baseline.json passed
    record = compare_record(tmp_path / "compare.json", status, exit_code, "the comparison's reason")
    with FakeGitHub() as gh:
        if action != "added":
            gh.labels[3] = {"rubricgate-regression"}
        got = invoke("publish", "--pr", "3", "--repo", str(repo), "--compare", str(record), env=gh.env())
    assert got.exit_code == 0 and f"label 'rubricgate-regression' {action}" in got.output, got.output
    assert gh.labels.get(3, set()) == label_after
    body = gh.issue_comments(3)[0]["body"]
    badge = {"inconclusive": "INCONCLUSIVE", "regression": "REGRESSION", "pass": "PASS"}[status]
    assert body.startswith(MARKER) and f"rubricgate **{badge}**: head against base" in body
    assert (status == "pass") == ("rubricgate **PASS**" in body)


def test_publish_with_a_missing_compare_record_leaves_the_label(ran, tmp_path):
    repo, _ = ran
    with FakeGitHub() as gh:
        gh.labels[3] = {"rubricgate-regression"}
        got = invoke("publish", "--pr", "3", "--repo", str(repo), "--compare", str(tmp_path / "none.json"),
                     env=gh.env())
    assert got.exit_code == 0 and "label 'rubricgate-regression' untouched" in got.output, got.output
    assert gh.labels[3] == {"rubricgate-regression"}
    assert "rubricgate **COULD NOT JUDGE**" in gh.issue_comments(3)[0]["body"]


# --- trend and changed ----------------------------------------------------------------------

def test_trend_without_summaries_exits_2():
    got = invoke("trend")
    assert got.exit_code == 2 and "no summaries given" in got.output


def test_trend_flags_version_change_and_writes_chart(tmp_path):
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(rf.summary(run_id="w1").model_dump_json())
    b.write_text(rf.summary(run_id="w2", started_at="2026-01-08T00:00:00Z", agent_version="2.0.0").model_dump_json())
    got = invoke("trend", str(b), str(a), "--chart", str(tmp_path / "t.svg"))
    assert got.exit_code == 0 and "agent CLI version changed: 1.0.0 → 2.0.0" in got.output
    chart = ET.parse(tmp_path / "t.svg").getroot()
    assert chart.get("id") == "chart-trend" and "2026-01-08 00:00" in "".join(chart.itertext())


def test_trend_chart_asked_for_as_png_is_written_as_svg_beside_it(tmp_path):
    a = tmp_path / "a.json"
    a.write_text(rf.summary(run_id="w1").model_dump_json())
    got = invoke("trend", str(a), "--chart", str(tmp_path / "t.png"))
    assert got.exit_code == 0 and "the trend chart is SVG; writing" in got.output
    assert not (tmp_path / "t.png").exists() and ET.parse(tmp_path / "t.svg").getroot().get("role") == "img"


def test_changed_missing_base_exits_2_and_writes_no_output(ran, tmp_path):
    repo, _ = ran
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    out = tmp_path / "gh_output"
    got = invoke("changed", "--base", "origin/main", "--repo", str(repo), env={"GITHUB_OUTPUT": str(out)})
    assert got.exit_code == 2 and "'origin/main' is not present in this clone" in got.output
    assert not out.exists()


def test_changed_reports_gated_files_and_github_output(tmp_path):
    repo = make_repo(tmp_path / "repo")
    (repo / "baseline.json").write_text(json.dumps({"format_version": 1, "rates": {}, "trials": 1}))
    out = tmp_path / "gh_output"
    got = invoke("changed", "--base", "main", "--repo", str(repo), env={"GITHUB_OUTPUT": str(out)})
    assert got.exit_code == 0 and "changed: 1 gated file(s)" in got.output and "  baseline.json" in got.output
    assert out.read_text() == "changed=true\nnew_at_base=false\n"
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "baseline.json"], check=True)
    got = invoke("changed", "--base", "main", "--repo", str(repo), env={"GITHUB_OUTPUT": str(out)})
    assert "unchanged" in got.output and out.read_text().endswith("changed=false\nnew_at_base=false\n")


def test_publish_with_no_runs_exits_2_and_the_comment_says_could_not_judge(tmp_path):
    """The job's run stopped before its summary (a task that no longer loads, a preflight stop):
    the check is red, and the comment kept the earlier push's PASS. The label stays."""
    from rubricgate.reports.comment import MARKER
    from tests.fake_github import FakeGitHub

    repo = make_repo(tmp_path / "repo", commit=False)
    with FakeGitHub() as gh:
        cid = gh.add_comment(1, f"{MARKER}\n### ✅ rubricgate **PASS**: head against base")
        gh.labels[1] = {"rubricgate-regression"}
        got = invoke("publish", "--pr", "1", "--repo", str(repo), "--compare", str(tmp_path / "c.json"), env=gh.env())
        body = gh.comments[cid]["body"]
    assert got.exit_code == 2 and "no run with a summary.json here" in got.output
    assert "PASS" not in body and "COULD NOT JUDGE" in body and "no run with a summary.json here" in body, body
    assert gh.labels[1] == {"rubricgate-regression"} and len(gh.issue_comments(1)) == 1


def test_publish_with_no_run_and_no_token_names_both(tmp_path):
    repo = make_repo(tmp_path / "repo", commit=False)
    got = invoke("publish", "--pr", "1", "--repo", str(repo), env={"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": "o/r"})
    assert got.exit_code == 2 and "no run with a summary.json here" in got.output and "GITHUB_TOKEN" in got.output


def test_of_two_runs_started_in_one_second_the_later_is_the_latest(ran):
    repo, _ = ran
    reports = repo / "reports"
    for run_id, at in (("20990101T000000Z-ffffff", "2099-01-01T00:00:00.100+00:00"),
                       ("20990101T000000Z-000000", "2099-01-01T00:00:00.900+00:00")):
        (reports / run_id).mkdir()
        (reports / run_id / "events.jsonl").write_text(json.dumps({"event": "run_started", "at": at}) + "\n")
        remember_run(default_cache_dir(), run_id)  # runs this user started
    (reports / "20990101T000000Z-ffffff" / "summary.json").write_text("{}")
    got = invoke("report", "--repo", str(repo))
    assert got.exit_code == 2 and "20990101T000000Z-000000" in got.output and "newest run has no summary" in got.output


def test_a_run_folder_planted_in_the_checkout_is_not_the_latest_run(ran):
    # A pull request can force-add reports/99999999T000000Z-ffffff/ with a PASS summary: report
    # and publish took it for the newest run, and it became the PR's comment and label.
    repo, run_dir = ran
    planted = repo / "reports" / "99999999T000000Z-ffffff"
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["run_id"] = planted.name
    planted.mkdir()
    (planted / "summary.json").write_text(json.dumps(summary))
    got = invoke("report", "--repo", str(repo))
    assert got.exit_code == 0, got.output
    assert (run_dir / "comment.md").is_file() and not (planted / "comment.md").exists()


def test_publish_never_posts_a_run_this_user_did_not_start(tmp_path):
    """With no noted run, report falls back to the newest folder; publish posting a planted PASS
    (when the job's own run failed before it began) would tell the PR it passed."""
    repo = make_repo(tmp_path / "repo", commit=False)
    planted = rf.write_run_dir(repo / "reports" / "99991231T000000Z-aaaaaa")
    assert planted.is_dir()
    from tests.fake_github import FakeGitHub

    with FakeGitHub() as gh:
        got = invoke("publish", "--pr", "1", "--repo", str(repo), env=gh.env())
        [comment] = gh.issue_comments(1)
    assert got.exit_code == 2 and "no run here was started by this user" in got.output, got.output
    assert "COULD NOT JUDGE" in comment["body"] and "PASS" not in comment["body"]


def test_a_run_given_its_own_cache_dir_is_still_the_latest(ran, tmp_path):
    repo, first = ran
    second = run_suite(RunOptions(repo=repo, cache=True, cache_dir=tmp_path / "own-cache")).run_dir
    assert second != first
    got = invoke("report", "--repo", str(repo))
    assert got.exit_code == 0 and str(second) in got.output, got.output


def test_publish_for_a_push_with_nothing_judged_takes_no_run_and_not_both(tmp_path):
    from tests.fake_github import FakeGitHub

    with FakeGitHub() as gh:
        for args in (["--unchanged-since", "origin/main", "--cannot-judge", "x"],
                     ["--unchanged-since", "origin/main", "--compare", str(tmp_path / "c.json")]):
            got = invoke("publish", "--pr", "3", *args, env=gh.env())
            assert got.exit_code == 2 and "take no RUN_DIR" in got.output
        assert gh.requests == []
        gh.fail[("GET", r"/comments$")] = (500, "boom")
        got = invoke("publish", "--pr", "3", "--cannot-judge", "x", env=gh.env())
        assert got.exit_code == 2 and "error: publish failed" in got.output and "HTTP 500" in got.output
