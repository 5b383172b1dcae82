"""baseline.json: per-case, per-dimension pass counts, what they were measured with, history.

Format 2 keeps, per case and dimension, passes and trials: the gate compares each case the run
shares with the baseline at its own trials. The suite rates are kept for display. Format 1
(suite rates only) is still read; `rubricgate baseline update` rewrites it as format 2.
"""

from typing import Literal

from pydantic import Field, StrictFloat, StrictInt, model_validator

from rubricgate.models.base import StrictModel


class CaseCount(StrictModel):
    passes: int = Field(ge=0)
    trials: int = Field(ge=0)

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


class Baseline(StrictModel):
    format_version: Literal[1, 2] = 2
    rates: dict[str, Rate]  # suite rates, for display (format 1: what the gate compared against)
    trials: int = Field(default=1, ge=1)  # format 1: trials per case; format 2: the most any case ran
    cases: dict[str, dict[str, CaseCount]] = {}
    measured_with: MeasuredWith | None = None
    history: list[BaselineChange] = []
