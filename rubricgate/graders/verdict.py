"""Verdict dimension: the effective tier and the expected rules."""

from __future__ import annotations

from rubricgate.models.results import CaseSpec, Grade
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict import ParsedVerdict


def grade_verdict(case: CaseSpec, transcript: Transcript, parsed: ParsedVerdict) -> Grade:
    """Exit status is not a verdict: a parsed verdict is graded whatever the exit code."""
    if parsed.status != "ok":
        return _no_verdict(transcript, parsed)
    expect = case.expect
    if expect.tier and parsed.effective_tier != expect.tier:
        note = f" (reported {parsed.reported_tier}, escalated)" if parsed.escalated else ""
        return Grade(passed=False, category="wrong_tier",
                     reason=f"expected {expect.tier}, got {parsed.effective_tier}{note}")
    found = {f.rule for f in parsed.verdict.findings} if parsed.verdict else set()
    missed = [r for r in expect.rules if r not in found]
    if missed:
        return Grade(passed=False, category="missed_rule", reason=f"expected finding(s) missing: {', '.join(missed)}")
    unexpected = [r for r in expect.absent_rules if r in found]
    if unexpected:
        return Grade(passed=False, category="unexpected_rule",
                     reason=f"finding(s) that must be absent: {', '.join(unexpected)}")
    return Grade(passed=True, reason=f"{parsed.effective_tier} as expected")


def _no_verdict(transcript: Transcript, parsed: ParsedVerdict) -> Grade:
    # Name the cause a maintainer can act on: the run's failure beats "no verdict".
    if transcript.termination == "timeout":
        return Grade(passed=False, category="timeout",
                     reason=f"agent timed out without a verdict ({transcript.error or 'wall clock'})")
    if parsed.status in ("malformed", "invalid"):
        return Grade(passed=False, category="malformed_verdict", reason=parsed.error)
    if transcript.termination == "max_turns":
        # The same for every CLI, whether it stopped itself (exit 1) or the harness stopped it.
        return Grade(passed=False, category="no_verdict",
                     reason=f"no verdict: the run hit the turn limit after {transcript.steps} step(s)")
    if transcript.termination in ("crashed", "api_error") or transcript.exit_code not in (0, None):
        cause = transcript.error or f"{transcript.termination}, exit {transcript.exit_code}"
        return Grade(passed=False, category="agent_error", reason=f"no verdict; agent failed: {cause}")
    return Grade(passed=False, category="no_verdict", reason=parsed.error or "no verdict in the final message")


grade = grade_verdict  # the registered grader (models/dimensions.py)
