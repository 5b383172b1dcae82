"""Every page over hostile run folders: the content each shows, and markup from runs as text."""

from __future__ import annotations

import html as html_lib
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
import view_fixtures as vf  # noqa: E402

from rubricgate.view import urls  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402

OLD, NEW = "20260101T000000Z-abc120", "20260102T000000Z-abc121"


@pytest.fixture
def site(tmp_path):
    vf.write_runs(tmp_path / "reports")
    return site_for([tmp_path / "reports"])


def text(site, path: str, status: int = 200) -> str:
    page = site.page(path)
    assert page.status == status, page.body[-500:]
    return page.body.decode()


def assert_inert(html: str) -> None:
    """No markup from a run survives: the payloads appear only escaped, one script (ours)."""
    assert "<img src=x" not in html and "<script>document" not in html
    assert len(re.findall(r"<script", html)) == 1
    assert "&lt;img src=x onerror=" in html


def test_runs_page_lists_runs_with_rates_intervals_and_filters(site):
    html = text(site, urls.runs())
    assert re.findall(r'<tr class="run" data-run="([^"]+)"', html) == [NEW, OLD]
    assert re.search(r'<span title="3/4, interval 30.1%–95.4%, baseline 100.0%">75.0%</span>', html)
    assert "1.0.0" in html and "1.1.0" in html
    assert '<option value="baseline">' in html and urls.compare(OLD, NEW) in html


def test_run_page_has_the_report_content_and_links(site):
    html = text(site, urls.run(OLD))
    assert 'id="next-step"' in html and 'id="reviewer-change"' in html and 'id="failing-cases"' in html
    assert urls.case(vf.HOSTILE_ID) in html and urls.transcript(OLD, vf.HOSTILE_ID, 1) in html
    assert "skills/data-loader/SKILL.md:7" in html or "fixtures/block/data-loader/SKILL.md:7" in html
    assert_inert(html)


def test_case_page_has_the_strip_first_failure_and_flakiness(site):
    html = text(site, urls.case(vf.HOSTILE_ID))
    assert re.findall(r'class="case-run" data-run="([^"]+)" data-failed="(\d)"', html) == [(NEW, "1"), (OLD, "1")]
    assert f"first failed in <a href=\"../{urls.run(OLD)}\">{OLD}</a>" in html
    assert 'class="history" role="img"' in html and html.count('class="cell fail"') == 4
    assert "flaky in 100.0% of the last 2 runs" in html  # the window holds 8; there are 2
    assert_inert(html)


def test_transcript_page_shows_timeline_final_message_and_grades(site):
    html = text(site, urls.transcript(OLD, vf.HOSTILE_ID, 1))
    assert html.count('<tr class="call">') == 2 and 'id="final"' in html and "denied" in html
    assert re.search(r'<th scope="row">verdict</th><td class="inline bad" data-label="result">✗ FAIL</td>'
                     r'<td data-label="why">wrong_tier: expected BLOCK', html)
    assert_inert(html)


def test_transcript_page_shows_each_calls_result_as_text(site):
    html = text(site, urls.transcript(OLD, vf.HOSTILE_ID, 1))
    results = re.findall(r'<pre class="result" tabindex="0">(.*?)</pre>', html, re.S)
    assert len(results) == 1 and html_lib.unescape(results[0]) == "---\nname: " + rf.HOSTILE + "\n---\n"
    assert "12 more characters not kept" in html
    assert html.count('class="muted no-result">not recorded') == 1  # the call whose result the stream did not show
    assert_inert(html)


def test_compare_page_has_flips_with_their_test_and_the_diffs(tmp_path):
    reports = tmp_path / "reports"
    rf.write_run_dir(reports / OLD, rf.passing_summary().model_copy(update={"run_id": OLD,
                     "reviewer": rf.reviewer_records()[1]}))
    rf.write_run_dir(reports / NEW, rf.summary(run_id=NEW, started_at="2026-01-02T00:00:00Z"))
    html = text(site_for([reports]), urls.compare(OLD, NEW))
    assert re.search(r'data-case="block-missing-description" data-kind="regressed"', html)
    assert "p " in html and ("credible" in html or "could be noise" in html)
    assert re.search(r'<th scope="row">secret-in-file</th><td>critical · mechanical</td><td>absent</td>', html)
    assert re.search(r'<th scope="row">tone-kind</th><td>absent</td><td>suggestion · judgement</td>', html)
    assert "reviewer/evaluator/references/rubric.md" in html


def test_trend_page_marks_tested_changes_and_drift(site):
    html = text(site, urls.trend())
    assert 'id="chart-trend"' in html and 'id="chart-trend-narrow"' in html and "CLI: 1.0.0 → 1.1.0" in html
    assert 'class="mark-drift"' in html


def test_trend_page_marks_no_reviewer_change_where_only_the_recording_changed(tmp_path):
    # An older rubricgate fingerprinted the reviewer files alone, a newer one adds rubricgate.yaml's
    # sections: the first run on new code was marked "reviewer files changed".
    files, _ = rf.reviewer_records()
    newer = files.model_copy(update={"fingerprint": "b" * 64,
                                     "digests": files.digests | {"rubricgate.yaml#agent": "d" * 64}})
    for i, reviewer in enumerate([files.model_copy(update={"fingerprint": "a" * 64}), newer]):
        run_id = f"2026010{i + 1}T000000Z-abc12{i}"
        rf.write_run_dir(tmp_path / "reports" / run_id,
                         rf.summary(run_id=run_id, started_at=f"2026-01-0{i + 1}T00:00:00Z", reviewer=reviewer))
    html = text(site_for([tmp_path / "reports"]), urls.trend())
    assert 'id="chart-trend"' in html and "reviewer files changed</span>" not in html
    assert 'class="mark-tested"' not in html


def test_report_is_the_runs_own_file(site, tmp_path):
    (tmp_path / "reports" / OLD / "report.html").write_text("<!DOCTYPE html><p>the run's report</p>")
    assert text(site, urls.report(OLD)) == "<!DOCTYPE html><p>the run's report</p>"
    assert "rubricgate report" in text(site, urls.report(NEW))  # none written: rendered from the summary


def test_a_reports_links_to_transcript_files_reach_the_viewers_pages(tmp_path, monkeypatch):
    # report.html links a trial past its inline budget to transcripts/<file>.json beside it; the
    # viewer serves no file of a run folder, so that link answered 404, in a static build too.
    from rubricgate.models.results import Summary
    from rubricgate.reports import html_context
    from rubricgate.reports.html import render_html

    run = vf.write_runs(tmp_path / "reports", count=1)[0]
    summary = Summary.model_validate_json((run / "summary.json").read_text())
    monkeypatch.setattr(html_context, "INLINE_PASSING", 0)
    (run / "report.html").write_text(render_html(summary, run), encoding="utf-8")
    site = site_for([tmp_path / "reports"])
    path = urls.report(summary.run_id)
    hrefs = re.findall(r'href="([^"#]+)"', text(site, path))
    assert hrefs and not [h for h in hrefs if h.startswith("transcripts/")]
    trial = next(t for c in summary.cases for t in c.trials if t.transcript)
    target = "../../" + urls.transcript(summary.run_id, trial.case_id, trial.trial)
    assert target in hrefs and site.page(target[len("../../"):]).status == 200
    site.transcripts = set()  # a static build that wrote no transcript page: the case's page
    assert "../../" + urls.case(trial.case_id) in re.findall(r'href="([^"#]+)"', text(site, path))


@pytest.mark.parametrize("path", ["../etc/passwd", "run/../../x.html", "run/nope.html", "case/x.html",
                                  f"transcript/{urls.slug(OLD)}/9/{urls.slug(vf.HOSTILE_ID)}.html", "summary.json",
                                  f"run/{urls.slug(OLD)}/summary.json"])
def test_anything_else_is_not_found(site, path):
    assert site.page(path).status == 404


def test_every_page_carries_a_policy_that_admits_only_its_script(site):
    for path in (urls.runs(), urls.run(OLD), urls.case(vf.HOSTILE_ID), urls.trend()):
        html = text(site, path)
        policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
        policy = html_lib.unescape(policy)
        assert "default-src 'none'" in policy and "script-src 'sha256-" in policy and "connect-src" not in policy
        assert not re.search(r'(src|href)="(https?:)?//', html.replace(rf.summary().run_url, ""))


def test_runs_page_filters_by_the_branch_and_pull_request_a_run_recorded(tmp_path):
    reports = tmp_path / "reports"
    rf.write_run_dir(reports / OLD, rf.summary(run_id=OLD, config={"branch": "rubric/tighten", "pr": 7}))
    rf.write_run_dir(reports / NEW, rf.summary(run_id=NEW, started_at="2026-01-02T00:00:00Z", config={"branch": "main"}))
    html = text(site_for([reports]), urls.runs())
    assert re.search(f'data-run="{OLD}" data-kind="run" [^>]*data-branch="rubric/tighten" data-pr="pr-7"', html)
    assert re.search(f'data-run="{NEW}" data-kind="run" [^>]*data-branch="main" data-pr=""', html)
    assert '<option value="pr-7">PR #7</option>' in html and '<option value="rubric/tighten">' in html


def test_credential_shaped_text_a_reviewed_file_held_is_masked_as_the_report_masks_it(tmp_path):
    """Tool results carry what the reviewer read; a key in a reviewed skill must not reach a page
    (the static site is published)."""
    from rubricgate.models.transcript import ToolCall

    key = "sk-" + "A1b2C3d4E5f6G7h8J9k0"
    run = vf.write_runs(tmp_path / "reports", count=1)[0]
    call = ToolCall(raw_name="Read", name="read", input={"file_path": "SKILL.md"}, step=1,
                    result=f"---\nname: x\n---\nexport OPENAI_API_KEY={key}\n")
    t = rf.transcript(final=f"I found {key} in SKILL.md", calls=[call])
    (run / "transcripts" / "evil-1.json").write_text(t.model_dump_json())
    html = text(site_for([tmp_path / "reports"]), urls.transcript(run.name, vf.HOSTILE_ID, 1))
    assert key not in html and html.count("&lt;masked:api-key&gt;") == 2


def test_a_run_page_is_made_again_when_its_summary_or_a_link_changes(tmp_path):
    """Pages are kept by what they are made of (a 2,000-case run's page is ~0.5 s to make): a
    summary written again, a report.html written since, or a newer run shown as previous."""
    reports = tmp_path / "reports"
    old, new = vf.write_runs(reports)
    site = site_for([reports])
    assert "1.1.0" in text(site, urls.run(NEW))
    summary = rf.summary(run_id=NEW, started_at="2026-01-02T00:00:00Z").model_copy(update={"agent_version": "9.9.9"})
    rf.write_run_dir(new, summary)
    changed = text(site, urls.run(NEW))
    assert "9.9.9" in changed and "1.1.0" not in changed
    (old / "report.html").unlink(missing_ok=True)
    assert 'id="full-report"' not in text(site, urls.run(OLD))
    (old / "report.html").write_text("<!DOCTYPE html><p>report</p>")
    assert 'id="full-report"' in text(site, urls.run(OLD))


def test_a_kept_page_is_not_made_again(site, monkeypatch):
    made = text(site, urls.run(OLD))
    compared = text(site, urls.compare(OLD, NEW))
    monkeypatch.setattr(site.catalog, "summary", lambda ref: pytest.fail(f"summary of {ref.key} parsed again"))
    assert text(site, urls.run(OLD)) == made and text(site, urls.compare(OLD, NEW)) == compared


def test_a_served_viewer_keeps_the_last_eight_pages_it_made(tmp_path, monkeypatch):
    # docs/viewer.md: a served viewer keeps the last eight run and comparison pages rendered.
    from rubricgate.view import site as site_module

    ids = [f"202601{day:02d}T000000Z-abc1{day:02d}" for day in range(1, site_module.PAGES_KEPT + 2)]
    for day, run_id in enumerate(ids, start=1):
        at = f"2026-01-{day:02d}T00:00:00Z"
        rf.write_run_dir(tmp_path / "reports" / run_id,
                         rf.passing_summary().model_copy(update={"run_id": run_id, "started_at": at}))
    site = site_for([tmp_path / "reports"])
    for run_id in ids:  # one more than it keeps: the first made is the one let go
        text(site, urls.run(run_id))
    parsed: list[str] = []
    real = site.catalog.summary
    monkeypatch.setattr(site.catalog, "summary", lambda ref: parsed.append(ref.key) or real(ref))
    for run_id in reversed(ids[1:]):
        text(site, urls.run(run_id))
    assert parsed == []
    text(site, urls.run(ids[0]))
    assert parsed == [ids[0]]


def test_a_run_page_dates_the_continuation_its_run_named(tmp_path):
    """The page re-showed "continue this run: rubricgate run --continue reports/RUN" as if it were
    today's: after a baseline update the command is refused as another design. The viewer does not
    load the suite to check it (every page): it says the step is the run's."""
    from rubricgate.models.results import Decision, GateDetail

    step = f"continue this run: rubricgate run --continue reports/{OLD}"
    decision = Decision(status="inconclusive", exit_code=2, reasons=["verdict: INCONCLUSIVE"],
                        warnings=[f"next: {step}"])
    rf.write_run_dir(tmp_path / "reports" / OLD, rf.summary(run_id=OLD, decision=decision,
                                                            gate=GateDetail(next=step)))
    html = text(site_for([tmp_path / "reports"]), urls.run(OLD))
    assert f"reports/{OLD} (at the time of the run, 2026-01-01 00:01; after a later" in html, html
    assert html.count(f"--continue reports/{OLD}") == html.count("at the time of the run"), html


def _errored(case_id: str, n: int) -> rf.TrialResult:
    """A trial whose agent failed for infrastructure reasons: never judged."""
    why = rf.Grade(passed=False, category="errored", reason="infrastructure failure (start): exit 1")
    return rf.trial(case_id, n, "ERROR", verdict=why).model_copy(update={"errored": True})


def test_case_page_counts_errored_trials_neither_passing_nor_failing(tmp_path):
    # A case whose every trial errored was never judged: the reports say "no judged trial failed",
    # so its page must not say it failed in that run, nor draw it as a run of failures.
    case_id = "pass-weekly-revenue"
    older = rf.summary(run_id=OLD, started_at="2026-01-01T00:00:00Z", cases=[rf.CaseSummary(
        id=case_id, source="fixture", expected_tier="PASS", trials=[_errored(case_id, 1), _errored(case_id, 2)])])
    newer = rf.summary(run_id=NEW, started_at="2026-01-02T00:00:00Z", cases=[rf.CaseSummary(
        id=case_id, source="fixture", expected_tier="PASS",
        trials=[rf.trial(case_id, 1, "PASS"), _errored(case_id, 2)])])
    for s in (older, newer):
        rf.write_run_dir(tmp_path / "reports" / s.run_id, s)
    html = text(site_for([tmp_path / "reports"]), urls.case(case_id))
    assert "first failed" not in html and "never failed in these 2 run(s)" in html
    assert re.findall(r'class="case-run" data-run="([^"]+)" data-failed="(\d)"', html) == [(NEW, "0"), (OLD, "0")]
    assert re.findall(r'data-label="passing">([^<]+)<', html) == ["100.0%", "n/a"]
    assert 'class="mark" aria-hidden="true">✗' not in html and "col failed" not in html
