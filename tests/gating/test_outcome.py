"""rubricgate.gating.outcome: every label agrees with the test and the margin, over random inputs."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricgate.gating.dependence import baseline_sessions, check
from rubricgate.gating.evidence import Bounds, family, weigh
from rubricgate.gating.exact import holm, smallest_p, upper_p
from rubricgate.gating.gate import Look, decide, shared_strata
from rubricgate.gating.outcome import ALPHA_SHARES, TIE, Evidence, classify, improved, label
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline, CaseCount
from rubricgate.models.config import GateConfig
from rubricgate.models.results import GateDetail, RateRow
from tests.conftest import examples

unit = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
prob = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_a_drop_of_exactly_the_margin_is_no_regression_though_rounding_puts_it_over():
    """1 - 57/60 is the 5-point margin, computed 0.050000000000000044: with a significant test it
    was a REGRESSION "down 5.0 points", of a drop no larger than the margin."""
    tie = 1 - 57 / 60
    assert tie > 0.05
    ev = Evidence(tie, 0.12, 1e-6, 1.0, 0.05, 0.01)
    assert classify(ev, 0.05) == "inconclusive"
    assert classify(Evidence(tie + 0.001, 0.12, 1e-6, 1.0, 0.05, 0.01), 0.05) == "regression"


@settings(suppress_health_check=list(HealthCheck), deadline=None)
@given(drop=unit, extra=st.floats(min_value=0, max_value=1), below=st.floats(min_value=0, max_value=1),
       p_drop=prob, p_rise=prob, level=st.floats(min_value=1e-4, max_value=0.2),
       margin=st.floats(min_value=0.01, max_value=0.5), allowance=st.sampled_from([0.0, 0.005, 0.02]))
def test_classify_is_exactly_the_documented_rule(drop, extra, below, p_drop, p_rise, level, margin, allowance) -> None:
    # The bounds are never on the wrong side of the drop.
    ev = Evidence(drop, drop + extra, p_drop, p_rise, level, drop - below)
    outcome = classify(ev, margin, allowance)
    regression = p_drop <= level and drop > margin + TIE and (allowance == 0 or drop - below > allowance)
    assert (outcome == "regression") == regression
    assert (outcome == "pass") == (not regression and ev.upper <= margin)
    words = label(ev, margin, allowance)
    assert words.startswith({"regression": "REGRESSION", "inconclusive": "INCONCLUSIVE"}.get(
        outcome, "improvement" if improved(ev) else "no change"))
    if outcome == "regression":  # it states what is shown: the margin only when the lower bound is past it
        assert (f"more than the {margin * 100:.0f}-point margin" in words) == (ev.lower > margin + TIE)
        assert ("not shown to exceed" in words) == (ev.lower <= margin + TIE)
        assert (f"at least {ev.lower * 100:.1f} points" in words) == (ev.lower > 0)


@st.composite
def suites(draw):
    """Random shared cases (current and baseline counts per dimension) and a gate."""
    cases = draw(st.integers(min_value=1, max_value=12))
    per_case, base = {}, {}
    for i in range(cases):
        n1, n0 = draw(st.integers(1, 8)), draw(st.integers(1, 8))
        per_case[f"c{i}"] = {d: (draw(st.integers(0, n1)), n1) for d in DIMENSIONS}
        base[f"c{i}"] = {d: CaseCount(passes=draw(st.integers(0, n0)), trials=n0) for d in DIMENSIONS}
    margin = draw(st.sampled_from([0.02, 0.05, 0.1, 0.2]))
    gate = GateConfig(method="statistical", margin=margin, confidence=draw(st.sampled_from([0.8, 0.9, 0.95, 0.99])),
                      drift_allowance=draw(st.sampled_from([0.0, margin / 2])))
    return per_case, base, gate, draw(st.sampled_from([1.0, 0.5, 0.1]))


def _rates(per_case) -> dict[str, RateRow]:
    out = {}
    for d in DIMENSIONS:
        x, n = sum(c[d][0] for c in per_case.values()), sum(c[d][1] for c in per_case.values())
        out[d] = RateRow(rate=x / n, passes=x, trials=n)
    return out


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(suites())
def test_every_row_label_and_the_exit_code_agree_with_the_test_and_the_margin(suite) -> None:
    per_case, cases, gate, spend = suite
    baseline = Baseline(rates={d: 1.0 for d in DIMENSIONS}, cases=cases)
    rates = _rates(per_case)
    decision, detail = decide(rates, baseline, gate, per_case, look=Look(spend=spend))
    level = (1 - gate.confidence) * ALPHA_SHARES["dimensions"]
    strata = shared_strata(per_case, baseline, _rates(per_case), GateDetail())
    unit = check(baseline_sessions(baseline, list(per_case), DIMENSIONS)).unit()
    assert detail.dependence["rho"] == unit.rho
    if unit.rho:  # dependence cannot be ruled out: the score statistic with design effects
        raw = {d: weigh(strata[d], level, None, unit=unit).p_rise / spend for d in DIMENSIONS}
        floors = {d: 0.0 for d in DIMENSIONS}
    else:
        raw = {d: upper_p(strata[d]) / spend for d in DIMENSIONS}
        floors = {d: min(1.0, smallest_p(strata[d], lower=False) / spend) for d in DIMENSIONS}
    rises = holm({d: min(1.0, p) for d, p in raw.items()}, level, floors)
    bounds = Bounds(1 - gate.confidence, gate.margin, 1 - level * spend / len(DIMENSIONS))
    lowers = {d: weigh(strata[d], level, bounds, unit=unit).lower for d in DIMENSIONS}
    for dim, row in rates.items():
        drop = -row.delta
        regression = (row.p_value <= level and drop > gate.margin
                      and (not gate.drift_allowance or lowers[dim] > gate.drift_allowance))
        if row.status == "regression":
            assert regression and row.label.startswith("REGRESSION")
            assert ("more than the" in row.label) == (lowers[dim] > gate.margin)
        elif row.status == "ok":
            assert row.drop_upper <= gate.margin and not regression
            assert row.label.startswith("improvement") == (drop < 0 and rises[dim] <= level)
        else:
            assert row.status == "inconclusive" and row.label.startswith("INCONCLUSIVE")
            assert row.drop_upper > gate.margin and not regression
    regressed = any(r.status == "regression" for r in rates.values()) or bool(detail.case_regressions)
    undecided = any(r.status == "inconclusive" for r in rates.values()) or bool(detail.suspected)
    assert decision.exit_code == (1 if regressed else 2 if undecided else 0)
    assert decision.status == ("regression" if regressed else "inconclusive" if undecided else "pass")


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(suites())
def test_the_evidence_bounds_never_sit_on_the_wrong_side_of_the_drop(suite) -> None:
    per_case, cases, gate, spend = suite
    baseline = Baseline(rates={d: 1.0 for d in DIMENSIONS}, cases=cases)
    strata = shared_strata(per_case, baseline, _rates(per_case), GateDetail())
    bounds = Bounds(1 - gate.confidence, gate.margin, 0.99)
    weighed = {d: weigh(strata[d], 0.04, bounds) for d in DIMENSIONS}
    for ev in family({d: e for d, e in weighed.items() if e is not None}, spend).values():
        assert ev.lower <= ev.drop <= ev.upper
        assert 0 <= ev.floor_drop <= 1 and 0 <= ev.p_drop <= 1


def test_an_undecided_dimension_with_no_bound_at_this_look_says_so_not_inf_points() -> None:
    import math

    from rubricgate.gating.outcome import inconclusive_text
    assert "up to 12.3 points" in inconclusive_text(0.123)
    text = inconclusive_text(math.inf)
    assert "inf" not in text and "bounds the drop nowhere" in text and text.startswith("INCONCLUSIVE")


def test_a_bound_just_over_the_margin_never_reads_as_the_margin_and_says_what_it_is() -> None:
    """One trial a side: the PASS bound is 5.0006 points against a 5-point margin; shown as 5.0
    it read as the margin itself."""
    from rubricgate.gating.outcome import inconclusive_text
    text = inconclusive_text(0.050006384890454614, 0.05)
    assert "the drop could be up to 5.1 points (its PASS bound, above the 5-point margin)" in text, text
