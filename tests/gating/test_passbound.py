"""rubricgate.gating.passbound: the PASS bound's exact calibration, checked by brute-force enumeration.

Every check recomputes P(PASS | the drop is exactly the margin) by summing over every baseline
count and every path of the run's counts (scipy's binomial, not the module's own arithmetic),
for common rates on a grid much finer than the calibration's own."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from rubricgate.gating.passbound import BANDS, Z_NONE, band, calibrate, pass_upper

MARGIN, ALPHA = 0.05, 0.05


def _binom_pmf(k, n, p):
    """scipy's binomial pmf, scipy imported on first use (not by every test worker while collecting)."""
    from scipy.stats import binom

    return binom.pmf(k, n, p)


@cache  # the same for every common rate b: computed once per count, not per b
def _passes(n0: int, n1: int, scores: tuple[float, ...], x0: int) -> np.ndarray:
    """Per current count 0..n1: does it PASS against a baseline of x0/n0 at these band scores?"""
    z = scores[band(x0 / n0)]
    return np.array([z < Z_NONE and pass_upper(x0 / n0, n0, x1, n1, z) <= MARGIN for x1 in range(n1 + 1)])


def _fixed_error(n0: int, n1: int, scores, b: float) -> float:
    p0, p1 = _binom_pmf(np.arange(n0 + 1), n0, b), _binom_pmf(np.arange(n1 + 1), n1, b - MARGIN)
    return float(sum(p0[x0] * p1[_passes(n0, n1, scores, x0)].sum() for x0 in range(n0 + 1) if p0[x0] > 1e-15))


def _two_look_error(n0: int, looks: tuple[int, int], scores, b: float) -> float:
    """P(a PASS at look 1 or look 2), the second look's count the first's plus a fresh binomial."""
    (a, c), p = looks, b - MARGIN
    first, step = _binom_pmf(np.arange(a + 1), a, p), _binom_pmf(np.arange(c - a + 1), c - a, p)
    total = 0.0
    for x0, w in enumerate(_binom_pmf(np.arange(n0 + 1), n0, b)):
        if w < 1e-15:
            continue
        early, late = _passes(n0, a, scores[0], x0), _passes(n0, c, scores[1], x0)
        stay = np.where(early, 0.0, first)  # paths that did not PASS at look 1
        total += w * (first[early].sum() + np.convolve(stay, step)[late].sum())
    return total


FINE = np.concatenate([np.linspace(MARGIN + 0.005, 0.97, 70), 1 - np.geomspace(2e-4, 0.03, 40), [1.0]])


@pytest.mark.parametrize(("n0", "n1"), [(30, 60), (60, 30), (90, 30), (40, 120)])
def test_a_design_that_looks_once_passes_a_drop_of_the_margin_at_most_alpha_of_the_time(n0: int, n1: int) -> None:
    cal = calibrate(n0, [n1], [1.0], ALPHA, MARGIN)
    worst = max(_fixed_error(n0, n1, cal.z[0], b) for b in FINE)
    assert worst <= ALPHA
    assert worst >= 0.8 * ALPHA  # calibrated, not merely conservative
    assert cal.error[0] == pytest.approx(max(_fixed_error(n0, n1, cal.z[0], b) for b in FINE), abs=0.004)


def test_two_looks_together_pass_a_drop_of_the_margin_at_most_alpha_of_the_time() -> None:
    n0, looks = 40, (20, 60)
    cal = calibrate(n0, list(looks), [0.6, 1.0], ALPHA, MARGIN)
    errors = [_two_look_error(n0, looks, cal.z, b) for b in FINE]
    assert max(errors) <= ALPHA and max(errors) == pytest.approx(cal.error[1], abs=0.004)
    firsts = [_fixed_error(n0, looks[0], cal.z[0], b) for b in FINE]
    assert max(firsts) <= 0.6 * ALPHA  # the first look keeps to its cumulative share


def test_the_nominal_score_is_liberal_where_the_calibrated_one_is_not() -> None:
    """What the calibration is for: Wilson's score bound at its nominal 1.645 PASSes a suite whose
    rate fell by exactly the margin more often than alpha (3 trials a case on 30 cases with a
    10-trial baseline: 5.67% next to 1, as the outside audit measured)."""
    nominal = (1.6449,) * len(BANDS)
    assert max(_fixed_error(300, 90, nominal, b) for b in (1.0, 0.999, 0.997, 0.995)) == pytest.approx(0.0567, abs=5e-4)
    calibrated = calibrate(300, [90], [1.0], ALPHA, MARGIN).z[0]
    assert max(_fixed_error(300, 90, calibrated, b) for b in (1.0, 0.999, 0.997, 0.995)) <= ALPHA


def test_no_pass_where_the_spending_gives_nothing_and_scores_never_loosen_with_less_budget() -> None:
    cal = calibrate(300, [30, 60], [0.0, 1.0], ALPHA, MARGIN)
    assert all(z >= Z_NONE for z in cal.z[0]) and cal.error[0] == 0.0
    more = calibrate(300, [90], [1.0], ALPHA, MARGIN).z[0]
    less = calibrate(300, [90], [0.5], ALPHA, MARGIN).z[0]
    assert all(a <= b for a, b in zip(more, less))


def test_bands_split_the_reference_rate_at_their_edges() -> None:
    assert [band(r) for r in (0.0, 0.29, 0.3, 0.97999, 0.98, 1.0)] == [0, 0, 1, 5, 6, 6]


# -- a continued run asks for one look more each time --------------------------------------------

def _from_scratch(n0: int, looks: tuple[int, ...], cumulative: tuple[float, ...]):
    from rubricgate.gating import passbound
    passbound._FRONTIER[0] = None  # nothing to go on from
    return passbound._calibrate.__wrapped__(n0, looks, cumulative, ALPHA, MARGIN, False)


def test_a_design_extended_look_by_look_gets_exactly_the_boundary_calibrated_from_scratch() -> None:
    """The frontier a continued run's looks go on from must give the very scores and errors a
    calibration of the whole prefix gives (each look's scores depend only on the looks up to it),
    also when another design is calibrated in between (the frontier is then not its own)."""
    from rubricgate.gating import passbound
    looks = (30, 60, 90, 120, 150, 180, 210)
    cumulative = (0.01, 0.02, 0.1, 0.11, 0.12, 0.13, 0.14)  # half of the last at the third look, for every prefix
    extended, frontiers = [], []
    for upto in range(3, len(looks) + 1):
        extended.append(calibrate(60, looks[:upto], cumulative[:upto], ALPHA, MARGIN, extended=True))
        frontiers.append(passbound._FRONTIER[0])  # the object, not its id: a freed one's id is reused
        if upto == 5:
            calibrate(50, (20, 40), (0.5, 1.0), ALPHA, MARGIN)  # another design between two looks
            assert passbound._FRONTIER[0] is None  # not extended, it left nothing held
    # gone on from, look by look: one frontier for 3 -> 5, a new one from 6 on (the other design came between)
    assert frontiers[0] is frontiers[1] is frontiers[2]
    assert frontiers[2] is not frontiers[3] and frontiers[3] is frontiers[4]
    assert passbound._FRONTIER[0].looks == list(looks)
    for upto, got in zip(range(3, len(looks) + 1), extended):
        want = _from_scratch(60, looks[:upto], cumulative[:upto])
        assert got.z == want.z and got.error == want.error, upto
    assert any(z < Z_NONE for scores in extended[-1].z for z in scores)  # it PASSes somewhere: not vacuous


def test_a_calibration_not_extended_holds_nothing_and_a_changed_prefix_starts_again() -> None:
    from rubricgate.gating import passbound
    calibrate(40, (20, 40, 60), (0.02, 0.04, 0.05), ALPHA, MARGIN)
    assert passbound._FRONTIER[0] is None
    calibrate(40, (20, 40, 60), (0.02, 0.04, 0.05), ALPHA, MARGIN, extended=True)
    assert passbound._FRONTIER[0] is not None and passbound._FRONTIER[0].looks == [20, 40, 60]
    other = calibrate(40, (20, 45, 60, 80), (0.02, 0.04, 0.05, 0.06), ALPHA, MARGIN, extended=True)  # not a prefix
    assert other == _from_scratch(40, (20, 45, 60, 80), (0.02, 0.04, 0.05, 0.06))


def test_a_calibration_stopped_between_a_looks_steps_leaves_no_frontier_behind(monkeypatch) -> None:
    """Ctrl-C after a look's paths advanced but before its scores were set: the next request must
    not go on from that grid (it would be one step ahead of the looks it records)."""
    from rubricgate.gating import passbound
    looks, cumulative = (20, 40, 60, 80, 100), (0.01, 0.02, 0.05, 0.06, 0.07)
    calibrate(40, looks[:4], cumulative[:4], ALPHA, MARGIN, extended=True)
    real, calls = passbound._Grid.least_scores, []

    def interrupted(self, budget):
        calls.append(budget)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(self, budget)

    monkeypatch.setattr(passbound._Grid, "least_scores", interrupted)
    with pytest.raises(KeyboardInterrupt):
        calibrate(40, looks, cumulative, ALPHA, MARGIN, extended=True)
    assert passbound._FRONTIER[0] is None
    again = calibrate(40, looks, cumulative, ALPHA, MARGIN, extended=True)
    monkeypatch.setattr(passbound._Grid, "least_scores", real)
    assert again == _from_scratch(40, looks, cumulative)
