"""rubricgate.gating.sequential: the fixed design, the looks and the spending of alpha."""

from __future__ import annotations

import math

import pytest

from rubricgate.gating.sequential import caps, confirmation_size, look_rounds, schedule, spending


def test_spending_sums_to_one_and_favours_the_planned_look() -> None:
    for looks in range(1, 8):
        for planned in range(looks):
            fractions = spending(looks, planned)
            assert sum(fractions) == pytest.approx(1.0) and max(fractions) == fractions[planned]


def test_looks_start_at_the_first_round_and_end_at_the_budget() -> None:
    assert look_rounds(1, 10) == [1, 2, 3, 5, 8, 10]
    assert look_rounds(3, 3) == [3]
    assert look_rounds(2, 30)[-1] == 30


def test_flaky_cases_get_the_budget_and_stable_ones_fewer_but_at_least_the_first_round() -> None:
    got = caps({"stable": (10, 10), "flaky": (5, 10), "hard": (8, 10)}, 10, first=1)
    assert got["flaky"] == 10 and 1 <= got["stable"] < got["hard"] < 10
    assert set(caps({f"c{i}": (10, 10) for i in range(5)}, 7).values()) == {7}  # all alike: all the budget


def test_the_planned_look_is_the_first_where_an_unchanged_reviewer_is_expected_to_pass() -> None:
    sched = schedule({f"c{i}": (10, 10) for i in range(30)}, 10, 1,
                     lambda trials, spend: sum(trials.values()) >= 60)
    assert sched.looks == [1, 2, 3, 5, 8, 10] and sched.spend[1] == max(sched.spend)
    assert sched.total_after(2) == 60


def test_confirmation_size_is_the_fewest_all_failing_trials_that_reach_the_level() -> None:
    n = confirmation_size((10, 10), 1e-4, 20)
    assert 1 / math.comb(n + 10, n) <= 1e-4 < 1 / math.comb(n + 9, n - 1)
    assert confirmation_size((3, 3), 1e-4, 10) == 0  # a 3-trial baseline cannot show it within 10


def test_a_case_with_one_baseline_failure_is_still_reliable_and_needs_a_longer_confirmation() -> None:
    from rubricgate.gating.sequential import reliable

    assert reliable((9, 10)) and reliable((5, 5)) and not reliable((8, 10)) and not reliable((3, 3))
    level = 1e-4
    n = confirmation_size((9, 10), level, 30)
    assert math.comb(10, 9) / math.comb(n + 10, 9) <= level < math.comb(10, 9) / math.comb(n + 9, 9)
    assert n > confirmation_size((10, 10), level, 30)
