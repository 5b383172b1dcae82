"""gating/collapse.py: a case's collapse is a drop past the margin, a tie in rounding is not."""

from __future__ import annotations

from rubricgate.gating.collapse import case_family


def test_a_case_down_by_exactly_the_margin_is_no_collapse_though_rounding_puts_it_over():
    """400/400 then 95/100 is a 5-point drop, computed 0.050000000000000044: with its significant
    exact test it was a collapse (a REGRESSION of the run) of a drop no larger than the margin."""
    assert 1 - 95 / 100 > 0.05
    [tie] = case_family({"c": {"verdict": (95, 100)}}, {"c": {"verdict": (400, 400)}}, 0.05, 0.05)
    assert tie.p_adjusted <= 0.05 and tie.kind != "collapse"
    [past] = case_family({"c": {"verdict": (94, 100)}}, {"c": {"verdict": (400, 400)}}, 0.05, 0.05)
    assert past.kind == "collapse"
