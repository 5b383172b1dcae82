"""Trial results -> rates per dimension, per case and per tag (pandas)."""

from __future__ import annotations

import pandas as pd

from rubricgate.models.base import DIMENSIONS
from rubricgate.models.results import CaseSpec, RateRow, TrialResult


def trial_frame(cases: list[CaseSpec], results: list[TrialResult]) -> pd.DataFrame:
    """One row per trial that ran: case, trial, tags, and a bool column per dimension."""
    tags = {c.id: c.tags for c in cases}
    rows = [{"case_id": r.case_id, "trial": r.trial, "tags": tags.get(r.case_id, []), "outcome": r.outcome,
             **{d: r.grades[d].passed for d in DIMENSIONS}}
            for r in results if not _not_run(r)]
    return pd.DataFrame(rows, columns=["case_id", "trial", "tags", "outcome", *DIMENSIONS])


def _not_run(result: TrialResult) -> bool:
    return any(g.category == "not_run" for g in result.grades.values())


def dimension_rates(frame: pd.DataFrame) -> dict[str, RateRow]:
    """A rate is passes / trials over all cases."""
    out = {}
    for dim in DIMENSIONS:
        n, k = len(frame), int(frame[dim].sum()) if len(frame) else 0
        out[dim] = RateRow(rate=(k / n) if n else None, passes=k, trials=n)
    return out


def case_rates(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per case: the pass rate of each dimension over its trials."""
    if frame.empty:
        return {}
    grouped = frame.groupby("case_id")[list(DIMENSIONS)].mean()
    return {cid: {d: float(row[d]) for d in DIMENSIONS} for cid, row in grouped.iterrows()}


def tag_rates(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per tag: the pass rate of each dimension over every trial of every case with the tag."""
    if frame.empty:
        return {}
    exploded = frame.explode("tags").dropna(subset=["tags"])
    grouped = exploded.groupby("tags")[list(DIMENSIONS)].mean()
    return {str(tag): {d: float(row[d]) for d in DIMENSIONS} for tag, row in grouped.iterrows()}
