"""What happened to a run as a whole, beyond its trial results (summarize.py turns it into the
Summary). Its own module so that starting a run does not import the aggregation and gating
it needs only at the end (reports/ahead.py loads those beside the trials)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rubricgate.runner.cost import Budget

if TYPE_CHECKING:
    from rubricgate.models.results import RunKind


@dataclass
class RunState:
    """What happened to the run as a whole, beyond its trial results."""

    run_id: str
    started: str
    agent_versions: dict[str, str | None] = field(default_factory=dict)
    interrupted: bool = False
    tree_violations: list[str] = field(default_factory=list)
    # The run's mark on its design was removed or replaced meanwhile (gating/design_mark.py lost):
    # another run of the design could have run beside it, so this one cannot judge.
    design_lost: str = ""
    not_run: int = 0
    budget: Budget = field(default_factory=lambda: Budget(None))
    trials: int | None = None  # --trials, when given: what the run was asked for
    kind: RunKind = "run"  # "baseline": measured for `baseline update`, not gated; "record": `record`'s one run
    # Adaptive rounds (gating/adaptive.py, driven by runner/trials.py): the policy object and
    # every job it ran, which then stand for the plan in the summary.
    adaptive: Any = None
    jobs_run: list | None = None
