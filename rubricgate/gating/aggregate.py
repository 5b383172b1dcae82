"""Trial results -> rates per dimension, per case and per tag.

Plain Python, one pass over the trials: counting passes needs no data frame, and importing pandas
costs ~0.3 s and ~40 MB on every command (bench/startup.py measures it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rubricgate.gating.stats import compared
from rubricgate.models.dimensions import ordered
from rubricgate.models.results import CaseSpec, RateRow, TrialResult


@dataclass(frozen=True)
class TrialRow:
    """One trial that ran: its case, tags and whether it passed each dimension."""

    case_id: str
    trial: int
    tags: tuple[str, ...]
    outcome: str
    passed: dict[str, bool]


Frame = list[TrialRow]
Counts = dict[str, dict[str, tuple[int, int]]]  # group -> dimension -> (passes, trials)


def trial_frame(cases: list[CaseSpec], results: list[TrialResult]) -> Frame:
    """One row per trial the rates count: judged (not_run and errored trials are left out) and no
    confirmation (an adaptive run's re-tries of a failing case stop at its first pass, so they are
    in no rate: a case's and a tag's rates count the design trials the run's rate does)."""
    tags = {c.id: tuple(c.tags) for c in cases}
    return [TrialRow(r.case_id, r.trial, tags.get(r.case_id, ()), r.outcome,
                     {d: g.passed for d, g in r.grades.items()})
            for r in results if compared(r)]


def dimension_rates(frame: Frame, dims: Sequence[str] | None = None) -> dict[str, RateRow]:
    """A rate is passes / trials over all cases, per graded dimension (`dims`; unset: every
    dimension a trial of the frame was graded on)."""
    out = {}
    for dim in ordered({d for row in frame for d in row.passed}) if dims is None else dims:
        graded = [row.passed[dim] for row in frame if dim in row.passed]
        n, k = len(graded), sum(graded)
        out[dim] = RateRow(rate=(k / n) if n else None, passes=k, trials=n)
    return out


def _grouped_counts(pairs) -> Counts:
    """(group, row) pairs -> per group and dimension (passes, trials), groups sorted like a groupby."""
    tallies: dict[str, dict[str, list[int]]] = {}
    for group, row in pairs:
        dims = tallies.setdefault(str(group), {})
        for d, passed in row.passed.items():
            tally = dims.setdefault(d, [0, 0])
            tally[0] += passed
            tally[1] += 1
    return {g: {d: (p, n) for d, (p, n) in tallies[g].items()} for g in sorted(tallies)}


def case_counts(frame: Frame) -> Counts:
    """Per case: passes and trials of each dimension."""
    return _grouped_counts((row.case_id, row) for row in frame)


def tag_counts(frame: Frame) -> Counts:
    """Per tag: passes and trials of each dimension over every trial of every case with the tag."""
    return _grouped_counts((tag, row) for row in frame for tag in row.tags)


def as_rates(counts: Counts) -> dict[str, dict[str, float]]:
    return {g: {d: p / n for d, (p, n) in dims.items() if n} for g, dims in counts.items()}
