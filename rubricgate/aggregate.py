"""Trial results -> rates per dimension, per case and per tag (pandas)."""

from __future__ import annotations

import pandas as pd

from rubricgate.models.base import DIMENSIONS
from rubricgate.models.results import CaseSpec, RateRow, TrialResult
from rubricgate.stats import counted


def trial_frame(cases: list[CaseSpec], results: list[TrialResult]) -> pd.DataFrame:
    """One row per trial that ran: case, trial, tags, and a bool column per dimension."""
    tags = {c.id: c.tags for c in cases}
    rows = [{"case_id": r.case_id, "trial": r.trial, "tags": tags.get(r.case_id, []), "outcome": r.outcome,
             **{d: r.grades[d].passed for d in DIMENSIONS}}
            for r in results if counted(r)]  # not run, or errored: the reviewer was never judged
    return pd.DataFrame(rows, columns=["case_id", "trial", "tags", "outcome", *DIMENSIONS])


def dimension_rates(frame: pd.DataFrame) -> dict[str, RateRow]:
    """A rate is passes / trials over all cases."""
    out = {}
    for dim in DIMENSIONS:
        n, k = len(frame), int(frame[dim].sum()) if len(frame) else 0
        out[dim] = RateRow(rate=(k / n) if n else None, passes=k, trials=n)
    return out


Counts = dict[str, dict[str, tuple[int, int]]]  # group -> dimension -> (passes, trials)


def _grouped_counts(frame: pd.DataFrame, key: str) -> Counts:
    grouped = frame.groupby(key)[list(DIMENSIONS)]
    sums, sizes = grouped.sum(), grouped.count()
    return {str(k): {d: (int(sums.loc[k, d]), int(sizes.loc[k, d])) for d in DIMENSIONS} for k in sums.index}


def case_counts(frame: pd.DataFrame) -> Counts:
    """Per case: passes and trials of each dimension."""
    return {} if frame.empty else _grouped_counts(frame, "case_id")


def tag_counts(frame: pd.DataFrame) -> Counts:
    """Per tag: passes and trials of each dimension over every trial of every case with the tag."""
    if frame.empty:
        return {}
    return _grouped_counts(frame.explode("tags").dropna(subset=["tags"]), "tags")


def as_rates(counts: Counts) -> dict[str, dict[str, float]]:
    return {g: {d: p / n for d, (p, n) in dims.items() if n} for g, dims in counts.items()}
