"""rubricgate.exact: the stratified exact test against scipy and brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import pytest
import scipy.stats as sps

from rubricgate import exact


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("stratum", [(4, 3, 1, 3), (1, 3, -1, 3), (0, -1, 0, 3)])
def test_impossible_counts_are_rejected(stratum) -> None:
    with pytest.raises(ValueError, match="passes"):
        exact.lower_midp([stratum])


def test_no_informative_case_gives_p_one_half_of_the_point_mass() -> None:
    # Nothing to compare: S is fixed, so P(S < s) = 0 and P(S = s) = 1 -> mid-p 0.5, never a regression.
    assert exact.lower_midp([]) == 0.5
    assert exact.lower_midp([(3, 3, 0, 0), (0, 0, 2, 2)]) == 0.5  # one side empty: skipped


# -- against scipy ----------------------------------------------------------------------------

def _scipy_tails(x1: int, n1: int, x0: int, n0: int) -> tuple[float, float]:
    dist = sps.hypergeom(n1 + n0, x1 + x0, n1)  # population, successes in it, draws
    return float(dist.cdf(x1 - 1)), float(dist.pmf(x1))


@pytest.mark.parametrize("stratum", [(1, 4, 3, 4), (20, 30, 27, 30), (0, 5, 5, 5), (7, 9, 2, 3), (3, 3, 3, 3)])
def test_one_case_is_the_hypergeometric_mid_p(stratum) -> None:
    below, at = _scipy_tails(*stratum)
    assert exact.lower_midp([stratum]) == pytest.approx(below + at / 2, rel=1e-9)
    x1, n1, x0, n0 = stratum
    fisher = sps.fisher_exact([[x1, n1 - x1], [x0, n0 - x0]], alternative="less").pvalue
    low, point, _ = exact.null_distribution([stratum]).tails()
    assert low + point == pytest.approx(fisher, rel=1e-9)  # the plain exact p is Fisher's


def _brute_force(strata) -> tuple[float, float, float]:
    """Enumerate every combination of per-case counts with scipy's pmfs."""
    dists = []
    for x1, n1, x0, n0 in strata:
        d = sps.hypergeom(n1 + n0, x1 + x0, n1)
        support = range(max(0, x1 + x0 - n0), min(n1, x1 + x0) + 1)
        dists.append([(v, d.pmf(v)) for v in support])
    observed = sum(s[0] for s in strata)
    tails = [0.0, 0.0, 0.0]
    for combo in itertools.product(*dists):
        s, p = sum(v for v, _ in combo), math.prod(q for _, q in combo)
        tails[0 if s < observed else 1 if s == observed else 2] += p
    return tuple(tails)


@pytest.mark.parametrize("strata", [
    [(1, 3, 3, 3), (2, 3, 3, 3), (0, 1, 1, 1)],
    [(4, 5, 5, 5), (3, 5, 2, 5), (5, 5, 5, 5), (1, 2, 2, 3)],
    [(2, 3, 3, 3)] * 4 + [(1, 3, 2, 3)] * 3,
])
def test_several_cases_match_enumeration(strata) -> None:
    below, at, above = _brute_force(strata)
    assert exact.null_distribution(strata).tails() == pytest.approx((below, at, above), rel=1e-9, abs=1e-15)
    assert exact.lower_midp(strata) == pytest.approx(below + at / 2, rel=1e-9)
    assert exact.upper_midp(strata) == pytest.approx(above + at / 2, rel=1e-9)


def test_tiny_tails_do_not_underflow_to_zero() -> None:
    # 0/60 against 60/60: P = 1 / C(120, 60), about 1e-35; a 1 - cdf would read 0.
    p = exact.lower_midp([(0, 60, 60, 60)])
    assert p == pytest.approx(0.5 / math.comb(120, 60), rel=1e-9)
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
