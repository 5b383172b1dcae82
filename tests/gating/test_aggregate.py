"""Counting passes per dimension, case and tag (plain Python, no data frame)."""

from __future__ import annotations

from rubricgate.gating.aggregate import as_rates, case_counts, dimension_rates, tag_counts, trial_frame
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import CaseSpec, Grade, TrialResult
from rubricgate.models.task import Expect, Rubric


def _case(case_id: str, tags: list[str]) -> CaseSpec:
    return CaseSpec(id=case_id, source="task", origin=f"evals/tasks/{case_id}.yaml", review=["a/SKILL.md"],
                    expect=Expect(tier="PASS"), rubric=Rubric.model_validate(
                        {"tool_use": {"allowed": ["read"]}, "trajectory": {"max_steps": 5}}), tags=tags)


def _trial(case_id: str, trial: int, verdict: bool, category: str | None = None) -> TrialResult:
    grades = {d: Grade(passed=True) for d in DIMENSIONS} | {"verdict": Grade(passed=verdict, category=category)}
    return TrialResult(case_id=case_id, trial=trial, outcome="PASS", grades=grades)


CASES = [_case("b", ["x", "y"]), _case("a", ["y"])]


def test_not_run_trials_count_nowhere():
    frame = trial_frame(CASES, [_trial("a", 1, False, "not_run"), _trial("a", 2, True)])
    assert [(r.case_id, r.trial) for r in frame] == [("a", 2)]
    assert dimension_rates(frame)["verdict"].trials == 1


def test_no_trials_gives_no_rate_and_no_groups():
    assert {d: r.rate for d, r in dimension_rates([], DIMENSIONS).items()} == dict.fromkeys(DIMENSIONS)
    assert dimension_rates([]) == {}  # no graded dimension named, none seen
    assert case_counts([]) == {} and tag_counts([]) == {}


def test_counts_per_dimension_case_and_tag():
    frame = trial_frame(CASES, [_trial("b", 1, True), _trial("b", 2, False), _trial("a", 1, False)])
    rates = dimension_rates(frame)
    assert (rates["verdict"].passes, rates["verdict"].trials) == (1, 3)
    assert rates["tool_use"].rate == 1.0
    assert case_counts(frame)["b"]["verdict"] == (1, 2)
    tags = tag_counts(frame)
    assert list(tags) == ["x", "y"]  # sorted, like the groupby it replaces
    assert tags["x"]["verdict"] == (1, 2) and tags["y"]["verdict"] == (1, 3)
    others = {d: 1.0 for d in DIMENSIONS if d != "verdict"}
    assert as_rates(case_counts(frame)) == {"a": {"verdict": 0.0, **others}, "b": {"verdict": 0.5, **others}}


def test_only_the_graded_dimensions_are_counted():
    """A run grading the verdict alone (gate.dimensions) has a verdict rate and no other."""
    trials = [TrialResult(case_id="a", trial=1, outcome="PASS", grades={"verdict": Grade(passed=False)})]
    frame = trial_frame(CASES, trials)
    assert list(dimension_rates(frame)) == ["verdict"] and case_counts(frame) == {"a": {"verdict": (0, 1)}}


def test_a_trial_of_an_unknown_case_has_no_tags():
    frame = trial_frame(CASES, [_trial("zzz", 1, True)])
    assert tag_counts(frame) == {} and list(case_counts(frame)) == ["zzz"]
