"""Errored trials at the run level: listed in every report, and the gate cannot judge past
`gate.max_errored` of them. Infrastructure never turns into a regression (exit 1)."""

from __future__ import annotations

from rubricgate import exitcodes
from rubricgate.models.results import Decision, TrialResult


def errored_list(results: list[TrialResult]) -> list[str]:
    """"case #trial: reason (N attempts)" for every errored trial, in result order."""
    out = []
    for r in results:
        if r.errored:
            reason = next((g.reason for g in r.grades.values() if g.category == "errored"), "")
            out.append(f"{r.case_id} #{r.trial}: {reason}")
    return out


def errored_gate(decision: Decision, results: list[TrialResult], planned: int, max_errored: int) -> Decision:
    """Over the allowance: exit 2 "could not judge", whatever the rates said; within it: a warning."""
    n = sum(1 for r in results if r.errored)
    if not n:
        return decision
    line = f"could not judge: {n} of {planned} trials errored (infrastructure; gate.max_errored is {max_errored})"
    if n > max_errored:
        # Rates over the judged trials stay visible, but they cannot make this run a regression.
        judged = [r if decision.status == "error" else f"among the judged trials: {r}" for r in decision.reasons]
        reasons = [line, *judged]
        return decision.model_copy(update={"status": "error", "exit_code": exitcodes.CANNOT_JUDGE, "reasons": reasons})
    warning = f"{n} of {planned} trials errored (infrastructure) and were left out of every rate"
    return decision.model_copy(update={"warnings": [*decision.warnings, warning]})
