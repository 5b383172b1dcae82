"""Errored trials at the run level: listed in every report, and the gate cannot judge past
`gate.max_errored` of them.

An errored trial (the agent failed for infrastructure reasons, rubricgate/agents/) is missing
data. Within the allowance the gate judges without it, and a PASS must still hold with every
errored trial counted as a failure (rubricgate/gating/evidence.py, collapse.py): a reviewer that
hides its failures as infrastructure errors can never make a run exit 0, whatever
gate.max_errored is. Past the allowance the run cannot judge (exit 2), unless a regression is
established from the trials that ran: errored trials can only hide failures, so that regression
stands (exit 1)."""

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
    """Over the allowance: exit 2 "could not judge" unless a regression is established from the
    trials that ran (exit 1 stands); within it: a warning."""
    n = sum(1 for r in results if r.errored)
    if not n:
        return decision
    line = f"could not judge: {n} of {planned} trials errored (infrastructure; gate.max_errored is {max_errored})"
    if n > max_errored and decision.status == "regression":
        note = f"{n} of {planned} trials errored (infrastructure), more than gate.max_errored {max_errored}: " \
               "the regression is established from the trials that ran"
        return decision.model_copy(update={"warnings": [note, *decision.warnings]})
    if n > max_errored:
        # Rates over the judged trials stay visible, but they cannot make this run pass.
        judged = [r if decision.status == "error" else f"among the judged trials: {r}" for r in decision.reasons]
        if n == len(results):  # no trial was judged: what the tests said of none is no reason to show
            judged = []
        reasons = [line, *judged]
        return decision.model_copy(update={"status": "error", "exit_code": exitcodes.CANNOT_JUDGE, "reasons": reasons})
    warning = (f"{n} of {planned} trials errored (infrastructure): left out of every rate and test, and counted "
               "as failures in the PASS bound")
    return decision.model_copy(update={"warnings": [*decision.warnings, warning]})
