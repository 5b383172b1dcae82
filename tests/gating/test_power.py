"""rubricgate.gating.power: the plan's figures move the right way (tests/gating/test_plan_power.py checks
them against the gate itself by simulation)."""

from __future__ import annotations

from rubricgate.gating.plan_power import regression_chance, smallest_drop
from rubricgate.gating.power import expected_bound, make_plan, to_pass
from rubricgate.gating.planning import check_margin
from rubricgate.models.config import GateConfig
from rubricgate.models.base import DIMENSIONS


def _suite(rates: list[float], n0: int = 10) -> dict:
    return {f"c{i}": {d: (round(r * n0), n0) for d in DIMENSIONS} for i, r in enumerate(rates)}


MIXED = [0.99] * 21 + [0.85] * 6 + [0.6] * 3


def test_power_grows_with_the_drop_and_the_trials() -> None:
    base = [(x, n) for x, n in (v["verdict"] for v in _suite(MIXED).values())]
    assert regression_chance(base, [3], [0.013], 0.10, 0.05) < regression_chance(base, [3], [0.013], 0.20, 0.05)
    assert regression_chance(base, [3], [0.013], 0.10, 0.05) < regression_chance(base, [8], [0.013], 0.10, 0.05)
    assert regression_chance(base, [3], [0.013], 0.0, 0.05) == 0.0


def test_more_trials_detect_a_smaller_drop_and_nothing_is_detected_below_the_margin() -> None:
    base = [v["verdict"] for v in _suite(MIXED).values()]
    small = smallest_drop(lambda d: regression_chance(base, [1], [0.013], d, 0.05))
    large = smallest_drop(lambda d: regression_chance(base, [10], [0.013], d, 0.05))
    assert small is not None and large is not None and large < small
    assert large > 0.05  # REGRESSION needs the observed drop above the margin


def test_a_look_after_every_round_catches_at_least_what_the_last_alone_does() -> None:
    base = [v["verdict"] for v in _suite(MIXED).values()]
    last = regression_chance(base, [10], [0.01], 0.08, 0.05)
    every = regression_chance(base, list(range(1, 11)), [0.01] * 10, 0.08, 0.05)
    assert every >= last


def test_an_unchanged_reviewer_bound_shrinks_with_trials() -> None:
    base = [v["verdict"] for v in _suite([1.0] * 30).values()]
    scores = (1.645,) * 7
    assert expected_bound(base, [1] * 30, scores) > expected_bound(base, [3] * 30, scores)
    assert expected_bound(base, [3] * 30, scores) <= 0.05


def test_the_plan_says_what_reaches_a_target_and_when_a_suite_cannot_pass() -> None:
    plan = make_plan(_suite(MIXED), DIMENSIONS, 0.95, 0.05, 1, 10, target=0.10)
    text = "\n".join(plan.lines())
    assert "smallest drop detectable with 80% power" in text
    assert "10.0 points needs" in text and "trials per case, or" in text and " cases" in text
    tiny = make_plan(_suite([1.0] * 4, n0=3), DIMENSIONS, 0.95, 0.05, 1, 10)
    assert tiny.dimensions[0].unchanged_bound > 0.05
    assert "cannot PASS within the budget" in "\n".join(tiny.lines())
    assert plan.as_json()["dimensions"][0]["dimension"] == "verdict"


def test_the_plan_names_its_looks_and_a_later_look_detects_less_than_the_first() -> None:
    plan = make_plan(_suite(MIXED), DIMENSIONS, 0.95, 0.05, 1, 10)
    assert plan.looks == list(range(1, 11)) and "a look after every round from 1 to 10" in plan.lines()[0]
    single = make_plan(_suite(MIXED), DIMENSIONS, 0.95, 0.05, 3, 3)
    assert single.looks == [3] and "one look, after round 3;" in single.lines()[0]
    verdict = plan.dimensions[0]
    assert verdict.detectable_budget is not None and verdict.detectable_first is not None
    assert verdict.detectable_budget < verdict.detectable_first


# 20 cases, three flaky (5/10): the baseline's own trials keep an unchanged reviewer's bound above 5 points.
LIMITED = {f"c{i}": {"verdict": (x, 10)} for i, x in enumerate([10] * 5 + [0] * 12 + [5] * 3)}


def test_a_baseline_whose_own_trials_bound_the_drop_names_a_larger_baseline_not_more_run_trials() -> None:
    plan = make_plan(LIMITED, ["verdict"], 0.95, 0.05, 1, 10, sessions={c: 2 for c in LIMITED})
    d = plan.dimensions[0]
    assert d.run_limited and d.baseline_trials is not None and d.baseline_trials > 10
    add = to_pass(d, 10)
    assert add is not None and f"`rubricgate baseline update --trials {d.baseline_trials}`" in add
    assert "however many trials a run adds" in add and "trials per case" in add
    assert "more than 60 trials per case" not in add
    more = make_plan(_suite(MIXED), ["verdict"], 0.95, 0.05, 1, 10).dimensions[0]  # run trials do help here
    assert not more.run_limited and more.baseline_trials is None
    # validate's warning said "INCONCLUSIVE unless continued" where no continuation can PASS.
    warning = check_margin(plan, GateConfig(method="statistical"), len(LIMITED), 1, ["verdict"])
    assert warning is not None and "unless continued" not in warning and "baseline update --trials" in warning


def test_no_baseline_size_that_would_do_is_not_offered_as_a_fix() -> None:
    """It read 'a larger baseline (more than 1000 baseline trials per case)': a fix to try."""
    from dataclasses import replace

    from rubricgate.gating.power import DimensionPlan, baseline_fix

    none_would = DimensionPlan("verdict", 30, None, None, None, None, None, run_limited=True)
    said = baseline_fix(none_would)
    assert "more than" not in said and "not a larger baseline either (none of up to 1000 trials per case" in said
    assert "add cases, or widen gate.margin" in said
    named = baseline_fix(replace(none_would, baseline_trials=40, baseline_run=12))
    assert named.startswith("a larger baseline (`rubricgate baseline update --trials 40`, then about 12 trials per case)")


def test_a_margin_near_1_is_the_easiest_to_show_never_refused_as_impossible() -> None:
    # At gate.margin 0.99 the budget's last look had no PASS region left (the earlier looks spent
    # alpha), and a reviewer that never fails, expected to PASS at the first look, read as "never":
    # validate refused 0.99 while 0.9 passed.
    from rubricgate.gating.planning import prior_plan

    for margin in (0.9, 0.99):
        gate = GateConfig(method="statistical", margin=margin)
        assert check_margin(None, gate, 12, 3) is None
        bounds = [d.unchanged_bound for d in prior_plan(12, gate, 3).dimensions]
        assert all(b is not None and b <= margin for b in bounds), (margin, bounds)


def test_the_default_target_is_at_most_a_100_point_drop_and_one_past_the_baseline_rate_is_not_shown() -> None:
    # At gate.margin 0.99 the default target, margin + 5 points, was a 104-point drop, and the plan
    # printed that 1 trial per case reached it (every case's rate clipped at 0).
    from rubricgate.gating.planning import decision_needs, prior_plan

    gate = GateConfig(method="statistical", margin=0.99)
    plan = prior_plan(12, gate, 3)
    assert plan.target == 1.0
    assert "100.0 points needs" in "\n".join(plan.lines()) and "104" not in "\n".join(plan.lines())
    assert "catch a 100-point drop" in decision_needs(gate, 3)
    half = make_plan(_suite([0.5] * 10), DIMENSIONS, 0.95, 0.05, 1, 10, target=0.6)
    assert half.dimensions[0].largest_drop == 0.5
    line = [x for x in half.lines() if "60.0 points" in x]
    assert line == ["    60.0 points cannot be shown: no drop is larger than the baseline's mean rate, 50.0 points "
                    "(`rubricgate plan --target` asks about a smaller one)"]
