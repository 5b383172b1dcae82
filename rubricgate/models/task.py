"""Task file (evals/tasks/<id>.yaml) and fixture expect.yaml models."""

from pydantic import ConfigDict, Field, field_validator, model_validator

from rubricgate.models.base import RepoPath, StrictModel, Tier, normal_path
from rubricgate.models.bounds import MAX_FILE_CHARS, MAX_ID_CHARS, MAX_LIST_ITEMS, MAX_STEPS, MAX_TASK_FILES, MAX_TRIALS


class Expect(StrictModel):
    """What a correct review of the case looks like; at least one key."""

    tier: Tier | None = None
    """The tier a correct review ends with: PASS, WARN or BLOCK (the effective tier, after the
    harness recomputes it from the findings)."""
    rules: list[str] = []
    """Rule ids that must be among the review's findings."""
    absent_rules: list[str] = []
    """Rule ids that must not be among the review's findings (a rule the case's file deliberately
    satisfies)."""
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
    """Normalized tool names the reviewer may call (read, grep, glob, bash, ...); any other call is
    a violation. Unset: any tool not forbidden."""
    forbidden: list[str] = []
    """Anchored, case-insensitive regexes over normalized tool names ("write|edit|bash"); a matching
    call fails tool_use."""
    required: list[str] = []
    """Anchored regexes over normalized tool names; each must match at least one call ("read": the
    reviewer must read the file)."""

    def canonical(self) -> "ToolUseRubric":
        """The same allowlist with each list sorted and without repeats: grades the same (each list
        is a set), so `compare --base` does not read a reordered list as a grading change."""
        return self.model_copy(update={"allowed": None if self.allowed is None else sorted(set(self.allowed)),
                                       "forbidden": sorted(set(self.forbidden)),
                                       "required": sorted(set(self.required))})


class TrajectoryRubric(StrictModel):
    max_steps: int = Field(strict=True, gt=0, le=MAX_STEPS)
    """Model turns a trial may take; more fails the trajectory dimension (and the harness stops a
    CLI at this limit)."""


class Rubric(StrictModel):
    # One object is shared by every case that keeps the config's rubric (suite/cases.py): a
    # field set on it would change them all.
    model_config = ConfigDict(frozen=True)

    tool_use: ToolUseRubric | None = None
    """The tool allowlist (unset: tool use is not graded for the case)."""
    trajectory: TrajectoryRubric | None = None
    """The trajectory bound (unset: trajectory length is not graded for the case)."""


class FixtureExpect(StrictModel):
    """Optional expect.yaml beside a fixture: adds rules to the folder's tier."""

    rules: list[str] = []
    """Rule ids that must be among the findings, beside the tier the fixture's folder
    (pass/warn/block) gives."""
    absent_rules: list[str] = []
    """Rule ids that must not be among the findings."""
    review: list[RepoPath] = Field(default=[], max_length=MAX_LIST_ITEMS)
    """The files the reviewer is asked to review, relative to the fixture folder (default: its
    SKILL.md under suite.layout skills, every file but expect.yaml under files)."""
    rubric: Rubric | None = None
    """The case's rubric (tool use, trajectory); unset: rubricgate.yaml's `rubric`."""
    trials: int | None = Field(strict=True, default=None, gt=0, le=MAX_TRIALS)
    """Trials of this case; unset: rubricgate.yaml's `trials`."""
    tags: list[str] = []
    """Labels for reports and the per-tag rates and costs."""
    why: str = ""
    """What the case protects: the rule or the past mistake it exists for."""


class TaskFile(StrictModel):
    """One recorded eval task."""

    id: str = Field(max_length=MAX_ID_CHARS)
    """The task's id: lowercase letters, digits, '.', '_' or '-', equal to the file's stem."""
    why: str = ""
    """What the task protects: the rule or the past mistake it exists for."""
    review: list[RepoPath] = Field(min_length=1, max_length=MAX_LIST_ITEMS)
    """Repository-relative files the reviewer is asked to review (written one per line to
    reviewer.changed_files)."""
    files: dict[RepoPath, str] = Field(default={}, max_length=MAX_TASK_FILES)
    """Files written into the trial's throwaway copy before the reviewer runs: path -> content."""
    removed: list[RepoPath] = Field(default=[], max_length=MAX_TASK_FILES)
    """Repository files the reviewed change deletes or renames away: removed from the trial's
    throwaway copy before the reviewer runs, so it reads as the change's head (`record` fills it)."""
    expect: Expect
    """What a correct review of the task looks like."""
    rubric: Rubric | None = None
    """The task's rubric (tool use, trajectory); unset: rubricgate.yaml's `rubric`."""
    trials: int | None = Field(strict=True, default=None, gt=0, le=MAX_TRIALS)
    """Trials of this task; unset: rubricgate.yaml's `trials`."""
    tags: list[str] = []
    """Labels for reports and the per-tag rates and costs."""
    agent: str | None = None
    """The agent that reviews this task (an agent name, as agent.name); unset: rubricgate.yaml's
    agent."""

    @field_validator("id")
    @classmethod
    def _kebab(cls, v: str) -> str:
        import re

        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", v):
            raise ValueError("id must be lowercase letters, digits, '.', '_' or '-'")
        return v

    @field_validator("files", mode="before")
    @classmethod
    def _one_spelling(cls, v: object) -> object:
        """Two keys naming one file (`skills/x/SKILL.md`, `./skills/x/SKILL.md`) are one key once
        spelt as the path: the later content replaced the earlier without a word."""
        seen: dict[str, str] = {}
        for name in v if isinstance(v, dict) else ():
            key = normal_path(name) if isinstance(name, str) else name
            if key in seen:
                raise ValueError(f"{name!r} and {seen[key]!r} name one file (fix: give its content once)")
            seen[key] = name
        return v

    @field_validator("files")
    @classmethod
    def _file_sizes(cls, v: dict[str, str]) -> dict[str, str]:
        big = next((name for name, text in v.items() if len(text) > MAX_FILE_CHARS), None)
        if big is not None:
            raise ValueError(f"files.{big} holds more than {MAX_FILE_CHARS:,} characters")
        return v
