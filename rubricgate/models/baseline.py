"""baseline.json: committed per-dimension pass rates and their history."""

from __future__ import annotations

from pydantic import Field, StrictFloat, StrictInt

from rubricgate.models.base import StrictModel


class BaselineChange(StrictModel):
    at: str
    rates: dict[str, float]
    trials: int
    reason: str = ""
    run_id: str = ""


# A rate is a number: `true` or "1.0" in baseline.json is a mistake, not 1.0.
Rate = StrictFloat | StrictInt


class Baseline(StrictModel):
    format_version: int = 1
    rates: dict[str, Rate]
    trials: int = Field(ge=1)
    history: list[BaselineChange] = Field(default_factory=list)
