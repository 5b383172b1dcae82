"""Three outcomes per dimension, one meaning each, and how the error rate is shared out.

  PASS         the one-sided upper confidence bound on the drop is at most gate.margin: the data
               show the rate fell by no more than the margin (it may have risen).
  REGRESSION   the drop is established (its exact one-sided p, adjusted for multiplicity, is at
               most its share of alpha) AND it matters: the observed drop exceeds gate.margin.
               A drop that is real but smaller than the margin is not a regression. Against a
               stored baseline it must also exceed the drift allowance (gate.drift_allowance):
               the drop's lower confidence bound, at the same level, is above it. The label
               states what is shown: the drop's lower bound, and "more than the margin" only
               when that bound is above the margin.
  INCONCLUSIVE anything else: the data cannot yet tell a drop larger than the margin from one
               smaller. The run exits 2 (or 0 under `gate.inconclusive: pass`, said in every
               headline).

The two are disjoint: a REGRESSION has drop > margin, and the upper bound is never below the
drop, so it cannot also be a PASS. "improvement" is a PASS whose rise has its own significant
one-sided exact test (adjusted like the drop's); a rise without one is "no change".

Alpha = 1 - gate.confidence is the chance an unchanged reviewer exits 1, over everything the gate
tests. It is split between the dimension-level tests (Holm over the dimensions) and the per-case
family (Holm over every case and dimension, rubricgate/gating/collapse.py) by ALPHA_SHARES, and,
when the run looks more than once (adaptive rounds), across the looks by the spending fractions
of rubricgate/gating/sequential.py: a p-value from look k is divided by that look's fraction
before Holm, and the PASS bound at look k is taken at confidence 1 - alpha x fraction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["pass", "regression", "inconclusive"]

# Shares of alpha: the dimension-level stratified tests, and the per-case family that catches a
# single collapsing case on a large suite (where the suite-level sum barely moves).
ALPHA_SHARES = {"dimensions": 0.8, "cases": 0.2}


@dataclass(frozen=True)
class Evidence:
    """What one dimension's data say at one look."""

    drop: float  # observed drop (reference - current), as a fraction
    upper: float  # one-sided upper confidence bound on the drop
    p_drop: float  # exact one-sided p for "dropped", adjusted (Holm, and the look's spending)
    p_rise: float  # exact one-sided p for "rose", adjusted the same way
    level: float  # what an adjusted p is compared with: alpha x this family's share
    lower: float = float("-inf")  # one-sided lower confidence bound on the drop (what REGRESSION states)
    floor_drop: float = 0.0  # the smallest p_drop these margins allow (Tarone's count: 1 cannot reject)
    floor_rise: float = 0.0


# Drops are differences of rates, each a ratio of counts: a drop of exactly the margin (1 - 57/60
# at margin 0.05) computes as 0.050000000000000044. More than the margin is more by this much.
TIE = 1e-9


def beyond(drop, margin: float):
    """Is the drop (a float or an array of them) more than the margin, a tie in rounding not?"""
    return drop > margin + TIE


def classify(ev: Evidence, margin: float, allowance: float = 0.0) -> Outcome:
    """PASS / REGRESSION / INCONCLUSIVE by the rules above (`allowance`: gate.drift_allowance)."""
    if regressed(ev, margin, allowance):
        return "regression"
    if ev.upper <= margin:
        return "pass"
    return "inconclusive"


def regressed(ev: Evidence, margin: float, allowance: float = 0.0) -> bool:
    """Established, larger than the margin, and (with an allowance) established beyond the allowance."""
    return ev.p_drop <= ev.level and beyond(ev.drop, margin) and (allowance <= 0 or ev.lower > allowance)


def improved(ev: Evidence) -> bool:
    """A rise that holds on its own significant test (never from the sign alone)."""
    return ev.drop < 0 and ev.p_rise <= ev.level


def label(ev: Evidence, margin: float, allowance: float = 0.0) -> str:
    """The row's words: always what `classify` decided, with the figures it decided on."""
    outcome = classify(ev, margin, allowance)
    up, drop = ev.upper * 100, ev.drop * 100
    if outcome == "regression":
        return regression_text(ev, margin)
    if outcome == "pass" and improved(ev):
        return (f"improvement: up {-drop:.1f} points (adjusted p {ev.p_rise:.2g}); "
                f"the drop is at most {max(up, 0):.1f} points")
    if outcome == "pass":
        return f"no change: the drop is at most {max(up, 0):.1f} points (margin {margin * 100:.0f})"
    if regressed(ev, margin):  # blocked by the allowance alone
        return (f"INCONCLUSIVE: down {drop:.1f} points, not shown beyond the {allowance * 100:.0f}-point drift "
                "allowance of a stored baseline; judge head against base with `rubricgate compare --base`")
    return inconclusive_text(ev.upper, margin)


def regression_text(ev: Evidence, margin: float) -> str:
    """What a REGRESSION shows: the observed drop, its lower bound, and "more than the margin"
    only when the lower bound is above it (an established drop whose observed size exceeds the
    margin may itself be smaller than the margin)."""
    drop, lower, points = ev.drop * 100, ev.lower * 100, f"{margin * 100:.0f}-point margin"
    shown = f"at least {lower:.1f} points" if ev.lower > 0 else "above 0"
    if beyond(ev.lower, margin):
        return (f"REGRESSION: down {drop:.1f} points, more than the {points} "
                f"(shown: {shown}; adjusted p {ev.p_drop:.2g})")
    return (f"REGRESSION: down {drop:.1f} points (shown: {shown}, not shown to exceed the {points}; "
            f"adjusted p {ev.p_drop:.2g})")


def inconclusive_text(upper: float, margin: float | None = None) -> str:
    """The one line an undecided dimension gets (and the run's reason when it exits 2). The figure
    is the PASS bound (the upper confidence bound at this look's calibrated score), rounded up to
    a tenth of a point so a bound just over the margin never reads as the margin itself. No bound
    at all ("up to inf points") is where this look's share of the PASS error leaves no PASS
    region for the baseline's rate (gating/passbound.py): said as such."""
    if not math.isfinite(upper):
        return ("INCONCLUSIVE: could not judge at this size: this look bounds the drop nowhere (its share of the "
                "PASS error allows no PASS at the baseline's rate); add cases or raise the budget")
    shown = math.ceil(round(upper * 1000, 6)) / 10
    what = "" if margin is None else f" (its PASS bound, above the {margin * 100:g}-point margin)"
    return (f"INCONCLUSIVE: could not judge at this size: the drop could be up to {shown:.1f} points{what}; "
            "add cases or raise the budget")
