"""The per-run index: built once from a run's summary.json, then read instead of it.

A run folder gets `view-index.json` (the head the runs page lists) and `view-cases.jsonl` (each
case's trials, one line a case) the first time the viewer reads it; both carry the
summary's stamp, so a summary rewritten by `report` or `regrade` is indexed again. A folder the
viewer cannot write (a read-only checkout) keeps its index in memory instead.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from rubricgate.models.view_index import INDEX_FORMAT, CaseCell, RateCell, RunCases, RunHead, TrialCell
from rubricgate.view import safe

if TYPE_CHECKING:  # built from a summary once; read without these models after that
    from rubricgate.models.results import CaseSummary, Summary, TrialResult

HEAD_FILE = "view-index.json"
CASES_FILE = "view-cases.jsonl"
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


def dump_cases(cases: RunCases) -> bytes:
    """view-cases.jsonl: a header line (format, stamp), then one line a case, `<id as JSON>\\t<case>`,
    in suite order. A case page finds its one line with a byte search and parses only that:
    json.loads of a 2,000-case run is ~15 ms, times 52 runs is a second."""
    lines = [json.dumps({"format_version": cases.format_version, "stamp": cases.stamp})]
    lines += [f"{json.dumps(cid)}\t{cell.model_dump_json(exclude_defaults=True)}" for cid, cell in cases.cases.items()]
    return ("\n".join(lines) + "\n").encode("utf-8")


def load_cached(folder: Path, stamp: str) -> RunHead | None:
    """The cached head when it was built from this summary (same stamp and format), else None."""
    try:
        head = RunHead.model_validate_json(safe.read_bytes(folder, HEAD_FILE))
    except (safe.Refused, ValidationError, ValueError):
        return None  # absent, a link, damaged or an older format: built again
    return head if head.stamp == stamp and head.format_version == INDEX_FORMAT else None


def store(folder: Path, head: RunHead, cases: bytes) -> bool:
    """Write the index into the run folder (cases first, so a head on disk always has its cases).
    False when the folder is not writable: the caller keeps the index in memory."""
    try:
        _write_new(folder, CASES_FILE, cases)
        _write_new(folder, HEAD_FILE, (head.model_dump_json() + "\n").encode("utf-8"))
    except OSError:
        return False
    return True


def _write_new(folder: Path, name: str, data: bytes) -> None:
    """Write through a temp file created new (O_EXCL: never through a planted link) and rename
    it over `name` (a link there is replaced, not followed)."""
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(folder / tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(folder / tmp, folder / name)
    except OSError:
        (folder / tmp).unlink(missing_ok=True)
        raise


def cases_valid(data: bytes, stamp: str) -> bool:
    """view-cases.jsonl built from this summary, in this format."""
    first = data.split(b"\n", 1)[0]
    try:
        header = json.loads(first)
    except ValueError:
        return False
    return isinstance(header, dict) and header.get("stamp") == stamp and header.get("format_version") == INDEX_FORMAT


def find_case(data: bytes, case_id: str) -> CaseCell | None:
    """One case's line out of a (valid) view-cases.jsonl, validated alone."""
    key = b"\n" + json.dumps(case_id).encode("utf-8") + b"\t"
    at = data.find(key)
    if at < 0:
        return None
    end = data.find(b"\n", at + len(key))
    try:
        return CaseCell.model_validate_json(data[at + len(key): end if end >= 0 else len(data)])
    except ValidationError:
        return None


def all_cases(data: bytes) -> list[CaseCell]:
    """Every case of a (valid) view-cases.jsonl, in suite order (a line that does not validate is left out)."""
    out = []
    for line in data.split(b"\n")[1:]:
        body = line.split(b"\t", 1)[1] if b"\t" in line else b""
        try:
            if body:
                out.append(CaseCell.model_validate_json(body))
        except ValidationError:
            continue
    return out


def case_ids(data: bytes) -> list[str]:
    """Every case id of a (valid) view-cases.jsonl, in suite order."""
    out = []
    for line in data.split(b"\n")[1:]:
        key = line.split(b"\t", 1)[0]
        try:
            found = json.loads(key) if key else None
        except ValueError:
            continue
        if isinstance(found, str):
            out.append(found)
    return out
