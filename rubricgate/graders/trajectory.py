"""Trajectory dimension: model turns within the limit."""

from __future__ import annotations

from rubricgate.models.case import CaseSpec
from rubricgate.models.results import Grade
from rubricgate.models.task import TrajectoryRubric
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict import ParsedVerdict


def grade_trajectory(rubric: TrajectoryRubric, transcript: Transcript) -> Grade:
    """steps <= max_steps; a run cut off by the turn limit or the clock fails."""
    if transcript.termination == "timeout":
        return Grade(passed=False, category="timeout", reason=f"timed out after {transcript.steps} step(s)")
    if transcript.termination == "max_turns" or transcript.steps > rubric.max_steps:
        return Grade(passed=False, category="too_many_steps",
                     reason=f"{transcript.steps} step(s), limit {rubric.max_steps}"
                            + (" (turn limit hit)" if transcript.termination == "max_turns" else ""))
    return Grade(passed=True, reason=f"{transcript.steps} step(s) <= {rubric.max_steps}")


def grade(case: CaseSpec, transcript: Transcript, parsed: ParsedVerdict) -> Grade:
    """The registered grader (models/dimensions.py): the case's trajectory rubric."""
    return grade_trajectory(case.trajectory, transcript)
