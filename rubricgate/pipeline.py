"""The whole workflow as one readable chain: load -> plan -> run -> aggregate -> gate -> report."""

from __future__ import annotations

import secrets as _random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rubricgate.agents import Agent, get_agent
from rubricgate.agents.selection import build_agents
from rubricgate.cost import Budget
from rubricgate.errors import GateInputError
from rubricgate.load import Loaded, load_all
from rubricgate.models.results import Summary
from rubricgate.reports.bundle import write_reports
from rubricgate.reports.events import EventListener, EventLog
from rubricgate.reports.summary import write_summary
from rubricgate.runner.cache import CACHE_DIR
from rubricgate.runner.environment import build_env, secret_values
from rubricgate.runner.scheduler import Job, RunContext, run_jobs
from rubricgate.runner.workspace import list_tree, snapshot
from rubricgate.summarize import RunState, build_summary

__all__ = ["Loaded", "RunOptions", "RunOutcome", "load_all", "plan", "run_suite"]


@dataclass
class RunOptions:
    repo: Path
    config_path: Path | None = None
    agent: str | None = None  # overrides per-task and config agents
    trials: int | None = None  # overrides per-task and config trials
    keep_workspaces: bool = False
    jobs: int = 1
    only: list[str] = field(default_factory=list)  # case-id substrings to select
    listeners: list[EventListener] = field(default_factory=list)
    reports_dir: Path | None = None
    require_baseline: bool = True
    cache: bool = False  # reuse cached transcripts (rubricgate/runner/cache.py)
    cache_dir: Path | None = None  # default: <repo>/.rubricgate-cache
    max_cost: float | None = None  # USD budget; once spent no new trial starts (rubricgate/cost.py)


@dataclass
class RunOutcome:
    summary: Summary
    run_dir: Path
    exit_code: int


def plan(loaded: Loaded, options: RunOptions) -> list[Job]:
    """(case, trial, agent) jobs; --agent beats a task's agent, which beats the config's."""
    cases = [c for c in loaded.cases if not options.only or any(s in c.id for s in options.only)]
    if not cases:
        raise GateInputError("--only", "", f"no case id contains {options.only}", "check the case ids with `rubricgate validate`")
    return [Job(c, t, options.agent or c.agent or loaded.config.agent.name)
            for c in cases for t in range(1, (options.trials or c.trials) + 1)]


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + _random.token_hex(3)


def run_suite(options: RunOptions) -> RunOutcome:
    """load -> plan -> run -> aggregate -> gate -> report. Raises GateInputError(s) on bad input."""
    loaded = load_all(options.repo, options.config_path, options.require_baseline)
    jobs = plan(loaded, options)
    agents = build_agents(jobs, loaded.config, options.agent, factory=get_agent)
    ctx, state = start_run(options, loaded, jobs, agents)
    try:
        results = run_jobs(ctx, jobs, options.jobs)
    except KeyboardInterrupt:  # keep what finished: a partial, readable report
        results, state.interrupted = list(ctx.results), True
    state.tree_violations, state.not_run, state.budget = ctx.tree_violations, ctx.not_run, ctx.budget
    summary = build_summary(loaded, jobs, results, state)
    write_run_reports(ctx, loaded, summary, options.repo)
    return RunOutcome(summary, ctx.run_dir, summary.decision.exit_code)


def start_run(options: RunOptions, loaded: Loaded, jobs: list[Job],
              agents: dict[str, Agent]) -> tuple[RunContext, RunState]:
    """Create the run folder and context, and record run_started."""
    run_id = new_run_id()
    run_dir = (options.reports_dir or options.repo / loaded.config.reports) / run_id
    run_dir.mkdir(parents=True)
    ctx = _context(options, loaded, run_dir, agents)
    state = RunState(run_id=run_id, started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     agent_versions={n: a.version() for n, a in agents.items()}, trials=options.trials)
    ctx.agent_versions = state.agent_versions  # one --version per CLI per run, shared with the cache
    ctx.events.emit("run_started", run_id=run_id, total_trials=len(jobs), cases=len({j.case.id for j in jobs}),
                    case_trials={j.case.id: j.trial for j in jobs},  # last planned trial = count per case
                    agents=state.agent_versions)
    return ctx, state


def write_run_reports(ctx: RunContext, loaded: Loaded, summary: Summary, repo: Path) -> None:
    """summary.json first (the record), then replay artifacts, HTML, comment.md, junit.xml."""
    write_summary(ctx.run_dir, summary, ctx.secrets)
    # The step summary is `rubricgate report`'s job, so env={} here.
    write_reports(summary, ctx.run_dir, cases=loaded.cases, secrets=ctx.secrets, env={}, repo=repo)
    ctx.events.emit("run_completed", decision=summary.decision.model_dump(mode="json"))
    ctx.events.close()


def _context(options: RunOptions, loaded: Loaded, run_dir: Path, agents: dict[str, Agent]) -> RunContext:
    cfg = loaded.config
    env = build_env(cfg.agent.env_allowlist, cfg.agent.secret_env)
    secrets = secret_values(env, cfg.agent.secret_env)
    exclude = {cfg.reports.split("/")[0]}
    events = EventLog(run_dir / "events.jsonl", options.listeners, secrets)
    ctx = RunContext(repo=options.repo, config=cfg, rubric=loaded.rubric, run_dir=run_dir, events=events,
                     agents=agents, files=list_tree(options.repo, exclude), env=env, secrets=secrets,
                     tree_before=snapshot(options.repo, exclude), exclude=exclude,
                     keep_workspaces=options.keep_workspaces, cases=loaded.cases,
                     budget=Budget(options.max_cost),
                     cache_dir=(options.cache_dir or options.repo / CACHE_DIR) if options.cache else None)
    return ctx
