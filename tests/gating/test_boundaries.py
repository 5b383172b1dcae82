"""rubricgate.gating.boundaries: nominal levels of the looks from their joint distribution."""

from __future__ import annotations

import math
from itertools import accumulate

import numpy as np
import pytest

from rubricgate.gating.boundaries import nominal_fractions
from rubricgate.gating.sequential import ld_spending

LOOKS = [1, 2, 3, 4, 6, 10]
INFO = [30 / (1 / r + 1 / 10) for r in LOOKS]  # 30 cases, a 10-trial baseline shared by every look


def _cumulative(increments: list[float]) -> list[float]:
    return list(accumulate(increments))[:-1] + [1.0]


def test_information_that_does_not_increase_is_refused() -> None:
    with pytest.raises(ValueError, match="must be positive and increase"):
        nominal_fractions([1.0, 1.0], [0.5, 1.0], 0.05)
    with pytest.raises(ValueError, match="must be positive and increase"):
        nominal_fractions([0.0, 1.0], [0.5, 1.0], 0.05)


def test_a_look_that_spends_nothing_gets_no_level_and_the_first_gets_its_increment() -> None:
    got = nominal_fractions(INFO, [0.0, 0.3, 0.3, 0.8, 0.8, 1.0], 0.05)
    assert got[0] == 0.0 and got[2] == 0.0 and got[4] == 0.0
    got = nominal_fractions(INFO, [0.2, 0.5, 1.0, 1.0, 1.0, 1.0][:2] + [0.6, 0.7, 0.8, 1.0], 0.05)
    assert got[0] == pytest.approx(0.2, rel=1e-9)


def test_independent_looks_get_their_increments_and_one_statistic_gets_what_is_spent_by_then() -> None:
    # information growing a millionfold: the looks are nearly independent, the union bound is tight
    far = nominal_fractions([1.0, 1e6], [0.5, 1.0], 0.05)
    assert far[1] == pytest.approx(0.5 / (1 - 0.025), rel=0.01)
    # information barely growing: the second look sees the first's statistic again
    near = nominal_fractions([1.0, 1.0001], [0.5, 1.0], 0.05)
    assert near[1] == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("cumulative", [_cumulative(ld_spending([r / 10 for r in LOOKS], 0.05)),
                                        [0.01, 0.77, 0.8, 0.97, 0.99, 1.0]])
def test_first_crossings_of_the_joint_normal_spend_exactly_the_increments(cumulative: list[float]) -> None:
    alpha = 0.05
    levels = nominal_fractions(INFO, cumulative, alpha)
    bounds = np.array([_z(alpha * f) for f in levels])
    rng = np.random.default_rng(2026)
    draws = 1_000_000
    steps = rng.standard_normal((draws, len(INFO))) * np.sqrt(np.diff([0.0, *INFO]))
    z = np.cumsum(steps, axis=1) / np.sqrt(INFO)
    crossed = z > bounds
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    increments = np.diff([0.0, *cumulative]) * alpha
    for k, expected in enumerate(increments):
        seen = np.mean(first == k)
        assert abs(seen - expected) <= 4 * math.sqrt(expected * (1 - expected) / draws) + 1e-5, (k, seen, expected)
    assert sum(levels) > 1.5  # what the overlap of the looks buys over the union bound


def test_levels_grow_with_alpha_so_the_smallest_holm_level_is_the_conservative_one() -> None:
    cumulative = _cumulative(ld_spending([r / 10 for r in LOOKS], 0.05))
    small, large = (nominal_fractions(INFO, cumulative, a) for a in (0.05 * 0.8 / 3, 0.05 * 0.8))
    assert all(s <= b + 1e-12 for s, b in zip(small, large)) and small[-1] < large[-1]


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - level) if level > 0 else math.inf


def test_looks_a_round_apart_after_a_thousand_trials_keep_finite_levels_without_a_numpy_warning() -> None:
    # 1,000 trials a case first (the most --trials allows), then a look every round: each step's
    # kernel is far narrower than the grid, where Simpson's sums grew 7x a look until they overflowed
    # (numpy's RuntimeWarning) and a nan boundary fell to the grid's bottom: a look that always rejects.
    rounds = range(1000, 1401)
    info = [2 / (1 / r + 1 / 20) for r in rounds]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = nominal_fractions(info, [0.95 + 0.05 * k / (len(info) - 1) for k in range(len(info))], 0.05)
    assert all(math.isfinite(f) and 0.0 <= f <= 1.0 for f in got), max(got)
    assert got[0] == pytest.approx(0.95)
