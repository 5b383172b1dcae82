"""One Grade instance for every equal grade of a run.

Most trials of a run are graded alike ("PASS as expected", "18 call(s), all allowed", the same
steps), and a 2,000-case run held 6,000 grade objects (their dicts and reason strings: ~0.9 MB
of its peak, bench/run_memory.py). Grades are frozen (models/results.py), so equal ones can be
one object; at most SHARED_MAX distinct grades are kept, the rest stay as the grader made them
(a reason naming a finding or a tool call differs from trial to trial).
"""

from __future__ import annotations

from rubricgate.models.results import Grade

SHARED_MAX = 4096
_SHARED: dict[tuple[bool, str | None, str], Grade] = {}


def shared_grade(grade: Grade) -> Grade:
    """The one kept instance equal to `grade` (kept now if there is room), else `grade` itself."""
    key = (grade.passed, grade.category, grade.reason)
    kept = _SHARED.get(key)
    if kept is not None:
        return kept
    if len(_SHARED) < SHARED_MAX:  # two threads may both keep one: either is right
        _SHARED[key] = grade
    return grade
