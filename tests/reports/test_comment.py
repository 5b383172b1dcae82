"""The PR comment, cause first: its first line says the decision, the dimension and its drop, the
cause and the cases; then the next step, the rates, the failing cases with their trials grouped;
the statistics and the run folded. Escaping, the marker, the golden file, and the README tour's
REGRESSION under 4 KB."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.errors import GateInputError  # noqa: E402
from rubricgate.gating.changes import change_line  # noqa: E402
from rubricgate.models.coverage import RuleChange  # noqa: E402
from rubricgate.models.results import Decision, GateDetail, Grade, RateRow  # noqa: E402
from rubricgate.reports.comment import (  # noqa: E402
    MARKER, MAX_FAILING_CASES, delta_label, escape_md, render_body, render_comment,
)
from rubricgate.reports.step_summary import append_step_summary  # noqa: E402

ROOT = Path(__file__).parents[2]


def first_line(body: str) -> str:
    return body.split("\n", 1)[0]


def test_transcript_html_and_mentions_are_inert():
    out = escape_md("<script>x</script> @octocat | `code` [link](http://x) \x00\x07 \n new line")
    assert "<" not in out and ">" not in out and "\n" not in out and "\x00" not in out and "\x07" not in out
    assert "@octocat" not in out and "\\|" in out and "\\`" in out and "\\[" in out


def test_reason_cannot_forge_the_marker():
    s = rf.summary()
    grades = s.cases[1].trials[0].grades
    grades["verdict"] = grades["verdict"].model_copy(update={"reason": MARKER})
    assert render_comment(s).count(MARKER) == 1


def test_a_hostile_case_id_in_the_first_line_is_inert():
    s = rf.summary()
    s.cases[1] = s.cases[1].model_copy(update={"id": "<img src=x onerror=alert(1)> @octocat"})
    line = first_line(render_body(s))
    assert "<img" not in line and "&lt;img" in line and "@octocat" not in line


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


def test_no_baseline_and_unmeasured_rates_are_labelled_not_guessed():
    assert delta_label(RateRow(rate=0.5, passes=1, trials=2, status="no_baseline")) == "no baseline"
    # a budget that refused every trial leaves no rate; the baseline exists, the measurement does not
    assert delta_label(RateRow(rate=None, passes=0, trials=0, baseline=1.0)) == "not measured"


def test_a_regression_says_what_dropped_why_and_where_in_its_first_line():
    changes = [RuleChange(rule="fm-description-required", change="severity", detail="severity critical -> warning",
                          cases=["block-missing-description"]),
               RuleChange(rule="tone-kind", change="added", detail="added (suggestion)", cases=["other"])]
    line = first_line(render_body(rf.summary(rule_changes=changes)))
    assert line.startswith("### ❌ rubricgate **REGRESSION**: verdict 75.0% vs 100.0% baseline (-25.0 pp)")
    # the cause is the changed rule the failing case exercises, not every change
    assert "after fm-description-required severity critical → warning;" in line and "tone-kind" not in line
    assert line.endswith("failing: block-missing-description")


def test_without_recorded_rule_changes_the_cause_is_the_rule_table_against_the_baselines():
    line = first_line(render_body(rf.summary()))
    assert "after fm-description-required severity critical → warning" in line


def test_the_next_step_and_the_rates_come_before_the_failing_cases():
    body = render_body(rf.summary())
    assert body.index("**Next step:**") < body.index("| dimension | rate | baseline | change |") < body.index(
        "**Failing cases**")
    assert "| verdict | 75.0% (3/4) | 100.0% | ❌ -25.0 pp: REGRESSION |" in body


def test_trials_are_grouped_per_case_and_the_finding_carries_its_issue_text():
    body = render_body(rf.summary())
    assert "**block-missing-description** (expected BLOCK) — 2/2 trials failed: verdict wrong\\_tier:" in body
    assert "(trial #1); tool\\_use forbidden\\_tool: bash is forbidden (trial #2)" in body
    assert "| rule | severity | file:line | issue | quote |" in body and "| stub body |" in body
    assert "trial 1 (verdict)" not in body  # no line per failed trial any more


def test_a_second_case_with_the_same_findings_points_to_the_first():
    twin = rf.cases()[1].model_copy(update={"id": "block-twin"})
    body = render_body(rf.summary(cases=[*rf.cases(), twin]))
    assert body.count("| rule | severity | file:line | issue | quote |") == 1
    assert "Trial 1 findings (PASS): the same as block-missing-description's." in body


def test_the_statistics_and_the_run_are_folded():
    plan = {"margin": 0.05, "dimensions": [{"dimension": "verdict", "detectable_budget": 0.085, "detectable_first": 0.2}]}
    looks = [{"look": 1, "trials": 30, "status": "inconclusive", "stop": False, "why": "undecided: more trials"},
             {"look": 2, "trials": 60, "status": "regression", "stop": True, "why": "a regression is established"}]
    body = render_body(rf.summary(gate=GateDetail(plan=plan, looks=looks)))
    folded = body[body.index("<details><summary>Statistics"):]
    assert "- Plan: smallest drop detectable with 80% power at the full budget: verdict 8.5 points" in folded
    assert "- Adaptive rounds: 2 look(s), 60 trials; a regression is established" in folded
    assert body.index("**Failing cases**") < body.index("<details><summary>Statistics")
    assert "<details><summary>The run: reviewer vs baseline" in body
    assert "Plan:" not in render_body(rf.summary())  # a fixed-design run has no plan to show


def test_flaky_is_only_mixed_outcomes_and_an_unconfirmed_drop_has_its_own_grouped_line():
    gate = GateDetail(unconfirmed=["fixture-a: verdict 0/3 vs baseline 3/6 (unconfirmed drop; p 1)",
                                   "fixture-b: verdict 0/3 vs baseline 4/6 (unconfirmed drop; p 1)"])
    body = render_body(rf.summary(gate=gate, flaky_cases=["block-missing-description"]))
    lines = [line for line in body.splitlines() if "fixture-a" in line]
    assert len(lines) == 1 and "2 unconfirmed drop(s)" in lines[0] and "fixture-a, fixture-b" in lines[0]
    assert "flaky" not in lines[0]
    assert "- 1 flaky case(s) (mixed outcomes across their trials): block-missing-description" in body


def test_an_undecided_run_that_exits_2_says_inconclusive_first():
    rates = rf.rates() | {"verdict": RateRow(rate=0.9, passes=9, trials=10, baseline=0.95, delta=-0.05,
                                             status="inconclusive", label="inconclusive: the drop could be up to 12.3 points")}
    s = rf.summary(rates=rates, decision=Decision(status="inconclusive", exit_code=2, method="statistical",
                                                  reasons=["verdict: could not judge at this size"]))
    line = first_line(render_body(s))
    assert line.startswith("### ❔ rubricgate **INCONCLUSIVE**: verdict 90.0% vs 95.0% baseline (-5.0 pp): inconclusive: the drop")


def test_inconclusive_passed_by_config_says_so_first_and_never_regression():
    rates = rf.rates() | {"verdict": RateRow(rate=0.9, passes=9, trials=10, baseline=1.0, delta=-0.1,
                                             status="inconclusive")}
    s = rf.summary(rates=rates, decision=Decision(status="inconclusive", exit_code=0, method="statistical"))
    body = render_body(s)
    assert first_line(body).startswith("### ❔ rubricgate **INCONCLUSIVE** (passed by gate.inconclusive: pass):")
    assert "| verdict | 90.0% (9/10) | 100.0% | ❔ -10.0 pp: inconclusive (drop; run more trials) |" in body
    assert "REGRESSION" not in body


def test_a_change_no_case_exercises_is_named_in_the_first_line():
    change = RuleChange(rule="scope-single-purpose", change="severity", detail="severity suggestion -> warning")
    s = rf.passing_summary().model_copy(update={
        "rule_changes": [change],
        "decision": Decision(status="inconclusive", exit_code=2, reasons=[change_line(change)])})
    body = render_body(s)
    assert first_line(body) == (
        "### ❔ rubricgate **INCONCLUSIVE**: scope-single-purpose severity suggestion → warning and no case exercises it")
    assert "**Next step:** add a case that exercises scope-single-purpose: rubricgate coverage --suggest DIR" in body


def test_a_suspected_collapse_is_named_in_the_first_line():
    gate = GateDetail(suspected=["fixture-x: verdict 0/3 vs baseline 3/3 (collapse suspected, not testable at this size)"])
    s = rf.passing_summary().model_copy(update={"gate": gate, "decision": Decision(
        status="inconclusive", exit_code=2, method="statistical", reasons=["fixture-x: collapse suspected"])})
    assert first_line(render_body(s)) == (
        "### ❔ rubricgate **INCONCLUSIVE**: every trial of a case failed where its baseline never did, not testable "
        "at this size; collapse suspected: fixture-x")


def test_pass_says_what_held():
    body = render_comment(rf.passing_summary())
    assert "### ✅ rubricgate **PASS**: no rate below baseline (verdict 100.0%, tool\\_use 100.0%, trajectory 100.0%)" in body
    assert "**Failing cases**" not in body and "REGRESSION" not in body


def test_an_errored_run_says_it_could_not_judge_and_names_the_cases_without_a_judged_trial():
    errored = Grade(passed=False, category="errored", reason="api_error after 3 attempts")
    cases = [c.model_copy(update={"trials": [t.model_copy(update={"errored": True, "grades": {
        d: errored for d in t.grades}}) for t in c.trials]}) if c.id == "pass-weekly-revenue" else c for c in rf.cases()]
    s = rf.summary(cases=cases, decision=Decision(status="error", exit_code=2, reasons=[
        "could not judge: 2 of 4 trials errored (infrastructure; gate.max_errored is 0)"]))
    body = render_body(s)
    line = first_line(body)
    assert line.startswith("### ⚠️ rubricgate **COULD NOT JUDGE**: 2 of 4 trial(s) errored (infrastructure")
    assert line.endswith("no judged trial: pass-weekly-revenue")
    assert "**Errored trials:**" in body and "not gated" in body


def test_an_interrupted_run_says_what_ran_and_what_did_not():
    cases = [c.model_copy(update={"trials": []}) if c.id == "pass-weekly-revenue" else c for c in rf.cases()]
    s = rf.summary(cases=cases, complete=False, decision=Decision(status="error", exit_code=2, method="statistical",
                                                                  reasons=["run interrupted after 2 of 4 trials"]))
    body = render_body(s)
    assert first_line(body) == ("### ⚠️ rubricgate **COULD NOT JUDGE**: the run was interrupted after 2 trial(s) of 1 case(s); "
                                "1 case(s) did not run")
    assert "**Partial run:** ran: 2 trial(s) of 1 case(s)" in body and "did not run: 1 case(s): pass-weekly-revenue" in body


def test_a_baseline_run_says_it_is_not_gated():
    s = rf.passing_summary().model_copy(update={"kind": "baseline", "decision": Decision(status="baseline", exit_code=0)})
    assert first_line(render_body(s)).startswith("### 📏 rubricgate **BASELINE**: measured 2 case(s) × 1 trial(s) for baseline.json")


def test_many_failing_cases_are_told_in_full_up_to_a_bound_and_named_after_it():
    many = [c.model_copy(update={"id": f"case-{i:02d}"}) for i in range(MAX_FAILING_CASES + 4) for c in rf.cases()[1:]]
    body = render_body(rf.summary(cases=many))
    assert body.count("Why it matters:") == MAX_FAILING_CASES
    assert "… and 4 more failing case(s): case-05 (2/2)" in body


def test_comment_golden():
    rf.assert_golden("comment.md", rf.scrub(render_comment(rf.summary())))


def test_step_summary_unset_writes_nothing():
    assert append_step_summary(rf.summary(), env={}) is None


def test_step_summary_appends_the_same_first_line(tmp_path):
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    append_step_summary(rf.summary(), env={"GITHUB_STEP_SUMMARY": str(target)})
    text = target.read_text()
    assert text.startswith("earlier step\n### ❌ rubricgate **REGRESSION**: verdict") and MARKER not in text


def test_step_summary_unwritable_is_input_error(tmp_path):
    with pytest.raises(GateInputError, match="GITHUB_STEP_SUMMARY"):
        append_step_summary(rf.summary(), env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "dir.md")})


def test_cost_line_only_when_spend_was_reported():
    assert "Cost:" not in render_body(rf.summary(cost={"cost_usd": 0.0, "input_tokens": 0}))
    body = render_body(rf.summary(cost={"cost_usd": 1.5, "input_tokens": 1200, "output_tokens": 300}))
    assert "Cost: $1.5000 · 1200 input / 300 output tokens" in body


TOKEN = "ghp_" + "Zk8abcdefghijklmnopqrstu0123"


def _leaky_summary():
    s = rf.summary()
    first = s.cases[1].trials[0]
    first.findings[0].quote = f"    token: {TOKEN}"
    first.findings[0].issue = f"the file holds {TOKEN}"
    first.grades["verdict"] = first.grades["verdict"].model_copy(
        update={"reason": f"expected BLOCK, got PASS; the reviewer missed {TOKEN}"})
    return s


def test_credential_shaped_quotes_issues_and_reasons_are_masked_in_the_comment():
    body = render_comment(_leaky_summary())
    assert TOKEN not in body and TOKEN.replace("_", "\\_") not in body and "Zk8abcdefgh" not in body
    assert "token: &lt;masked:github-token&gt;" in body and "the file holds &lt;masked:github-token&gt;" in body


def _with_new_cases():
    gate = GateDetail(shared_cases=2, new_cases=["brand-new"], interval="x",
                      new_case_rates={"verdict": RateRow(rate=0.0, passes=0, trials=3, status="no_baseline")})
    return rf.summary(gate=gate)


def test_new_cases_are_reported_beside_the_shared_case_rates_in_comment_html_and_terminal(tmp_path):
    from rubricgate.reports.html import render_html
    from rubricgate.reports.terminal import rate_lines

    s = _with_new_cases()
    line = "New cases (not in baseline.json, not in the rates above): 1 case(s): verdict 0.0% (0/3)"
    assert line in render_comment(s)
    assert "Rates, baseline and delta are over 2 shared case(s);" in render_comment(s)
    assert line in render_html(s, rf.write_run_dir(tmp_path / "run", s), history=[])
    assert any(line in x for x in rate_lines(s))
    assert "New cases" not in render_comment(rf.summary())


def test_the_statistics_line_counts_only_the_shared_cases_the_rates_cover(tmp_path):
    """39 shared cases, 3 of them with every trial errored: the rates are over 36 of them, as the
    gate's drop line says, not over "the 39 case(s) both runs share"."""
    from rubricgate.reports.html import render_html

    s = rf.summary(gate=GateDetail(shared_cases=39, judged_cases=36, interval="x"))
    said = "Rates, baseline and delta are over 36 of 39 shared case(s) (3 with no judged trial)"
    assert said in render_comment(s) and "39 case(s) both runs share" not in render_comment(s)
    assert said in render_html(s, rf.write_run_dir(tmp_path / "run", s), history=[])
    old = rf.summary(gate=GateDetail(shared_cases=39, interval="x"))  # a summary.json from before the count
    assert "over 39 shared case(s);" in render_comment(old)


def test_credential_shaped_reasons_are_masked_in_the_terminal_summary():
    from rubricgate.reports.terminal import render_terminal

    out = render_terminal(_leaky_summary(), "/nowhere")
    assert "Zk8abcdefgh" not in out and "<masked:github-token>" in out


def test_the_readme_tours_regression_comment_tells_what_and_why_first_in_under_4_kb(tmp_path):
    from rubricgate.pipeline import RunOptions, run_suite
    from tests.conftest import set_severity, tour_repo

    repo = tour_repo(tmp_path / "repo")
    set_severity(repo, "fm-description-required", "warning")
    outcome = run_suite(RunOptions(repo=repo))
    comment = (outcome.run_dir / "comment.md").read_text(encoding="utf-8")
    assert outcome.exit_code == 1 and len(comment.encode("utf-8")) <= 4096, len(comment.encode("utf-8"))
    line = comment.splitlines()[1]
    for part in ("REGRESSION", "verdict 94.9% vs 100.0% baseline (-5.1 pp)",
                 "after fm-description-required severity critical → warning",
                 "failing: block-missing-description, fixture-data-loader"):
        assert part in line, line


def test_a_warning_with_its_advice_at_the_end_is_shown_to_its_end():
    """The within-run dependence warning's advice (`rubricgate baseline update measures in
    sessions`) comes after ~300 characters of evidence: the comment cut it at 200."""
    advice = ("fixture-x: verdict 0/5 vs baseline 10/10 (collapse suspected, not testable under within-run "
              "dependence; per-case exact p, Holm over cases and dimensions, 0.0021); one run's failing trials may "
              "be one repeated answer: rubricgate baseline update measures in sessions")
    decision = Decision(status="inconclusive", exit_code=2, reasons=["verdict: INCONCLUSIVE"], warnings=[advice])
    body = render_comment(rf.summary(decision=decision))
    assert escape_md("rubricgate baseline update measures in sessions") in body, body
