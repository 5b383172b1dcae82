"""baseline.json: per-case, per-dimension pass counts, what they were measured with, history.

Format 2 keeps, per case and dimension, passes and trials: the gate compares each case the run
shares with the baseline at its own trials. The suite rates are kept for display. Format 3 adds
what rule coverage and change-aware decisions need: per reviewer file its digest, the rule table
and the warning threshold the baseline was measured with, and per case the rule ids the
baseline run's reviewer cited. Formats 1 and 2 are still read (without those, coverage counts
expectations only and rule changes are unknown); `rubricgate baseline update` rewrites them as
format 3.
"""

from typing import Literal

from pydantic import Field, StrictFloat, StrictInt, model_serializer, model_validator

from rubricgate.models.base import StrictModel, drop_empty
from rubricgate.models.bounds import MAX_BASELINE_TRIALS


class CaseCount(StrictModel):
    passes: int = Field(ge=0, le=MAX_BASELINE_TRIALS)
    trials: int = Field(ge=1, le=MAX_BASELINE_TRIALS)

    @model_validator(mode="after")
    def _passes_within_trials(self) -> "CaseCount":
        if self.passes > self.trials:
            raise ValueError(f"passes {self.passes} > trials {self.trials}")
        return self


class MeasuredWith(StrictModel):
    """What the baseline was measured with: a different reviewer or agent makes it stale."""

    reviewer_digest: str | None = None  # sha256 over the reviewer files' own sha256s
    agent: str | None = None
    agent_version: str | None = None
    model: str | None = None
    run_id: str = ""


class BaselineChange(StrictModel):
    at: str
    rates: dict[str, float]
    trials: int
    reason: str = ""
    run_id: str = ""
    cases: list[str] = []  # the cases a merge (`--from` a partial run) changed


# A rate is a number: `true` or "1.0" in baseline.json is a mistake, not 1.0.
Rate = StrictFloat | StrictInt


class RuleRecord(StrictModel):
    """One row of the rule table the baseline was measured with."""

    severity: str
    kind: str
    statement: str = ""  # the rule as the reviewer's files stated it (rules named in rubricgate.yaml)

    @model_serializer(mode="wrap")
    def _without_empty_statement(self, handler):
        return drop_empty(handler(self), "statement")


class Baseline(StrictModel):
    format_version: Literal[1, 2, 3] = 3
    rates: dict[str, Rate]  # suite rates, for display (format 1: what the gate compared against)
    trials: int = Field(default=1, ge=1, le=MAX_BASELINE_TRIALS)  # format 1: trials per case; format 2: the most any case ran
    cases: dict[str, dict[str, CaseCount]] = {}
    measured_with: MeasuredWith | None = None
    history: list[BaselineChange] = []
    # Format 3: the reviewer the counts were measured with, file by file and rule by rule.
    reviewer_digests: dict[str, str] = {}
    rubric_rules: dict[str, RuleRecord] = {}
    tier_threshold: int | None = Field(default=None, ge=1)  # warnings that make a BLOCK
    # Per case, the rule id of every finding the baseline run's reviewer reported (one entry a
    # finding, the most any trial reported): the "cited by the reviewer" half of rule coverage.
    cited: dict[str, list[str]] = {}

    @model_validator(mode="after")
    def _rates_are_rates(self) -> "Baseline":
        bad = next((k for k, v in self.rates.items() if not 0.0 <= v <= 1.0), None)
        if bad is not None:
            raise ValueError(f"rates.{bad} is {self.rates[bad]}, not a rate between 0 and 1")
        return self
