"""Graders: small pure functions, one per dimension. Grading never needs the agent.

May import: suite (the rubric), models. Never agents, isolation or runner (import-linter).
"""

from __future__ import annotations

from collections.abc import Sequence

from rubricgate.graders.extract import read_verdict
from rubricgate.graders.failures import EXTRACTOR_ERROR, errored_reason, is_infra_failure
from rubricgate.graders.registry import grader_for
from rubricgate.graders.shared import shared_grade
from rubricgate.graders.tool_use import grade_tool_use
from rubricgate.graders.trajectory import grade_trajectory
from rubricgate.graders.verdict import grade_verdict
from rubricgate.models.config import Config
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import CaseSpec, Grade
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict import ParsedVerdict
from rubricgate.suite.rubric import RubricSpec


def grade_trial(case: CaseSpec, transcript: Transcript, parsed: ParsedVerdict,
                dims: Sequence[str] = DIMENSIONS) -> dict[str, Grade]:
    """One grade per dimension in `dims` (the run's graded dimensions: Config.graded_dimensions).

    An errored trial (the infrastructure ended every attempt before its answer) is judged by no grader:
    every dimension carries category `errored`, and aggregation leaves it out of every rate.
    """
    if is_infra_failure(transcript) or parsed.status == EXTRACTOR_ERROR:
        reason = parsed.error if parsed.status == EXTRACTOR_ERROR else errored_reason(transcript)
        return dict.fromkeys(dims, shared_grade(Grade(passed=False, category="errored", reason=reason)))
    return {d: shared_grade(grader_for(d)(case, transcript, parsed)) for d in dims}


def judge(case: CaseSpec, transcript: Transcript, rubric: RubricSpec,
          config: Config) -> tuple[ParsedVerdict, dict[str, Grade]]:
    """Read the verdict the configured way (rubricgate.yaml `verdict:`) and grade the run's
    dimensions (`gate.dimensions`): what every trial, regrade and shard check goes through."""
    parsed = read_verdict(transcript.final_text, rubric, config.verdict, transcript.agent)
    return parsed, grade_trial(case, transcript, parsed, config.graded_dimensions())


__all__ = ["judge", "grade_trial", "grade_verdict", "grade_tool_use", "grade_trajectory"]
