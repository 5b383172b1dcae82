"""Runs (case, trial) jobs: workspace -> agent -> transcript -> grades. Failures are data."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

from rubricgate.agents import Agent, AgentRequest
from rubricgate.agents.base import runs_a_process
from rubricgate.graders import judge
from rubricgate.graders.failures import EXTRACTOR_ERROR, outcome_fields
from rubricgate.isolation.admission import CANCEL, AgentSlots
from rubricgate.isolation.sandbox import SandboxPolicy
from rubricgate.models.config import Config
from rubricgate.models.results import CacheRejection, CaseSpec, Grade, TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.records.events import EventLog
from rubricgate.records.files import transcript_name, write_transcript
from rubricgate.runner.cache import KeyParts, Lookup, RunDigests, key_parts, load_cached, run_digests, store
from rubricgate.runner.cost import Budget, not_run_trial
from rubricgate.runner.retry import RetryPolicy, run_with_retries
from rubricgate.runner.temp_room import no_workspace
from rubricgate.runner.treecheck import TreeDigest, fingerprint_tree, tree_changes
from rubricgate.runner.workspace import RunTree
from rubricgate.runner.written import written
from rubricgate.secrets import scrub_model
from rubricgate.suite.rubric import RubricSpec


@dataclass
class RunContext:
    """What every trial of one run shares."""

    repo: Path
    config: Config
    rubric: RubricSpec
    run_dir: Path
    events: EventLog
    agents: dict[str, Agent]
    tree: RunTree  # the per-run snapshot every workspace is cloned from
    sandbox: SandboxPolicy
    env: dict[str, str]
    secrets: list[str]
    exclude: set[str]  # repo paths the tree check ignores (reports, cache)
    fingerprint: TreeDigest | None = None  # copy-only: the repo between trials (see treecheck)
    keep_workspaces: bool = False
    cases: list[CaseSpec] = field(default_factory=list)
    results: list[TrialResult] = field(default_factory=list)  # grows as trials finish
    tree_violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    budget: Budget = field(default_factory=lambda: Budget(None))  # --max-cost
    cache_dir: Path | None = None  # --cache: reuse transcripts stored here
    not_run: int = 0  # trials the budget refused
    agent_versions: dict[str, str | None] = field(default_factory=dict)  # asked once, at run start
    digests: RunDigests | None = None  # cache key parts shared by every trial, hashed once
    saved_handlers: dict = field(default_factory=dict)  # signal handlers to restore after an interrupt
    cache_rejected: list[CacheRejection] = field(default_factory=list)  # forged entries, re-run
    scrub_notes: list[str] = field(default_factory=list)  # scrubs that changed a grade or an id (written.py)
    slots: AgentSlots | None = None  # --jobs: agents running at once (isolation/admission.py)
    # Called in the trial's thread once its result is recorded (the pipeline renders the trial's
    # part of the report there, beside the running agents).
    on_graded: Callable[[TrialResult, Transcript], None] | None = None


# A trial that wrote to the original repository: every grade fails with this reason, the paths after it.
TREE_CHANGED = "the original repository changed during this trial: "


@dataclass(frozen=True)
class Job:
    case: CaseSpec
    trial: int
    agent: str


def run_jobs(ctx: RunContext, jobs: list[Job], workers: int = 1) -> list[TrialResult]:
    """Run every job with at most `workers` agents at once; results also accumulate in
    ctx.results, so an interrupted run still knows what finished.

    There are more trial threads than agent slots: while `workers` agents run, other trials
    build their workspace and sandbox and wait at its gate, and finished ones are graded
    (isolation/admission.py); see `runs_ahead` for when there are none ahead.

    The main thread only waits, so Ctrl-C (or SIGTERM) lands here, never inside a trial: it
    stops new trials, wakes and kills every running agent, waits for their trials to wind down
    (a workspace is removed only once its agent is dead), then re-raises. Further Ctrl-C while
    winding down are absorbed: no traceback, no leftover.
    """
    workers = max(workers, 1)
    if ctx.slots is None or ctx.slots.size != workers:
        ctx.slots = AgentSlots(workers)
    threads = trial_threads(workers, ahead=runs_ahead(ctx))
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="trial")
    futures: list = []
    try:  # from the first submission on: an interrupt must never leave a trial running unawaited
        futures.extend(pool.submit(run_trial, ctx, job) for job in jobs[:workers])
        _first_wave_out(ctx.slots, futures)
        _feed(pool, ctx, jobs[workers:], futures, room=2 * threads)
        wait(futures)
    except KeyboardInterrupt:
        CANCEL.trip()
        ctx.saved_handlers = ignore_interrupts()  # the run is ending; more Ctrl-C change nothing
        _wind_down(pool, futures)
        raise
    pool.shutdown()
    for future in futures:
        future.result()  # an internal error in the harness itself surfaces here
    order = {(j.case.id, j.trial): i for i, j in enumerate(jobs)}
    return sorted(ctx.results, key=lambda r: order[(r.case_id, r.trial)])


def _feed(pool: ThreadPoolExecutor, ctx: RunContext, jobs: list[Job], futures: list, room: int) -> None:
    """Submit the jobs with at most `room` of them queued or running, each trial thread with
    one waiting behind it. A 2,000-trial run submitted at once held 2,000 futures (a lock and
    its queues each, ~1.2 KB) to its end. Finished futures leave `futures`, except one that
    raised: an internal error in the harness surfaces when the run ends."""
    queued = threading.BoundedSemaphore(room)
    for job in jobs:
        queued.acquire()  # the main thread waits here or in `wait`: Ctrl-C lands in either
        future = pool.submit(run_trial, ctx, job)
        future.add_done_callback(lambda _: queued.release())
        futures.append(future)
        if len(futures) >= 2 * room:
            futures[:] = [f for f in futures if not f.done() or (not f.cancelled() and f.exception())]


def _first_wave_out(slots: AgentSlots, first: list) -> None:
    """Wait until the first agents are all out (or their trials ended without one: cached,
    refused). Only then are the trials ahead built: built together with the first ones they
    would compete with them for the CPU and delay the start of the whole run."""
    if not first:
        return

    def done(_future) -> None:
        if all(f.done() for f in first):  # the state is set before callbacks run
            slots.filled.set()

    for future in first:
        future.add_done_callback(done)
    slots.filled.wait()


def trial_threads(workers: int, ahead: bool = True) -> int:
    """Trials in progress at once for `workers` agent slots: as many again (plus one) prepare
    or grade beside the running ones when trials may run ahead."""
    return 2 * workers + 1 if ahead else workers


def runs_ahead(ctx: RunContext) -> bool:
    """May trials prepare and grade beside the running agents? Not under a budget (a trial
    waiting at its gate when the budget runs out would still start), not when trials are
    checked against the repository one by one (an agent outside the sandbox: the check after
    a trial must not see the next agent's writes), and not when every agent runs in this
    process (the builtin, replay): there is no sandbox to build ahead, and more threads would
    only take turns at the interpreter (and finish in bursts: `--jobs 1` is one trial at a time)."""
    return (ctx.budget.max_usd is None and ctx.fingerprint is None
            and any(map(runs_a_process, ctx.agents.values())))


def ignore_interrupts() -> dict:
    """Ignore SIGINT / SIGTERM (main thread only); returns the handlers to restore."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}


def restore_interrupts(handlers: dict) -> None:
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def _wind_down(pool: ThreadPoolExecutor, futures: list) -> None:
    # A trial submitted as the interrupt landed may be missing from `futures`: shutdown (which
    # joins every trial thread, past the queued work it cancels) waits for it all the same.
    for future in futures:
        future.cancel()
    while True:
        try:
            wait(futures)
            pool.shutdown()
            return
        except KeyboardInterrupt:  # a second Ctrl-C: keep winding down, quietly
            CANCEL.trip()


def run_trial(ctx: RunContext, job: Job) -> TrialResult | None:
    """One trial in its own throwaway workspace; in copy-only mode the repository is checked
    afterwards (with bubblewrap the agent cannot see it at all)."""
    if CANCEL.event.is_set():
        return None
    case = job.case
    if job.trial == 1:
        ctx.events.emit("case_started", case_id=case.id, trials=case.trials, agent=job.agent)
    if not ctx.budget.try_start():  # fail closed: once the budget is spent no trial starts
        return _refused(ctx, job)
    transcript, cached, ws_root = _cached_or_run(ctx, job)
    if CANCEL.event.is_set() and not cached:
        return None  # killed by the interrupt: not a result of the reviewer
    ctx.budget.record(transcript.usage.cost_usd, cached)
    result, transcript = grade(ctx, case, job.trial, transcript, cached)
    if not cached and not sandboxed(ctx, job):
        result = _check_tree(ctx, result)
    with ctx.lock:
        ctx.results.append(result)
    ctx.events.emit("trial_result", **_event_fields(result, ws_root if ctx.keep_workspaces else None))
    if ctx.on_graded is not None:
        ctx.on_graded(result, transcript)
    return result


def _cached_or_run(ctx: RunContext, job: Job) -> tuple[Transcript, bool, Path | None]:
    """(transcript, from cache?, workspace root): a cache hit needs no workspace and no agent."""
    cache_dir = ctx.cache_dir
    parts = _cache_parts(ctx, job) if cache_dir is not None else None
    lookup = load_cached(cache_dir, parts) if cache_dir is not None and parts is not None else Lookup()
    if lookup.transcript is not None:
        return lookup.transcript, True, None
    if lookup.rejected:  # a forged or damaged entry: never used, always reported, trial re-run
        _reject(ctx, job, lookup.rejected)
    case = job.case
    if ctx.slots:
        ctx.slots.wait_out_handover()  # once per trial, before its workspace and sandbox
    # The launch turn ends where the agent is launched (isolation/process.py), or here at the latest.
    with ctx.slots.launch_turn() if ctx.slots else contextlib.nullcontext():
        try:
            ws = ctx.tree.workspace(case.files, case.workspace_paths,
                                    (ctx.config.reviewer.changed_files, case.workspace_review or case.review),
                                    keep=ctx.keep_workspaces, layered=sandboxed(ctx, job) and ctx.sandbox.layers,
                                    read_in_process=not runs_a_process(ctx.agents[job.agent]), removed=case.removed)
        except OSError as exc:  # a full temp folder: errored, not an internal error ending the run
            return no_workspace(job.agent, (ctx.tree.root.parent, ctx.tree.store.parent), exc), False, None
        try:
            transcript = _run_agent(ctx, job, _request(ctx, job, ws))
        finally:
            ws.remove()  # run_process returns only once every process of the agent is dead
    if cache_dir is not None and parts is not None and not CANCEL.event.is_set():
        store(cache_dir, parts, scrub_model(transcript, ctx.secrets))  # written: scrubbed
    return transcript, False, ws.root


def _reject(ctx: RunContext, job: Job, reason: str) -> None:
    rejection = CacheRejection(case_id=job.case.id, trial=job.trial, reason=reason)
    with ctx.lock:
        ctx.cache_rejected.append(rejection)
    ctx.events.emit("cache_rejected", **rejection.model_dump(mode="json"))


def _cache_parts(ctx: RunContext, job: Job) -> KeyParts:
    with ctx.lock:
        if ctx.digests is None:
            ctx.digests = run_digests(ctx.repo, ctx.config, agent_programs(ctx.agents), ctx.env.get("PATH"))
    return key_parts(ctx.repo, ctx.config, job.case, ctx.config.agent, agent_name=job.agent,
                     agent_version=ctx.agent_versions.get(job.agent), model=ctx.config.agent.model, trial=job.trial,
                     env=ctx.env, digests=ctx.digests)


def agent_programs(agents: dict[str, Agent]) -> dict[str, list[str]]:
    """The argv each agent starts (its command template, or its CLI), for the cache key;
    agents that run no process (builtin, replay) have none."""
    out = {}
    for name, agent in agents.items():
        argv = list(getattr(agent, "template", None) or [])
        executable = getattr(agent, "executable", None)  # CLI adapters; builtin and replay have none
        out[name] = argv or ([executable()] if executable is not None else [])
    return out


def _refused(ctx: RunContext, job: Job) -> TrialResult:
    result = not_run_trial(job.case.id, job.trial, ctx.budget.reason, ctx.config.graded_dimensions())
    with ctx.lock:
        ctx.not_run += 1
        ctx.results.append(result)
    ctx.events.emit("trial_result", **_event_fields(result, None))
    return result


def _request(ctx: RunContext, job: Job, ws) -> AgentRequest:
    cfg, root = ctx.config, ws.root
    sandbox = replace(ctx.sandbox, overlay=ws.overlay) if ws.overlay else ctx.sandbox
    return AgentRequest(
        case_id=job.case.id, trial=job.trial, workspace=root, prompt_file=root / cfg.reviewer.prompt,
        prompt_source=ws.source(cfg.reviewer.prompt),
        rubric_file=root / cfg.reviewer.rubric, changed_files_file=root / cfg.reviewer.changed_files,
        scratch=ws.scratch, scratch_view=ws.scratch_view, private=ws.private, allowed_tools=_allowed(job.case),
        max_steps=_max_steps(job.case), timeout_s=cfg.agent.timeout_s, idle_timeout_s=cfg.agent.idle_timeout_s,
        output_cap_bytes=cfg.agent.output_cap_bytes, env=dict(ctx.env), model=cfg.agent.model,
        extra_args=list(cfg.agent.extra_args), sandbox=sandbox, slots=ctx.slots, vocabulary=ctx.rubric.vocabulary,
        layers=ws.layers)


def _allowed(case: CaseSpec) -> list[str] | None:
    """The tools the agent is offered: the case's tool-use rubric (none set: no allowlist)."""
    return case.rubric.tool_use.allowed if case.rubric.tool_use else None


def _max_steps(case: CaseSpec) -> int | None:
    """The turn limit handed to the agent: the case's trajectory rubric (none set: no limit)."""
    return case.rubric.trajectory.max_steps if case.rubric.trajectory else None


def _run_agent(ctx: RunContext, job: Job, request: AgentRequest) -> Transcript:
    # Infrastructure failures are retried with backoff (runner/retry.py); every attempt is recorded.
    return run_with_retries(lambda: _run_once(ctx, job, request), RetryPolicy.from_config(ctx.config.agent),
                            sleep=CANCEL.event.wait, stop=CANCEL.event.is_set,  # Ctrl-C ends the backoff too
                            before_retry=lambda: request.last_message_file.unlink(missing_ok=True))


def _run_once(ctx: RunContext, job: Job, request: AgentRequest) -> Transcript:
    started = time.monotonic()
    agent = ctx.agents[job.agent]
    # A process agent takes its slot in run_process (after its sandbox is built); one that runs
    # in this process (builtin, replay) takes it here.
    slots = None if runs_a_process(agent) else ctx.slots
    if slots is not None and not slots.acquire():
        return Transcript(agent=job.agent, termination="crashed", exit_code=None,
                          error="interrupted: the run was stopped", failure="harness",
                          evidence="the run was interrupted before this trial started")
    try:
        return agent.run(request)  # as the agent gave it: graded so, scrubbed where written
    except Exception as exc:  # an adapter bug must become a graded ERROR, not abort the run
        return Transcript(agent=job.agent, termination="crashed", exit_code=None, failure="harness",
                          duration_s=time.monotonic() - started, error=f"adapter raised {type(exc).__name__}: {exc}",
                          evidence="rubricgate's adapter raised while running or parsing the agent")
    finally:
        if slots is not None:
            slots.release()


def grade(ctx: RunContext, case: CaseSpec, trial: int, transcript: Transcript,
          cached: bool = False) -> tuple[TrialResult, Transcript]:
    """Read the verdict and grade the run's dimensions on the transcript as the agent gave it;
    store it scrubbed. The result and transcript as written (runner/written.py)."""
    parsed, grades = judge(case, transcript, ctx.rubric, ctx.config)
    # Made once, its transcript's path included: a 2,000-case run holds every result to its end.
    rel = transcript_name(case.id, trial)
    out = written(case, trial_result(case.id, trial, transcript, parsed, grades, rel, cached), transcript,
                  ctx.secrets, ctx.rubric, ctx.config)
    if out.note:
        with ctx.lock:
            ctx.scrub_notes.append(out.note)
        ctx.events.emit("scrub_changed", case_id=case.id, trial=trial, note=out.note)
    try:  # no case id or trial file name holds a secret (runner/run_secrets.py)
        write_transcript(ctx.run_dir, case.id, trial, out.transcript, ctx.secrets)
    except OSError as exc:  # a full disk is recorded and makes the run exit 2, not a crash
        ctx.events.failed(ctx.run_dir / rel, exc)
        return out.result.model_copy(update={"transcript": ""}), out.transcript
    return out.result, out.transcript


def trial_result(case_id, trial, transcript, parsed, grades, rel, cached=False) -> TrialResult:
    """Assemble the stored result of one graded trial."""
    return TrialResult(cached=cached,
        case_id=case_id, trial=trial, outcome=parsed.effective_tier if parsed.status == "ok" else "ERROR",
        reported_tier=parsed.reported_tier, effective_tier=parsed.effective_tier, escalated=parsed.escalated,
        grades=grades, steps=transcript.steps, tool_calls=[c.name for c in transcript.tool_calls],
        verdict_warnings=parsed.warnings + ([parsed.error] if parsed.error else []),
        termination=transcript.termination, exit_code=transcript.exit_code, duration_s=round(transcript.duration_s, 3),
        input_tokens=transcript.usage.input_tokens, output_tokens=transcript.usage.output_tokens,
        cost_usd=transcript.usage.cost_usd, model=transcript.model, transcript=rel,
        findings=parsed.verdict.findings if parsed.verdict else [],
        **outcome_fields(transcript, parsed.status == "ok", parsed.status == EXTRACTOR_ERROR))


def in_sandbox(policy: SandboxPolicy, agent: Agent) -> bool:
    """Does this agent run inside bubblewrap? Only process-running adapters do; in-process ones
    (builtin, replay) read their workspace directly."""
    return policy.enforced and runs_a_process(agent)


def sandboxed(ctx: RunContext, job: Job) -> bool:
    """Did this trial's agent run inside bubblewrap?"""
    return in_sandbox(ctx.sandbox, ctx.agents[job.agent])


def _check_tree(ctx: RunContext, result: TrialResult) -> TrialResult:
    # Outside the sandbox a reviewer that writes to the original repository is a failed trial
    # and a broken run. Inside it the repository is invisible; the run-end digest is the backstop.
    if ctx.fingerprint is None:
        return result
    now = fingerprint_tree(ctx.repo, ctx.exclude)
    with ctx.lock:
        new = [c for c in tree_changes(ctx.fingerprint, now) if c not in ctx.tree_violations]
        ctx.tree_violations.extend(new)
    if not new:
        return result
    reason = f"{TREE_CHANGED}{', '.join(new[:5])}"
    failed = {d: Grade(passed=False, category="agent_error", reason=reason) for d in result.grades}
    return result.model_copy(update={"grades": failed, "outcome": "ERROR"})


def _event_fields(result: TrialResult, workspace: Path | None) -> dict:
    fields = result.model_dump(mode="json", include={"case_id", "trial", "outcome", "steps", "duration_s", "cost_usd"})
    fields["grades"] = {d: g.model_dump(mode="json") for d, g in result.grades.items()}
    if workspace is not None:
        fields["workspace"] = str(workspace)
    return fields
