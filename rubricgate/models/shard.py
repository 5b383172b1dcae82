"""shard.json: what a `run --shard K/N` partial run records so `merge` can check the shards belong together."""

from typing import Annotated

from pydantic import Field

from rubricgate.models.base import StrictModel, known_format

# More machines than any suite has cases: an unbounded N overflowed the assignment, a large one
# ran it for hours, and a shard.json's count of 10**12 made merge list every missing shard.
MAX_SHARDS = 100_000


class PlanOptions(StrictModel):
    """The run options that shape the plan: every shard of one run must have used the same."""

    only: list[str] = []
    trials: int | None = None
    agent: str | None = None
    max_cost: float | None = None


class ShardRecord(StrictModel):
    format_version: Annotated[int, known_format(1)] = 1
    run_id: str
    index: int = Field(ge=1, le=MAX_SHARDS)  # K of K/N, 1-based
    count: int = Field(ge=1, le=MAX_SHARDS)  # N
    harness_version: str
    config_digest: str  # SHA-256 of rubricgate.yaml
    baseline_digest: str  # SHA-256 of baseline.json ("missing" when there is none)
    reviewer: dict[str, str]  # digest per reviewer file (prompt, skill and rubric folders)
    agent_versions: dict[str, str | None] = {}
    plan: PlanOptions
    # case id -> shard index for the whole suite: identical in every shard of one run.
    assignment: dict[str, int]
    jobs: list[tuple[str, int, str]]  # (case id, trial, agent) this shard ran, in plan order
