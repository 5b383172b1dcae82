"""What each page shows, as plain data for its template (rubricgate/view/templates/).

Runs, case and trend pages read only the index (rubricgate/view/index.py); a run, a comparison
and a transcript read that run's summary or transcript file, one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rubricgate.errors import GateInputError
from rubricgate.models.view_index import CaseCell, RunHead
from rubricgate.view import urls
from rubricgate.view.catalog import Catalog, RunRef
from rubricgate.view.index import cell_failed

KINDS = ("run", "baseline", "record", "shard", "merged")
TREND_KINDS = ("run", "merged")  # the gated runs; baselines, records and shards are other questions
FLAKY_WINDOW = 8  # runs per point of the case page's flakiness-over-time line


class NotFound(Exception):
    """No run, case or transcript by that name."""


def runs_page(cat: Catalog) -> dict:
    """Every run, newest first, with what the filters need; and the runs still going."""
    heads = cat.heads()
    previous = _previous_of(heads)
    return {"runs": heads, "previous": previous, "kinds": sorted({h.kind for h in heads} | set(KINDS)),
            "branches": sorted({h.branch for h in heads if h.branch}), "prs": sorted({h.pr for h in heads if h.pr}),
            "live": [r.key for r in cat.live()], "problems": list(cat.problems)}


def _previous_of(heads: list[RunHead]) -> dict[str, str]:
    """Each run's predecessor of the same kind (heads newest first): the default comparison."""
    out: dict[str, str] = {}
    last: dict[str, str] = {}
    for h in reversed(heads):
        if h.kind in last:
            out[h.run_id] = last[h.kind]
        last[h.kind] = h.run_id
    return out


def ref_of(cat: Catalog, run_slug: str) -> RunRef:
    """The run whose slug this is; NotFound otherwise."""
    found = next((r for r in cat.refs if urls.slug(r.key) == run_slug), None)
    if found is None:
        raise NotFound(f"no run {run_slug}")
    return found


def head_of(cat: Catalog, ref: RunRef) -> RunHead:
    head = cat.head(ref)
    if head is None:
        raise NotFound(f"run {ref.key} has no summary yet")
    return head


def run_page(cat: Catalog, ref: RunRef) -> dict:
    """The run's head, the report's explanation (next step, reviewer change) and every case."""
    from rubricgate.reports import explain

    head = head_of(cat, ref)
    summary = cat.summary(ref)
    listed = sorted(cat.cases(ref), key=lambda c: not any(cell_failed(t) for t in c.trials))
    failing = [(c, explain.first_failure(c)) for c in explain.failing_cases(summary)]
    return {"head": head, "ref": ref, "summary": summary, "next_step": explain.next_step(summary),
            "reviewer_lines": explain.reviewer_lines(summary), "failing": failing, "cases": listed,
            "reasons": summary.decision.reasons, "warnings": summary.decision.warnings,
            "has_report": ref.has("report.html"), "previous": _previous_of(cat.heads()).get(head.run_id)}


@dataclass
class CaseRun:
    """One run's view of a case: its trials (None when the run did not have the case)."""

    head: RunHead
    cell: CaseCell | None
    failed: bool = False
    pass_share: float | None = None


@dataclass
class CaseHistory:
    case_id: str
    rows: list[CaseRun] = field(default_factory=list)  # oldest first
    first_failure: CaseRun | None = None
    flaky_line: list[tuple[str, float]] = field(default_factory=list)  # (run id, share of flaky runs in the window)


def case_page(cat: Catalog, case_slug: str) -> CaseHistory:
    """A case across every run: the strip, when it first failed, its flakiness over time."""
    heads = cat.heads()
    case_id = next((cid for h in heads for cid in _case_id(cat, cat.ref(h.run_id), case_slug)), None)
    if case_id is None:
        raise NotFound(f"no case {case_slug}")
    rows = []
    for head in reversed(heads):  # oldest first
        ref = cat.ref(head.run_id)
        cell = cat.case(ref, case_id) if ref else None
        if cell is not None:
            rows.append(CaseRun(head, cell))
    return case_history(case_id, rows)


def _case_id(cat: Catalog, ref: RunRef | None, case_slug: str) -> list[str]:
    """The id whose slug this is, as a list of one (or none): looked up in one run's ids."""
    ids = cat.case_ids(ref) if ref is not None else []
    return [c for c in ids if urls.slug(c) == case_slug][:1]


def case_history(case_id: str, rows: list[CaseRun]) -> CaseHistory:
    """The case page's data from its runs (oldest first)."""
    for r in rows:
        trials = r.cell.trials if r.cell else []
        r.failed = any(cell_failed(t) for t in trials)
        r.pass_share = sum(not cell_failed(t) for t in trials) / len(trials) if trials else None
    out = CaseHistory(case_id, rows, next((r for r in rows if r.failed), None))
    for i, r in enumerate(rows):
        window = rows[max(0, i - FLAKY_WINDOW + 1): i + 1]
        out.flaky_line.append((r.head.run_id, sum(bool(w.cell and w.cell.flaky) for w in window) / len(window)))
    return out


def compare_page(cat: Catalog, base: RunRef, head: RunRef) -> dict:
    """Per-case flips with their exact test, the rule-table diff, the reviewer files that differ."""
    from rubricgate.gating.compare import compare_summaries
    from rubricgate.models.config import GateConfig

    b, h = cat.summary(base), cat.summary(head)
    method = h.decision.method if h.decision.method in ("strict", "statistical") else "strict"
    try:
        comparison = compare_summaries(b, h, GateConfig(method=method), base.key, head.key)
    except GateInputError as exc:
        raise NotFound(exc.problem) from exc
    bh, hh = head_of(cat, base), head_of(cat, head)
    return {"base": bh, "head": hh, "comparison": comparison,
            "flips": [f for f in comparison.flips if f.kind != "unchanged"],
            "unchanged": sum(f.kind == "unchanged" for f in comparison.flips),
            "rules": _diff(bh.rules, hh.rules), "files": _diff(bh.reviewer_files, hh.reviewer_files)}


def _diff(base: dict, head: dict) -> list[tuple[str, object, object]]:
    """(key, base value, head value) for every key whose value differs (None: absent on that side)."""
    return [(k, base.get(k), head.get(k)) for k in sorted(set(base) | set(head)) if base.get(k) != head.get(k)]


@dataclass
class TrendPoint:
    head: RunHead
    tested_change: bool  # the reviewer files differ from the previous run's: a rubric/prompt change
    drift: list[str]  # agent CLI or model changes since the previous run


def trend_page(cat: Catalog) -> dict:
    """The gated runs oldest first, each marked with the changes since the one before."""
    heads = [h for h in reversed(cat.heads()) if h.kind in TREND_KINDS]
    points = []
    for prev, cur in zip([None, *heads], heads):
        changed = prev is not None and bool(cur.reviewer) and cur.reviewer != prev.reviewer
        drift = [] if prev is None else [f"{label}: {getattr(prev, a) or 'unknown'} → {getattr(cur, a) or 'unknown'}"
                                         for a, label in (("agent", "agent"), ("agent_version", "CLI"), ("model", "model"))
                                         if getattr(prev, a) != getattr(cur, a)]
        points.append(TrendPoint(cur, changed, drift))
    dims = list(dict.fromkeys(d for h in heads for d in h.rates))
    return {"points": points, "dims": dims}


def transcript_page(cat: Catalog, ref: RunRef, case_slug: str, trial: int) -> dict:
    """One trial: its grades from the index, its transcript's tool timeline and final message."""
    head = head_of(cat, ref)
    cell = next((cat.case(ref, cid) for cid in _case_id(cat, ref, case_slug)), None)
    found = next((t for t in cell.trials if t.n == trial), None) if cell else None
    if cell is None or found is None:
        raise NotFound(f"no trial {trial} of case {case_slug} in run {ref.key}")
    transcript = cat.transcript(ref, found.transcript) if found.transcript else None
    grades = [(d, found.fails.get(d)) for d in head.rates] + [(d, r) for d, r in found.fails.items() if d not in head.rates]
    return {"head": head, "case": cell, "trial": found, "transcript": transcript, "grades": grades}
