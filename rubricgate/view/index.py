"""The per-run index as the viewer reads it: read instead of a run's summary.json.

A run writes `view-index.json` and `view-cases.jsonl` itself at its end (records/run_index.py);
the viewer builds them with the same functions the first time it reads a run folder without a
current one (both carry the summary's stamp, so a summary written or edited since is indexed
again). A folder the viewer cannot write (a read-only checkout) keeps its index in memory.
"""

from __future__ import annotations

import json
from pathlib import Path

from rubricgate import boundary
from rubricgate.models.view_index import INDEX_FORMAT, CaseCell, RunHead, TrialCell
from rubricgate.records.run_index import CASES_FILE, HEAD_FILE, cases_of, dump_cases, head_of, store
from rubricgate.view import safe

__all__ = ["CASES_FILE", "HEAD_FILE", "all_cases", "case_ids", "cases_of", "cases_valid", "cell_failed", "dump_cases",
           "find_case", "head_of", "load_cached", "store"]


def cell_failed(t: TrialCell) -> bool:
    """A trial that failed a dimension or errored."""
    return t.errored or bool(t.fails)


def load_cached(folder: Path, stamp: str) -> RunHead | None:
    """The cached head when it was built from this summary (same stamp and format), else None."""
    try:
        head = boundary.validate_json(RunHead, safe.read_bytes(folder, HEAD_FILE))
    except (safe.Refused, ValueError):  # ValidationError is one
        return None  # absent, a link, damaged or an older format: built again
    return head if head.stamp == stamp and head.format_version == INDEX_FORMAT else None


def cases_valid(data: bytes, stamp: str) -> bool:
    """view-cases.jsonl built from this summary, in this format."""
    first = data.split(b"\n", 1)[0]
    try:
        header = boundary.loads(first)
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
        return boundary.validate_json(CaseCell, data[at + len(key): end if end >= 0 else len(data)])
    except ValueError:  # ValidationError is one
        return None


def all_cases(data: bytes) -> list[CaseCell]:
    """Every case of a (valid) view-cases.jsonl, in suite order (a line that does not validate is left out)."""
    out = []
    for line in data.split(b"\n")[1:]:
        body = line.split(b"\t", 1)[1] if b"\t" in line else b""
        try:
            if body:
                out.append(boundary.validate_json(CaseCell, body))
        except ValueError:  # ValidationError is one
            continue
    return out


def case_ids(data: bytes) -> list[str]:
    """Every case id of a (valid) view-cases.jsonl, in suite order."""
    out = []
    for line in data.split(b"\n")[1:]:
        key = line.split(b"\t", 1)[0]
        try:
            found = boundary.loads(key) if key else None
        except ValueError:
            continue
        if isinstance(found, str):
            out.append(found)
    return out
