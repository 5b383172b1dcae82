"""A run's start, up to its first trial: the agents, the sandbox decision, the snapshot every
workspace is cloned from, the repository's start digest, the run folder and its event log.

This is the run's fixed cost, so the independent parts overlap: git lists the tree while the
suite loads (runner/git_listing.py's GitListing, started by the pipeline), and the sandbox probes
and the snapshot copy run in processes of their own while this thread digests the repository
(`isolate_and_watch`). A run that cannot start removes whatever it had made.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from rubricgate.agents import Agent
from rubricgate.agents.base import runs_a_process, writes_nothing
from rubricgate.agents.builtin import check_can_review
from rubricgate.agents.endpoints import run_endpoints
from rubricgate.agents.preflight import preflight_agents
from rubricgate.agents.selection import build_agents
from rubricgate.errors import GateInputError
from rubricgate.isolation.admission import AgentSlots
from rubricgate.isolation.environment import build_env
from rubricgate.isolation.etc_folder import stage_etc
from rubricgate.isolation.guardian import Guardian, start_guardian, stop_guardian
from rubricgate.isolation.leftovers import sweep_in_background
from rubricgate.isolation.limits import Limits
from rubricgate.isolation.netaccess import NetworkAccess, NetworkUnavailable, network_access
from rubricgate.isolation.reaping import adopt_orphans, child_pids
from rubricgate.isolation.sandbox import (
    AgentFolderRefused,
    OverlayMount,
    SandboxPolicy,
    SandboxUnavailable,
    find_program,
    hidden_argument,
    hidden_paths,
    probe_layers,
    real_home,
    resolve_isolation,
    shown_folders,
)
from rubricgate.isolation.scratch import Scratch, choose_scratch
from rubricgate.models.results import Summary
from rubricgate.records.events import EventLog
from rubricgate.records.files import make_run_folder, new_run_id
from rubricgate.runner.cache import (
    CACHE_DIR,
    RUNS_DIR,
    notes_dir,
    ran_here,
    remember_run,
    remove_retired,
    resolve_cache_dir,
    signing_key,
)
from rubricgate.runner.cost import Budget
from rubricgate.runner.options import RunOptions
from rubricgate.runner.run_notes import (
    read_notes,
    restore_notes,
    retire_unsafe_cache,
    retire_unsafe_renders,
    with_marks_since,
)
from rubricgate.runner.run_secrets import refuse_secret_names, run_secrets
from rubricgate.runner.run_state import RunState
from rubricgate.runner.scheduler import Job, RunContext, in_sandbox, restore_interrupts
from rubricgate.runner.temp_room import no_room
from rubricgate.runner.treecheck import TreeGuard, fingerprint_tree, settle_own_bytecode
from rubricgate.runner.workspace import GitListing, RunTree, list_tree_sized
from rubricgate.suite.answer_key import answer_key_paths, config_rel_of
from rubricgate.suite.load import Loaded

AgentFactory = Callable[..., Agent]


@dataclass
class StartedRun:
    """A run ready for its first trial. As a context manager, its end waits for the snapshot's
    removal (started by `run_trials` once every agent is dead) and gives Ctrl-C back, unless the
    caller exits right after the run: then a late Ctrl-C cannot turn the written partial
    report's exit 2 into a death by signal."""

    ctx: RunContext
    state: RunState
    policy: SandboxPolicy
    guard: TreeGuard
    options: RunOptions
    cleanup: threading.Thread | None = None
    cache_retired: str = ""  # copy-only: how the cache folder was thrown away (retire_unsafe_cache)
    sweep: threading.Thread | None = None  # removing killed runs' left-overs (isolation/leftovers.py)
    notes: dict[str, bytes] = field(default_factory=dict)  # this user's run notes and marks before it (read_notes)

    def __enter__(self) -> StartedRun:
        return self

    def __exit__(self, *exc: object) -> None:
        for thread in (self.cleanup, self.sweep):
            if thread is not None:
                thread.join()
        stop_guardian()  # every agent is dead and the temp folders are gone
        if not self.options.exits_after:
            restore_interrupts(self.ctx.saved_handlers)

    def remove_snapshot(self) -> None:
        """Remove the run's temp folder on a thread of its own, while the reports are written;
        after a copy-only run, its cache folder too, moved out of use first (every agent is dead now)."""
        retired, rendered = None, list[Path]()
        if runs_unsandboxed(self.policy, self.ctx.agents):
            self.cache_retired, retired = retire_unsafe_cache(self.options.cache_dir)
            rendered, unmoved = retire_unsafe_renders(self.options.cache_dir)
            self.cache_retired = "; ".join(filter(None, (self.cache_retired, unmoved)))
            if retired is not None and self.options.cache_dir is not None:
                # The notes and marks from before its first agent, and this run's own note; no note
                # the folder gained meanwhile (its reviewer could have planted them), but its marks
                # (a planted one only refuses). Without them a plain rerun started afresh, and a
                # run continued meanwhile could be continued again (gating/continuation.py).
                own = {f"{RUNS_DIR}/{self.state.run_id}": b""} if ran_here(retired, self.state.run_id) else {}
                restore_notes(self.options.cache_dir, with_marks_since(self.notes | own, retired), retired)
        self.cleanup = threading.Thread(target=self._remove_temporary, args=([retired, *rendered],))
        self.cleanup.start()

    def _remove_temporary(self, retired: list[Path | None]) -> None:
        self.ctx.tree.remove(keep_trials=self.options.keep_workspaces)
        for folder in filter(None, retired):
            remove_retired(folder)

    @property
    def kept(self) -> Path | None:
        """Where --keep-workspaces left each trial's folder."""
        return self.ctx.tree.root if self.options.keep_workspaces else None


@dataclass(frozen=True)
class Workspaces:
    """What the run's workspaces are made of: the snapshot's files, where they live, and the
    case sources the trials place over it."""

    files: list[str]
    scratch: Scratch
    sources: list[str]


def start_run(options: RunOptions, loaded: Loaded, jobs: list[Job], listing: GitListing,
              agent_factory: AgentFactory) -> StartedRun:
    """Everything before the first trial: agents, isolation, the snapshot, the run folder."""
    agents = build_agents(jobs, loaded.config, options.agent, factory=agent_factory)
    if "builtin" in agents:
        check_can_review(options.repo, loaded.config)
    sweep = sweep_in_background()  # what killed runs left in /dev/shm and the temp folder
    known = child_pids()  # before the sandbox probes: their leftovers are this run's to reap
    settle_own_bytecode(options.repo)  # before the tree is listed and watched
    exclude = watch_exclude(options, loaded)
    files, size = list_tree_sized(options.repo, answer_key(options, loaded) | exclude, listing)
    workspaces = Workspaces(files, choose_scratch(size), case_sources(jobs))  # isolation/scratch.py
    policy, guard, tree = isolate_and_watch(options, loaded, agents, workspaces, exclude, known)
    unsandboxed = runs_unsandboxed(policy, agents)
    # Before any agent runs (the preflight's too): a copy-only reviewer could plant notes later.
    notes = read_notes(options.cache_dir) if unsandboxed else {}
    refuse_cases_named_by_secrets(loaded, jobs, policy, agents, tree)
    preflight(loaded, agents, policy, workspaces.scratch, tree)
    ctx, state = open_run_folder(options, loaded, jobs, agents, policy, tree, exclude)
    if unsandboxed:  # copy-only agents die with the harness, however it ends
        guard_folders(start_guardian(), tree, options.keep_workspaces)
    return StartedRun(ctx, state, policy, guard, options, sweep=sweep, notes=notes)


def guard_folders(guardian: Guardian, tree: RunTree, keep: bool) -> None:
    """The run's temp folders go with its agents if the harness is killed (not when kept)."""
    if not keep:
        for folder in dict.fromkeys((tree.root, tree.store)):
            guardian.remove_on_death(folder)


def refuse_cases_named_by_secrets(loaded: Loaded, jobs: list[Job], policy: SandboxPolicy, agents: dict[str, Agent],
                                  tree: RunTree) -> None:
    """No case, trial file or baseline entry is named by a secret of the run (runner/run_secrets.py);
    a run that would be ends here (exit 2) and takes its snapshot with it."""
    gate = loaded.config.gate
    most = gate.max_trials_per_case if gate.method == "statistical" else 0  # what adaptive rounds may add
    planned: dict[str, int] = {}  # the last trial of each case
    for job in jobs:
        planned[job.case.id] = max(planned.get(job.case.id, 0), job.trial, most)
    baseline_ids = loaded.baseline.cases if loaded.baseline is not None else {}
    try:
        refuse_secret_names(loaded.cases, planned, baseline_ids, loaded.config.baseline, loaded.config,
                            runs_unsandboxed(policy, agents))
    except BaseException:
        tree.remove()
        raise


def preflight(loaded: Loaded, agents: dict[str, Agent], policy: SandboxPolicy, scratch: Scratch, tree: RunTree) -> None:
    """Each agent CLI answers one minimal request in the trials' sandbox and environment, or the
    run ends here (exit 2, the variable to set) and takes its snapshot with it."""
    cfg = loaded.config.agent
    if not cfg.preflight:
        return
    try:
        preflight_agents(agents, build_env(cfg.env_allowlist, cfg.secret_env), policy, scratch.shown,
                         cfg.preflight_timeout_s)
    except BaseException:
        tree.remove()
        raise


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
            guard = (TreeGuard.unwatched(options.repo, known) if unwatched(agents)
                     else TreeGuard.start(options.repo, exclude, adopt=False, known=known))
            policy = probing.result()
        except BaseException as exc:
            _discard_tree(copying)
            if (full := no_room(workspaces.scratch.private, exc)) is not None:  # the overlay probe writes there
                raise full from exc
            raise
    tree = copying.result()
    if not all_sandboxed(policy, agents):
        adopt_orphans()
    return with_staged_etc(policy, tree, agents), guard, tree


def with_staged_etc(policy: SandboxPolicy, tree: RunTree, agents: dict[str, Agent]) -> SandboxPolicy:
    """The policy showing the run's sandboxes /etc as one folder staged in the run's private
    temp folder (isolation/etc_folder.py: one bind, not one per file), where agents run in one."""
    if not policy.enforced or not any(map(runs_a_process, agents.values())):
        return policy
    return replace(policy, etc=stage_etc(tree.staging))


def case_sources(jobs: list[Job]) -> list[str]:
    """The suite files the planned cases place in their workspaces (fixture folders, say)."""
    return sorted({source for job in jobs for source in job.case.workspace_paths.values()})


def _discard_tree(copying) -> None:
    # The run ends before its first trial (bwrap required and missing, say): its snapshot goes.
    try:
        copying.result().remove()
    except Exception:  # noqa: BLE001 - the copy failed too: nothing of it to remove
        return


def sandbox_policy(options: RunOptions, loaded: Loaded, agents: dict[str, Agent],
                   scratch: Scratch | None = None) -> SandboxPolicy:
    """Decide isolation before any trial: bubblewrap, or copy-only said out loud. Exit 2 when
    bubblewrap is required and cannot start, or when the agent needs a file the sandbox hides."""
    cfg = loaded.config.agent
    try:
        isolation, reason = resolve_isolation(cfg.sandbox)
    except SandboxUnavailable as exc:
        if cfg.sandbox == "auto" and not any(map(runs_a_process, agents.values())):
            isolation, reason = "copy-only", "no agent process to isolate (in-process reviewer)"
        else:
            raise GateInputError("rubricgate.yaml", "agent.sandbox", str(exc),
                                 "install bubblewrap, or set agent.sandbox: none") from exc
    hidden = hidden_paths(options.repo, reports_root(options, loaded), options.cache_dir)
    # The temp folders: no agent folder may hold them (a script the agent runs from there is shown).
    temps = (scratch.shown, scratch.private) if scratch else ()
    covered = hidden_paths(Path(tempfile.gettempdir()), *temps)
    layers_by, layers_reason = _layers(options, isolation, agents, scratch)
    policy = SandboxPolicy(isolation=isolation, hidden=hidden, covered=covered, home=real_home(),
                           network=network_decision(loaded, agents, isolation), reason=reason,
                           layers=not layers_reason, layers_reason=layers_reason, layers_by=layers_by,
                           limits=Limits(**cfg.limits.model_dump()))
    if policy.enforced:
        for name, agent in agents.items():
            _check_agent_visible(agent, name, policy)
    return policy


def _layers(options: RunOptions, isolation: str, agents: dict[str, Agent],
            scratch: Scratch | None) -> tuple[OverlayMount, str]:
    """How overlay workspaces are mounted, or why they are not (then full copies): probed only
    for a sandbox that will run an agent process (the builtin reads its layers unmounted)."""
    if isolation != "bwrap":
        return "unshare", "not sandboxed"
    if not any(map(runs_a_process, agents.values())):
        return "unshare", "no agent process"
    if options.keep_workspaces:
        return "unshare", "--keep-workspaces keeps full copies"
    return probe_layers(scratch.private if scratch else None)


def network_decision(loaded: Loaded, agents: dict[str, Agent], isolation: str) -> NetworkAccess:
    """What the sandbox's network lets through (isolation/netaccess.py): the run's CLIs' model
    endpoints and agent.network_allow under the allowlist; exit 2 with the fix when the
    allowlist cannot work here (socat missing, a proxy URL it cannot chain through)."""
    cfg = loaded.config.agent
    if isolation != "bwrap":
        return NetworkAccess("shared")  # copy-only: no sandbox, the host's network (said in its warning)
    env = build_env(cfg.env_allowlist, cfg.secret_env)
    try:
        return network_access(cfg.sandbox_network, run_endpoints([(name, cfg.model) for name in agents], env,
                                                                 cfg.network_allow, cfg.format), env)
    except NetworkUnavailable as exc:
        raise GateInputError("rubricgate.yaml", "agent.sandbox_network", str(exc), exc.fix) from None


def _check_agent_visible(agent: Agent, name: str, policy: SandboxPolicy) -> None:
    argv = list(getattr(agent, "template", None) or [])
    if not argv and hasattr(agent, "executable"):
        argv = [agent.executable()]
    field = "agent.command" if name == "command" else "agent.name"
    bad = hidden_argument(argv, policy.hidden)
    if bad:
        raise GateInputError("rubricgate.yaml", field,
                             f"{bad} is inside the repository (or reports, cache), "
                             "which the sandbox hides from the agent",
                             "install the program outside the repository, or refer to it as {workspace}/<path>")
    program = find_program(argv[0], None) if argv else None
    try:
        shown_folders([program or (argv[0] if argv else ""), *argv[1:]], policy)
    except AgentFolderRefused as exc:
        what, _, fix = str(exc).partition("; ")
        raise GateInputError("rubricgate.yaml", field, what, fix or "install the CLI in a folder of its own") from None


def with_isolation(summary: Summary, policy: SandboxPolicy, cache_retired: str = "",
                   scrub_notes: list[str] | None = None) -> Summary:
    """Record how agents were isolated; copy-only is a warning on the decision, never silent,
    and so is a sandbox sharing the host's network; so is a scrub that changed what a trial's
    written result shows (runner/written.py)."""
    update: dict = {"isolation": policy.isolation, "isolation_reason": policy.reason,
                    "sandbox_network": policy.network.mode if policy.enforced else None}
    warnings = list(scrub_notes or [])
    if not policy.enforced:
        warnings.insert(0, f"copy-only isolation: agents ran without a sandbox ({policy.reason}); the cache was not "
                           "used and the secret-looking values of the parent environment were scrubbed from the reports"
                        + (f"; {cache_retired}" if cache_retired else ""))
    elif policy.network.mode == "shared":
        warnings.insert(0, SHARED_NETWORK_WARNING)
    if warnings:
        update["decision"] = summary.decision.model_copy(update={"warnings": [*warnings, *summary.decision.warnings]})
    return summary.model_copy(update=update)


SHARED_NETWORK_WARNING = ("shared network: the sandboxed reviewer had the host's network (agent.sandbox_network: "
                          "shared), so it could reach every service on the host's loopback and its abstract sockets, "
                          "a served viewer's answer key among them; the default, allowlist, lets it reach only its "
                          "model endpoints")


def reports_root(options: RunOptions, loaded: Loaded) -> Path:
    """The folder run folders go in: --reports-dir, else the config's `reports`."""
    return options.reports_dir or options.repo / loaded.config.reports


def watch_exclude(options: RunOptions, loaded: Loaded) -> set[str]:
    """Repo paths the run itself writes to, when inside: the reports folder, the cache, and the
    temp folder (TMPDIR pointed into the repository: the run's workspaces and probes go there)."""
    out = set()
    for path in (reports_root(options, loaded), options.cache_dir or options.repo / CACHE_DIR,
                 Path(tempfile.gettempdir())):
        try:
            out.add(path.resolve().relative_to(options.repo.resolve()).as_posix())
        except ValueError:
            continue
    return out


def open_run_folder(options: RunOptions, loaded: Loaded, jobs: list[Job], agents: dict[str, Agent],
                    policy: SandboxPolicy, tree: RunTree, exclude: set[str]) -> tuple[RunContext, RunState]:
    """Create the run folder and context, and record run_started. `exclude`: the repository
    paths the run writes to itself (`watch_exclude`), which the tree checks skip. A run that
    cannot start (an unwritable reports folder) takes its snapshot `tree` with it."""
    try:
        return _open_run_folder(options, loaded, jobs, agents, policy, tree, exclude)
    except BaseException:
        tree.remove()
        raise


def _open_run_folder(options: RunOptions, loaded: Loaded, jobs: list[Job], agents: dict[str, Agent],
                     policy: SandboxPolicy, tree: RunTree, exclude: set[str]) -> tuple[RunContext, RunState]:
    run_id = new_run_id() + ("" if options.kind == "run" else f"-{options.kind}")
    run_dir = make_run_folder(reports_root(options, loaded), run_id)
    remember_run(notes_dir(options.repo, loaded.config.cache_dir), run_id)
    ctx = _context(options, loaded, run_dir, agents, policy, tree, exclude)
    state = RunState(run_id=run_id, started=datetime.now(UTC).isoformat(timespec="milliseconds"),
                     agent_versions={n: a.version() for n, a in agents.items()}, trials=options.trials,
                     kind=options.kind)
    ctx.agent_versions = state.agent_versions  # one --version per CLI per run, shared with the cache
    ctx.events.emit("run_started", run_id=run_id, total_trials=len(jobs), cases=len({j.case.id for j in jobs}),
                    case_trials={j.case.id: j.trial for j in jobs},  # last planned trial = count per case
                    agents=state.agent_versions, jobs=options.jobs,
                    workspaces=f"overlay (mounted by {policy.layers_by})" if policy.layers
                    else f"copy ({policy.layers_reason})",
                    private_folders=f"{tree.scratch.private} ({tree.scratch.reason})")
    return ctx, state


def _context(options: RunOptions, loaded: Loaded, run_dir: Path, agents: dict[str, Agent],
             policy: SandboxPolicy, tree: RunTree, exclude: set[str]) -> RunContext:
    cfg = loaded.config
    env, secrets = run_secrets(cfg, runs_unsandboxed(policy, agents))
    events = EventLog(run_dir / "events.jsonl", options.listeners, secrets)
    return RunContext(repo=options.repo, config=cfg, rubric=loaded.rubric, run_dir=run_dir, events=events,
                      agents=agents, tree=tree, sandbox=policy, env=env, secrets=secrets, exclude=exclude,
                      fingerprint=None if all_sandboxed(policy, agents) or unwatched(agents)
                      else fingerprint_tree(options.repo, exclude),
                      keep_workspaces=options.keep_workspaces, cases=loaded.cases,
                      budget=Budget(options.max_cost), slots=AgentSlots(max(options.jobs or 1, 1)),
                      # Copy-only, the reviewer could read the cache's signing key and forge entries.
                      cache_dir=options.cache_dir if options.cache and not runs_unsandboxed(policy, agents) else None)


def unwatched(agents: dict[str, Agent]) -> bool:
    """Is the repository left unwatched (no digests, no check after each trial)? Only when every
    agent writes nothing (agents/base.py): the watch is for a reviewer, and there is none."""
    return all(map(writes_nothing, agents.values()))


def runs_unsandboxed(policy: SandboxPolicy, agents: dict[str, Agent]) -> bool:
    """Copy-only with an agent that runs a process (builtin and replay run none)."""
    return not policy.enforced and any(map(runs_a_process, agents.values()))


def all_sandboxed(policy: SandboxPolicy, agents: dict[str, Agent]) -> bool:
    """Does bubblewrap hold every agent of the run (none runs copy-only)?"""
    return all(in_sandbox(policy, a) for a in agents.values())


def answer_key(options: RunOptions, loaded: Loaded) -> set[str]:
    """Repo paths no workspace may hold: the suite, baseline, config, reports, cache, and
    `suite.workspace_exclude` (suite/answer_key.py)."""
    return answer_key_paths(loaded.config, config_rel_of(options.repo, options.config_path), options.repo)


def with_cache_dir(options: RunOptions, configured: str | None) -> RunOptions:
    """Options with the cache folder resolved (the sandbox hides it even without --cache) and,
    under --cache, its signing key checked (or made) before any trial runs."""
    path = resolve_cache_dir(options.repo, configured, options.cache_dir)
    if options.cache:
        signing_key(path)
    return replace(options, cache_dir=path)
