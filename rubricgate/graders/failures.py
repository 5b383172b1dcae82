"""Why an agent run failed: the infrastructure, or the reviewer's own behaviour.

The adapter classifies each run that did not complete by what the harness observed (the failure
classes of models/failures.py, with their evidence): a signal rubricgate did not send, an endpoint
that could not be reached or answered with an error, a refused key, a rate limit, a CLI that never
started, rubricgate's own adapter failing - each says nothing about the reviewer: such a trial is
retried and, if it keeps failing, `errored` (no grader judges it). A timeout, a turn limit, a
sandbox limit, a harness stop or an abnormal end after a model turn without such evidence is the
reviewer's and is graded. Exit status is not a verdict: a CLI that delivered its result and then
exited with an error (or was killed) is graded on that result; a verdict in the text of a run the
infrastructure ended before its result is a draft, never graded.
"""

from __future__ import annotations

import re
from typing import Literal

from rubricgate.models.failures import INFRA_FAILURES, FailureClass, derived_failure
from rubricgate.models.transcript import LIMIT_REACHED, Transcript

FailureKind = Literal["infra", "reviewer"]
# ParsedVerdict.status of an answer a verdict hook failed on (graders/extract.py): rubricgate's
# side failed, so the trial is errored like an infrastructure failure, never graded.
EXTRACTOR_ERROR = "extractor_error"

# "retry-after: 30", "Retry-After 30s", "retry after 2.5 seconds" in an error line.
_RETRY_AFTER = re.compile(r"retry[- _]after[\"'\s:=]*(\d+(?:\.\d+)?)", re.I)


def failure_class(transcript: Transcript) -> FailureClass | None:
    """None for a clean run; else its class: the adapter's, or one derived for a transcript that
    carries none (written before the classes existed, or by an adapter outside agents/)."""
    if transcript.termination == "completed" and not transcript.error:
        return None
    if transcript.failure is not None:
        return transcript.failure
    if (transcript.error or "").startswith(LIMIT_REACHED):
        return "sandbox_limit"  # the reviewer's doing, even before any turn
    return derived_failure(transcript.termination, transcript.steps, transcript.error, transcript.api_status)


def failure_kind(transcript: Transcript) -> FailureKind | None:
    """None for a clean run; otherwise whose failure it was (see the module docstring)."""
    cls = failure_class(transcript)
    if cls is None:
        return None
    return "infra" if cls in INFRA_FAILURES else "reviewer"


def is_infra_failure(transcript: Transcript) -> bool:
    """An infrastructure failure: retried, and errored (judged by no grader) when every attempt
    ends so, whatever its text holds. The classes are set only where the CLI did not end with its
    result (a signal before it, an endpoint or a start that failed, the harness stopping an
    outage), so a verdict in its last message is a draft it never delivered ("Preliminary: PASS
    ... let me double-check", then SIGSEGV: graded, the run passed)."""
    return failure_kind(transcript) == "infra"


def retry_after(transcript: Transcript) -> float | None:
    """The delay the CLI asked for: its own field first, else a retry-after in the error text."""
    if transcript.retry_after_s is not None:
        return max(0.0, transcript.retry_after_s)
    match = _RETRY_AFTER.search(transcript.error or "")
    return float(match.group(1)) if match else None


def errored_reason(transcript: Transcript) -> str:
    """One line: the last infrastructure error, its class and how many attempts were made."""
    tries = max(1, len(transcript.attempts))
    cls = failure_class(transcript)
    return (f"infrastructure failure ({cls}) after {tries} attempt(s): "
            f"{transcript.error or transcript.termination}")


def evidence(transcript: Transcript) -> str:
    """What decided the class, and on how many of the attempts the same class was seen."""
    said = transcript.evidence or f"termination {transcript.termination}: {transcript.error}".strip(": ")
    tries = transcript.attempts
    if len(tries) > 1:
        same = sum(1 for a in tries if a.failure == failure_class(transcript))
        said += f"; the same class on {same} of {len(tries)} attempts"
    return said


def outcome_fields(transcript: Transcript, verdict_ok: bool, extractor_failed: bool = False) -> dict:
    """The TrialResult fields that keep an outage (or a failed verdict hook) apart from a reviewer
    failure: errored or not, the failure class and its evidence (the gate reads them), every attempt."""
    own = failure_class(transcript)
    cls = own or ("harness" if extractor_failed else None)
    errored = is_infra_failure(transcript) or extractor_failed
    # One clean attempt says nothing the trial does not; retries and errored trials list them all.
    attempts = list(transcript.attempts) if errored or len(transcript.attempts) > 1 else []
    said = evidence(transcript) if own else "the verdict extractor failed" if cls else ""
    # A graded answer from a run that ended in an error (a verdict, or text graded as a malformed
    # one: an answer cut by the output cap) says how it ended beside its grade in every report.
    graded = not errored and (verdict_ok or bool(transcript.final_text.strip()))
    return {"errored": errored, "attempts": attempts, "failure": cls, "evidence": said,
            "run_error": (transcript.error or transcript.termination) if graded and own else "",
            "notes": list(transcript.notes)}
