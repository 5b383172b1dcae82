"""A runnable case, as the suite loader builds it from a task file or a fixture."""

from typing import Literal

from rubricgate.models.base import StrictModel
from rubricgate.models.task import Expect, Rubric, ToolUseRubric, TrajectoryRubric


class CaseSpec(StrictModel):
    """A runnable case: a task file or a fixture, resolved and validated."""

    id: str
    source: Literal["task", "fixture"]
    origin: str  # repo-relative file the case came from
    why: str = ""
    review: list[str]  # as the task file names them (the source paths)
    files: dict[str, str] = {}  # overlays, keyed by workspace (neutral) path
    removed: list[str] = []  # repository files no workspace of the case holds (a change deleted them)
    # What the reviewer sees instead of the suite's own paths: reviewed paths in the workspace,
    # and every file copied in from the suite, {workspace path: repo source path}.
    workspace_review: list[str] = []
    workspace_paths: dict[str, str] = {}
    expect: Expect
    rubric: Rubric
    trials: int = 1
    tags: list[str] = []
    agent: str | None = None

    @property
    def tool_use(self) -> ToolUseRubric:
        """The case's tool-use rubric; the suite loader sets one on every case it builds."""
        if self.rubric.tool_use is None:
            raise ValueError(f"case {self.id} has no tool-use rubric (suite/cases.py merges one in)")
        return self.rubric.tool_use

    @property
    def trajectory(self) -> TrajectoryRubric:
        """The case's trajectory rubric; the suite loader sets one on every case it builds."""
        if self.rubric.trajectory is None:
            raise ValueError(f"case {self.id} has no trajectory rubric (suite/cases.py merges one in)")
        return self.rubric.trajectory
