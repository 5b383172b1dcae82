"""The PR comment: marker, decision, deltas, failures by category, escaping; golden file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.models.results import Decision, Grade, RateRow  # noqa: E402
from rubricgate.reports.comment import (  # noqa: E402
    MARKER, MAX_PER_CATEGORY, delta_label, escape_md, failures_by_category, render_body, render_comment,
)
from rubricgate.reports.step_summary import append_step_summary  # noqa: E402
from rubricgate.errors import GateInputError  # noqa: E402


def test_transcript_html_and_mentions_are_inert():
    out = escape_md("<script>x</script> @octocat | `code` [link](http://x) \x00\x07 \n new line")
    assert "<" not in out and ">" not in out and "\n" not in out and "\x00" not in out and "\x07" not in out
    assert "@octocat" not in out and "\\|" in out and "\\`" in out and "\\[" in out


def test_reason_cannot_forge_the_marker():
    s = rf.summary()
    s.cases[1].trials[0].grades["verdict"].reason = MARKER
    assert render_comment(s).count(MARKER) == 1


@pytest.mark.parametrize("delta,status,label", [
    (-0.25, "regression", "REGRESSION"), (0.1, "ok", "improvement"), (0.0, "ok", "no change"),
    (1e-12, "ok", "no change"), (-1e-9, "ok", "no change"),
    # statistical gate: the label follows the gate, never REGRESSION under a PASS decision
    (-0.1, "inconclusive", "inconclusive (drop; run more trials)"),
    (-0.05, "ok", "drop not established (no bound recorded)"),
])
def test_delta_labels(delta, status, label):
    row = RateRow(rate=0.5, passes=1, trials=2, baseline=0.5 - delta, delta=delta, status=status)
    assert delta_label(row) == label


def test_the_gates_own_label_wins():
    label = "inconclusive: the drop could be up to 12.3 points; run 4 more trials per case"
    row = RateRow(rate=0.9, passes=9, trials=10, baseline=0.95, delta=-0.05, status="inconclusive", label=label)
    assert delta_label(row) == label


def test_no_baseline_is_labelled_not_guessed():
    assert delta_label(RateRow(rate=0.5, passes=1, trials=2, status="no_baseline")) == "no baseline"


def test_unmeasured_rate_is_not_called_no_baseline():
    # a budget that refused every trial leaves no rate; the baseline exists, the measurement does not
    assert delta_label(RateRow(rate=None, passes=0, trials=0, baseline=1.0)) == "not measured"


def test_an_undecided_run_that_exits_2_says_inconclusive_in_its_headline():
    s = rf.summary(decision=Decision(status="inconclusive", exit_code=2, method="statistical",
                                     reasons=["verdict: INCONCLUSIVE: could not judge at this size"]))
    assert render_body(s).startswith("## rubricgate: INCONCLUSIVE (could not judge at this size)")


def test_inconclusive_pass_says_so_in_headline_warning_and_table():
    rates = rf.rates() | {"verdict": RateRow(rate=0.9, passes=9, trials=10, low=0.6, high=0.98, baseline=1.0,
                                             delta=-0.1, status="inconclusive")}
    warning = "verdict rate 90.0% vs baseline 100.0%: below baseline but too few trials to tell (p=0.24)"
    s = rf.summary(rates=rates, decision=Decision(status="inconclusive", exit_code=0, method="statistical",
                                                  warnings=[warning]))
    body = render_body(s)
    assert body.startswith("## rubricgate: INCONCLUSIVE, passed by gate.inconclusive: pass")
    assert "- warning: verdict rate 90.0% vs baseline 100.0%: below baseline but too few trials" in body
    assert "| verdict | 90.0% (9/10) | 60.0% – 98.0% | 100.0% | -10.0 pp | inconclusive (drop; run more trials) |" in body
    assert "| REGRESSION |" not in body


def test_rates_carry_their_interval_and_pass_k_is_shown_for_repeated_trials():
    body = render_body(rf.summary())
    assert "| dimension | rate | interval | baseline | delta | change |" in body
    assert "| verdict | 75.0% (3/4) | 30.1% – 95.4% |" in body
    assert "pass@2 100.0% (some trial passed) · pass^2 50.0% (all 2 trials passed), over all case(s) with 2 trials" in body
    every = rf.summary(pass_k={"k": 2, "cases": 1, "pass_at_k": 1.0, "pass_hat_k": 0.5,
                               "by_k": [{"k": 2, "cases": 1, "pass_at_k": 1.0, "pass_hat_k": 0.5},
                                        {"k": 3, "cases": 1, "pass_at_k": 1.0, "pass_hat_k": 0.0}],
                               "all_pass": {"passes": 3, "trials": 5, "rate": 0.6}})
    body = render_body(every)
    assert "all-dimension pass rate 60.0% (3/5)" in body
    assert "pass^2 50.0% (all 2 trials passed), over 1 case(s) with 2 trials" in body
    assert "pass^3 0.0% (all 3 trials passed), over 1 case(s) with 3 trials" in body
    assert "pass@1" not in render_body(rf.summary(pass_k={"k": 1, "pass_at_k": 1.0, "pass_hat_k": 1.0}))


def test_failures_grouped_by_category_with_reasons():
    groups = failures_by_category(rf.summary())
    assert list(groups) == ["forbidden_tool", "wrong_tier"]
    assert groups["forbidden_tool"][0].reason == "bash is forbidden"


def test_long_category_is_truncated_with_count():
    s = rf.summary()
    bad = s.cases[1].trials[1]
    s.cases[1].trials.extend(bad.model_copy(update={"trial": n}) for n in range(3, MAX_PER_CATEGORY + 8))
    body = render_body(s)
    assert "… and 6 more" in body


def test_pass_has_no_failures_section_and_says_pass():
    body = render_comment(rf.passing_summary())
    assert "rubricgate: PASS" in body and "No failed trials." in body and "REGRESSION" not in body


def test_error_decision_headline():
    s = rf.summary(decision=rf.Decision(status="error", exit_code=2, reasons=["baseline.json unreadable"]))
    assert "ERROR (could not judge)" in render_body(s)


def test_comment_golden():
    rf.assert_golden("comment.md", rf.scrub(render_comment(rf.summary())))


def test_step_summary_unset_writes_nothing(tmp_path):
    assert append_step_summary(rf.summary(), env={}) is None


def test_step_summary_appends(tmp_path):
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    append_step_summary(rf.summary(), env={"GITHUB_STEP_SUMMARY": str(target)})
    text = target.read_text()
    assert text.startswith("earlier step\n") and "rubricgate: REGRESSION" in text and MARKER not in text


def test_step_summary_unwritable_is_input_error(tmp_path):
    with pytest.raises(GateInputError, match="GITHUB_STEP_SUMMARY"):
        append_step_summary(rf.summary(), env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "dir.md")})


def test_uncategorized_failure_still_listed():
    s = rf.summary()
    s.cases[0].trials[0].grades["trajectory"] = Grade(passed=False, reason="")
    assert "**uncategorized**" in render_body(s) and "no reason given" in render_body(s)


def test_cost_line_only_when_spend_was_reported():
    from rubricgate.reports.comment import render_body
    assert "Cost:" not in render_body(rf.summary(cost={"cost_usd": 0.0, "input_tokens": 0}))
    body = render_body(rf.summary(cost={"cost_usd": 1.5, "input_tokens": 1200, "output_tokens": 300}))
    assert "Cost: $1.5000 · 1200 input / 300 output tokens" in body


def test_the_plan_and_the_looks_are_in_the_comment_and_the_html_report():
    from rubricgate.models.results import GateDetail
    from rubricgate.reports.html import render_html

    plan = {"margin": 0.05, "dimensions": [{"dimension": "verdict", "detectable_budget": 0.085, "detectable_first": 0.2}]}
    looks = [{"look": 1, "trials": 30, "status": "inconclusive", "stop": False, "why": "undecided: more trials"},
             {"look": 2, "trials": 60, "status": "pass", "stop": True, "why": "every dimension is decided"}]
    s = rf.summary().model_copy(update={"gate": GateDetail(plan=plan, looks=looks)})
    body = render_body(s)
    assert ("- Plan: smallest drop detectable with 80% power at the full budget: verdict 8.5 points "
            "(first look 20.0 points); margin 5.0 points") in body
    assert "- Adaptive rounds: 2 look(s), 60 trials; every dimension is decided" in body
    html = render_html(s)
    assert '<ul id="plan"><li>Plan: smallest drop detectable' in html
    assert "Plan:" not in render_body(rf.summary())  # a fixed-design run has no plan to show


TOKEN = "ghp_" + "Zk8abcdefghijklmnopqrstu0123"


def _leaky_summary():
    s = rf.summary()
    first = s.cases[1].trials[0]
    first.findings[0].quote = f"    token: {TOKEN}"
    first.grades["verdict"].reason = f"expected BLOCK, got PASS; the reviewer missed {TOKEN}"
    return s


def test_credential_shaped_quotes_are_masked_in_the_comment():
    body = render_comment(_leaky_summary())
    assert TOKEN not in body and TOKEN.replace("_", "\\_") not in body and "Zk8abcdefgh" not in body
    assert "token: &lt;masked:github-token&gt;" in body


def _with_new_cases():
    from rubricgate.models.results import GateDetail

    gate = GateDetail(shared_cases=2, new_cases=["brand-new"], interval="x",
                      new_case_rates={"verdict": RateRow(rate=0.0, passes=0, trials=3, status="no_baseline")})
    return rf.summary(gate=gate)


def test_new_cases_are_reported_beside_the_shared_case_rates_in_comment_html_and_terminal(tmp_path):
    from rubricgate.reports.html import render_html
    from rubricgate.reports.terminal import rate_lines

    s = _with_new_cases()
    line = "New cases (not in baseline.json, not in the rates above): 1 case(s): verdict 0.0% (0/3)"
    assert line in render_comment(s)
    assert "Rates, baseline and delta are over the 2 case(s) both runs share" in render_comment(s)
    assert line in render_html(s, rf.write_run_dir(tmp_path / "run", s), history=[])
    assert any(line in x for x in rate_lines(s))
    assert "New cases" not in render_comment(rf.summary())


def test_credential_shaped_reasons_are_masked_in_the_terminal_summary():
    from rubricgate.reports.terminal import render_terminal

    out = render_terminal(_leaky_summary(), "/nowhere")
    assert "Zk8abcdefgh" not in out and "<masked:github-token>" in out
