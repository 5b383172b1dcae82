"""A comparison `rubricgate compare` decided: what `--json FILE` writes, and what
`compare --base` keeps as `comparison.json` in its folder beside the base and head runs, so the
viewer lists the comparison that decided a pull request as a run of its own.

Format 2 (flips, tests, decision, the interleaving) is still read: the viewer shows what it
holds. Format 3 adds when it ran, where, and which run folders it compared.
"""

from typing import Annotated, Any

from rubricgate.models.base import StrictModel, known_format
from rubricgate.models.results import Decision

COMPARISON_FORMAT = 3


class FlipRecord(StrictModel):
    case_id: str
    kind: str  # regressed, fixed, unchanged, added, removed
    base: str
    head: str
    reasons: list[str] = []
    p_value: float | None = None
    credible: bool = False


class TestRecord(StrictModel):
    dimension: str
    cases: int
    base_passes: int
    base_trials: int
    head_passes: int
    head_trials: int
    p_value: float
    p_holm: float | None = None
    dip_chance: float = 0.0
    status: str = "ok"
    label: str = ""


class ComparisonRecord(StrictModel):
    format_version: Annotated[int, known_format(COMPARISON_FORMAT)] = COMPARISON_FORMAT
    kind: str = "compare"
    id: str = ""  # compare-<run id>; a format-2 file has none (the viewer names it by its file)
    base: str  # what the base side was: "reviewer at origin/main", a run folder
    head: str
    started_at: str = ""
    finished_at: str = ""
    branch: str | None = None
    pr: int | None = None
    run_url: str | None = None
    base_runs: list[str] = []  # the base side's run folders, relative to this file's folder
    head_runs: list[str] = []
    order: dict[str, Any] = {}  # how base and head trials were interleaved (seed, rounds)
    counts: dict[str, int] = {}
    flips: list[FlipRecord] = []
    tests: list[TestRecord] = []
    decision: Decision
