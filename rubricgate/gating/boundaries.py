"""Group-sequential boundaries from the joint distribution of the looks.

Alpha spending (Lan & DeMets, Biometrika 1983) fixes how much of alpha each look may use: the
chance of a first crossing at look k is the increment of the spending function there. The
looks share most of their trials, so their statistics are strongly correlated, and the nominal
level a look's own test may be run at is larger than its increment. This module finds those
nominal levels under the canonical joint distribution of a sequentially computed statistic
(Jennison & Turnbull, *Group Sequential Methods with Applications to Clinical Trials*, 2000,
ch. 3 and 7): Z_1..Z_K jointly normal with Cov(Z_j, Z_k) = sqrt(I_j / I_k) for j <= k, where I_k
is the information at look k. The crossing probabilities are integrated numerically look by
look (Armitage, McPherson & Rowe, JRSS A 1969; Jennison & Turnbull ch. 19): the sub-density of
Z_k over the region where no earlier look crossed, on a Simpson grid, and the boundary of look
k found by bisection so that the chance of crossing there first is the look's increment.

The levels are fractions of alpha, so the gate keeps using each look's exact test at
alpha x fraction; the normal model only sets how the looks' levels relate. The exit-code
frequencies this produces are measured by simulation in bench/gate_power.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

from rubricgate.gating.exact import import_numpy

_N = NormalDist()
_GRID = 101  # Simpson points per look: the levels agree with 601 points to four digits
_LOW, _HIGH = -8.0, 8.0  # z range integrated; a boundary at _HIGH means the look spends nothing


def nominal_fractions(information: Sequence[float], cumulative: Sequence[float], alpha: float) -> list[float]:
    """Per look, the nominal one-sided level (as a fraction of `alpha`) whose first crossings
    spend `cumulative[k]` x alpha in all by look k, under the canonical joint distribution with
    `information` (increasing) at the looks. The first look's fraction is its increment; a look
    whose increment is 0 gets 0."""
    if any(b <= a for a, b in zip(information, information[1:])) or not information or information[0] <= 0:
        raise ValueError(f"information at the looks must be positive and increase: {list(information)}")
    info = tuple(round(i / information[-1], 9) for i in information)
    return list(_fractions(info, tuple(round(c, 9) for c in cumulative), round(alpha, 12)))


@lru_cache(maxsize=256)
def _fractions(info: tuple[float, ...], cumulative: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    np = import_numpy()
    out, previous, spent = [], None, 0.0
    for k, (i_k, c_k) in enumerate(zip(info, cumulative)):
        target, spent = alpha * max(0.0, c_k - spent), max(spent, c_k)
        if previous is None:
            bound = min(_HIGH, _N.inv_cdf(1 - target)) if target > 0 else _HIGH
            z = np.linspace(_LOW, bound, _GRID)
            density = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        else:
            bound, z, density = _next_look(np, previous, info[k - 1], i_k, target)
        out.append(_sf(bound) / alpha if bound < _HIGH else 0.0)
        previous = (z, _simpson_weights(np, z) * density, density)
    return tuple(out)


def _next_look(np, previous, i_prev: float, i_k: float, target: float):
    """The boundary of the next look and the sub-density of its statistic below it."""
    z_prev, mass, density_prev = previous
    sd = math.sqrt(i_k - i_prev)
    root_k, root_prev = math.sqrt(i_k), math.sqrt(i_prev)
    # The bisection below calls crossing 60 times a look: what does not depend on b is computed
    # once (the same values as computed inside it: the same operations in the same order).
    half_mass, scaled_prev, scale = mass * 0.5, z_prev * root_prev, sd * math.sqrt(2)

    def crossing(b: float) -> float:  # P(no earlier crossing, Z_k > b)
        return float(np.sum(half_mass * _erfc(np, (b * root_k - scaled_prev) / scale)))

    bound = _HIGH
    if target > 0:
        low, high = _LOW, _HIGH
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if crossing(mid) > target else (low, mid)
        bound = high
    z = np.linspace(_LOW, bound, _GRID)
    step = z_prev[1] - z_prev[0]
    if sd / root_prev < step:
        # The step from the last look is narrower than the grid (looks a round apart after many
        # trials): Simpson's rule cannot integrate so narrow a kernel (its sums grew by about 7x a
        # look until they overflowed into nan). The sub-density taken as constant over each grid
        # point's cell integrates the kernel exactly, at any width (Simpson's uneven weights
        # would alias: a cell's mass 4/3 or 2/3 of its share).
        edges = np.append(z_prev - step / 2, z_prev[-1] + step / 2)  # a cell's upper edge is the next's lower
        above = 0.5 * _erfc(np, (z[:, None] * root_k - edges[None, :] * root_prev) / scale)
        return bound, z, (above[:, 1:] - above[:, :-1]) @ density_prev * root_k / root_prev
    u = (z[:, None] * root_k - z_prev[None, :] * root_prev) / sd
    density = (np.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)) @ mass * root_k / sd
    return bound, z, density


def _erfc(np, x):
    """math.erfc of each element (numpy has no erfc; np.vectorize's per-call set-up cost more than
    the erfcs of a 101-point grid)."""
    return np.fromiter(map(math.erfc, x.ravel().tolist()), float, x.size).reshape(x.shape)


def _simpson_weights(np, z):
    w = np.ones(len(z))
    w[1:-1:2], w[2:-1:2] = 4, 2
    return w * (z[1] - z[0]) / 3


def _sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))
