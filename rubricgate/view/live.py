"""A running run's progress, read from its events.jsonl as the trials finish.

The live page polls this (as JSON) once a second; the server reads the log again each time,
from the folder with no link followed. Every string goes to the page as text (textContent).
"""

from __future__ import annotations

from typing import Any

from rubricgate import boundary
from rubricgate.view import safe
from rubricgate.view.catalog import EVENTS, RunRef, writer_gone

RECENT = 12  # trial results listed on the live page, newest first


def progress(ref: RunRef) -> dict[str, Any]:
    """{run, total, done, rates: {dim: [passes, trials]}, recent: [...], finished, decision, stopped}."""
    try:
        text = safe.read_text(ref.root, EVENTS)
    except safe.Refused:
        text = ""
    out: dict[str, Any] = {"run": ref.key, "total": None, "done": 0, "rates": {}, "recent": [], "finished": False,
                           "decision": None}
    for line in text.splitlines():
        event = _parse(line)
        if event is not None:
            _apply(out, event)
    out["recent"] = out["recent"][-RECENT:][::-1]
    # Gone without logging its end: killed (or its summary removed); the page stops waiting.
    out["stopped"] = not out["finished"] and writer_gone(ref)
    return out


def _parse(line: str) -> dict | None:
    try:
        event = boundary.loads(line)
    except ValueError:
        return None  # the line being written when we read
    return event if isinstance(event, dict) else None


def _apply(out: dict[str, Any], event: dict) -> None:
    kind = event.get("event")
    if kind == "run_started" or (kind == "plan" and isinstance(event.get("total_trials"), int)):
        # an adaptive run's plan gives the most its design runs; confirmations add to it as they start
        out["total"] = event.get("total_trials") if isinstance(event.get("total_trials"), int) else None
    elif kind == "confirming" and isinstance(out["total"], int) and isinstance(event.get("trials"), int):
        out["total"] += event["trials"]
    elif kind == "trial_result":
        out["done"] += 1
        found = event.get("grades")
        grades: dict = found if isinstance(found, dict) else {}
        for dim, grade in grades.items():
            passed = bool(grade.get("passed")) if isinstance(grade, dict) else False
            cell = out["rates"].setdefault(str(dim), [0, 0])
            cell[0] += passed
            cell[1] += 1
        out["recent"].append({"case": str(event.get("case_id", "")), "trial": event.get("trial"),
                              "outcome": str(event.get("outcome", "")),
                              "failed": sorted(str(d) for d, g in grades.items()
                                               if isinstance(g, dict) and not g.get("passed"))})
    elif kind == "run_completed":
        out["finished"] = True
        decision = event.get("decision")
        out["decision"] = str(decision.get("status")) if isinstance(decision, dict) else None
