"""The run step: every planned trial, each graded as it ends (runner/scheduler.py), and what
the run's end needs from them.

`run_trials` is the one call the pipeline makes for it; a policy that decides how many trials
to run (rounds until a rate is settled, say) belongs here, around `run_jobs`.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rubricgate.isolation.admission import CANCEL
from rubricgate.isolation.reaping import sweep_orphans
from rubricgate.models.results import TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.runner.scheduler import Job, run_jobs
from rubricgate.runner.startup import StartedRun

OnGraded = Callable[[TrialResult, Transcript], None]


class Rounds(Protocol):
    """A policy that decides how many trials to run (gating/adaptive.py's AdaptiveRun): the
    runner asks it for the next batch, tells it every result, and asks whether to stop."""

    def next_batch(self) -> list[tuple[str, int, bool]]: ...  # (case id, trial number, confirmation)

    def record(self, case: str, outcome: Mapping[str, bool] | None, confirmation: bool,
               errored: bool = False) -> None: ...

    def look(self) -> Any: ...  # has .stop (bool) and .lines() for the progress log

    def plan_lines(self) -> list[str]: ...

    def most_trials(self) -> int: ...  # the design's trials if no look stops it (confirmations aside)

    def trials_taken_up(self) -> int: ...  # of those, run by the run this one continues

    def trials_continued(self) -> int: ...  # every trial of the run this one continues, confirmations too


def run_trials(run: StartedRun, jobs: list[Job], workers: int = 1,
               on_graded: OnGraded | None = None, rounds: Rounds | None = None) -> list[TrialResult]:
    """Run `jobs` with at most `workers` agents at once and return their results in plan order.
    Ctrl-C keeps what finished (the run's state says it was interrupted): a partial, readable
    report. `on_graded` is called in each trial's thread once its result is recorded. With
    `rounds`, the trials run batch by batch as the policy asks, `jobs` naming each case's spec
    and agent, until it says stop (the jobs that ran go on the run's state)."""
    ctx = run.ctx
    ctx.on_graded = on_graded
    CANCEL.reset()
    # Modules, models and the loaded suite live until exit: the collector need not walk them
    # again on every full collection during the trials.
    gc.freeze()
    try:
        results = run_jobs(ctx, jobs, workers) if rounds is None else _run_rounds(run, jobs, workers, rounds)
    except KeyboardInterrupt:
        results, run.state.interrupted = list(ctx.results), True
    finally:
        # Copy-only: kill and reap escaped descendants. In the sandbox none can outlive its PID
        # namespace, but a process that adopts orphans (a run that also has a copy-only agent)
        # also inherits each sandbox's init when bwrap exits without reaping it: each trial
        # reaps its own (isolation/reaping.py reap_sandbox_inits); this takes any left.
        sweep_orphans(run.guard.children)
        run.remove_snapshot()  # every agent is dead
    if ctx.slots:
        ctx.slots.filled.set()  # the trials are over: nothing left for a warm-up to wait for
    _record_run_end(run)
    return results


def _run_rounds(run: StartedRun, jobs: list[Job], workers: int, rounds: Rounds) -> list[TrialResult]:
    """Batches until the policy stops, the budget refuses a trial, or Ctrl-C (which propagates
    with ctx.results holding every finished trial)."""
    ctx, state = run.ctx, run.state
    template = {j.case.id: j for j in jobs}
    state.adaptive, state.jobs_run = rounds, []
    ctx.events.emit("plan", lines=rounds.plan_lines(), total_trials=rounds.most_trials() - rounds.trials_taken_up(),
                    taken_up=rounds.trials_continued())
    while True:
        batch = [(Job(template[c].case, n, template[c].agent), confirm) for c, n, confirm in rounds.next_batch()]
        if not batch:
            break
        if confirming := sum(1 for _, confirm in batch if confirm):  # beyond the design's most: the total grows
            ctx.events.emit("confirming", trials=confirming)
        done, ctx.results = ctx.results, []
        try:
            found = run_jobs(ctx, [job for job, _ in batch], workers)
        finally:  # interrupted too: the batch was planned, and what finished of it is reported
            ctx.results = done + ctx.results
            state.jobs_run += [job for job, _ in batch]
        by_key = {(r.case_id, r.trial): r for r in found}
        for job, confirm in batch:
            result = by_key.get((job.case.id, job.trial))
            rounds.record(job.case.id, _outcome(result), confirm, errored=bool(result is not None and result.errored))
        look = rounds.look()
        ctx.events.emit("look", lines=look.lines())
        if look.stop or ctx.not_run:
            break
    return list(ctx.results)


def _outcome(result: TrialResult | None) -> dict[str, bool] | None:
    """Per dimension passed, for a trial that counts (not errored, not refused by the budget)."""
    if result is None or result.errored or any(g.category == "not_run" for g in result.grades.values()):
        return None
    return {d: g.passed for d, g in result.grades.items()}


def _record_run_end(run: StartedRun) -> None:
    """The repository's changes since the start digest, the budget and refused trials, on the
    run's state for the summary."""
    ctx, state = run.ctx, run.state
    ctx.tree_violations.extend(c for c in run.guard.changes() if c not in ctx.tree_violations)
    state.tree_violations, state.not_run, state.budget = ctx.tree_violations, ctx.not_run, ctx.budget
