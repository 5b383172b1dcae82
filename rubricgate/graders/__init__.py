"""Graders: small pure functions, one per dimension. Grading never needs the agent.

May import: suite (the rubric), models. Never agents, isolation or runner (import-linter).
"""

from __future__ import annotations

from collections.abc import Sequence

from rubricgate.graders.failures import errored_reason, is_errored
from rubricgate.graders.registry import grader_for
from rubricgate.graders.tool_use import grade_tool_use
from rubricgate.graders.trajectory import grade_trajectory
from rubricgate.graders.verdict import grade_verdict
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import CaseSpec, Grade
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict import ParsedVerdict


def grade_trial(case: CaseSpec, transcript: Transcript, parsed: ParsedVerdict,
                dims: Sequence[str] = DIMENSIONS) -> dict[str, Grade]:
    """One grade per dimension in `dims` (the run's graded dimensions: Config.graded_dimensions).

    An errored trial (infrastructure failed on every attempt, no verdict) is judged by no grader:
    every dimension carries category `errored`, and aggregation leaves it out of every rate.
    """
    if is_errored(transcript, parsed.status == "ok"):
        reason = errored_reason(transcript)
        return {d: Grade(passed=False, category="errored", reason=reason) for d in dims}
    return {d: grader_for(d)(case, transcript, parsed) for d in dims}


__all__ = ["grade_trial", "grade_verdict", "grade_tool_use", "grade_trajectory"]
