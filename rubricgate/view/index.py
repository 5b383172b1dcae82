"""The per-run index: built once from a run's summary.json, then read instead of it.

A run folder gets `view-index.json` (the head the runs page lists) and `view-cases.json` (each
case's trials, one short record each) the first time the viewer reads it; both carry the
summary's stamp, so a summary rewritten by `report` or `regrade` is indexed again. A folder the
viewer cannot write (a read-only checkout) keeps its index in memory instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from rubricgate.models.results import CaseSummary, Summary, TrialResult
from rubricgate.models.view_index import INDEX_FORMAT, CaseCell, RateCell, RunCases, RunHead, TrialCell
from rubricgate.records.writing import write_text_atomic
from rubricgate.view import safe

HEAD_FILE = "view-index.json"
CASES_FILE = "view-cases.json"
MAX_REASON = 300  # a grade's reason as the case strip's tooltip: the transcript page has the rest


def head_of(summary: Summary, stamp: str, kind: str | None = None) -> RunHead:
    """The runs page's row of a run; `kind` overrides the summary's (shard, merged: from the folder)."""
    cost = summary.cost or {}
    failing = sum(any(_failed(t) for t in c.trials) for c in summary.cases)
    rules = {k: [r.severity, r.kind] for k, r in (summary.reviewer.rules if summary.reviewer else {}).items()}
    return RunHead(
        stamp=stamp, run_id=summary.run_id, kind=kind or summary.kind, branch=_text(summary.config.get("branch")),
        pr=_int(summary.config.get("pr")), started_at=summary.started_at, finished_at=summary.finished_at,
        complete=summary.complete, status=summary.decision.status, exit_code=summary.decision.exit_code,
        method=summary.decision.method, agent=summary.agent, agent_version=summary.agent_version, model=summary.model,
        reviewer=summary.reviewer.fingerprint if summary.reviewer else "",
        reviewer_files=dict(summary.reviewer.digests) if summary.reviewer else {}, rules=rules,
        rates={d: RateCell(rate=r.rate, passes=r.passes, trials=r.trials, low=r.low, high=r.high, baseline=r.baseline)
               for d, r in summary.rates.items()},
        cases=len(summary.cases), trials=sum(len(c.trials) for c in summary.cases), failing_cases=failing,
        flaky_cases=len(summary.flaky_cases), errored=len(summary.errored), cost_usd=cost.get("cost_usd"),
        tokens=int(cost.get("input_tokens", 0) or 0) + int(cost.get("output_tokens", 0) or 0), run_url=summary.run_url)


def cases_of(summary: Summary, stamp: str) -> RunCases:
    """Every case's trials as the case page reads them."""
    return RunCases(stamp=stamp, cases={c.id: _case(c) for c in summary.cases})


def _case(c: CaseSummary) -> CaseCell:
    return CaseCell(id=c.id, expected=c.expected_tier, flaky=c.flaky, trials=[_trial(t) for t in c.trials])


def _trial(t: TrialResult) -> TrialCell:
    fails = {d: f"{g.category or 'failed'}: {g.reason}"[:MAX_REASON] for d, g in t.grades.items() if not g.passed}
    return TrialCell(n=t.trial, outcome=t.outcome, tier=t.effective_tier, fails=fails, errored=t.errored,
                     transcript=t.transcript)


def _failed(t: TrialResult) -> bool:
    return t.errored or any(not g.passed for g in t.grades.values())


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def cell_failed(t: TrialCell) -> bool:
    """A trial that failed a dimension or errored."""
    return t.errored or bool(t.fails)


def dump_cases(cases: RunCases) -> str:
    """view-cases.json's text: defaults left out (most trials pass: their record is three keys)."""
    return cases.model_dump_json(exclude_defaults=True) + "\n"


def load_cached(folder: Path, stamp: str) -> RunHead | None:
    """The cached head when it was built from this summary (same stamp and format), else None."""
    try:
        head = RunHead.model_validate_json(safe.read_bytes(folder, HEAD_FILE))
    except (safe.Refused, ValidationError, ValueError):
        return None  # absent, a link, damaged or an older format: built again
    return head if head.stamp == stamp and head.format_version == INDEX_FORMAT else None


def store(folder: Path, head: RunHead, cases: RunCases) -> bool:
    """Write the index into the run folder (cases first, so a head on disk always has its cases).
    False when the folder is not writable: the caller keeps the index in memory."""
    try:
        write_text_atomic(folder / CASES_FILE, dump_cases(cases))
        write_text_atomic(folder / HEAD_FILE, head.model_dump_json() + "\n")
    except OSError:
        return False
    return True


def case_from_raw(raw: dict, case_id: str) -> CaseCell | None:
    """One case out of a parsed view-cases.json (validated alone: a page reads one case of thousands)."""
    found = raw.get("cases", {}).get(case_id) if isinstance(raw, dict) else None
    if found is None:
        return None
    try:
        return CaseCell.model_validate(found)
    except ValidationError:
        return None


def parse_cases_text(text: str | bytes, stamp: str) -> dict | None:
    """view-cases.json parsed (plain json: fast), None when damaged or built from another summary."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    ok = isinstance(raw, dict) and raw.get("stamp") == stamp and raw.get("format_version", INDEX_FORMAT) == INDEX_FORMAT
    return raw if ok else None
