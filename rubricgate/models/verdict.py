"""The verdict contract: the last fenced json block of the reviewer's final message."""

from pydantic import BaseModel, ConfigDict, Field

from rubricgate.models.base import StrictModel, Tier


class Finding(BaseModel):
    # Agents add harmless extra keys (e.g. "kind"); tolerated on input, dropped on output.
    model_config = ConfigDict(extra="ignore", defer_build=True)  # built on first use: models/base.py

    # A word of the rubric's vocabulary (critical/warning/suggestion unless rubricgate.yaml `tiers:`
    # says otherwise); the harness checks it against the rule's severity in the rubric.
    severity: str = Field(min_length=1, max_length=40)
    rule: str
    file: str = ""
    line: int | None = None
    quote: str = ""
    issue: str = ""
    fix: str = ""


class Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)  # built on first use: models/base.py

    tier: Tier
    summary: str = ""
    files_reviewed: list[str] = []
    findings: list[Finding] = []


class ParsedVerdict(StrictModel):
    """What the harness made of the final text."""

    status: str  # "ok" | "missing" | "malformed" | "invalid"
    reported_tier: Tier | None = None
    effective_tier: Tier | None = None
    escalated: bool = False
    warnings: list[str] = []
    error: str = ""
    verdict: Verdict | None = None
