"""Tool-use dimension: allowlist, forbidden and required tools."""

from __future__ import annotations

import re

from rubricgate.models.case import CaseSpec
from rubricgate.models.results import Grade
from rubricgate.models.task import ToolUseRubric
from rubricgate.models.transcript import ToolCall, Transcript
from rubricgate.models.verdict import ParsedVerdict


def _matches(pattern: str, call: ToolCall) -> bool:
    # Anchored and case-insensitive, over both the normalized and the raw name.
    return any(re.fullmatch(pattern, n, re.I) for n in (call.name, call.raw_name))


def grade_tool_use(rubric: ToolUseRubric, transcript: Transcript) -> Grade:
    """Every call allowed, none forbidden, every required one present. Denied attempts count."""
    allowed = {a.lower() for a in rubric.allowed} if rubric.allowed is not None else None
    for call in transcript.tool_calls:
        denied = " (denied)" if call.status == "denied" else ""
        if allowed is not None and call.name.lower() not in allowed:
            return Grade(passed=False, category="forbidden_tool",
                         reason=f"{call.raw_name}{denied} is not in the allowlist [{', '.join(sorted(allowed))}]")
        hit = next((p for p in rubric.forbidden if _matches(p, call)), None)
        if hit:
            return Grade(passed=False, category="forbidden_tool",
                         reason=f"{call.raw_name}{denied} matches forbidden /{hit}/")
    for pattern in rubric.required:
        if not any(_matches(pattern, c) for c in transcript.tool_calls):
            return Grade(passed=False, category="missing_tool", reason=f"no call matches required /{pattern}/")
    return Grade(passed=True, reason=f"{len(transcript.tool_calls)} call(s), all allowed")


def grade(case: CaseSpec, transcript: Transcript, parsed: ParsedVerdict) -> Grade:
    """The registered grader (models/dimensions.py): the case's tool-use rubric."""
    return grade_tool_use(case.tool_use, transcript)
