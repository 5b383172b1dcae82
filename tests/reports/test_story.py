"""The failing cases' stories (reports/story.py): a trial never judged is never failing."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.models.dimensions import DIMENSIONS  # noqa: E402
from rubricgate.models.results import CaseSummary, Grade  # noqa: E402
from rubricgate.reports.comment import render_body  # noqa: E402
from rubricgate.reports.story import case_stories  # noqa: E402


def case(case_id: str, *trials) -> CaseSummary:
    return CaseSummary(id=case_id, source="fixture", expected_tier="PASS", rates=dict.fromkeys(DIMENSIONS, 1.0),
                       trials=list(trials))


def test_a_trial_the_budget_refused_makes_no_case_failing() -> None:
    """A case whose second trial --max-cost refused was listed under Failing cases, '1/2 trials
    failed: ... not_run: --max-cost spent', beside a runs page that did not count it failing."""
    refused = Grade(passed=False, category="not_run", reason="--max-cost spent")
    crashed = Grade(passed=False, category="errored", reason="agent crashed")
    errored = rf.trial("c-errored", 1, "ERROR", **dict.fromkeys(DIMENSIONS, crashed)).model_copy(update={"errored": True})
    cases = [case("c-budget", rf.trial("c-budget", 1, "PASS"),
                  rf.trial("c-budget", 2, "ERROR", **dict.fromkeys(DIMENSIONS, refused))),
             case("c-errored", errored)]
    summary = rf.summary(cases=cases)
    assert case_stories(summary) == []
    assert "Failing cases" not in render_body(summary)


def test_a_judged_failure_beside_a_refused_trial_is_still_failing() -> None:
    wrong = Grade(passed=False, category="wrong_tier", reason="expected PASS, got BLOCK")
    refused = Grade(passed=False, category="not_run", reason="--max-cost spent")
    summary = rf.summary(cases=[case("c-mixed", rf.trial("c-mixed", 1, "BLOCK", verdict=wrong),
                                     rf.trial("c-mixed", 2, "ERROR", **dict.fromkeys(DIMENSIONS, refused)))])
    [story] = case_stories(summary)
    assert story.case.id == "c-mixed" and story.failed == 1


def test_a_cases_story_counts_the_trials_its_rate_counts_and_says_the_confirmations_apart() -> None:
    """'1/11 trials failed' sat beside the case's rate of 9/10: the confirmation trial was counted."""
    from rubricgate.reports.terminal import failure_lines

    wrong = Grade(passed=False, category="wrong_tier", reason="expected BLOCK, got WARN")
    trials = [rf.trial("c-flaky", n, "BLOCK") for n in range(1, 11)]
    trials[3] = rf.trial("c-flaky", 4, "WARN", verdict=wrong)
    trials.append(rf.trial("c-flaky", 11, "BLOCK").model_copy(update={"confirmation": True}))
    summary = rf.summary(cases=[case("c-flaky", *trials)])
    [story] = case_stories(summary)
    assert (story.failed, story.trials) == (1, 10)
    assert story.line().startswith("1/10 trials failed (confirmation trials: 1/1 passed): verdict wrong_tier")
    assert failure_lines(summary) == ["  c-flaky verdict: wrong_tier (1/10 trials): expected BLOCK, got WARN"]


def test_a_pass_of_some_of_the_baselines_cases_says_so_in_its_headline() -> None:
    """`run --only` passed one case of four: the headline read 'PASS: no rate below baseline', the
    three cases not judged in a warning alone."""
    from rubricgate.models.results import GateDetail

    def first_line(body: str) -> str:
        return next(ln for ln in body.splitlines() if ln.startswith("### "))

    partial = rf.passing_summary().model_copy(update={"gate": GateDetail(shared_cases=1, missing_cases=["b", "c", "d"])})
    line = first_line(render_body(partial))
    assert "PASS" in line and "on 1 of the baseline's 4 cases (3 not judged: left out, or every trial errored)" in line
    assert "not judged" not in first_line(render_body(rf.passing_summary()))


def test_a_change_let_through_by_inconclusive_pass_is_never_the_cause_of_an_inconclusive() -> None:
    """Under gate.inconclusive: pass a rule change no case exercises is judged PASS; when the run is
    held for another reason (the gate's own settings changed), the first line named that rule as
    why it was INCONCLUSIVE and the next step said to add a case for it, which would change nothing."""
    from rubricgate.gating.changes import change_line
    from rubricgate.models.results import Decision, RuleChange
    from rubricgate.reports.story import lead, next_step

    blind = RuleChange(rule="scope-single-purpose", change="severity", detail="severity suggestion -> warning")
    held = "the gate settings in rubricgate.yaml differ from those baseline.json was measured with"
    let_through = rf.passing_summary().model_copy(update={"rule_changes": [blind], "decision": Decision(
        status="inconclusive", exit_code=2, reasons=[held])})
    assert "scope-single-purpose" not in lead(let_through).text() and held in lead(let_through).text()
    assert "scope-single-purpose" not in (next_step(let_through) or "")
    holding = let_through.model_copy(update={"decision": Decision(
        status="inconclusive", exit_code=2, reasons=[change_line(blind), held])})
    assert "scope-single-purpose severity suggestion → warning and no case exercises it" in lead(holding).text()
    assert "add a case that exercises scope-single-purpose" in (next_step(holding) or "")


def test_an_errored_runs_headline_names_each_trials_failure_class() -> None:
    """A rate limit and a refused key both read 'infrastructure: api_error ×2' in the headline of
    the comment, the step summary and report.html (the CLI's termination), where summary.json and
    every trial's line said rate_limit and auth."""
    from rubricgate.models.results import Decision
    from rubricgate.models.transcript import Attempt
    from rubricgate.reports.story import lead

    def errored(case_id: str, failure: str):
        grade = Grade(passed=False, category="errored", reason=f"infrastructure failure ({failure})")
        attempt = Attempt(termination="api_error", error="x", exit_code=1, duration_s=1.0, waited_s=0.0, infra=True,
                          failure=failure)
        return rf.trial(case_id, 1, "ERROR", **dict.fromkeys(DIMENSIONS, grade)).model_copy(update={
            "errored": True, "failure": failure, "termination": "api_error", "attempts": [attempt]})

    held = Decision(status="error", exit_code=2, reasons=["could not judge: 2 of 2 trials errored"])
    summary = rf.summary(cases=[case("c-a", errored("c-a", "rate_limit")), case("c-b", errored("c-b", "auth"))],
                         decision=held)
    line = lead(summary).text()
    assert "rate_limit ×1" in line and "auth ×1" in line and "api_error" not in line, line


def test_a_dimension_without_a_baseline_is_not_said_to_be_within_the_margin() -> None:
    """'PASS: every dimension within the 5-point margin (verdict 100.0%, tool_use 0.0%)': tool_use
    had no baseline, so nothing held it to the margin."""
    summary = rf.passing_summary()
    rates = dict(summary.rates)
    rates["tool_use"] = rates["tool_use"].model_copy(update={"rate": 0.0, "passes": 0, "baseline": None,
                                                              "delta": None, "status": "no_baseline"})
    line = next(ln for ln in render_body(summary.model_copy(update={"rates": rates})).splitlines()
                if ln.startswith("### "))
    assert "tool\\_use 0.0%" not in line.split(";")[0], line
    assert "; no baseline: tool\\_use 0.0%" in line, line
