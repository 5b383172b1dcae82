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


def test_a_case_whose_every_trial_errored_is_suspected_whatever_its_baseline():
    """No trial of it was judged, so its failures may all hide in the errors: a case flaky in the
    baseline (6/10, neither stable nor reliable) was an 'unconfirmed drop', a note, and the run
    could exit 0 (docs/statistics.md: a suite whose every trial of one case errored is at best
    INCONCLUSIVE naming it)."""
    [hidden] = case_family({"c": {"verdict": (0, 0)}}, {"c": {"verdict": (6, 10)}}, 0.01, 0.05,
                           errored={"c": 3})
    assert hidden.kind == "suspected" and "no trial of it was judged" in hidden.line()
    [judged] = case_family({"c": {"verdict": (0, 3)}}, {"c": {"verdict": (6, 10)}}, 0.01, 0.05)
    assert judged.kind == "unconfirmed"  # failed where it was judged: a drop not established, a note
