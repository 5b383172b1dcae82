"""rubricgate.gating.sequential: the fixed design, the looks and the spending of alpha."""

from __future__ import annotations

import math

import pytest

from rubricgate.gating.sequential import caps, confirmation_size, ld_spending, look_rounds, schedule, spending


def test_spending_sums_to_one_and_favours_the_planned_look() -> None:
    for looks in range(1, 8):
        for planned in range(looks):
            fractions = spending(list(range(1, looks + 1)), planned)
            assert sum(fractions) == pytest.approx(1.0) and max(fractions) == fractions[planned]


def test_the_pass_bound_keeps_shares_by_multiples_of_the_planned_trials_and_one_for_the_budget() -> None:
    got = spending(list(range(1, 11)), planned=1)  # planned after round 2: 1.5x is round 3, 2.5x round 5, 4x round 8
    assert got[1] == pytest.approx(0.76) and got[2] == pytest.approx(0.03)
    assert got[4] == pytest.approx(0.17) and got[7] == pytest.approx(0.02)
    assert got[9] == pytest.approx(0.01) and got[0] == got[3] == got[5] == pytest.approx(0.01 / 5)
    late = spending(list(range(1, 11)), planned=5)  # planned after round 6: 2.5x and 4x are past the budget
    assert late[9] == pytest.approx(0.20) and late[5] == pytest.approx(0.76) and late[8] == pytest.approx(0.03)
    assert late[0] == pytest.approx(0.01 / 7)  # what no multiple claims is shared by the other looks


def test_looks_start_at_the_first_round_and_end_at_the_budget() -> None:
    assert look_rounds(1, 10) == list(range(1, 11))
    assert look_rounds(3, 3) == [3]
    assert look_rounds(2, 30)[-1] == 30


def test_every_case_gets_every_round_up_to_the_budget_and_at_least_the_first_round() -> None:
    got = caps({"stable": (10, 10), "flaky": (5, 10), "hard": (8, 10)}, 10, first=1)
    assert set(got.values()) == {10}  # a proportional drop shows most on reliable cases: none is spared
    assert set(caps({"c": (3, 3)}, 2, first=4).values()) == {4}


def test_the_planned_look_gets_most_of_the_pass_alpha_and_the_tests_spend_by_information() -> None:
    sched = schedule({f"c{i}": (10, 10) for i in range(30)}, 10, 1,
                     lambda trials, spend: sum(trials.values()) >= 60)
    assert sched.looks == list(range(1, 11)) and sched.pass_spend[1] == max(sched.pass_spend)
    assert sched.total_after(2) == 60
    # the PASS bound uses its increments as they are (the union bound)
    assert sched.pass_spend == pytest.approx(spending(sched.looks, 1)) and sum(sched.pass_spend) == pytest.approx(1.0)
    increments = ld_spending([r / 10 for r in range(1, 11)], 0.05)
    assert sched.case_spend == pytest.approx(increments) and sum(sched.case_spend) == pytest.approx(1.0)
    # the looks overlap, so each look's nominal level is at least its increment and at most
    # everything spent by then; the first look has nothing before it
    spent = [sum(increments[:k + 1]) for k in range(10)]
    assert sched.spend[0] == pytest.approx(increments[0], rel=1e-6)
    assert all(inc - 1e-9 <= nominal <= total + 1e-9 for inc, nominal, total in zip(increments, sched.spend, spent))
    assert sum(sched.spend) > 2  # the union bound would leave 1


def test_the_information_of_a_look_counts_the_baseline_trials_every_look_shares() -> None:
    from rubricgate.gating.sequential import information

    got = information({"a": 10, "b": 5}, {"a": 10, "b": 10}, [1, 10])
    assert got == pytest.approx([1 / (1 + 1 / 10) + 1 / (1 + 1 / 5), 5 + 1 / (1 / 10 + 1 / 5)])


@pytest.mark.parametrize("shape", ["pocock", "obf"])
def test_lan_demets_increments_sum_to_one_and_follow_their_shape(shape: str) -> None:
    fractions = [0.1, 0.2, 0.3, 0.5, 0.8, 1.0]
    got = ld_spending(fractions, 0.05, shape)
    assert sum(got) == pytest.approx(1.0) and min(got) >= 0
    if shape == "pocock":  # ln(1 + (e - 1) t): 16% of alpha by a tenth of the trials
        assert got[0] == pytest.approx(math.log(1 + (math.e - 1) * 0.1))
    else:  # O'Brien-Fleming type: almost nothing at a tenth, most at the end
        assert got[0] < 1e-6 and got[-1] > 0.3


def test_a_single_look_spends_everything_at_once() -> None:
    assert ld_spending([1.0], 0.05) == [1.0] and spending([3], 0) == [1.0]


def test_confirmation_size_is_the_fewest_all_failing_trials_that_reach_the_level() -> None:
    n = confirmation_size((10, 10), 1e-4, 20)
    assert n == 7  # C(17, 7) = 19,448 >= 10^4 > C(16, 6) = 8,008
    for n0 in (5, 10, 20):  # the size brackets the level for every baseline and level, not just one
        for level in (1e-2, 1e-3, 1e-4, 1e-5):
            n = confirmation_size((n0, n0), level, 40)
            assert 1 / math.comb(n + n0, n) <= level < 1 / math.comb(n + n0 - 1, n - 1), (n0, level, n)
    assert confirmation_size((3, 3), 1e-4, 10) == 0  # a 3-trial baseline cannot show it within 10


def test_a_case_with_one_baseline_failure_is_still_reliable_and_needs_a_longer_confirmation() -> None:
    from rubricgate.gating.sequential import reliable

    assert reliable((9, 10)) and reliable((5, 5)) and not reliable((8, 10)) and not reliable((3, 3))
    level = 1e-4
    n = confirmation_size((9, 10), level, 30)
    assert math.comb(10, 9) / math.comb(n + 10, 9) <= level < math.comb(10, 9) / math.comb(n + 9, 9)
    assert n > confirmation_size((10, 10), level, 30)
