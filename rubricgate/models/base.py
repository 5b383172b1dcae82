"""Shared pydantic base: every file we read or write forbids unknown keys."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Tier = Literal["PASS", "WARN", "BLOCK"]
Outcome = Literal["PASS", "WARN", "BLOCK", "ERROR"]
Severity = Literal["critical", "warning", "suggestion"]
Dimension = Literal["verdict", "tool_use", "trajectory"]
DIMENSIONS: tuple[str, ...] = ("verdict", "tool_use", "trajectory")


class StrictModel(BaseModel):
    """Base for every on-disk format: unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")
