"""rubricgate.gating.exact: the stratified exact test against scipy and brute-force enumeration."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import pytest

from rubricgate.gating import exact


def _sps():
    """scipy.stats, imported where a test uses it: its 2 s import would otherwise be paid by
    every test worker while collecting."""
    import scipy.stats

    return scipy.stats


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("stratum", [(4, 3, 1, 3), (1, 3, -1, 3), (0, -1, 0, 3)])
def test_impossible_counts_are_rejected(stratum) -> None:
    with pytest.raises(ValueError, match="passes"):
        exact.lower_p([stratum])


def test_no_informative_case_gives_p_one() -> None:
    # Nothing to compare: S is fixed, so P(S >= s) = 1, never a regression.
    assert exact.lower_p([]) == 1.0
    assert exact.lower_p([(3, 3, 0, 0), (0, 0, 2, 2), (3, 3, 3, 3)]) == 1.0  # one side empty, degenerate


def test_settled_cases_are_judged_without_numpy_and_mixed_ones_with_it() -> None:
    # A run whose cases all passed (or failed) on both sides never imports numpy (~0.15 s of
    # the interpreter); adding one case that could have moved gives the same p as on its own.
    code = ("import sys; from rubricgate.gating import exact; "
            "print(exact.lower_p([(3, 3, 5, 5), (0, 2, 0, 4), (1, 1, 0, 0)]), 'numpy' in sys.modules); "
            "p = exact.lower_p([(3, 3, 5, 5), (1, 3, 5, 5)]); "
            "print(p == exact.lower_p([(1, 3, 5, 5)]) < 1.0, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1.0", "False", "True", "True"]


# -- against scipy ----------------------------------------------------------------------------

def _scipy_tails(x1: int, n1: int, x0: int, n0: int) -> tuple[float, float]:
    dist = _sps().hypergeom(n1 + n0, x1 + x0, n1)  # population, successes in it, draws
    return float(dist.cdf(x1 - 1)), float(dist.pmf(x1))


@pytest.mark.parametrize("stratum", [(1, 4, 3, 4), (20, 30, 27, 30), (0, 5, 5, 5), (7, 9, 2, 3), (3, 3, 3, 3)])
def test_one_case_is_fishers_exact_test(stratum) -> None:
    # One case: the score is monotone in the count, so P(S >= s) is Fisher's one-sided p. (Far
    # from the tested direction the rounded scores of counts with no evidence tie at 0: p rounds up.)
    x1, n1, x0, n0 = stratum
    less = _sps().fisher_exact([[x1, n1 - x1], [x0, n0 - x0]], alternative="less").pvalue
    greater = _sps().fisher_exact([[x1, n1 - x1], [x0, n0 - x0]], alternative="greater").pvalue
    below, at = _scipy_tails(*stratum)
    assert below + at == pytest.approx(less, rel=1e-9)
    for ours, fisher in ((exact.lower_p([stratum]), less), (exact.upper_p([stratum]), greater)):
        assert ours == pytest.approx(fisher, rel=1e-9) if fisher < 0.5 else ours >= fisher - 1e-12
    low, point, _ = exact.null_distribution([stratum]).tails()
    assert low + point == pytest.approx(less, rel=1e-9)


def _brute_force(strata, lower: bool) -> float:
    """P(S <= observed) (lower) or P(S >= observed) by enumerating every combination of per-case
    counts with scipy's pmfs, S the sum of current passes (the exact conditional CMH test)."""
    dists, observed = [], 0
    for x1, n1, x0, n0 in strata:
        d = _sps().hypergeom(n1 + n0, x1 + x0, n1)
        support = list(range(max(0, x1 + x0 - n0), min(n1, x1 + x0) + 1))
        observed += x1
        dists.append([(v, d.pmf(v)) for v in support])
    keep = (lambda s: s <= observed) if lower else (lambda s: s >= observed)
    return sum(math.prod(q for _, q in combo) for combo in itertools.product(*dists)
               if keep(sum(v for v, _ in combo)))


@pytest.mark.parametrize("strata", [
    [(1, 3, 3, 3), (2, 3, 3, 3), (0, 1, 1, 1)],
    [(4, 5, 5, 5), (3, 5, 2, 5), (5, 5, 5, 5), (1, 2, 2, 3)],
    [(2, 3, 3, 3)] * 4 + [(1, 3, 2, 3)] * 3,
])
def test_several_cases_match_enumeration(strata) -> None:
    assert exact.lower_p(strata) == pytest.approx(_brute_force(strata, True), rel=1e-9)
    assert exact.upper_p(strata) == pytest.approx(_brute_force(strata, False), rel=1e-9)


def test_no_rounding_one_case_matches_fisher_where_a_score_grid_doubled_it() -> None:
    # 8/22 vs 40/66: Fisher's exact one-sided p is 0.0418; a score rounded to a grid gave 0.108.
    assert exact.lower_p([(8, 22, 40, 66)]) == pytest.approx(
        _sps().fisher_exact([[8, 14], [40, 26]], alternative="less").pvalue, rel=1e-9)


def test_the_fft_path_matches_direct_summation(monkeypatch) -> None:
    strata = [(k % 4, 3, (k * 7) % 4, 3) for k in range(300)] + [(4, 5, 5, 5)] * 40
    direct = exact.lower_p(strata), exact.upper_p(strata)
    monkeypatch.setattr(exact, "_DIRECT_LIMIT", 0)
    assert (exact.lower_p(strata), exact.upper_p(strata)) == pytest.approx(direct, abs=1e-12)


def test_tiny_tails_do_not_underflow_to_zero() -> None:
    # 0/60 against 60/60: P = 1 / C(120, 60), about 1e-35; a 1 - cdf would read 0.
    p = exact.lower_p([(0, 60, 60, 60)])
    assert p == pytest.approx(1 / math.comb(120, 60), rel=1e-9)
    assert p > 0


# -- Holm and the strict rule's stated false-alarm rate ---------------------------------------

def test_holm_adjusts_in_order_and_stays_monotone() -> None:
    adjusted = exact.holm({"a": 0.01, "b": 0.04, "c": 0.03}, 0.05)
    assert adjusted == pytest.approx({"a": 0.03, "c": 0.06, "b": 0.06})  # b: max(2*0.03, 1*0.04)
    assert exact.holm({}, 0.05) == {}
    assert exact.holm({"a": 0.9, "b": 0.8}, 0.05) == {"b": 1.0, "a": 1.0}


def test_dip_probability_is_zero_for_deterministic_cases_and_exact_otherwise() -> None:
    assert exact.dip_probability(exact.null_distribution([(3, 3, 3, 3), (0, 3, 0, 3)])) == 0.0
    # One case, 1 pass in 2 trials over both sides (1 trial each): S is 0 or 1 with 1/2 each;
    # S = 0 means the current rate (0) is below the reference's (1).
    assert exact.dip_probability(exact.null_distribution([(1, 1, 0, 1)])) == pytest.approx(0.5)


def test_holm_with_tarones_count_leaves_out_tests_that_cannot_reach_the_level() -> None:
    p = {"a": 0.01, "b": 0.5, "c": 1.0, "d": 1.0}
    plain = exact.holm(p, 0.05)
    assert plain["a"] == pytest.approx(0.04)  # four tests
    floors = {"a": 0.001, "b": 0.2, "c": 1.0, "d": 1.0}  # b, c, d cannot reach 0.05 whatever their data
    assert exact.holm(p, 0.05, floors)["a"] == pytest.approx(0.01)
    assert exact.holm(p, 0.05, {k: 0.0 for k in p}) == plain  # every test can reject: Holm itself
    # Tarone's count: the smallest k with at most k floors at or under alpha / k
    assert exact.tarone_count([0.001, 0.001, 0.03, 0.3], 0.05) == 2  # k = 2: two floors at or under 0.025
    assert exact.tarone_count([0.001, 0.001, 0.02, 0.3], 0.05) == 3  # k = 2 still sees three
    assert exact.tarone_count([], 0.05) == 1


def test_the_smallest_attainable_p_is_every_case_at_the_bottom_of_its_support() -> None:
    strata = [(2, 3, 3, 3), (1, 2, 0, 2), (3, 3, 3, 3)]  # the last cannot move: every trial passed
    low = exact.smallest_p(strata, lower=True)
    # case 1: 5 passes in 6, current 3 trials: the fewest current passes is 2, P = C(3,2) C(3,3) / C(6,5)
    assert low == pytest.approx((3 / 6) * (1 / 2))
    assert exact.lower_p([(2, 3, 3, 3), (0, 2, 1, 2)]) == pytest.approx(low)
    assert exact.smallest_p([(3, 3, 3, 3)]) == 1.0
