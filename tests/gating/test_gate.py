"""rubricgate.gating.gate: what is compared (shared cases), the two methods, and the labels."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rubricgate.gating.gate import decide
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline, CaseCount
from rubricgate.models.config import GateConfig
from rubricgate.models.results import RateRow
from rubricgate.gating.stats import counted

STRICT, STATISTICAL = GateConfig(), GateConfig(method="statistical")


def _counts(spec: dict[str, tuple[int, int]]) -> dict[str, dict[str, tuple[int, int]]]:
    """Every dimension of a case at the same (passes, trials)."""
    return {c: {d: xn for d in DIMENSIONS} for c, xn in spec.items()}


def _baseline(spec: dict[str, tuple[int, int]]) -> Baseline:
    cases = {c: {d: CaseCount(passes=x, trials=n) for d in DIMENSIONS} for c, (x, n) in spec.items()}
    x, n = sum(v[0] for v in spec.values()), sum(v[1] for v in spec.values())
    return Baseline(rates={d: x / n for d in DIMENSIONS}, trials=3, cases=cases)


def _rates(per_case) -> dict[str, RateRow]:
    out = {}
    for d in DIMENSIONS:
        x, n = sum(c[d][0] for c in per_case.values()), sum(c[d][1] for c in per_case.values())
        out[d] = RateRow(rate=x / n if n else None, passes=x, trials=n)
    return out


def _decide(base: dict, run: dict, gate: GateConfig = STRICT):
    per_case = _counts(run)
    rates = _rates(per_case)
    decision, detail = decide(rates, _baseline(base), gate, per_case)
    return decision, detail, rates


SUITE = {**{f"stable{i}": (3, 3) for i in range(6)}, **{f"hard{i}": (1, 3) for i in range(3)}}


# -- what cannot be judged --------------------------------------------------------------------

def test_no_graded_trial_cannot_be_judged() -> None:
    decision, _, _ = _decide(SUITE, {"stable0": (0, 0)})
    assert decision.exit_code == 2 and "no trial was graded" in decision.reasons[0]


def test_no_shared_case_cannot_be_judged_unless_new_cases_are_strict() -> None:
    decision, detail, _ = _decide(SUITE, {"fixture-renamed": (3, 3)}, STATISTICAL)
    assert decision.exit_code == 2 and "only case(s) new to baseline.json ran (fixture-renamed)" in decision.reasons[0]
    assert detail.new_cases == ["fixture-renamed"]
    strict, _, _ = _decide(SUITE, {"fixture-renamed": (2, 3)})  # strict: every trial of a new case must pass
    assert strict.exit_code == 1 and "new case fixture-renamed: verdict 2/3" in strict.reasons[0]


# -- only the shared cases are compared -------------------------------------------------------

@pytest.mark.parametrize("gate", [STRICT, STATISTICAL])
def test_only_run_of_hard_cases_is_judged_against_their_own_baseline(gate) -> None:
    # The hard cases alone pass 3/9, far below the suite's 21/27; against their own 3/9 nothing fell
    # (strict: no dip; statistical: no regression, but 9 trials cannot bound the drop: undecided).
    decision, detail, rates = _decide(SUITE, {f"hard{i}": (1, 3) for i in range(3)}, gate)
    assert decision.exit_code == (0 if gate is STRICT else 2), decision.reasons
    assert decision.status != "regression"
    assert rates["verdict"].baseline == pytest.approx(1 / 3) and rates["verdict"].delta == 0.0
    assert detail.shared_cases == 3 and sorted(detail.missing_cases) == [f"stable{i}" for i in range(6)]
    assert any("6 baseline case(s) with no judged trial in this run" in w for w in decision.warnings)


def test_a_drop_on_the_shared_cases_is_found_in_an_only_run() -> None:
    decision, _, rates = _decide(SUITE, {f"stable{i}": (2, 3) for i in range(6)})
    assert decision.exit_code == 1 and rates["verdict"].status == "regression"
    assert decision.reasons[0].startswith("verdict 12/18 vs baseline 18/18 on 6 shared case(s)")


def test_new_cases_are_reported_apart_and_not_gated_by_default_under_statistical() -> None:
    run = {**SUITE, "newcase": (0, 3)}
    decision, detail, rates = _decide(SUITE, run, STATISTICAL)
    assert decision.status == "inconclusive" and not any("newcase" in r for r in decision.reasons)
    assert detail.new_cases == ["newcase"] and detail.new_case_rates["verdict"].rate == 0.0
    assert any("new case newcase: verdict 0/3 (no baseline: reported, not gated)" in w for w in decision.warnings)
    assert rates["verdict"].baseline == pytest.approx(21 / 27)  # the new case is not in the comparison


@pytest.mark.parametrize("gate", [STRICT, STATISTICAL])
def test_the_headline_rate_is_the_shared_cases_rate_and_new_cases_stay_beside_it(gate) -> None:
    # 21/27 on the shared cases, unchanged; a failing new case would pull a mixed rate to 21/30.
    decision, detail, rates = _decide(SUITE, {**SUITE, "newcase": (0, 3)}, gate)
    row = rates["verdict"]
    assert (row.passes, row.trials) == (21, 27) and row.rate == pytest.approx(21 / 27)
    assert row.rate == pytest.approx(row.baseline + row.delta)  # rate, baseline and delta agree
    assert row.low is not None and row.low <= row.rate <= row.high
    assert (detail.new_case_rates["verdict"].passes, detail.new_case_rates["verdict"].trials) == (0, 3)


def test_without_new_cases_the_rates_are_left_as_they_were() -> None:
    per_case = _counts(SUITE)
    rates = _rates(per_case)
    rates["verdict"].low, rates["verdict"].high = 0.1, 0.9  # what the caller measured stays
    decide(rates, _baseline(SUITE), STRICT, per_case)
    assert (rates["verdict"].passes, rates["verdict"].trials, rates["verdict"].low) == (21, 27, 0.1)


def test_new_cases_must_pass_under_strict() -> None:
    decision, detail, _ = _decide(SUITE, {**SUITE, "newcase": (2, 3)}, STRICT)
    assert detail.new_cases_rule == "strict"
    assert decision.exit_code == 1 and "new case newcase: verdict 2/3" in decision.reasons[0]
    ok, _, _ = _decide(SUITE, {**SUITE, "newcase": (2, 3)}, GateConfig(new_cases="report"))
    assert ok.exit_code == 0


# -- strict: a tolerance, not float equality --------------------------------------------------

def test_a_format_1_baseline_cannot_be_judged_and_names_the_command_that_re_measures_it() -> None:
    per_case = _counts({f"c{i}": (2, 3) for i in range(30)})
    rates = _rates(per_case)
    old = Baseline(format_version=1, rates={d: 0.666667 for d in DIMENSIONS}, trials=3)
    decision, _ = decide(rates, old, STRICT, per_case)
    assert decision.exit_code == 2 and len(decision.reasons) == 1
    assert "format 1" in decision.reasons[0] and "rubricgate baseline update" in decision.reasons[0]


def test_strict_any_drop_on_shared_cases_fails() -> None:
    decision, _, rates = _decide(SUITE, {**SUITE, "hard0": (0, 3)})
    assert decision.exit_code == 1 and rates["verdict"].label == "REGRESSION"


# -- statistical: the test, Holm, labels ------------------------------------------------------

def test_statistical_clear_drop_is_a_regression_with_holm_adjusted_p() -> None:
    base = {f"c{i}": (5, 5) for i in range(20)}
    decision, _, rates = _decide(base, {f"c{i}": (3, 5) for i in range(20)}, STATISTICAL)
    assert decision.exit_code == 1 and rates["verdict"].status == "regression"
    assert rates["verdict"].p_value is not None and rates["verdict"].p_value < 0.05
    assert "stratified exact p (Holm)" in decision.reasons[0]


def test_statistical_equal_counts_pass_only_when_the_bound_is_tight() -> None:
    many = {f"c{i}": (10, 10) for i in range(40)}
    decision, _, rates = _decide(many, many, STATISTICAL)
    assert rates["verdict"].label.startswith("no change") and rates["verdict"].drop_upper <= 0.05
    assert decision.exit_code == 0 and decision.status == "pass" and not decision.warnings
    few = {f"c{i}": (1, 1) for i in range(10)}
    decision, _, rates = _decide(few, few, STATISTICAL)
    label = rates["verdict"].label
    assert rates["verdict"].status == "inconclusive"
    assert label.startswith("INCONCLUSIVE: could not judge at this size: the drop could be up to")
    assert "add cases or raise the budget" in label
    assert decision.exit_code == 2 and decision.status == "inconclusive"


def test_inconclusive_pass_lets_an_undecided_run_exit_0_and_says_so() -> None:
    few = {f"c{i}": (1, 1) for i in range(10)}
    decision, _, _ = _decide(few, few, GateConfig(method="statistical", inconclusive="pass"))
    assert decision.exit_code == 0 and decision.status == "inconclusive"
    assert "gate.inconclusive: pass" in decision.warnings[0]


PASS_UNDECIDED = GateConfig(method="statistical", inconclusive="pass")


def test_inconclusive_pass_never_lets_a_case_whose_every_trial_errored_exit_0() -> None:
    """Failures hidden as infrastructure errors are never PASS, whatever gate.inconclusive says;
    and the line says no trial of the case was judged (no baseline size is the fix)."""
    suite = {f"c{i}": (10, 10) for i in range(30)}
    per_case = _counts({c: (1, 1) for c in suite if c != "c0"})
    for gate in (STATISTICAL, PASS_UNDECIDED):
        decision, detail = decide(_rates(per_case), _baseline(suite), gate, per_case, errored={"c0": 5})
        assert decision.exit_code == 2 and decision.status == "inconclusive", decision
        line = next(r for r in decision.reasons if r.startswith("c0: verdict 0/0 + 5 errored"))
        assert "no trial of it was judged" in line and "baseline trials per case" not in line
    assert decision.reasons[0].startswith("gate.inconclusive: pass cannot let this run exit 0: collapse suspected "
                                          "(c0); errored trials of verdict"), decision.reasons
    assert not any("lets this undecided run exit 0" in w for w in decision.warnings)


def test_inconclusive_pass_never_lets_a_suspected_collapse_exit_0() -> None:
    ones = {f"c{i}": (1, 1) for i in range(30)}
    decision, detail, _ = _decide(ones, {**ones, "c5": (0, 1)}, PASS_UNDECIDED)
    assert detail.suspected and detail.suspected[0].startswith("c5: verdict 0/1")
    assert "baseline trials per case would show it" in detail.suspected[0]
    assert decision.exit_code == 2 and "collapse suspected" in decision.reasons[0]


def test_inconclusive_pass_never_lets_an_undecided_dimension_with_errored_trials_exit_0() -> None:
    few = {f"c{i}": (1, 1) for i in range(10)}
    per_case = _counts(few)
    decision, _ = decide(_rates(per_case), _baseline(few), PASS_UNDECIDED, per_case, errored={"c3": 1})
    assert decision.exit_code == 2, decision
    assert "errored trials of verdict, " in decision.reasons[0] and "may hide failures" in decision.reasons[0]
    plain, _ = decide(_rates(per_case), _baseline(few), PASS_UNDECIDED, per_case)  # no errored: let through
    assert plain.exit_code == 0


def test_inconclusive_pass_never_lets_an_edited_case_that_fails_or_was_not_judged_exit_0() -> None:
    # Cases edited since the baseline are set aside from it: ten of them failing every trial, or
    # one whose every trial errored, exited 0 under `pass` (the second under the default too).
    suite = {f"c{i}": (10, 10) for i in range(30)}
    edited = [f"c{i}" for i in range(10)]
    rest = {c: v for c, v in suite.items() if c not in edited}
    failing = _counts({**{c: (3, 3) for c in suite}, **{c: (0, 3) for c in edited}})
    decision, _ = decide(_rates(failing), _baseline(rest), PASS_UNDECIDED, failing, edited=edited)
    assert decision.exit_code == 2 and "edited since baseline.json" in decision.reasons[0], decision
    unjudged = _counts({c: (3, 3) for c in suite if c != "c0"})
    for gate in (STATISTICAL, PASS_UNDECIDED):
        decision, _ = decide(_rates(unjudged), _baseline({c: v for c, v in suite.items() if c != "c0"}), gate,
                             unjudged, edited=["c0"], errored={"c0": 3})
        assert decision.exit_code == 2 and any("c0 3 errored trial(s)" in r for r in decision.reasons), decision


def test_statistical_small_dip_is_never_called_no_change() -> None:
    base = {f"c{i}": (3, 3) for i in range(30)}
    run = {**base, "c0": (2, 3), "c1": (2, 3)}
    decision, _, rates = _decide(base, run, STATISTICAL)
    assert decision.exit_code == 2 and rates["verdict"].status == "inconclusive"
    assert rates["verdict"].drop_upper > 0.05


def test_a_significant_drop_smaller_than_the_margin_is_not_a_regression() -> None:
    # 4 points down on 300 trials a side: established (p < 0.001) but the margin is 5 points.
    base = {f"c{i}": (10, 10) for i in range(30)}
    run = {f"c{i}": (10, 10) if i % 5 else (8, 10) for i in range(30)}
    decision, _, rates = _decide(base, run, STATISTICAL)
    assert rates["verdict"].p_value < 1e-3 and rates["verdict"].status == "inconclusive"
    assert decision.exit_code == 2 and rates["verdict"].drop_upper > 0.04


def test_a_significant_drop_whose_bound_is_under_the_margin_passes() -> None:
    base = {f"c{i}": (100, 100) for i in range(120)}
    run = {f"c{i}": (98, 100) for i in range(120)}
    decision, _, rates = _decide(base, run, STATISTICAL)
    assert rates["verdict"].p_value < 1e-6 and rates["verdict"].drop_upper <= 0.05
    assert decision.exit_code == 0 and rates["verdict"].label.startswith("no change")


def test_improvement_needs_its_own_significant_test() -> None:
    base = {f"c{i}": (9, 10) for i in range(100)}
    slight = {**base, "c0": (10, 10)}
    decision, _, rates = _decide(base, slight, STATISTICAL)
    assert rates["verdict"].delta > 0 and not rates["verdict"].label.startswith("improvement")
    clear = {f"c{i}": (10, 10) for i in range(100)}
    decision, _, rates = _decide(base, clear, STATISTICAL)
    assert rates["verdict"].label.startswith("improvement") and decision.exit_code == 0


def test_one_stable_case_collapsing_is_a_regression_on_a_large_suite() -> None:
    base = {f"c{i}": (10, 10) for i in range(300)}
    run = {**{f"c{i}": (10, 10) for i in range(300)}, "c7": (0, 10)}
    decision, detail, rates = _decide(base, run, STATISTICAL)
    assert rates["verdict"].status != "regression"  # the suite-level sum barely moves
    assert decision.exit_code == 1 and detail.case_regressions
    assert detail.case_regressions[0].startswith("c7: verdict 0/10 vs baseline 10/10")


def test_a_one_off_failure_of_a_stable_case_is_shown_as_flaky() -> None:
    base = {f"c{i}": (10, 10) for i in range(30)}
    run = {**base, "c3": (9, 10)}
    decision, detail, _ = _decide(base, run, STATISTICAL)
    assert not detail.case_regressions and detail.flaky[0].startswith("c3: verdict 9/10 vs baseline 10/10")
    # Named apart from the reports' "flaky (mixed results across trials)", which lists every such case.
    assert any(w.startswith("flaky, never failing in the baseline: c3: verdict 9/10") for w in decision.warnings)


def test_a_consistent_failure_against_an_unreliable_baseline_is_an_unconfirmed_drop_never_flaky() -> None:
    # "flaky" is mixed outcomes only: a case that failed 3 of 3 against a baseline of 3/6 is a drop
    # the per-case test does not establish, and has its own name (gate.unconfirmed).
    base = {**{f"c{i}": (10, 10) for i in range(30)}, "c5": (3, 6)}
    run = {**{f"c{i}": (10, 10) for i in range(30)}, "c5": (0, 3)}
    decision, detail, _ = _decide(base, run, STATISTICAL)
    assert detail.unconfirmed and detail.unconfirmed[0].startswith("c5: verdict 0/3 vs baseline 3/6 (unconfirmed drop")
    assert not detail.flaky and not detail.case_regressions and not detail.suspected
    assert any(w.startswith("unconfirmed drop c5: verdict 0/3") for w in decision.warnings)
    assert not any(w.startswith("flaky") for w in decision.warnings)


# -- what counts ------------------------------------------------------------------------------

def test_errored_and_not_run_trials_do_not_count() -> None:
    from rubricgate.runner.cost import not_run_trial

    assert not counted(not_run_trial("a", 1, "budget"))
    assert not counted(SimpleNamespace(errored=True, grades={}))  # wt-honest's errored trials
    assert counted(SimpleNamespace(errored=False, grades={}))


def test_a_baseline_measured_with_another_model_is_flagged() -> None:
    from rubricgate.models.baseline import MeasuredWith

    per_case = _counts(SUITE)
    base = _baseline(SUITE).model_copy(update={"measured_with": MeasuredWith(agent="claude", agent_version="2.1.3",
                                                                             model="m-1")})
    decision, _ = decide(_rates(per_case), base, STRICT, per_case,
                         MeasuredWith(agent="claude", agent_version="2.1.4", model="m-1"))
    assert any("CLI version 2.1.3 -> 2.1.4" in w for w in decision.warnings)
    same, _ = decide(_rates(per_case), base, STRICT, per_case, MeasuredWith(agent="claude", agent_version="2.1.3", model="m-1"))
    assert not any("different setup" in w for w in same.warnings)


def test_an_old_baseline_is_warned_about_with_its_age_and_the_fix() -> None:
    from datetime import UTC, datetime

    from rubricgate.gating.gate import baseline_age
    from rubricgate.models.baseline import BaselineChange

    old = _baseline(SUITE).model_copy(update={"history": [BaselineChange(at="2026-01-01T00:00:00+00:00", rates={}, trials=1)]})
    notes = baseline_age(old, 30, now=datetime(2026, 3, 2, tzinfo=UTC))
    assert len(notes) == 1 and notes[0].startswith("baseline.json was last measured 60 days ago")
    assert baseline_age(old, 90, now=datetime(2026, 3, 2, tzinfo=UTC)) == []
    decision, _ = decide(_rates(_counts(SUITE)), old, GateConfig(baseline_max_age_days=1), _counts(SUITE))
    assert any("gate.baseline_max_age_days: 1" in w for w in decision.warnings)


# -- the drift allowance ------------------------------------------------------------------------

def test_a_drop_not_shown_beyond_the_drift_allowance_is_inconclusive_not_a_regression() -> None:
    base = {f"c{i}": (10, 10) for i in range(40)}
    run = {f"c{i}": (9 if i < 24 else 10, 10) for i in range(40)}  # 6 points down, established
    decision, _, rates = _decide(base, run, STATISTICAL)
    assert decision.exit_code == 1 and rates["verdict"].status == "regression"
    drifting = GateConfig(method="statistical", drift_allowance=0.04)
    decision, _, rates = _decide(base, run, drifting)
    assert decision.exit_code == 2 and rates["verdict"].status == "inconclusive"
    assert "not shown beyond the 4-point drift allowance" in rates["verdict"].label
    assert "compare --base" in rates["verdict"].label


def test_a_large_drop_is_a_regression_whatever_the_drift_allowance() -> None:
    base = {f"c{i}": (10, 10) for i in range(40)}
    decision, _, rates = _decide(base, {f"c{i}": (7, 10) for i in range(40)},
                                 GateConfig(method="statistical", drift_allowance=0.04))
    assert decision.exit_code == 1 and rates["verdict"].status == "regression"


def test_a_drift_allowance_at_or_above_the_margin_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="drift_allowance 0.05 is not below margin 0.05.*fix: lower"):
        GateConfig(method="statistical", drift_allowance=0.05)


# -- a case whose every trial errored ------------------------------------------------------------

def test_a_case_whose_every_trial_errored_counts_as_failures_in_the_pass_bound() -> None:
    """It has no judged trial, so no stratum of the test; its errored trials are still failures
    in the worst case, so the PASS bound counts them (a flaky case in the baseline, never
    suspected, let the run PASS with the bound over the other cases alone)."""
    spec = {**{f"c{i}": (10, 10) for i in range(40)}, "flaky": (6, 10)}
    # Two sessions of 5 that agree: independent trials, as `baseline update` measures them.
    cases = {c: {d: CaseCount(passes=x, trials=n, sessions=[(x // 2, 5), (x - x // 2, 5)]) for d in DIMENSIONS}
             for c, (x, n) in spec.items()}
    baseline = Baseline(rates={d: 406 / 410 for d in DIMENSIONS}, trials=10, cases=cases)
    per_case = _counts({f"c{i}": (3, 3) for i in range(40)})
    for gate in (STATISTICAL, PASS_UNDECIDED):
        rates = _rates(per_case)
        decision, _ = decide(rates, baseline, gate, per_case, errored={"flaky": 6})
        assert decision.exit_code == 2 and rates["verdict"].status == "inconclusive", decision
    assert "errored trials of verdict, tool_use, trajectory may hide failures" in decision.reasons[0], decision
    clean, _ = decide(_rates(per_case), baseline, STATISTICAL, per_case)
    assert clean.exit_code == 0, clean  # the same trials with nothing errored: a PASS


def test_a_run_whose_every_trial_errored_never_passes() -> None:
    suite = {f"c{i}": (5, 10) for i in range(6)}
    per_case: dict = {}
    for gate in (STATISTICAL, PASS_UNDECIDED, STRICT):
        decision, _ = decide(_rates(per_case), _baseline(suite), gate, per_case, errored={c: 3 for c in suite})
        assert decision.exit_code == 2, (gate.method, decision)


def test_a_flaky_case_whose_every_trial_errored_never_lets_the_run_exit_0() -> None:
    spec = {**{f"c{i}": (10, 10) for i in range(40)}, "flaky": (6, 10)}
    cases = {c: {d: CaseCount(passes=x, trials=n, sessions=[(x // 2, 5), (x - x // 2, 5)]) for d in DIMENSIONS}
             for c, (x, n) in spec.items()}
    baseline = Baseline(rates={d: 406 / 410 for d in DIMENSIONS}, trials=10, cases=cases)
    per_case = _counts({f"c{i}": (10, 10) for i in range(40)})  # its bound holds with the errors as failures
    for gate in (STATISTICAL, PASS_UNDECIDED):
        decision, detail = decide(_rates(per_case), baseline, gate, per_case, errored={"flaky": 10})
        assert decision.exit_code == 2 and detail.suspected[0].startswith("flaky: verdict 0/0 + 10 errored"), decision


@pytest.mark.parametrize("gate", [STRICT, GateConfig(method="statistical", new_cases="strict")])
@pytest.mark.parametrize("new", [(0, 0), (1, 1)])
def test_an_errored_trial_of_a_new_case_under_new_cases_strict_is_never_a_pass(gate, new) -> None:
    # strict requires every trial of a new case to pass: one that errored is no pass (every trial
    # errored: (0, 0); one of two: (1, 1)), and no evidence of a failure either.
    per_case = _counts({**SUITE, "newcase": new})
    rates = _rates({c: v for c, v in per_case.items() if c != "newcase"})
    decision, _ = decide(rates, _baseline(SUITE), gate, per_case, errored={"newcase": 1})
    assert decision.exit_code == 2 and decision.status == "inconclusive", decision
    assert any("newcase" in r and "errored" in r for r in decision.reasons), decision.reasons
    lenient = GateConfig(method=gate.method, new_cases="strict", inconclusive="pass")
    held, _ = decide(rates, _baseline(SUITE), lenient, per_case, errored={"newcase": 1})
    assert held.exit_code == 2, held


def test_an_errored_trial_of_a_new_case_alone_under_new_cases_strict_is_never_a_pass() -> None:
    per_case = {"fixture-renamed": {d: (0, 0) for d in DIMENSIONS}}
    decision, _ = decide(_rates({"x": {d: (0, 0) for d in DIMENSIONS}}), _baseline(SUITE), STRICT, per_case,
                         errored={"fixture-renamed": 2})
    assert decision.exit_code == 2, decision


def test_a_stable_case_collapsing_under_strict_is_a_regression_though_another_case_s_gain_keeps_the_rate() -> None:
    # A deterministic reviewer that now fails every trial of a case it passed every time, while a
    # case it failed now passes: the suite's rate holds, the collapse is certain.
    base = {"stable": (3, 3), "hard": (0, 3), "other": (3, 3)}
    decision, detail, rates = _decide(base, {"stable": (0, 3), "hard": (3, 3), "other": (3, 3)})
    assert rates["verdict"].status != "regression"  # the rate alone cannot see it
    assert decision.exit_code == 1 and decision.status == "regression", decision
    assert any(r.startswith("stable: verdict 0/3 vs baseline 3/3") for r in decision.reasons), decision.reasons
    assert detail.case_regressions == decision.reasons[-3:]  # one line per dimension, in summary.json too
    kept, _, _ = _decide(base, {"stable": (3, 3), "hard": (3, 3), "other": (3, 3)})
    assert kept.exit_code == 0, kept  # a gain alone changes nothing


def test_a_drop_line_counts_the_cases_its_counts_cover() -> None:
    # 39 shared cases, 3 of them errored on every trial: "verdict 9/36 vs baseline 108/108 on 39
    # shared case(s)", though the counts cover 36 cases.
    suite = {f"c{i:02}": (3, 3) for i in range(39)}
    per_case = _counts({c: (1 if i < 9 else 0, 1) for i, c in enumerate(sorted(suite)[3:])})
    decision, _ = decide(_rates(per_case), _baseline(suite), STRICT, per_case, errored={"c00": 1, "c01": 1, "c02": 1})
    line = next(r for r in decision.reasons if r.startswith("verdict "))
    assert line.startswith("verdict 9/36 vs baseline 108/108 on 36 of 39 shared case(s) (3 with no judged trial), "
                           "drop "), line


def test_the_gate_records_how_many_shared_cases_have_a_judged_trial() -> None:
    # What the comment's statistics line says its rates are over (reports/comment.py).
    suite = {f"c{i:02}": (3, 3) for i in range(39)}
    per_case = _counts({c: (1, 1) for c in sorted(suite)[3:]})
    _, detail = decide(_rates(per_case), _baseline(suite), STRICT, per_case, errored={"c00": 1, "c01": 1, "c02": 1})
    assert (detail.shared_cases, detail.judged_cases) == (39, 36)
    assert detail.cases_phrase() == "36 of 39 shared case(s) (3 with no judged trial)"
