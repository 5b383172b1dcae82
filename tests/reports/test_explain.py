"""What the reports explain: source paths, the reviewer vs the baseline's, the CI link, the next step."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.models.baseline import Baseline  # noqa: E402
from rubricgate.models.results import Decision, ReviewerRecord, RuleRow  # noqa: E402
from rubricgate.models.verdict import Finding  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402
from rubricgate.reports import explain  # noqa: E402
from rubricgate.reports.comment import render_body  # noqa: E402
from rubricgate.reports.html import render_html  # noqa: E402
from tests.conftest import make_repo  # noqa: E402

MAPPING = {"skills/data-loader": "fixtures/block/data-loader", "skills/one/SKILL.md": "fixtures/pass/one/SKILL.md",
           "skills/same/SKILL.md": "skills/same/SKILL.md"}


@pytest.mark.parametrize("path, shown", [
    ("skills/one/SKILL.md", "skills/one/SKILL.md (source: fixtures/pass/one/SKILL.md)"),
    ("./skills/data-loader/references/a.md", "skills/data-loader/references/a.md (source: fixtures/block/data-loader/references/a.md)"),
    ("skills/data-loaderX/SKILL.md", "skills/data-loaderX/SKILL.md"),  # a prefix of a name is not its folder
    ("skills/same/SKILL.md", "skills/same/SKILL.md"),  # mapped to itself: shown once
    ("elsewhere.md", "elsewhere.md"),
])
def test_display_path(path, shown):
    assert explain.display_path(path, MAPPING) == shown


def test_finding_location_puts_the_line_after_the_workspace_path():
    f = Finding(severity="warning", rule="r", file="skills/data-loader/SKILL.md", line=3)
    assert explain.finding_location(f, MAPPING) == "skills/data-loader/SKILL.md:3 (source: fixtures/block/data-loader/SKILL.md)"
    assert explain.finding_location(Finding(severity="warning", rule="r"), MAPPING) == "(no file)"


@pytest.mark.parametrize("env, url", [
    ({}, None),
    ({"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "octo/repo"}, None),
    ({"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "octo/repo", "GITHUB_RUN_ID": "x1"}, None),
    ({"GITHUB_SERVER_URL": "javascript:alert(1)", "GITHUB_REPOSITORY": "octo/repo", "GITHUB_RUN_ID": "1"}, None),
    ({"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r\")<x>", "GITHUB_RUN_ID": "1"}, None),
    ({"GITHUB_SERVER_URL": "https://ghe.example.com/", "GITHUB_REPOSITORY": "octo/repo", "GITHUB_RUN_ID": "77"},
     "https://ghe.example.com/octo/repo/actions/runs/77"),
])
def test_run_url_only_from_a_well_formed_actions_environment(env, url):
    assert explain.run_url(env) == url


@pytest.mark.parametrize("env, ref", [
    ({}, {}),
    ({"GITHUB_REF": "refs/heads/main", "GITHUB_REF_NAME": "main"}, {"branch": "main"}),
    ({"GITHUB_REF": "refs/pull/42/merge", "GITHUB_REF_NAME": "42/merge", "GITHUB_HEAD_REF": "rubric/tighten"},
     {"pr": 42, "branch": "rubric/tighten"}),
    ({"GITHUB_REF": "refs/pull/42/merge", "GITHUB_REF_NAME": "42/merge"}, {"pr": 42}),
    ({"GITHUB_REF_NAME": "evil<script>"}, {}),
    ({"GITHUB_REF": "refs/pull/x/merge", "GITHUB_REF_NAME": "x/merge"}, {"branch": "x/merge"}),
])
def test_ci_ref_names_the_branch_and_pull_request_in_well_formed_shapes(env, ref):
    assert explain.ci_ref(env) == ref


def test_reviewer_change_unknown_without_a_baseline_record():
    s = rf.summary(baseline_reviewer=None)
    assert explain.reviewer_change(s).known is False
    assert explain.reviewer_lines(s) == [
        "Reviewer vs baseline: unknown (the baseline does not record the reviewer files it was measured with)"]


def test_reviewer_change_lists_files_and_the_rule_table_diff():
    change = explain.reviewer_change(rf.summary())
    assert change.files == ["reviewer/evaluator/references/rubric.md"]
    assert change.added == [("tone-kind", "suggestion")] and change.removed == [("secret-in-file", "critical")]
    assert change.severity == [("fm-description-required", "critical", "warning")]


def test_same_reviewer_says_so():
    now = rf.reviewer_records()[0]
    assert explain.reviewer_lines(rf.summary(baseline_reviewer=now)) == [
        "Reviewer vs baseline: the same reviewer files as the baseline run"]


def test_next_step_by_decision():
    assert "baseline update --reason" in explain.next_step(rf.summary())
    assert explain.next_step(rf.passing_summary()) is None
    error = rf.summary(decision=Decision(status="error", exit_code=2, reasons=["x"]))
    assert explain.next_step(error).startswith("fix what the reasons above name")


def test_baseline_reviewer_from_the_baseline_or_its_run(tmp_path):
    record = ReviewerRecord(digests={"p.md": "1" * 64}, rules={"r": RuleRow(severity="warning", kind="judgement")})
    baseline = Baseline(rates={"verdict": 1.0}, trials=1, history=[{"at": "t", "rates": {}, "trials": 1, "run_id": "run-1"}])
    assert explain.baseline_reviewer(baseline, tmp_path) is None  # format 1, the run folder is gone
    run = rf.write_run_dir(tmp_path / "run-1", rf.summary(reviewer=record))
    assert explain.baseline_reviewer(baseline, run.parent) == record
    (run / "summary.json").write_text("{not json")
    assert explain.baseline_reviewer(baseline, run.parent) is None  # unreadable: unknown, not a crash

    class PerFile:  # a baseline that records per-file digests and the rule table
        reviewer_digests = {"p.md": "2" * 64}
        rubric_rules = {"r": {"severity": "critical", "kind": "mechanical"}}
    got = explain.baseline_reviewer(PerFile(), tmp_path)
    assert got.digests == {"p.md": "2" * 64} and got.rules["r"].severity == "critical"


def test_format_2_one_digest_says_whether_the_reviewer_changed(tmp_path):
    from types import SimpleNamespace

    now = rf.reviewer_records()[0]
    now = now.model_copy(update={"fingerprint": explain.fingerprint(now.digests)})
    format2 = SimpleNamespace(measured_with=SimpleNamespace(reviewer_digest=now.fingerprint, run_id="gone"), history=[])
    same = explain.baseline_reviewer(format2, tmp_path)
    assert same.fingerprint == now.fingerprint and not same.digests
    assert explain.reviewer_lines(rf.summary(reviewer=now, baseline_reviewer=same)) == [
        "Reviewer vs baseline: the same reviewer files as the baseline run"]
    other = explain.baseline_reviewer(SimpleNamespace(measured_with=SimpleNamespace(reviewer_digest="f" * 64, run_id="")),
                                      tmp_path)
    change = explain.reviewer_change(rf.summary(reviewer=now, baseline_reviewer=other))
    assert change.known and change.files == [explain.FILES_UNNAMED] and not change.severity


def test_a_run_records_its_reviewer_and_the_ci_link(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/repo")
    monkeypatch.setenv("GITHUB_RUN_ID", "5")
    outcome = run_suite(RunOptions(repo=repo))
    data = json.loads((outcome.run_dir / "summary.json").read_text())
    assert set(data["reviewer"]["digests"]) >= {"reviewer/prompts/evaluate.md", "reviewer/evaluator/references/rubric.md"}
    assert data["reviewer"]["rules"]["secret-in-file"] == {"severity": "critical", "kind": "mechanical"}
    assert data["run_url"] == "https://github.com/octo/repo/actions/runs/5"
    block = next(c for c in data["cases"] if c["id"].endswith("data-loader"))
    assert block["why"] and block["trials"][0]["findings"][0]["rule"] == "fm-description-required"
    # The next run against a baseline set from this one knows the reviewer is unchanged.
    baseline = json.loads((repo / "baseline.json").read_text())
    baseline["history"] = [{"at": "t", "rates": baseline["rates"], "trials": 1, "run_id": outcome.run_dir.name}]
    (repo / "baseline.json").write_text(json.dumps(baseline))
    rubric = repo / "reviewer/evaluator/references/rubric.md"
    rubric.write_text(rubric.read_text().replace("| body-present | warning |", "| body-present | suggestion |"))
    again = run_suite(RunOptions(repo=repo)).summary
    change = explain.reviewer_change(again)
    assert change.files == ["reviewer/evaluator/references/rubric.md"]
    assert change.severity == [("body-present", "warning", "suggestion")]


def test_comment_explains_failing_cases_and_escapes_findings():
    body = render_body(rf.summary())
    assert "Why it matters: protects fm-description-required @\u200bteam" in body
    assert "| rule | severity | file:line | issue | quote |" in body
    assert "skills/data-loader/SKILL.md:7 (source: fixtures/block/data-loader/SKILL.md)" in body
    assert "Load \\| the data &lt;script&gt;" in body and "<script>" not in body
    assert "[workflow run](https://github.com/octo/repo/actions/runs/42)" in body
    assert "  - severity changed: fm-description-required critical → warning" in body
    assert "**Failing cases**" not in render_body(rf.passing_summary())


def test_html_puts_failing_cases_first_with_why_and_findings(tmp_path):
    run = rf.write_run_dir(tmp_path / "run")
    page = render_html(rf.summary(), run)
    failing = page.index('id="failing-cases"')
    assert page.index('id="rates"') < failing < page.index('id="cases"')
    assert 'data-change="changed"' in page and "rule removed: secret-in-file (critical)" in page
    rows = [m for m in ("data-case=\"block-missing-description\"", "data-case=\"pass-weekly-revenue\"")]
    table = page[page.index('id="cases"'):]
    assert table.index(rows[0]) < table.index(rows[1])  # the failing case on top
    assert '<td data-label="file:line">skills/data-loader/SKILL.md:7 (source: fixtures/block/data-loader/SKILL.md)</td>' in page
    assert "&lt;script&gt;document.title" in page[failing:page.index('id="cases"')]


def test_the_branch_outside_ci_is_read_from_git_head_without_starting_git(tmp_path):
    from tests.conftest import git

    repo = make_repo(tmp_path / "repo")
    assert explain.local_branch(repo) == "main"
    git(repo, "checkout", "-q", "-b", "rubric/tighten")
    assert explain.local_branch(repo) == "rubric/tighten"
    git(repo, "worktree", "add", "-q", "-b", "feature-x", str(tmp_path / "wt"))
    assert explain.local_branch(tmp_path / "wt") == "feature-x"  # .git is a file naming the worktree's gitdir
    git(repo, "checkout", "-q", "--detach")
    assert explain.local_branch(repo) is None and explain.local_branch(tmp_path / "nowhere") is None


def test_a_run_outside_ci_records_its_branch_and_in_ci_the_ci_ref(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    for key in ("GITHUB_ACTIONS", "GITHUB_REF", "GITHUB_REF_NAME", "GITHUB_HEAD_REF"):
        monkeypatch.delenv(key, raising=False)
    assert run_suite(RunOptions(repo=repo)).summary.config["branch"] == "main"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_REF", "refs/heads/release")
    monkeypatch.setenv("GITHUB_REF_NAME", "release")
    assert run_suite(RunOptions(repo=repo)).summary.config["branch"] == "release"
