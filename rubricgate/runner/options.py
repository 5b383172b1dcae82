"""What a caller asks of one run (`rubricgate run`'s flags, or a library call)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rubricgate.models.case import CaseSpec
from rubricgate.models.config import Config, GateConfig
from rubricgate.records.events import EventListener
from rubricgate.suite.rubric import Rule

if TYPE_CHECKING:
    from rubricgate.models.results import RunKind


class CaseSlice(Protocol):
    """One machine's part of the suite (fleet/shard.py's ShardSpec): a run only asks it which
    cases to run, so the fleet layer above can hand one in without the runner importing it."""

    def select(self, cases: list[CaseSpec], trials: int | None) -> list[CaseSpec]: ...


@dataclass
class RunOptions:
    """One run's options; only `repo` is required."""

    repo: Path
    config_path: Path | None = None
    agent: str | None = None  # overrides per-task and config agents
    trials: int | None = None  # overrides per-task and config trials
    # The first trial's number: an interleaved round r of `compare --base` runs trial r, so
    # cached answers (keyed by trial index) differ from round to round.
    first_trial: int = 1
    keep_workspaces: bool = False
    jobs: int | None = None  # None: agent.jobs from the config, else by agent (`default_jobs`)
    only: list[str] = field(default_factory=list)  # case-id substrings to select
    listeners: list[EventListener] = field(default_factory=list)
    reports_dir: Path | None = None
    require_baseline: bool = True
    cache: bool = False  # reuse cached transcripts (rubricgate/runner/cache.py)
    cache_dir: Path | None = None  # beats config cache_dir; default $XDG_CACHE_HOME/rubricgate
    max_cost: float | None = None  # USD budget; once spent no new trial starts (rubricgate/runner/cost.py)
    # The caller exits right after the run (the CLI): after an interrupt, Ctrl-C stays ignored so
    # a late one cannot turn the written partial report's exit 2 into a death by signal.
    exits_after: bool = False
    kind: RunKind = "run"  # "baseline" (a `baseline update` run, not gated) or "record": its folder and summary say so
    shard: CaseSlice | None = None  # run only this slice of the cases (rubricgate/fleet/shard.py)
    # Continue this INCONCLUSIVE run (gating/continuation.py): its trials count, the design's next budget runs.
    continues: Path | None = None
    # The gate settings that decide, in place of rubricgate.yaml's (`compare --base`: the base's,
    # so a pull request cannot loosen the gate that judges it).
    gate: GateConfig | None = None
    # A config whose reviewer (its files and agent) runs in place of rubricgate.yaml's (`compare
    # --base`'s base side: the base's, so a pull request's reviewer runs on its side only).
    reviewer_from: Config | None = None
    # Rules this side's rubric lacks that cases expect (`compare --base`'s base side: the rules a
    # pull request adds with the cases that show them): known to grading so those cases load and
    # run, never cited by a reviewer that does not have them.
    foreign_rules: tuple[Rule, ...] = ()

    def continue_command(self, run_path: str) -> str:
        """The command that continues the run at `run_path` (relative to the repository): the flags
        that make `rubricgate run` this design again (without --config or --only it would be
        another design), and --repo with the folder's path when the repository is not the working
        folder. Every argument is quoted: a path with a space split in two when pasted."""
        import shlex

        here = self.repo.resolve() == Path.cwd().resolve()
        flags = [] if here else ["--repo", str(self.repo)]
        flags += ["--config", str(self.config_path)] if self.config_path is not None else []
        flags += ["--agent", self.agent] if self.agent else []
        flags += ["--trials", str(self.trials)] if self.trials else []
        flags += [f for only in self.only for f in ("--only", only)]
        flags += ["--continue", run_path if here else f"{self.repo}/{run_path}"]
        return "rubricgate run" + "".join(f" {shlex.quote(f)}" for f in flags)


# Agents that run in-process and spend no model time: more of them at once gains nothing.
_LOCAL_AGENTS = ("builtin", "replay")
CLI_JOBS = 4  # a CLI reviewer waits on its model most of the time: four at once by default


def default_jobs(configured: int | None, agents: list[str]) -> int:
    """Trials at once: agent.jobs when set, else 1 for local agents and CLI_JOBS for any CLI."""
    if configured:
        return configured
    return CLI_JOBS if any(a not in _LOCAL_AGENTS for a in agents) else 1
