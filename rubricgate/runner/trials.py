"""The run step: every planned trial, each graded as it ends (runner/scheduler.py), and what
the run's end needs from them.

`run_trials` is the one call the pipeline makes for it; a policy that decides how many trials
to run (rounds until a rate is settled, say) belongs here, around `run_jobs`.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

from rubricgate.isolation.admission import CANCEL
from rubricgate.isolation.process import sweep_orphans
from rubricgate.models.results import TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.runner.scheduler import Job, run_jobs
from rubricgate.runner.startup import StartedRun

OnGraded = Callable[[TrialResult, Transcript], None]


def run_trials(run: StartedRun, jobs: list[Job], workers: int = 1,
               on_graded: OnGraded | None = None) -> list[TrialResult]:
    """Run `jobs` with at most `workers` agents at once and return their results in plan order.
    Ctrl-C keeps what finished (the run's state says it was interrupted): a partial, readable
    report. `on_graded` is called in each trial's thread once its result is recorded."""
    ctx = run.ctx
    ctx.on_graded = on_graded
    CANCEL.reset()
    # Modules, models and the loaded suite live until exit: the collector need not walk them
    # again on every full collection during the trials.
    gc.freeze()
    try:
        results = run_jobs(ctx, jobs, workers)
    except KeyboardInterrupt:
        results, run.state.interrupted = list(ctx.results), True
    finally:
        # Copy-only: kill and reap escaped descendants. In the sandbox none can outlive its PID
        # namespace, but a process that adopts orphans (a copy-only run in the same process)
        # also inherits each sandbox's init when bwrap exits without reaping it: reap those too.
        sweep_orphans(run.guard.children)
        run.remove_snapshot()  # every agent is dead
    if ctx.slots:
        ctx.slots.filled.set()  # the trials are over: nothing left for a warm-up to wait for
    _record_run_end(run)
    return results


def _record_run_end(run: StartedRun) -> None:
    """The repository's changes since the start digest, the budget and refused trials, on the
    run's state for the summary."""
    ctx, state = run.ctx, run.state
    ctx.tree_violations.extend(c for c in run.guard.changes() if c not in ctx.tree_violations)
    state.tree_violations, state.not_run, state.budget = ctx.tree_violations, ctx.not_run, ctx.budget
