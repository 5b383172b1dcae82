"""The PASS boundary, calibrated exactly: a PASS at a drop of the margin happens at most alpha of the time.

PASS says "the rate fell by no more than gate.margin". Its bound is Newcombe's hybrid score bound on
the drop (a one-sided Wilson bound on each side, combined), which is liberal next to the
boundaries: taken at its nominal level, a fixed design of 3 trials on a perfect 30-case suite
PASSes a rate that fell by exactly the margin in 5.7% of runs at alpha 5%, and at low rates the
current side's Wilson bound undercovers too. So the score the bound is taken at is not nominal:
it is calibrated, look by look, so that the exact chance of a PASS when the drop is exactly the
margin stays within alpha.

The calibration model: every case at one common rate b in the baseline and b - margin now (the
least favourable shape: at the same mean, rates that differ between cases make both counts less
variable than binomial, and the bound, which uses the pooled binomial variance, is then more
conservative; Hoeffding 1956); the baseline's pooled passes X0 ~ Binomial(N0, b) and the run's
passes after look k a binomial path X1_k. For each X0 the PASS region at look k is
X1_k >= c_k(X0) (more passes now, or fewer in the baseline, only lower the bound). The chance of
a first PASS at look k is summed exactly over X0 and the path (dynamic programming over the
looks), for every b of a grid that is fine next to 1 (where the bound is most liberal for stable
suites) and reaches down to the margin.

The score may differ by the reference rate X0 / N0 (BANDS): one score for every rate would be
set by the rates where the bound is most liberal (a suite passing 10% of the time), and cost
the suites near 1 their first PASS. Per look, from the highest band down, each band's score is
the most liberal for which every b's chance of a PASS by that look (its rows in the bands already
set, at their scores) stays within alpha x the spending's cumulative fraction there. A band
with no such score has no PASS region at that look.

Only the pooled counts enter, so the calibration depends on the design (trials at each look,
the baseline's trials) and not on what the run sees: it is fixed before the first trial and
cached. The benchmark (bench/gate_power.py) measures the result on heterogeneous suites.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rubricgate.gating.exact import import_numpy
from rubricgate.gating.stats import wilson_bounds

Z_NONE = 40.0  # a score no count reaches: no PASS region
_TAIL = 8.0  # standard deviations kept either side of a count's mean (the rest is < 1e-15)
_MASS_FLOOR = 1e-16  # a cell with less probability cannot move an error compared with alpha
_Z_TOP, _Z_STEP = 12.0, 1e-4  # scores are found by bisection on [0, _Z_TOP] to this step
_MAX_ROWS = 48  # baseline counts per rate (merged beyond: _rows)
_STEP_SD = 0.3  # the common rates' grid step, in standard deviations of a rate (rate_grid)
_MAX_RATES = 200  # common rates per calibration at most (the error between them: tests/gating/test_passbound.py)
_RATE_SPAN = math.pi / _STEP_SD  # the grid's length in steps, over sqrt(n): integral of db / sqrt(b (1 - b)) / step
SAFETY = 0.99  # each look's budget is this share of alpha x its cumulative fraction: the error between grid points
# Reference-rate bands with a score of their own (lower edges; the last band is [0.98, 1]).
BANDS = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.98)


def band(rate: float) -> int:
    """The band of a reference rate."""
    return max(0, bisect_right(BANDS, rate + 1e-12) - 1)


def pass_upper(ref: float, n0: float, passes: float, n1: float, z: float) -> float:
    """Newcombe's hybrid upper bound on (reference rate - current rate) at score z: the reference's
    upper Wilson half-width and the current's lower one, combined by root sum of squares."""
    if n1 <= 0 or n0 <= 0:
        return math.inf
    if z >= Z_NONE:
        return math.inf
    cur = passes / n1
    ref_half = wilson_bounds(ref, n0, z)[1] - ref
    cur_half = cur - wilson_bounds(cur, n1, z)[0]
    return ref - cur + math.hypot(ref_half, cur_half)


def _wilson_centre_half(np, rate, n: float, z: float):
    """Each rate's Wilson interval at score z as its centre and half-width (the arithmetic of
    stats.wilson_bounds, over arrays)."""
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    return centre, z * np.sqrt(np.maximum(0.0, rate * (1 - rate)) / n + z * z / (4 * n * n)) / (1 + z * z / n)


def _wilson_upper(np, rate, n: float, z: float):
    """The upper Wilson bound of each rate at score z."""
    centre, half = _wilson_centre_half(np, rate, n, z)
    return np.minimum(1.0, np.maximum(rate, centre + half))


def _wilson_lower(np, rate, n: float, z: float):
    """The lower Wilson bound of each rate at score z."""
    centre, half = _wilson_centre_half(np, rate, n, z)
    return np.maximum(0.0, np.minimum(rate, centre - half))


@dataclass(frozen=True)
class PassBoundary:
    """Per look, per reference-rate band, the score the PASS bound is taken at (Z_NONE: no PASS)."""

    z: tuple[tuple[float, ...], ...]
    error: tuple[float, ...]  # the exact chance of a PASS by each look at a drop of the margin (worst b)

    def score(self, look: int, reference: float) -> float:
        """The score at this look (0-based; past the last: the last) for this reference rate."""
        return self.z[min(look, len(self.z) - 1)][band(reference)]


def calibrate(n0: int, looks: Sequence[int], cumulative: Sequence[float], alpha: float,
              margin: float, extended: bool = False) -> PassBoundary:
    """Scores for looks at `looks` current trials (increasing), the baseline's pooled trials `n0`,
    so that the chance of a PASS by look k is at most alpha x cumulative[k] for every common rate.
    `extended`: the caller will ask for these looks and one more (a continued run, look by look)."""
    key = (int(n0), tuple(int(n) for n in looks), tuple(round(c, 9) for c in cumulative), round(alpha, 12),
           round(margin, 9))
    return _calibrate(*key, extended)


@lru_cache(maxsize=512)
def _calibrate(n0: int, looks: tuple[int, ...], cumulative: tuple[float, ...], alpha: float,
               margin: float, extended: bool) -> PassBoundary:
    planned = next((n for n, c in zip(looks, cumulative) if c >= 0.5 * cumulative[-1]), looks[-1])
    with _FRONTIER_LOCK:
        frontier = _FRONTIER[0]
        if frontier is None or not frontier.leads_to(n0, looks, cumulative, alpha, margin, planned):
            frontier = _Frontier(_Grid(import_numpy(), n0, margin, planned), (n0, alpha, margin, planned))
        try:
            frontier.extend(looks, cumulative, alpha)
        except BaseException:
            _FRONTIER[0] = None  # stopped between a look's steps (Ctrl-C), its grid is no look's state
            raise
        # Kept only where a longer prefix will be asked for: elsewhere its paths would stay in
        # memory for the rest of the run.
        _FRONTIER[0] = frontier if extended else None
        return PassBoundary(tuple(frontier.zs[:len(looks)]), tuple(frontier.errors[:len(looks)]))


class _Frontier:
    """The grid after the looks calibrated so far. Each look's scores depend only on the looks up
    to it (the grid's rates are set by the planned look, the same for every prefix of a design),
    so a design asked for again with one look more, as a continued run asks at each of its looks,
    is calibrated from here: one look's work, not all of them again."""

    def __init__(self, grid: _Grid, design: tuple) -> None:
        self.grid, self.design = grid, design
        self.looks: list[int] = []
        self.cumulative: list[float] = []
        self.zs: list[tuple[float, ...]] = []
        self.errors: list[float] = []

    def leads_to(self, n0: int, looks: tuple[int, ...], cumulative: tuple[float, ...], alpha: float,
                 margin: float, planned: int) -> bool:
        """Are the looks calibrated so far a prefix of these, in the same design?"""
        done = len(self.looks)
        return (self.design == (n0, alpha, margin, planned) and done <= len(looks)
                and tuple(self.looks) == looks[:done] and tuple(self.cumulative) == cumulative[:done])

    def extend(self, looks: tuple[int, ...], cumulative: tuple[float, ...], alpha: float) -> None:
        """Calibrate the looks past those done so far."""
        grid = self.grid
        for n1, cum in zip(looks[len(self.looks):], cumulative[len(self.looks):]):
            grid.advance(n1 - (self.looks[-1] if self.looks else 0), n1)
            scores = grid.least_scores(alpha * cum * SAFETY)
            grid.absorb(scores)
            self.looks.append(n1)
            self.cumulative.append(cum)
            self.zs.append(tuple(scores))
            self.errors.append(float(grid.crossed.max()))


_FRONTIER: list[_Frontier | None] = [None]
_FRONTIER_LOCK = threading.Lock()


def rate_grid(n0: int, margin: float, n1: int = 0) -> list[float]:
    """Common baseline rates the error is maximized over, from 1 down to just above the margin
    (the run's rate is b - margin), in steps of _STEP_SD standard deviations of a rate over the
    larger of the baseline's and the run's trials, finer next to 1 (the chance of a PASS is a
    smooth function of b that peaks between coarser points), at most _MAX_RATES of them."""
    n = max(n0, n1, 1)
    spread = max(1.0, _RATE_SPAN * math.sqrt(n) / _MAX_RATES)  # widen the steps to fit _MAX_RATES
    out, b = [1.0], 1.0 - 0.5 / n
    while b - margin > 1e-9:
        out.append(b)
        b -= spread * max(_STEP_SD * math.sqrt(b * (1 - b) / n), 0.15 / n)
    out += [margin + d for d in (0.003, 0.001)]
    return sorted({round(x, 9) for x in out if x - margin > 1e-9}, reverse=True)


class _Grid:
    """Every common rate b of the grid: the baseline's pooled passes and the run's path not yet PASSed.

    Per rate, `mass[i, j]` is P(X1 = offset + j, no PASS so far | X0 = x0[i]). The rows of all
    rates are scored together, band by band: a band's PASS thresholds are searched once per
    distinct baseline count in it (rows of different rates share them)."""

    def __init__(self, np, n0: int, margin: float, n1: int = 0):
        self.np, self.n0, self.margin = np, n0, margin
        self.rates = rate_grid(n0, margin, n1)
        self.x0, self.w0, self.mass, self.offset = [], [], [], []
        for b in self.rates:
            values, pmf = _rows(np, n0, b)
            self.x0.append(values)
            self.w0.append(pmf)
            self.mass.append(np.ones((len(values), 1)))
            self.offset.append(0)
        self.crossed = np.zeros(len(self.rates))
        ref = np.concatenate(self.x0) / n0
        self._rate = np.concatenate([np.full(len(x), i) for i, x in enumerate(self.x0)])
        self._weights = np.concatenate(self.w0)
        bands = np.array([band(r) for r in ref])
        self._bands = []  # per band: (its rows, its distinct reference rates, each row's index among them)
        for j in range(len(BANDS)):
            rows = np.nonzero(bands == j)[0]
            distinct, inverse = np.unique(ref[rows], return_inverse=True)
            self._bands.append((rows, distinct, inverse.ravel()))
        self.n1 = 0
        # per band, sorted by score: (score, thresholds per distinct reference, per row) (_cut)
        self._known: list[list[tuple[float, object, object]]] = [[] for _ in BANDS]

    def advance(self, trials: int, n1: int) -> None:
        """Add `trials` trials at rate b - margin to every path; prepare the tails at this look."""
        np = self.np
        self.n1 = n1
        self._known = [[] for _ in BANDS]  # thresholds depend on n1: this look's only
        for i, b in enumerate(self.rates):
            if trials > 0:
                low, pmf = _binomial(np, trials, b - self.margin)
                out = _convolve_rows(np, self.mass[i], pmf)
                keep = out.max(axis=0) > _MASS_FLOOR * 1e-3
                first, last = int(np.argmax(keep)), len(keep) - int(np.argmax(keep[::-1]))
                self.mass[i], self.offset[i] = out[:, first:last], self.offset[i] + int(low[0]) + first
        # Every row's column tail sums P(X1 >= offset + j, not yet PASSed | X0), one flat array.
        self._lo = np.concatenate([np.full(len(x), o) for x, o in zip(self.x0, self.offset)])
        self._width = np.concatenate([np.full(len(x), m.shape[1]) for x, m in zip(self.x0, self.mass)])
        tails = [np.concatenate([np.cumsum(m[:, ::-1], axis=1)[:, ::-1], np.zeros((len(m), 1))], axis=1).ravel()
                 for m in self.mass]
        self._flat = np.concatenate(tails)
        self._pos = np.concatenate([
            start + np.arange(len(m)) * (m.shape[1] + 1)
            for start, m in zip(np.cumsum([0] + [len(t) for t in tails])[:-1], self.mass)])

    def band_crossing(self, j: int, z: float):
        """Per rate, P(a first PASS at this look) from band j's rows, its bound at score z."""
        np = self.np
        rows = self._bands[j][0]
        if not len(rows) or z >= Z_NONE:
            return np.zeros(len(self.rates))
        col = np.clip(self._cut(j, z) - self._lo[rows], 0, self._width[rows])
        values = self._flat[self._pos[rows] + col] * self._weights[rows]
        return np.bincount(self._rate[rows], values, minlength=len(self.rates))

    def _cut(self, j: int, z: float):
        """Per row of band j, the fewest current passes that PASS at score z. Kept for the look:
        the search for a band's score and the look's absorb ask for the same scores again."""
        known = self._known[j]
        at = bisect_left(known, z, key=lambda entry: entry[0])
        if at < len(known) and known[at][0] == z:
            return known[at][2]
        # A higher score only widens both bounds, so the thresholds rise with z: those at the
        # nearest scores already searched either side bracket these (the band's score search
        # narrows in on z, and the bracket with it).
        _, distinct, inverse = self._bands[j]
        found = self._thresholds(distinct, z, known[at - 1][1] if at else None,
                                 known[at][1] if at < len(known) else None)
        known.insert(at, (z, found, found[inverse]))
        return known[at][2]

    def _thresholds(self, ref, z: float, below=None, above=None):
        """Per reference rate, the fewest current passes that PASS (n1 + 1: none), searched
        between `below` and `above` (thresholds at a lower and a higher score) where given."""
        np = self.np
        z = min(z, _Z_TOP)
        # pass_upper over the arrays; the reference's half-width is the same at every step.
        ref_half = _wilson_upper(np, ref, self.n0, z) - ref
        # No count under n1 (ref - margin + ref_half) PASSes (the root sum is at least ref_half):
        # the search starts there, two counts lower against rounding, instead of at 0.
        low = np.clip(np.floor(self.n1 * (ref - self.margin + ref_half)) - 2, 0, self.n1 + 1)
        high = np.full(len(ref), float(self.n1 + 1))
        if below is not None:
            low = np.maximum(low, below)
        if above is not None:
            high = np.minimum(high, above)
            low = np.minimum(low, high)
        while float(np.max(high - low, initial=0.0)) > 0:  # the bound falls as current passes rise
            mid = np.floor((low + high) / 2)
            cur = mid / self.n1
            ok = ref - cur + np.hypot(ref_half, cur - _wilson_lower(np, cur, self.n1, z)) <= self.margin
            high, low = np.where(ok, mid, high), np.where(ok, low, mid + 1)
        return high.astype(int)

    def least_scores(self, budget: float) -> list[float]:
        """Per band, from the highest down, the smallest score keeping every rate's chance of a
        PASS by now within `budget` (the bands above at theirs, those below without a PASS)."""
        np = self.np
        scores = [Z_NONE] * len(BANDS)
        if budget <= 0:
            return scores
        room = budget * (1 + 1e-9) - self.crossed
        spent = np.zeros(len(self.rates))
        for j in reversed(range(len(BANDS))):
            if not len(self._bands[j][0]):
                continue

            def fits(z: float, j: int = j, spent=spent) -> bool:
                return bool(np.all(spent + self.band_crossing(j, z) <= room))

            if not fits(_Z_TOP):
                continue
            low, high = 0.0, _Z_TOP
            if not fits(low):
                while high - low > _Z_STEP:
                    mid = (low + high) / 2
                    low, high = (low, mid) if fits(mid) else (mid, high)
            scores[j] = low if fits(low) else high
            spent = spent + self.band_crossing(j, scores[j])
        return scores

    def absorb(self, scores: list[float]) -> None:
        """Take the PASS region at these band scores out of every path."""
        np = self.np
        cut = np.full(len(self._lo), np.iinfo(np.int64).max // 4)
        for j, z in enumerate(scores):
            rows = self._bands[j][0]
            if len(rows) and z < Z_NONE:
                self.crossed = self.crossed + self.band_crossing(j, z)
                cut[rows] = self._cut(j, z)
        cut = cut - self._lo
        start = 0
        for i, m in enumerate(self.mass):
            rows = cut[start:start + len(m)]
            self.mass[i] = np.where(np.arange(m.shape[1])[None, :] >= rows[:, None], 0.0, m)
            start += len(m)


def _only(j: int, z: float) -> list[float]:
    """Band scores with band j at z and no PASS elsewhere."""
    return [z if i == j else Z_NONE for i in range(len(BANDS))]


def _rows(np, n0: int, b: float):
    """The baseline's pooled passes at rate b, at most _MAX_ROWS of them: beyond that, consecutive
    counts are merged into one row at the lowest of them (the most liberal reference: the PASS
    region it gives contains theirs, so the error computed is never below the exact one)."""
    values, pmf = _binomial(np, n0, b)
    step = -(-len(values) // _MAX_ROWS)
    if step <= 1:
        return values, pmf
    starts = np.arange(0, len(values), step)
    return values[starts], np.add.reduceat(pmf, starts)


def _convolve_rows(np, rows, pmf):
    """Each row convolved with `pmf`: one batched FFT (a single row or a one-point pmf directly)."""
    size = rows.shape[1] + len(pmf) - 1
    if len(pmf) == 1:
        return rows * pmf[0]
    if len(rows) == 1 or rows.shape[1] * len(pmf) <= 64:
        return np.stack([np.convolve(row, pmf) for row in rows])
    n = 1 << (size - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(rows, n, axis=1) * np.fft.rfft(pmf, n)[None, :], n, axis=1)[:, :size]
    return np.clip(out, 0.0, None)


_FACTORIALS: list = []


def _log_factorials(np, n: int):
    """log k! for k = 0..n (grown when a larger n comes)."""
    if not _FACTORIALS or len(_FACTORIALS[0]) <= n:
        size = max(n + 1, 2 * (len(_FACTORIALS[0]) if _FACTORIALS else 1024))
        _FACTORIALS[:] = [np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, size)))])]
    return _FACTORIALS[0]


@lru_cache(maxsize=4096)
def _binomial(np, n: int, p: float):
    """(values, pmf) of Binomial(n, p) within _TAIL standard deviations of its mean, without the
    cells under _MASS_FLOOR."""
    if p >= 1.0:
        return np.array([n]), np.array([1.0])
    if p <= 0.0:
        return np.array([0]), np.array([1.0])
    sd = math.sqrt(n * p * (1 - p))
    low, high = max(0, int(n * p - _TAIL * sd) - 1), min(n, int(n * p + _TAIL * sd) + 2)
    ks = np.arange(low, high + 1)
    table = _log_factorials(np, n)
    logs = table[n] - table[ks] - table[n - ks] + ks * math.log(p) + (n - ks) * math.log1p(-p)
    pmf = np.exp(logs)
    keep = np.nonzero(pmf > _MASS_FLOOR)[0]
    return ks[keep[0]:keep[-1] + 1], pmf[keep[0]:keep[-1] + 1]
