"""What summary.json records of rule coverage and of the rules a reviewer edit changed."""

from typing import Literal

from rubricgate.models.base import StrictModel


class RuleChange(StrictModel):
    """One rule (or reviewer file) that differs from the baseline's, and the cases that see it."""

    rule: str  # rule id, tier:warning-threshold, or the reviewer file's path
    change: Literal["added", "removed", "severity", "kind", "statement", "threshold", "file"]
    detail: str
    cases: list[str] = []  # the cases that exercise it; empty: the suite cannot see the change
