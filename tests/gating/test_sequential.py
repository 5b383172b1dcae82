"""rubricgate.gating.sequential: the fixed design, the looks and the spending of alpha."""

from __future__ import annotations

import math

import pytest

from rubricgate.gating.collapse import reliable
from rubricgate.gating.sequential import (
    CONTINUATIONS,
    PASS_EARLY,
    PASS_RESERVE,
    TEST_CONTINUATION,
    caps,
    confirmation_size,
    false_alarm_spending,
    information,
    ld_spending,
    look_rounds,
    pass_spending,
    schedule,
)


def test_the_pass_spending_has_nothing_before_the_planned_look_and_everything_by_the_last() -> None:
    rounds = look_rounds(1, 10, CONTINUATIONS)
    for planned in (0, 1, 4, 9):
        got = pass_spending(rounds, 10, planned)
        assert all(g == 0 for g in got[:planned]) and got[planned] == pytest.approx(1 - PASS_RESERVE)
        assert all(a <= b for a, b in zip(got, got[1:])) and got[-1] == 1.0
    # one more failure than the planned look's is outweighed at 2.5x its trials: most of the reserve there
    got = pass_spending(rounds, 10, 1)
    assert got[4] - got[3] == pytest.approx(PASS_RESERVE * 0.5)


def test_a_planned_look_past_the_budget_leaves_the_budget_a_small_share() -> None:
    rounds = look_rounds(1, 10, CONTINUATIONS)
    got = pass_spending(rounds, 10, 13)  # planned in the first continuation
    assert got[:9] == [0.0] * 9 and got[9] == pytest.approx(PASS_EARLY) and got[13] == pytest.approx(1 - PASS_RESERVE)


def test_the_tests_keep_a_share_for_the_continuations_a_fifth_each() -> None:
    rounds = look_rounds(1, 10, CONTINUATIONS)
    got = false_alarm_spending([r / 10 for r in rounds], 10)
    assert got[9] == pytest.approx(1 - TEST_CONTINUATION) and got[-1] == 1.0
    assert all(a <= b for a, b in zip(got, got[1:]))
    ends = [got[10 * (c + 1) - 1] for c in range(CONTINUATIONS + 1)]
    assert ends == pytest.approx([1 - TEST_CONTINUATION * (1 - c / CONTINUATIONS) for c in range(CONTINUATIONS + 1)])
    assert false_alarm_spending([0.5, 1.0], 2)[-1] == 1.0  # no continuation: the budget spends it all


def test_looks_start_at_the_first_round_and_run_on_through_the_continuations() -> None:
    assert look_rounds(1, 10) == list(range(1, 11))
    assert look_rounds(3, 3) == [3]
    assert look_rounds(1, 10, 5)[-1] == 60 and look_rounds(2, 30)[-1] == 30


def test_every_case_gets_every_round_up_to_the_budget_and_at_least_the_first_round() -> None:
    got = caps({"stable": (10, 10), "flaky": (5, 10), "hard": (8, 10)}, 10, first=1)
    assert set(got.values()) == {10}  # a proportional drop shows most on reliable cases: none is spared
    assert set(caps({"c": (3, 3)}, 2, first=4).values()) == {4}


def test_the_planned_look_gets_most_of_the_pass_alpha_and_the_tests_spend_by_information() -> None:
    sched = schedule({f"c{i}": (10, 10) for i in range(30)}, 10, 1, lambda rounds, scores: rounds >= 2)
    assert sched.looks == list(range(1, 61)) and sched.budget_looks == 10 and sched.planned == 1
    assert sched.total_after(2) == 60 and sched.total_after(12) == 360  # continuation rounds count
    spent = [sum(sched.case_spend[:k + 1]) for k in range(len(sched.looks))]
    assert spent[9] == pytest.approx(1 - TEST_CONTINUATION) and spent[-1] == pytest.approx(1.0)
    # the looks overlap, so each look's nominal level is at least its increment and at most
    # everything spent by then; the first look has nothing before it
    assert sched.spend[0] == pytest.approx(sched.case_spend[0], rel=1e-6)
    assert all(inc - 1e-9 <= nominal <= total + 1e-9
               for inc, nominal, total in zip(sched.case_spend, sched.spend, spent))
    assert sum(sched.spend[:10]) > 2  # the union bound would leave 1


def test_the_tests_levels_are_computed_over_the_graded_dimensions_not_the_registry() -> None:
    # A reviewer graded on the verdict alone (format: text) gives its one test Holm's whole share:
    # its nominal levels come from that level, not a third of it.
    base = {f"c{i}": (9, 10) for i in range(30)}
    one = schedule(base, 10, 1, lambda rounds, scores: rounds >= 2, dims=1)
    three = schedule(base, 10, 1, lambda rounds, scores: rounds >= 2, dims=3)
    assert one.case_spend == three.case_spend  # the same increments
    assert one.spend[9] > three.spend[9] and all(a >= b - 1e-12 for a, b in zip(one.spend, three.spend))


def test_the_pass_scores_are_calibrated_to_the_cumulative_spending_at_every_look() -> None:
    from rubricgate.gating.passbound import calibrate

    sched = schedule({f"c{i}": (10, 10) for i in range(30)}, 10, 1, lambda rounds, scores: rounds >= 2)
    trials = [sched.total_after(r) for r in sched.looks[:10]]
    cal = calibrate(sched.n0, trials, sched.pass_cumulative[:10], 0.05, 0.05)
    assert [sched.pass_score(k) for k in range(10)] == list(cal.z)
    assert all(e <= 0.05 * c + 1e-12 for e, c in zip(cal.error, sched.pass_cumulative))
    # no PASS before the planned look; at it, a perfect suite PASSes on no failure in 60 trials
    from rubricgate.gating.passbound import pass_upper

    assert min(sched.pass_score(0)) >= 40
    top = sched.pass_score(1)[-1]
    assert pass_upper(1.0, 300, 60, 60, top) <= 0.05 < pass_upper(1.0, 300, 59, 60, top)
    assert 0.95 ** 60 <= cal.error[1] <= 0.05 * sched.pass_cumulative[1]


def test_the_information_of_a_look_counts_the_baseline_trials_every_look_shares() -> None:
    got = information({"a": 10, "b": 5}, [1, 10])
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
    assert ld_spending([1.0], 0.05) == [1.0] and pass_spending([3], 1, 0) == [1.0]


def test_confirmation_size_is_the_fewest_all_failing_trials_that_reach_the_level() -> None:
    n = confirmation_size((10, 10), 1e-4, 20)
    assert n == 7  # C(17, 7) = 19,448 >= 10^4 > C(16, 6) = 8,008
    for n0 in (5, 10, 20):  # the size brackets the level for every baseline and level, not just one
        for level in (1e-2, 1e-3, 1e-4, 1e-5):
            n = confirmation_size((n0, n0), level, 40)
            assert 1 / math.comb(n + n0, n) <= level < 1 / math.comb(n + n0 - 1, n - 1), (n0, level, n)
    assert confirmation_size((3, 3), 1e-4, 10) == 0  # a 3-trial baseline cannot show it within 10


def test_a_case_with_one_baseline_failure_is_still_reliable_and_needs_a_longer_confirmation() -> None:
    assert reliable((9, 10)) and reliable((5, 5)) and not reliable((8, 10)) and not reliable((3, 3))
    level = 1e-4
    n = confirmation_size((9, 10), level, 30)
    assert math.comb(10, 9) / math.comb(n + 10, 9) <= level < math.comb(10, 9) / math.comb(n + 9, 9)
    assert n > confirmation_size((10, 10), level, 30)
