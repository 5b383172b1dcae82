"""Why an agent run failed: the infrastructure, or the reviewer's own behaviour.

An API outage, a login problem, a rate limit, a CLI that is missing or fails to start, a sandbox
that cannot be set up, or a crash before the first model turn says nothing about the reviewer:
such a trial is retried and, if it keeps failing, `errored` (no grader judges it). A timeout, a
turn limit, a missing or malformed verdict, a forbidden tool or too many steps is the reviewer's
behaviour and is graded, and so is a sandbox limit the reviewer reached. A verdict always wins: exit status is not a verdict.
"""

from __future__ import annotations

import re
from typing import Literal

from rubricgate.graders.contract import last_json_block
from rubricgate.models.transcript import LIMIT_REACHED, Transcript

FailureKind = Literal["infra", "reviewer"]
# ParsedVerdict.status of an answer a verdict hook failed on (graders/extract.py): rubricgate's
# side failed, so the trial is errored like an infrastructure failure, never graded.
EXTRACTOR_ERROR = "extractor_error"

# "retry-after: 30", "Retry-After 30s", "retry after 2.5 seconds" in an error line.
_RETRY_AFTER = re.compile(r"retry[- _]after[\"'\s:=]*(\d+(?:\.\d+)?)", re.I)


def failure_kind(transcript: Transcript) -> FailureKind | None:
    """None for a clean run; otherwise whose failure it was (see the module docstring)."""
    term = transcript.termination
    if term == "completed" and not transcript.error:
        return None
    if term == "api_error":
        return "infra"
    if (transcript.error or "").startswith(LIMIT_REACHED):
        return "reviewer"  # a sandbox limit reached is the reviewer's doing, even before any turn
    if term == "crashed" and transcript.steps == 0:
        return "infra"  # the CLI never reached the model: missing, failed to start, sandbox, auth
    return "reviewer"


def is_infra_failure(transcript: Transcript) -> bool:
    """An infrastructure failure that left no verdict to grade (a verdict is always graded)."""
    return failure_kind(transcript) == "infra" and last_json_block(transcript.final_text) is None


def retry_after(transcript: Transcript) -> float | None:
    """The delay the CLI asked for: its own field first, else a retry-after in the error text."""
    if transcript.retry_after_s is not None:
        return max(0.0, transcript.retry_after_s)
    match = _RETRY_AFTER.search(transcript.error or "")
    return float(match.group(1)) if match else None


def is_errored(transcript: Transcript, verdict_ok: bool) -> bool:
    """No verdict, and the infrastructure (not the reviewer) is why: the trial is not judged."""
    return not verdict_ok and is_infra_failure(transcript)


def errored_reason(transcript: Transcript) -> str:
    """One line: the last infrastructure error and how many attempts were made."""
    tries = max(1, len(transcript.attempts))
    return f"infrastructure failure after {tries} attempt(s): {transcript.error or transcript.termination}"


def outcome_fields(transcript: Transcript, verdict_ok: bool, extractor_failed: bool = False) -> dict:
    """The TrialResult fields that keep an outage (or a failed verdict hook) apart from a reviewer failure."""
    failed = failure_kind(transcript) is not None
    errored = is_errored(transcript, verdict_ok) or extractor_failed
    # One clean attempt says nothing the trial does not; retries and errored trials list them all.
    attempts = list(transcript.attempts) if errored or len(transcript.attempts) > 1 else []
    return {"errored": errored, "attempts": attempts,
            "run_error": (transcript.error or transcript.termination) if verdict_ok and failed else "",
            "notes": list(transcript.notes)}
