"""Task file (evals/tasks/<id>.yaml) and fixture expect.yaml models."""

from pydantic import Field, field_validator, model_validator

from rubricgate.models.base import StrictModel, Tier
from rubricgate.models.bounds import MAX_FILE_CHARS, MAX_ID_CHARS, MAX_LIST_ITEMS, MAX_STEPS, MAX_TASK_FILES, MAX_TRIALS


class Expect(StrictModel):
    """What a correct review of the case looks like; at least one key."""

    tier: Tier | None = None
    rules: list[str] = []
    absent_rules: list[str] = []
    # No `ignore_agent_exit`: the continuous-evals seed fails a task on a non-zero agent exit unless
    # it is set, but here exit status is never a verdict (the verdict is graded and a run error is
    # recorded beside it), so the flag would be accepted and ignored. An old task using it is
    # rejected as an unknown key.

    @model_validator(mode="after")
    def _not_empty(self) -> "Expect":
        if self.tier is None and not self.rules and not self.absent_rules:
            raise ValueError("expect needs at least one of tier, rules, absent_rules")
        return self


class ToolUseRubric(StrictModel):
    """Tool allowlist: normalized names; forbidden/required are anchored regexes."""

    allowed: list[str] | None = None
    forbidden: list[str] = []
    required: list[str] = []


class TrajectoryRubric(StrictModel):
    max_steps: int = Field(gt=0, le=MAX_STEPS)


class Rubric(StrictModel):
    tool_use: ToolUseRubric | None = None
    trajectory: TrajectoryRubric | None = None


class FixtureExpect(StrictModel):
    """Optional expect.yaml beside a fixture: adds rules to the folder's tier."""

    rules: list[str] = []
    absent_rules: list[str] = []
    # The files the reviewer is asked to review, relative to the fixture folder (default: its
    # SKILL.md under suite.layout skills, every file but expect.yaml under files).
    review: list[str] = Field(default=[], max_length=MAX_LIST_ITEMS)
    rubric: Rubric | None = None
    trials: int | None = Field(default=None, gt=0, le=MAX_TRIALS)
    tags: list[str] = []
    why: str = ""


class TaskFile(StrictModel):
    """One recorded eval task."""

    id: str = Field(max_length=MAX_ID_CHARS)
    why: str = ""
    review: list[str] = Field(min_length=1, max_length=MAX_LIST_ITEMS)
    files: dict[str, str] = Field(default={}, max_length=MAX_TASK_FILES)
    expect: Expect
    rubric: Rubric | None = None
    trials: int | None = Field(default=None, gt=0, le=MAX_TRIALS)
    tags: list[str] = []
    agent: str | None = None

    @field_validator("id")
    @classmethod
    def _kebab(cls, v: str) -> str:
        import re

        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", v):
            raise ValueError("id must be lowercase letters, digits, '.', '_' or '-'")
        return v

    @field_validator("files")
    @classmethod
    def _file_sizes(cls, v: dict[str, str]) -> dict[str, str]:
        big = next((name for name, text in v.items() if len(text) > MAX_FILE_CHARS), None)
        if big is not None:
            raise ValueError(f"files.{big} holds more than {MAX_FILE_CHARS:,} characters")
        return v
