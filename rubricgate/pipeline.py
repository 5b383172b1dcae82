"""The whole workflow as one readable chain: load -> plan -> run -> aggregate -> gate -> report."""

from __future__ import annotations

import secrets as _random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rubricgate import exitcodes
from rubricgate.agents import Agent, get_agent
from rubricgate.aggregate import case_rates, dimension_rates, tag_rates, trial_frame
from rubricgate.baseline import load_baseline
from rubricgate.cost import Budget, cost_summary, is_not_run
from rubricgate.config import load_config
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.gate import cannot_judge, decide
from rubricgate.models.baseline import Baseline
from rubricgate.models.config import Config
from rubricgate.models.results import CaseSpec, CaseSummary, Decision, Summary, TrialResult
from rubricgate.reports.events import EventLog, EventListener
from rubricgate.reports.bundle import write_reports
from rubricgate.reports.summary import write_summary
from rubricgate.rubric import RubricSpec, load_rubric
from rubricgate.runner.environment import build_env, secret_values
from rubricgate.runner.cache import CACHE_DIR
from rubricgate.runner.scheduler import Job, RunContext, run_jobs
from rubricgate.stats import add_intervals, case_consistency, suite_consistency
from rubricgate.runner.workspace import list_tree, snapshot
from rubricgate.suite import load_suite


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
class Loaded:
    """Everything the load stage produced."""

    config: Config
    rubric: RubricSpec
    cases: list[CaseSpec]
    baseline: Baseline | None


@dataclass
class RunOutcome:
    summary: Summary
    run_dir: Path
    exit_code: int


def load_all(repo: Path, config_path: Path | None = None, require_baseline: bool = True) -> Loaded:
    """Load config, rubric, cases and baseline; raise GateInputErrors listing every problem."""
    config = load_config(repo, config_path)
    errors: list[GateInputError] = []
    rubric = _collect(errors, lambda: load_rubric(repo / config.reviewer.rubric, config.reviewer.rubric))
    cases = _collect(errors, lambda: load_suite(repo, config, rubric)) or []
    baseline = None
    if require_baseline:
        baseline = _collect(errors, lambda: load_baseline(repo / config.baseline, config.baseline))
    for rel in (config.reviewer.prompt, config.reviewer.skill):
        if not (repo / rel).is_file():
            errors.append(GateInputError("rubricgate.yaml", "reviewer", f"{rel} does not exist", "fix the reviewer paths"))
    if errors:
        raise GateInputErrors(errors)
    return Loaded(config, rubric, cases, baseline)


def _collect(errors: list[GateInputError], load):
    try:
        return load()
    except GateInputErrors as exc:
        errors.extend(exc.errors)
    except GateInputError as exc:
        errors.append(exc)
    return None


def plan(loaded: Loaded, options: RunOptions) -> list[Job]:
    """(case, trial, agent) jobs; --agent beats a task's agent, which beats the config's."""
    cases = [c for c in loaded.cases if not options.only or any(s in c.id for s in options.only)]
    if not cases:
        raise GateInputError("--only", "", f"no case id contains {options.only}", "check the case ids with `rubricgate validate`")
    return [Job(c, t, options.agent or c.agent or loaded.config.agent.name)
            for c in cases for t in range(1, (options.trials or c.trials) + 1)]


def build_agents(names: set[str], config: Config) -> dict[str, Agent]:
    agents = {}
    for name in sorted(names):
        try:
            agents[name] = get_agent(name, config.agent)
        except KeyError:
            raise GateInputError("rubricgate.yaml", "agent.name", f"unknown agent {name!r}",
                                 "use one of builtin, claude, cortex, opencode, codex, command, replay") from None
    return agents


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + _random.token_hex(3)


def run_suite(options: RunOptions) -> RunOutcome:
    """load -> plan -> run -> aggregate -> gate -> report. Raises GateInputError(s) on bad input."""
    loaded = load_all(options.repo, options.config_path, options.require_baseline)
    jobs = plan(loaded, options)
    agents = build_agents({j.agent for j in jobs}, loaded.config)
    run_id = new_run_id()
    run_dir = (options.reports_dir or options.repo / loaded.config.reports) / run_id
    run_dir.mkdir(parents=True)
    ctx = _context(options, loaded, run_dir, agents)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    ctx.events.emit("run_started", run_id=run_id, total_trials=len(jobs), cases=len({j.case.id for j in jobs}),
                    case_trials={j.case.id: j.trial for j in jobs},  # last planned trial = count per case
                    agents={n: a.version() for n, a in agents.items()})
    try:
        results, interrupted = run_jobs(ctx, jobs, options.jobs), False
    except KeyboardInterrupt:  # keep what finished: a partial, readable report
        results, interrupted = list(ctx.results), True
    summary = summarize(loaded, jobs, results, run_id, started, agents, ctx, interrupted)
    write_summary(run_dir, summary, ctx.secrets)
    # Replay artifacts, HTML, comment.md, junit.xml; the step summary is `rubricgate report`'s job.
    write_reports(summary, run_dir, cases=loaded.cases, secrets=ctx.secrets, env={})
    ctx.events.emit("run_completed", decision=summary.decision.model_dump(mode="json"))
    ctx.events.close()
    return RunOutcome(summary, run_dir, summary.decision.exit_code)


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


def summarize(loaded: Loaded, jobs: list[Job], results: list[TrialResult], run_id: str, started: str,
              agents: dict[str, Agent], ctx: RunContext, interrupted: bool) -> Summary:
    """Aggregate and gate: the Summary every report renders."""
    frame = trial_frame(loaded.cases, results)
    rates = dimension_rates(frame)
    add_intervals(rates, loaded.config.gate.confidence)
    decision = _decision(loaded, rates, ctx, interrupted, len(results), len(jobs), _shape(jobs))
    per_case = case_rates(frame)
    by_case: dict[str, list[TrialResult]] = {}
    for r in results:
        by_case.setdefault(r.case_id, []).append(r)
    cases = [CaseSummary(id=c.id, source=c.source, tags=c.tags, expected_tier=c.expect.tier,
                         rates=per_case.get(c.id, {}), trials=by_case.get(c.id, []),
                         **_consistency(by_case.get(c.id, [])))
             for c in loaded.cases if c.id in {j.case.id for j in jobs}]
    default = jobs[0].agent if jobs else loaded.config.agent.name
    return Summary(run_id=run_id, started_at=started, finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   complete=not interrupted and len(results) == len(jobs) and not ctx.not_run, agent=default,
                   agent_version=agents[default].version() if default in agents else None,
                   model=loaded.config.agent.model, trials_default=loaded.config.trials, decision=decision,
                   rates=rates, rates_by_tag=tag_rates(frame), cases=cases,
                   flaky_cases=[c.id for c in cases if c.flaky], cost=cost_summary(cases, ctx.budget),
                   pass_k=suite_consistency([[t for t in c.trials if not is_not_run(t)] for c in cases]),
                   config={"method": loaded.config.gate.method, "rubric": loaded.config.reviewer.rubric})


def _consistency(trials: list[TrialResult]) -> dict:
    """pass@k, pass^k (k = the case's trials) and flakiness over the trials that ran."""
    pass_at, pass_hat, flaky = case_consistency([t for t in trials if not is_not_run(t)])
    return {"pass_at_k": pass_at, "pass_hat_k": pass_hat, "flaky": flaky}


def _shape(jobs: list[Job]) -> tuple[int, int]:
    """(cases, fewest trials any case is planned to run): the statistical gate's sample shape."""
    per_case: dict[str, int] = {}
    for job in jobs:
        per_case[job.case.id] = per_case.get(job.case.id, 0) + 1
    return len(per_case), min(per_case.values(), default=0)


def _decision(loaded: Loaded, rates, ctx: RunContext, interrupted: bool, done: int, total: int,
              shape: tuple[int, int] = (0, 1)) -> Decision:
    if ctx.not_run:
        return cannot_judge([f"{ctx.budget.reason}: {ctx.not_run} of {total} trials not run; the report is partial"])
    if interrupted:
        return cannot_judge([f"run interrupted after {done} of {total} trials; the report is partial"])
    if ctx.tree_violations:
        return cannot_judge([f"the original repository was modified during the run: {', '.join(ctx.tree_violations[:5])}"])
    if loaded.baseline is None:
        return cannot_judge(["no baseline to compare against"])
    return decide(rates, loaded.baseline, loaded.config.gate, *shape)
