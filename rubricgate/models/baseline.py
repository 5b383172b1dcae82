"""baseline.json: committed per-dimension pass rates and their history."""

from __future__ import annotations

from pydantic import Field

from rubricgate.models.base import StrictModel


class BaselineChange(StrictModel):
    at: str
    rates: dict[str, float]
    trials: int
    reason: str = ""
    run_id: str = ""


class Baseline(StrictModel):
    format_version: int = 1
    rates: dict[str, float]
    trials: int = Field(ge=1)
    history: list[BaselineChange] = Field(default_factory=list)
