"""The whole workflow as one readable chain: load -> plan -> run -> aggregate -> gate -> report."""

from __future__ import annotations

import gc
import os
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from rubricgate.agents import Agent, get_agent
from rubricgate.agents.selection import build_agents
from rubricgate.errors import GateInputError
from rubricgate.gating.changes import changed_first, rule_changes, with_rule_changes
from rubricgate.isolation.admission import CANCEL, AgentSlots
from rubricgate.isolation.environment import build_env, secret_values
from rubricgate.isolation.process import adopt_orphans, child_pids, sweep_orphans
from rubricgate.isolation.sandbox import (
    SandboxPolicy,
    SandboxUnavailable,
    hidden_argument,
    hidden_paths,
    probe_layers,
    real_home,
    resolve_isolation,
)
from rubricgate.isolation.scratch import Scratch, choose_scratch
from rubricgate.models.base import build_models
from rubricgate.models.case import CaseSpec
from rubricgate.models.results import RUN_END_MODELS, TRIAL_MODELS, Summary, TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.records.events import EventListener, EventLog
from rubricgate.records.files import new_run_id
from rubricgate.runner.cache import CACHE_DIR, note_rejections, resolve_cache_dir, signing_key
from rubricgate.runner.cost import Budget
from rubricgate.runner.run_state import RunState
from rubricgate.runner.scheduler import Job, RunContext, in_sandbox, restore_interrupts, run_jobs
from rubricgate.runner.treecheck import TreeGuard, fingerprint_tree, settle_own_bytecode
from rubricgate.runner.workspace import GitListing, RunTree, list_tree_sized
from rubricgate.suite.load import Loaded, load_all


class CaseSlice(Protocol):
    """One machine's part of the suite (fleet/shard.py's ShardSpec): the pipeline only asks it
    which cases to run, so the fleet layer above can hand one in without the pipeline importing it."""

    def select(self, cases: list[CaseSpec], trials: int | None) -> list[CaseSpec]: ...

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
    cache_dir: Path | None = None  # beats config cache_dir; default $XDG_CACHE_HOME/rubricgate
    max_cost: float | None = None  # USD budget; once spent no new trial starts (rubricgate/runner/cost.py)
    # The caller exits right after the run (the CLI): after an interrupt, Ctrl-C stays ignored so
    # a late one cannot turn the written partial report's exit 2 into a death by signal.
    exits_after: bool = False
    kind: str = "run"  # "baseline": a `baseline update` run - its folder and summary say so, it is not gated
    shard: CaseSlice | None = None  # run only this slice of the cases (rubricgate/fleet/shard.py)


@dataclass
class RunOutcome:
    summary: Summary
    run_dir: Path
    exit_code: int
    workspaces: Path | None = None  # where --keep-workspaces left each trial's folder


def plan(loaded: Loaded, options: RunOptions) -> list[Job]:
    """(case, trial, agent) jobs; --agent beats a task's agent, which beats the config's."""
    cases = [c for c in loaded.cases if not options.only or any(s in c.id for s in options.only)]
    if not cases:
        raise GateInputError("--only", "", f"no case id contains {options.only}", "list the case ids with `rubricgate validate --list`")
    if options.shard is not None:
        cases = options.shard.select(cases, options.trials)
    cases = changed_first(cases, rule_changes(loaded.rubric, loaded.cases, loaded.baseline))
    return [Job(c, t, options.agent or c.agent or loaded.config.agent.name)
            for c in cases for t in range(1, (options.trials or c.trials) + 1)]


def with_changes(summary: Summary, loaded: Loaded) -> Summary:
    """Coverage, the rules changed since the baseline and the change-aware decision (gating/changes.py)."""
    return with_rule_changes(summary, loaded.rubric, loaded.cases, loaded.baseline, loaded.config.gate,
                             loaded.config.reviewer.rubric)


def run_suite(options: RunOptions) -> RunOutcome:
    """load -> plan -> run -> aggregate -> gate -> report. Raises GateInputError(s) on bad input."""
    listing = GitListing(options.repo)  # git lists the tree on the other core while the suite loads
    loaded = load_all(options.repo, options.config_path, options.require_baseline)
    options = _with_cache_dir(options, loaded.config.cache_dir)  # before anything is written
    jobs = plan(loaded, options)
    agents = build_agents(jobs, loaded.config, options.agent, factory=get_agent)
    known = child_pids()  # before the sandbox probes: their leftovers are this run's to reap
    settle_own_bytecode(options.repo)  # before the tree is listed and watched
    exclude = _watch_exclude(options, loaded)
    files, size = list_tree_sized(options.repo, answer_key(options, loaded) | exclude, listing)
    workspaces = Workspaces(files, choose_scratch(size), case_sources(jobs))  # runner/scratch.py
    policy, guard, tree = isolate_and_watch(options, loaded, agents, workspaces, exclude, known)
    ctx, state = start_run(options, loaded, jobs, agents, policy, tree, exclude)
    bodies: dict[str, str] = {}
    reports_loaded = threading.Event()
    ctx.on_graded = prerender_report(bodies, reports_loaded)
    CANCEL.reset()
    warming = warm_imports(ctx.slots.filled if ctx.slots else None, reports_loaded)
    # Modules, models and the loaded suite live until exit: the collector need not walk them
    # again on every full collection during the trials.
    gc.freeze()
    try:
        results = run_jobs(ctx, jobs, options.jobs)
    except KeyboardInterrupt:  # keep what finished: a partial, readable report
        results, state.interrupted = list(ctx.results), True
    finally:
        # Copy-only: kill and reap escaped descendants. In the sandbox none can outlive its PID
        # namespace, but a process that adopts orphans (an earlier copy-only run) also inherits
        # each sandbox's init when bwrap exits without reaping it: reap those zombies too.
        sweep_orphans(guard.children)
        # Every agent is dead: the run's temp folder goes while the reports are written.
        cleanup = threading.Thread(target=ctx.tree.remove, kwargs={"keep_trials": options.keep_workspaces})
        cleanup.start()
    try:
        if ctx.slots:
            ctx.slots.filled.set()  # the trials are over: nothing left for the warm-up to wait for
        warming.join()  # its models and modules are what the rest of the run uses
        ctx.tree_violations.extend(c for c in guard.changes() if c not in ctx.tree_violations)
        state.tree_violations, state.not_run, state.budget = ctx.tree_violations, ctx.not_run, ctx.budget
        from rubricgate.gating.summarize import build_summary  # warmed during the trials

        summary = note_rejections(with_isolation(build_summary(loaded, jobs, results, state), policy),
                                  ctx.cache_rejected)
        from rubricgate.reports.explain import annotate  # warmed during the trials

        summary = write_run_reports(ctx, loaded, with_changes(annotate(summary, loaded, options.repo, os.environ),
                                                              loaded), options.repo, bodies)
    finally:
        cleanup.join()
        if not options.exits_after:  # ignored since the interrupt: the report is written
            restore_interrupts(ctx.saved_handlers)
    kept = ctx.tree.root if options.keep_workspaces else None
    return RunOutcome(summary, ctx.run_dir, summary.decision.exit_code, kept)


WARM_AFTER_S = 1.0


def warm_imports(after: threading.Event | None = None,
                 reports_loaded: threading.Event | None = None) -> threading.Thread:
    """Build the models a trial needs when it ends, and import what the end of the run needs (the
    report writers, the summary's models), on a background thread while trials run: a fixed cost
    taken off the run's critical path. It waits until the first agents are all out (`after`, at
    most WARM_AFTER_S): importing holds the interpreter, and the trials being launched need it
    more. `reports_loaded` is set once the report writers are loaded. Not numpy: most runs never
    need it (exact.py), and beside fast trials its import only takes turns with them."""
    def load() -> None:
        if after is not None:
            after.wait(WARM_AFTER_S)
        build_models(TRIAL_MODELS)  # before the first trial ends, if it runs that long
        import rubricgate.gating.summarize  # noqa: F401
        import rubricgate.reports.bundle  # noqa: F401
        import rubricgate.reports.explain  # noqa: F401

        if reports_loaded is not None:
            reports_loaded.set()
        build_models(RUN_END_MODELS)

    thread = threading.Thread(target=load, daemon=True, name="warm-imports")
    thread.start()
    return thread


def isolate_and_watch(options: RunOptions, loaded: Loaded, agents: dict[str, Agent], workspaces: Workspaces,
                      exclude: set[str], known: set[int]) -> tuple[SandboxPolicy, TreeGuard, RunTree]:
    """The sandbox decision, the run's snapshot of the tree and the repository's start digest,
    side by side: the probes and the snapshot (GNU cp, runner/workspace.py) run in processes of
    their own that two worker threads wait for, while this thread digests the repository (a
    5,000-file, 100 MB tree: ~0.3 s to copy, ~0.4 s to digest). All done before any agent starts;
    a copy-only run then adopts its orphans (runner/treecheck.py)."""
    with ThreadPoolExecutor(2, thread_name_prefix="run-start") as pool:
        probing = pool.submit(sandbox_policy, options, loaded, agents, workspaces.scratch)
        copying = pool.submit(RunTree, options.repo, workspaces.files, workspaces.sources, scratch=workspaces.scratch)
        try:
            guard = TreeGuard.start(options.repo, exclude, adopt=False, known=known)
            policy = probing.result()
        except BaseException:
            _discard_tree(copying)
            raise
    tree = copying.result()
    if not _all_sandboxed(policy, agents):
        adopt_orphans()
    return policy, guard, tree


def case_sources(jobs: list[Job]) -> list[str]:
    """The suite files the planned cases place in their workspaces (fixture folders, say)."""
    return sorted({source for job in jobs for source in job.case.workspace_paths.values()})


def _discard_tree(copying) -> None:
    # The run ends before its first trial (bwrap required and missing, say): its snapshot goes.
    try:
        copying.result().remove()
    except Exception:  # noqa: BLE001 - the copy failed too: nothing of it to remove
        return


def prerender_report(bodies: dict[str, str],
                     reports_loaded: threading.Event) -> Callable[[TrialResult, Transcript], None]:
    """The hook that renders each trial's part of report.html into `bodies` as soon as the trial
    is recorded, beside the running agents: the run's end then renders only the rest. Only once
    the warm-up has loaded the report writers (`reports_loaded`): a trial never waits for that import,
    and one that ends before it is rendered from its file at the end."""
    def prerender(result: TrialResult, transcript: Transcript) -> None:
        if not reports_loaded.is_set():
            return
        from rubricgate.reports.html import prerender_body  # already loaded by the warm-up

        try:
            prerender_body(bodies, result, transcript)
        except Exception:  # noqa: BLE001 - a trial with no body held is rendered from its file at the
            return  # end, where a failure is reported as a report that could not be written (exit 2)

    return prerender


@dataclass(frozen=True)
class Workspaces:
    """What the run's workspaces are made of: the snapshot's files, where they live, and the
    case sources the trials place over it."""

    files: list[str]
    scratch: Scratch
    sources: list[str]


def sandbox_policy(options: RunOptions, loaded: Loaded, agents: dict[str, Agent],
                   scratch: Scratch | None = None) -> SandboxPolicy:
    """Decide isolation before any trial: bubblewrap, or copy-only said out loud. Exit 2 when
    bubblewrap is required and cannot start, or when the agent needs a file the sandbox hides."""
    cfg = loaded.config.agent
    try:
        isolation, reason = resolve_isolation(cfg.sandbox)
    except SandboxUnavailable as exc:
        raise GateInputError("rubricgate.yaml", "agent.sandbox", str(exc),
                             "install bubblewrap, or set agent.sandbox: none") from exc
    hidden = hidden_paths(options.repo, _reports_root(options, loaded), options.cache_dir)
    # The temp folder is covered, not hidden: a script the agent runs from there is shown again.
    temps = (scratch.shown, scratch.private) if scratch else ()
    covered = (*real_home(), *hidden_paths(Path(tempfile.gettempdir()), *temps))
    layers_by, layers_reason = (("unshare", "not sandboxed") if isolation != "bwrap" else
                                ("unshare", "--keep-workspaces keeps full copies") if options.keep_workspaces else
                                probe_layers(scratch.private if scratch else None))
    policy = SandboxPolicy(isolation=isolation, hidden=hidden, covered=covered,
                           network=cfg.sandbox_network == "shared", reason=reason,
                           layers=not layers_reason, layers_reason=layers_reason, layers_by=layers_by)
    if policy.enforced:
        for name, agent in agents.items():
            _check_agent_visible(agent, name, hidden)
    return policy


def _check_agent_visible(agent: Agent, name: str, hidden: tuple[Path, ...]) -> None:
    argv = list(getattr(agent, "template", None) or [])
    if not argv and hasattr(agent, "executable"):
        argv = [agent.executable()]
    bad = hidden_argument(argv, hidden)
    if bad:
        raise GateInputError("rubricgate.yaml", "agent.command" if name == "command" else "agent.name",
                             f"{bad} is inside the repository (or reports, cache), which the sandbox hides from the agent",
                             "install the program outside the repository, or refer to it as {workspace}/<path>")


def with_isolation(summary: Summary, policy: SandboxPolicy) -> Summary:
    """Record how agents were isolated; copy-only is a warning on the decision, never silent."""
    update: dict = {"isolation": policy.isolation, "isolation_reason": policy.reason}
    if not policy.enforced:
        warning = f"copy-only isolation: agents ran without a sandbox ({policy.reason})"
        update["decision"] = summary.decision.model_copy(
            update={"warnings": [warning, *summary.decision.warnings]})
    return summary.model_copy(update=update)


def _reports_root(options: RunOptions, loaded: Loaded) -> Path:
    return options.reports_dir or options.repo / loaded.config.reports


def _watch_exclude(options: RunOptions, loaded: Loaded) -> set[str]:
    """Repo paths the run itself writes to, when inside: the reports folder, the cache, and the
    temp folder (TMPDIR pointed into the repository: the run's workspaces and probes go there)."""
    out = set()
    for path in (_reports_root(options, loaded), options.cache_dir or options.repo / CACHE_DIR,
                 Path(tempfile.gettempdir())):
        try:
            out.add(path.resolve().relative_to(options.repo.resolve()).as_posix())
        except ValueError:
            continue
    return out


def start_run(options: RunOptions, loaded: Loaded, jobs: list[Job], agents: dict[str, Agent],
              policy: SandboxPolicy, tree: RunTree, exclude: set[str]) -> tuple[RunContext, RunState]:
    """Create the run folder and context, and record run_started. `exclude`: the repository
    paths the run writes to itself (`_watch_exclude`), which the tree checks skip. A run that
    cannot start (an unwritable reports folder) takes its snapshot `tree` with it."""
    try:
        return _start_run(options, loaded, jobs, agents, policy, tree, exclude)
    except BaseException:
        tree.remove()
        raise


def _start_run(options: RunOptions, loaded: Loaded, jobs: list[Job], agents: dict[str, Agent],
               policy: SandboxPolicy, tree: RunTree, exclude: set[str]) -> tuple[RunContext, RunState]:
    run_id = new_run_id() + ("-baseline" if options.kind == "baseline" else "")
    run_dir = _reports_root(options, loaded) / run_id
    run_dir.mkdir(parents=True)
    ctx = _context(options, loaded, run_dir, agents, policy, tree, exclude)
    state = RunState(run_id=run_id, started=datetime.now(UTC).isoformat(timespec="seconds"),
                     agent_versions={n: a.version() for n, a in agents.items()}, trials=options.trials,
                     kind=options.kind)
    ctx.agent_versions = state.agent_versions  # one --version per CLI per run, shared with the cache
    ctx.events.emit("run_started", run_id=run_id, total_trials=len(jobs), cases=len({j.case.id for j in jobs}),
                    case_trials={j.case.id: j.trial for j in jobs},  # last planned trial = count per case
                    agents=state.agent_versions,
                    workspaces=f"overlay (mounted by {policy.layers_by})" if policy.layers
                    else f"copy ({policy.layers_reason})",
                    private_folders=f"{tree.scratch.private} ({tree.scratch.reason})")
    return ctx, state


def write_run_reports(ctx: RunContext, loaded: Loaded, summary: Summary, repo: Path,
                      bodies: dict[str, str] | None = None) -> Summary:
    """Replay artifacts, HTML, comment.md, junit.xml, then summary.json last (reports/bundle.py).

    Returns the summary as finally decided: a report that could not be written makes it exit 2.
    """
    earlier = list(ctx.events.write_failures)  # a transcript or an event line during the run

    def completed(final: Summary) -> list:
        ctx.events.emit("run_completed", decision=final.decision.model_dump(mode="json"))
        ctx.events.close()  # a full disk may only show when the last line is flushed
        return ctx.events.write_failures[len(earlier):]

    from rubricgate.reports.bundle import finish_run_reports  # warmed during the trials

    return finish_run_reports(summary, ctx.run_dir, cases=loaded.cases, secrets=ctx.secrets, repo=repo,
                              earlier=earlier, before_summary=completed, bodies=bodies)


def _context(options: RunOptions, loaded: Loaded, run_dir: Path, agents: dict[str, Agent],
             policy: SandboxPolicy, tree: RunTree, exclude: set[str]) -> RunContext:
    cfg = loaded.config
    env = build_env(cfg.agent.env_allowlist, cfg.agent.secret_env)
    secrets = secret_values(env, cfg.agent.secret_env)
    events = EventLog(run_dir / "events.jsonl", options.listeners, secrets)
    ctx = RunContext(repo=options.repo, config=cfg, rubric=loaded.rubric, run_dir=run_dir, events=events,
                     agents=agents, tree=tree, sandbox=policy, env=env, secrets=secrets, exclude=exclude,
                     fingerprint=None if _all_sandboxed(policy, agents) else fingerprint_tree(options.repo, exclude),
                     keep_workspaces=options.keep_workspaces, cases=loaded.cases,
                     budget=Budget(options.max_cost), slots=AgentSlots(max(options.jobs, 1)),
                     cache_dir=options.cache_dir if options.cache else None)
    return ctx


def _all_sandboxed(policy: SandboxPolicy, agents: dict[str, Agent]) -> bool:
    return all(in_sandbox(policy, a) for a in agents.values())


def answer_key(options: RunOptions, loaded: Loaded) -> set[str]:
    """Repo paths no workspace may hold: the suite, baseline, config, reports, cache, and
    `suite.workspace_exclude`."""
    cfg, repo = loaded.config, options.repo.resolve()
    config_file = (options.config_path or options.repo / "rubricgate.yaml").resolve()
    paths = {cfg.suite.tasks, cfg.suite.fixtures, cfg.baseline, cfg.reports, CACHE_DIR, *cfg.suite.workspace_exclude}
    if repo in config_file.parents:
        paths.add(config_file.relative_to(repo).as_posix())
    return {p.strip("/") for p in paths if p.strip("/")}


def _with_cache_dir(options: RunOptions, configured: str | None) -> RunOptions:
    """Options with the cache folder resolved (the sandbox hides it even without --cache) and,
    under --cache, its signing key checked (or made) before any trial runs."""
    path = resolve_cache_dir(options.repo, configured, options.cache_dir)
    if options.cache:
        signing_key(path)
    return replace(options, cache_dir=path)
