"""graders/shared.py: equal grades are one frozen object, and the kept set is bounded."""

import pydantic
import pytest

from rubricgate.graders import grade_trial, shared
from rubricgate.graders.shared import shared_grade
from rubricgate.models.results import Grade


def test_a_grade_cannot_be_changed_once_made():
    grade = Grade(passed=True, reason="PASS as expected")
    with pytest.raises(pydantic.ValidationError):
        grade.reason = "something else"  # type: ignore[misc]


def test_equal_grades_become_one_object_and_different_ones_stay_apart():
    first = shared_grade(Grade(passed=True, reason="19 step(s) <= 30 (shared test)"))
    again = shared_grade(Grade(passed=True, reason="19 step(s) <= 30 (shared test)"))
    failed = shared_grade(Grade(passed=False, category="too_many_steps", reason="19 step(s) <= 30 (shared test)"))
    assert again is first
    assert failed is not first and not failed.passed and failed.category == "too_many_steps"


def test_past_the_bound_a_grade_is_kept_as_the_grader_made_it(monkeypatch):
    monkeypatch.setattr(shared, "_SHARED", {})
    monkeypatch.setattr(shared, "SHARED_MAX", 1)
    kept = shared_grade(Grade(passed=True, reason="one"))
    other = Grade(passed=True, reason="two")
    assert shared_grade(other) is other and shared_grade(Grade(passed=True, reason="two")) is not other
    assert shared_grade(Grade(passed=True, reason="one")) is kept
    assert len(shared._SHARED) == 1


def test_two_trials_graded_alike_hold_the_same_grades_and_a_failing_one_its_own():
    from tests.graders.test_graders import case, ok, transcript

    calls = [("Read", "read", "ok")]
    one = grade_trial(case("PASS"), transcript(calls), ok("PASS"))
    two = grade_trial(case("PASS"), transcript(calls), ok("PASS"))
    assert all(two[d] is one[d] for d in one) and all(g.passed for g in one.values())
    wrong = grade_trial(case("BLOCK"), transcript(calls), ok("PASS"))
    assert not wrong["verdict"].passed and wrong["verdict"] is not one["verdict"]
    assert wrong["tool_use"] is one["tool_use"]
