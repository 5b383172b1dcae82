"""report.html's structure and escaping, without a browser (test_browser_report.py has that):
the decision first, the cause line, the next step and the rates before the failing cases; each
state told truthfully; the passing cases collapsed; a 1,000-case run under 1 MB."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.errors import GateInputError  # noqa: E402
from rubricgate.models.results import CaseSummary, Decision, GateDetail, Grade, RateRow  # noqa: E402
from rubricgate.reports import html as html_module  # noqa: E402
from rubricgate.reports import html_context  # noqa: E402
from rubricgate.reports.html import render_html, write_html  # noqa: E402
from rubricgate.reports.replay import trial_failed  # noqa: E402


@pytest.fixture
def page(tmp_path) -> str:
    run = rf.write_run_dir(tmp_path / "run")
    return render_html(rf.summary(), run, history=[rf.passing_summary()])


def test_unwritable_output_is_input_error(tmp_path):
    run = rf.write_run_dir(tmp_path / "run")
    with pytest.raises(GateInputError, match="cannot write the report"):
        write_html(rf.summary(), run, out=tmp_path / "missing" / "r.html")


def test_transcript_payloads_are_escaped(page):
    assert "<script>document.title" not in page and "<img src=x" not in page
    assert "&lt;script&gt;document.title=&#x27;PWNED-SCRIPT" in page
    assert "\x00" not in page and "\\x00\\x07" in page
    assert len(re.findall(r"<script", page)) == 1  # the report's own, nothing from a transcript


def test_self_contained_no_external_resources(page):
    # The one outside link is to the CI run: navigation, not a resource the page loads.
    link = '<a id="run-link" href="https://github.com/octo/repo/actions/runs/42">workflow run</a>'
    assert page.count(link) == 1
    assert not re.search(r'(src|href)="(?!data:|#|transcripts/)', page.replace(link, ""))
    assert len(re.findall(r'<svg xmlns="http://www.w3.org/2000/svg"[^>]* id="chart-', page)) == 1  # the trend


def test_csp_admits_only_own_script_by_hash(page):
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src &#x27;none&#x27;" in csp and "script-src &#x27;sha256-" in csp
    script_src = re.search(r"script-src ([^;]+)", csp).group(1)
    assert "unsafe-inline" not in script_src and "unsafe-eval" not in script_src


def test_the_decision_its_line_the_next_step_and_the_rates_come_first(page):
    order = [page.index(marker) for marker in ('id="decision"', 'id="lead"', 'id="next-step"', 'id="rates"',
                                               'id="failing-cases"', 'id="statistics"', 'id="cases"')]
    assert order == sorted(order)
    lead = re.search(r'<div class="lead regression" id="lead"><p class="line">(.*?)</p>', page).group(1)
    assert re.sub(r"<[^>]+>", "", lead) == ("REGRESSION: verdict 75.0% vs 100.0% baseline (-25.0 pp) after "
                                           "fm-description-required severity critical → warning; tone-kind added "
                                           "(suggestion) (+1 more rule changes); failing: block-missing-description")
    assert "<main id=\"main\"" in page and "<header" in page and "<footer" in page  # landmarks


def test_landmarks_scroll_regions_and_outcome_glyphs(page):
    assert page.count("<main") == 1 and 'class="skip" href="#main"' in page
    regions = re.findall(r'<div class="scroll" tabindex="0" role="region" aria-[a-z]+="[^"]+">', page)
    assert len(regions) >= 4  # the rates, findings and case tables scroll inside, reachable by keyboard
    assert re.search(r'<a class="cell fail" href="#[^"]+" title="trial 1: failed verdict wrong_tier"[^>]*>✗</a>', page)
    assert re.search(r'<td class="inline" data-label="trials"><a href="#case-pass-weekly-revenue-[0-9a-f]+-t1">✓ 2/2 passed</a>',
                     page)  # a passing case: one line, its first trial one link away
    assert '<pre class="final" tabindex="0">' in page


def test_failing_cases_group_their_trials_and_show_the_findings_issue(page):
    failing = page[page.index('id="failing-cases"'):page.index('id="statistics"')]
    assert "2/2 trials failed: verdict wrong_tier: expected BLOCK, got PASS" in failing
    assert "tool_use forbidden_tool: bash is forbidden (trial #2)" in failing
    assert "<th scope=\"col\">issue</th>" in failing and '<td data-label="issue">stub body</td>' in failing
    assert failing.count('class="trial"') == 2  # each trial folded under its case


def test_passing_cases_are_collapsed_below_the_failing_ones(page):
    cases = page[page.index('id="cases"'):]
    assert 'data-case="block-missing-description"' in cases.split('id="passing-cases"')[0]
    passing = cases[cases.index('<details class="fold" id="passing-cases">'):]
    assert "1 passing case(s)" in passing and 'data-case="pass-weekly-revenue"' in passing


def test_the_meter_draws_rate_baseline_and_margin(tmp_path):
    s = rf.summary(gate=GateDetail(plan={"margin": 0.05, "dimensions": []}))
    page = render_html(s)
    meter = re.search(r'<tr data-status="regression"><th scope="row">verdict</th>.*?</tr>', page).group(0)
    assert 'class="meter regression" role="img" aria-label="75.0% on an axis from 70.0% to 100%; baseline 100.0%"' in meter
    assert 'class="zone" style="left:83.3%;width:16.7%"' in meter and 'class="rate" style="width:16.7%"' in meter
    assert 'class="base" style="left:98.5%"' in meter
    assert "5-point margin below it" in page


def test_no_trend_chart_without_history_and_matplotlib_never_loaded(tmp_path):
    import subprocess

    code = ("import sys, tests.reports_fixtures as rf; from rubricgate.reports.html import render_html; "
            "render_html(rf.summary()); print(sorted(m for m in ('matplotlib', 'numpy') if m in sys.modules))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert got.stdout.strip() == "[]", got.stderr
    assert 'id="chart-trend"' not in render_html(rf.summary(), rf.write_run_dir(tmp_path / "run"))


def test_missing_transcripts_render_a_note_not_a_crash():
    assert "transcript not available" in render_html(rf.summary(), run_dir=None)


def test_statistics_fold_lists_consistency_and_cost_is_in_the_run_fold():
    s = rf.summary(pass_k={"k": 3, "pass_at_k": 1.0, "pass_hat_k": 0.5},
                   cost={"cost_usd": 0.0123, "input_tokens": 10, "output_tokens": 5, "unpriced_trials": 2})
    s.rates["verdict"].low, s.rates["verdict"].high = 0.4, 0.9
    page = render_html(s)
    stats = page[page.index('id="statistics"'):page.index('id="run-details"')]
    assert "pass@3 100.0% · pass^3 50.0%" in stats
    run = page[page.index('id="run-details"'):]
    assert "$0.0123" in run and "2 unpriced trials" in run
    assert "40.0% – 90.0%" in page
    assert "cost not reported" in render_html(rf.summary(cost={}))


def test_an_interrupted_run_says_what_ran_and_what_did_not_and_marks_itself_partial(tmp_path):
    cases = [c.model_copy(update={"trials": []}) if c.id == "pass-weekly-revenue" else c for c in rf.cases()]
    s = rf.summary(cases=cases, complete=False, decision=Decision(
        status="error", exit_code=2, method="statistical", reasons=["run interrupted after 2 of 4 trials"]))
    page = render_html(s, rf.write_run_dir(tmp_path / "run", s))
    assert 'id="partial-mark">PARTIAL RUN<' in page and '<h2 id="partial-h">Partial run</h2>' in page
    assert "did not run: 1 case(s): pass-weekly-revenue" in page and "why: run interrupted after 2 of 4 trials" in page
    assert "Over the judged trials only; not gated." in page
    assert page.count('class="timeline cards"') == 2  # both trials that ran are reachable


def test_an_errored_run_never_says_its_dimensions_are_decided():
    errored = Grade(passed=False, category="errored", reason="api_error")
    cases = [c.model_copy(update={"trials": [t.model_copy(update={"errored": True, "grades": {
        d: errored for d in t.grades}}) for t in c.trials]}) for c in rf.cases()]
    looks = [{"look": 1, "trials": 4, "status": "pass", "stop": True, "why": "every dimension is decided"}]
    s = rf.summary(cases=cases, gate=GateDetail(plan={"margin": 0.05, "dimensions": []}, looks=looks),
                   decision=Decision(status="error", exit_code=2, reasons=["could not judge: 4 of 4 trials errored"]))
    page = render_html(s)
    assert "every dimension is decided" not in page
    assert "the rounds stopped, then the run could not be judged" in page
    assert "4 of 4 trial(s) errored (infrastructure" in page


@pytest.mark.parametrize("status, text", [("pass", "PASS"), ("regression", "REGRESSION"),
                                          ("inconclusive", "INCONCLUSIVE"), ("error", "COULD NOT JUDGE"),
                                          ("baseline", "BASELINE")])
def test_every_decision_has_its_badge_text_and_style(status, text):
    page = render_html(rf.summary(decision=Decision(status=status, exit_code=0 if status in ("pass", "baseline") else 2)))
    badge = re.search(r'<span id="decision" class="decision ([a-z]+)"><span aria-hidden="true">(.)</span> ([A-Z ]+)</span>',
                      page)
    assert badge.group(1) == status and badge.group(3) == text
    assert f".decision.{status} {{" in page  # a rule of its own in the stylesheet


def test_past_the_inline_budget_passing_trials_link_their_transcript_failing_ones_stay_inline(tmp_path, monkeypatch):
    later = CaseSummary(id="pass-later", source="fixture", expected_tier="PASS",
                        trials=[rf.trial("pass-later", 1, "PASS"), rf.trial("pass-later", 2, "PASS")])
    summary = rf.summary(cases=[*rf.cases(), later])
    run = rf.write_run_dir(tmp_path / "run", summary)
    trials = [t for c in summary.cases for t in c.trials]
    failing = [t for t in trials if trial_failed(t)]
    read: list[str] = []
    real_load = html_module._load
    monkeypatch.setattr(html_module, "_load", lambda d, t: read.append(t.transcript) or real_load(d, t))
    monkeypatch.setattr(html_context, "INLINE_PASSING", 2)  # the first passing case's two trials
    page = render_html(summary, run)
    assert set(read) == {t.transcript for t in failing} | {"transcripts/pass-weekly-revenue-1.json",
                                                             "transcripts/pass-weekly-revenue-2.json"}
    assert re.search(r'data-case="pass-weekly-revenue"[^>]*>.*?<a href="#case-pass-weekly-revenue-[0-9a-f]+-t1">', page)
    later_row = re.search(r'data-case="pass-later"[^>]*>.*?</tr>', page).group(0)
    assert '<a href="transcripts/pass-later-1.json">✓ 2/2 passed</a>' in later_row  # past the budget: its file
    assert (run / "transcripts/pass-later-1.json").is_file()
    for t in failing:  # a failing trial's timeline is inlined, whatever the passing budget
        assert f'id="{html_context.anchor(t.case_id)}-t{t.trial}"' in page


def test_past_the_fiftieth_failing_case_a_failing_trial_links_its_transcript(tmp_path, monkeypatch):
    # docs/viewer.md said failing trials' timelines are always inlined: the report inlines
    # those of the first SHOWN_FAILING failing cases, and links the rest's transcript files.
    summary = rf.summary()
    run = rf.write_run_dir(tmp_path / "run", summary)
    failed = next(t for c in summary.cases for t in c.trials if trial_failed(t))
    inlined = f'id="{html_context.anchor(failed.case_id)}-t{failed.trial}"'
    assert inlined in render_html(summary, run)
    monkeypatch.setattr(html_context, "SHOWN_FAILING", 0)  # its case is past the cap
    page = render_html(summary, run)
    assert inlined not in page and f'href="{failed.transcript}"' in page


def test_a_thousand_case_run_stays_under_1_mb_with_its_passing_cases_collapsed():
    page = render_html(rf.thousand_case_summary())  # interactive in a second: tests/view/test_browser_pages.py
    assert len(page.encode("utf-8")) <= 1_000_000, len(page)
    assert page.count("<tr class=\"case\"") == 1000 and page.count('<details class="trial"') <= 20 + 100


def test_the_page_is_made_in_pieces_each_ending_after_an_element():
    """A writer holds one piece at a time: the thousand-case page comes in pieces of about
    PIECE_CHARS (its passing table is not one piece), each cut just after a '>' (never inside a
    value, so a secret is never split between two), and together they are the page."""
    summary = rf.thousand_case_summary()
    pieces = list(html_module.html_pieces(summary))
    assert "".join(pieces) == render_html(summary)
    assert len(pieces) > 4 and all(p.endswith(">") for p in pieces[:-1]) and pieces[-1].endswith(">\n")
    assert max(len(p) for p in pieces) < 2 * html_module.PIECE_CHARS, [len(p) for p in pieces]


def test_bodies_rendered_during_the_run_make_the_same_page_as_the_files(tmp_path):
    """prerender_body renders from the transcript in memory; the page must be what rendering
    every trial from its written file gives (escaping included: the fixture holds payloads)."""
    run = rf.write_run_dir(tmp_path / "run")
    summary = rf.summary()
    bodies: html_module.Bodies = {}
    for t in (t for c in summary.cases for t in c.trials):
        html_module.prerender_body(bodies, t, rf.transcript())
    assert bodies and all(b.startswith('<div class="scroll" tabindex="0" role="region" aria-label="tool calls">')
                          for b in bodies.values())
    assert render_html(summary, run, bodies=bodies) == render_html(summary, run)


def test_a_held_body_is_used_and_a_missing_one_is_read_from_its_file(tmp_path, monkeypatch):
    run = rf.write_run_dir(tmp_path / "run")
    summary = rf.summary()
    held, *rest = [t for c in summary.cases for t in c.trials if t.transcript]
    read: list[str] = []
    real_load = html_module._load
    monkeypatch.setattr(html_module, "_load", lambda d, t: read.append(t.transcript) or real_load(d, t))
    page = render_html(summary, run, bodies={held.transcript: "<p>HELD-BODY</p>"})
    assert page.count("HELD-BODY") == 1 and held.transcript not in read
    assert sorted(read) == sorted(t.transcript for t in rest)


def test_prerender_holds_every_failing_trial_and_passing_ones_up_to_the_inline_cap(monkeypatch):
    monkeypatch.setattr(html_context, "INLINE_PASSING", 2)
    summary = rf.summary()
    trials = [t for c in summary.cases for t in c.trials]
    passing = next(t for t in trials if not trial_failed(t))
    failing = next(t for t in trials if trial_failed(t))
    bodies: html_module.Bodies = {}
    for i in range(4):
        html_module.prerender_body(bodies, passing.model_copy(update={"transcript": f"p{i}.json"}), rf.transcript())
    html_module.prerender_body(bodies, failing.model_copy(update={"transcript": "f.json"}), rf.transcript())
    html_module.prerender_body(bodies, failing.model_copy(update={"transcript": ""}), rf.transcript())
    assert sorted(bodies) == ["f.json", "p0.json", "p1.json"]  # no file written: nothing to key it by


def test_credential_shaped_quotes_are_masked_in_the_html_report(tmp_path):
    token = "ghp_" + "Zk8abcdefghijklmnopqrstu0123"
    s = rf.summary()
    s.cases[1].trials[0].findings[0].quote = f"    token: {token}"
    grades = s.cases[1].trials[0].grades
    grades["verdict"] = grades["verdict"].model_copy(update={"reason": f"the reviewer missed {token}"})
    page = render_html(s, rf.write_run_dir(tmp_path / "run", s), history=[])
    assert "Zk8abcdefgh" not in page
    assert "token: &lt;masked:github-token&gt;" in page


def test_a_case_id_with_markup_gets_a_safe_anchor():
    hostile = "<b>x</b> \"y\" z"
    anchor = html_context.anchor(hostile)
    assert re.fullmatch(r"case-[A-Za-z0-9_-]+", anchor) and anchor != html_context.anchor(hostile + " ")
    rate = RateRow(rate=1.0, passes=1, trials=1)
    page = render_html(rf.summary(cases=[CaseSummary(id=hostile, source="t", trials=[rf.trial(hostile, 1)])],
                                  rates={"verdict": rate}))
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


@pytest.mark.parametrize("value", ['<b a="1">&</b>', "sk-ant-api03-" + "a" * 40, "bell\x07", 7, "x" * 500,
                                   "é" * (html_module.SHORT_TEXT + 1)])
def test_escaping_a_value_twice_gives_what_escaping_it_once_does(value):
    # Short values are escaped once a process and kept (tool names, statuses, inputs repeat in
    # every timeline); a kept escape must be the one the uncached path gives, every time.
    once = html_module._escaped(str(value))
    assert html_module.e(value) == once
    assert html_module.e(value) == once
    assert "<b" not in once and "sk-ant-api03-a" not in once and "\x07" not in once
