"""One case that collapses: a per-case exact test with family-wise control over cases and dimensions.

A sum of passes over 300 cases barely moves when one case goes from 10/10 to 0/5, however real
that is. So besides the dimension-level test every shared case is tested on its own, per
dimension: Fisher's exact one-sided test of its current passes against its baseline passes,
Holm across every (case, dimension) pair the run and the baseline share, at the per-case share
of alpha (rubricgate/gating/outcome.py). Holm holds under any dependence, so the correlated
dimensions of one trial cost nothing in validity.

A case counts as REGRESSION when its adjusted p holds AND its own drop exceeds gate.margin (the
same "established and it matters" rule as a dimension). A case that was stable in the baseline
(every trial passed) and fails now without reaching that is listed as flaky: shown, not hidden.

A p-value comes with a spending fraction (the look it was computed at, under adaptive rounds):
it is divided by that fraction before Holm. A case re-tried because it failed (a confirmation,
rubricgate/gating/sequential.py) is tested on its confirmation trials only, which were drawn
after the failure that selected it: fresh data, tested once, so its fraction is 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rubricgate.gating.exact import holm, lower_p

Counts = Mapping[str, Mapping[str, tuple[int, int]]]  # case -> dimension -> (passes, trials)


@dataclass(frozen=True)
class CaseFinding:
    """One case and dimension the family flagged: a collapse (regression) or a flaky failure."""

    case_id: str
    dimension: str
    current: tuple[int, int]
    baseline: tuple[int, int]
    p_adjusted: float
    regression: bool

    def line(self) -> str:
        """'fixture-x: verdict 0/5 vs baseline 10/10 (per-case exact p, Holm 0.0021)'."""
        (x1, n1), (x0, n0) = self.current, self.baseline
        what = "a collapse" if self.regression else "flaky: a drop not established"
        return (f"{self.case_id}: {self.dimension} {x1}/{n1} vs baseline {x0}/{n0} "
                f"({what}; per-case exact p, Holm over cases and dimensions, {self.p_adjusted:.2g})")


def stable(baseline: tuple[int, int]) -> bool:
    """Stable in the baseline: it ran and every trial passed."""
    return baseline[1] > 0 and baseline[0] == baseline[1]


def case_family(current: Counts, baseline: Counts, level: float, margin: float,
                spend: float = 1.0, confirmed: Counts | None = None) -> list[CaseFinding]:
    """Every shared (case, dimension) tested; regressions and flaky stable cases returned.

    `current`: the run's counts (from its fixed design, spending fraction `spend`);
    `confirmed`: for re-tried cases, the counts of their confirmation trials alone.
    """
    confirmed = confirmed or {}
    pairs, raw = {}, {}
    for case, dims in current.items():
        for dim, counts in dims.items():
            base = baseline.get(case, {}).get(dim)
            if base is None or not counts[1] or not base[1]:
                continue
            fresh = confirmed.get(case, {}).get(dim)
            used, fraction = (fresh, 1.0) if fresh and fresh[1] else (counts, spend)
            pairs[(case, dim)] = (used, base, counts)
            raw[f"{case}\x00{dim}"] = min(1.0, lower_p([(*used, *base)]) / fraction)
    adjusted = holm(raw, level) if raw else {}
    return [f for f in (_finding(key, pairs, adjusted, level, margin) for key in raw) if f is not None]


def _finding(key: str, pairs: dict, adjusted: dict[str, float], level: float, margin: float) -> CaseFinding | None:
    case, dim = key.split("\x00")
    (x1, n1), (x0, n0), (design_x, design_n) = pairs[(case, dim)]
    p = adjusted[key]
    drop = x0 / n0 - x1 / n1
    if p <= level and drop > margin:
        return CaseFinding(case, dim, (x1, n1), (x0, n0), p, True)
    if stable((x0, n0)) and (x1 < n1 or design_x < design_n):  # shown with the counts that failed
        shown = (x1, n1) if x1 < n1 else (design_x, design_n)
        return CaseFinding(case, dim, shown, (x0, n0), p, False)
    return None
