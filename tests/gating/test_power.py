"""rubricgate.gating.power: the plan's figures move the right way and match the gate by simulation."""

from __future__ import annotations

import random

import pytest

from rubricgate.gating.gate import decide
from rubricgate.gating.power import detectable, expected_bound, make_plan, power
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline, CaseCount
from rubricgate.models.config import GateConfig
from rubricgate.models.results import RateRow


def _suite(rates: list[float], n0: int = 10) -> dict:
    return {f"c{i}": {d: (round(r * n0), n0) for d in DIMENSIONS} for i, r in enumerate(rates)}


MIXED = [0.99] * 21 + [0.85] * 6 + [0.6] * 3


def test_power_grows_with_the_drop_and_the_trials() -> None:
    base = [(x, n) for x, n in (v["verdict"] for v in _suite(MIXED).values())]
    assert power(base, [3] * 30, 0.10, 0.013, 0.05) < power(base, [3] * 30, 0.20, 0.013, 0.05)
    assert power(base, [3] * 30, 0.10, 0.013, 0.05) < power(base, [8] * 30, 0.10, 0.013, 0.05)
    assert power(base, [3] * 30, 0.0, 0.013, 0.05) == 0.0


def test_more_trials_detect_a_smaller_drop_and_nothing_is_detected_below_the_margin() -> None:
    base = [v["verdict"] for v in _suite(MIXED).values()]
    small, large = detectable(base, [1] * 30, 0.013, 0.05), detectable(base, [10] * 30, 0.013, 0.05)
    assert small is not None and large is not None and large < small
    assert large > 0.05  # REGRESSION needs the observed drop above the margin


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


def _gate_power(rates: list[float], trials: int, drop: float, sims: int, seed: int = 7) -> float:
    """Share of simulated runs whose verdict row is a REGRESSION (fixed design, one look)."""
    rng, hits, n0 = random.Random(seed), 0, 10
    gate = GateConfig(method="statistical")
    mean = sum(rates) / len(rates)
    for _ in range(sims):
        base = {f"c{i}": {d: _measured(rng, r, n0) for d in DIMENSIONS} for i, r in enumerate(rates)}
        run = {}
        for i, r in enumerate(rates):
            p = r * (1 - drop / mean)
            run[f"c{i}"] = {d: (sum(rng.random() < (p if d == "verdict" else r) for _ in range(trials)), trials)
                            for d in DIMENSIONS}
        rows = {d: RateRow(rate=None, passes=0, trials=1) for d in DIMENSIONS}
        decide(rows, Baseline(rates={d: 1.0 for d in DIMENSIONS}, cases=base), gate, run)
        hits += rows["verdict"].status == "regression"
    return hits / sims


def _measured(rng: random.Random, rate: float, n0: int) -> CaseCount:
    """A case measured in two sessions of independent trials, as `baseline update` does."""
    runs = [(sum(rng.random() < rate for _ in range(n0 // 2)), n0 // 2) for _ in range(2)]
    return CaseCount(passes=sum(x for x, _ in runs), trials=n0, sessions=runs)


def test_the_plans_power_is_close_to_the_gates_own_by_simulation() -> None:
    # The plan conditions on one baseline; the simulation draws a new one each time, so allow
    # for that and for 200 runs' Monte Carlo error (~3 points).
    base = [v["verdict"] for v in _suite(MIXED).values()]
    level = 0.05 * 0.8 / 3
    planned = power(base, [5] * 30, 0.15, level, 0.05)
    simulated = _gate_power(MIXED, 5, 0.15, 200)
    assert simulated == pytest.approx(planned, abs=0.15)
