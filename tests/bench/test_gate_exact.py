"""bench/gate_exact.py's two figures for a suite of perfect cases beside one flaky one (30 at 10/10,
one passing half the time): over the baseline's sampling the fixed designs PASS a margin-sized drop
within alpha (the promise, docs/statistics.md), while a baseline held at its most likely count
meets more than alpha at one and two trials a case (what the docs say the promise does not cover)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gate_exact import ALPHA, composition, pass_error, pass_error_given_baseline  # noqa: E402


def test_one_flaky_is_perfect_cases_beside_one_at_one_half():
    assert composition("one-flaky", 31) == [1.0] * 30 + [0.5]


@pytest.mark.parametrize("trials", [1, 2, 3])
def test_one_flaky_fixed_designs_pass_within_alpha_over_the_baselines_sampling(trials):
    assert 0.0 < pass_error("one-flaky", 31, trials) <= ALPHA


@pytest.mark.parametrize("trials", [1, 2])
def test_a_baseline_held_at_its_most_likely_count_is_not_bounded_by_alpha(trials):
    assert pass_error_given_baseline("one-flaky", 31, trials) > ALPHA


def test_a_perfect_suite_has_one_baseline_so_both_figures_agree():
    assert pass_error_given_baseline("perfect", 30, 2) == pytest.approx(pass_error("perfect", 30, 2))
