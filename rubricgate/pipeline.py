"""The whole workflow as one readable chain:
load -> plan -> run (each trial graded as it ends) -> aggregate and gate -> report.

Each step is one call into the package that owns it; how a step is made fast (work overlapped
with the trials, start-up done side by side) lives in that package, with its reason:
runner/startup.py (everything before the first trial), runner/trials.py (the run step),
reports/ahead.py (the end of the run prepared beside the trials).
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from rubricgate.agents import get_agent
from rubricgate.errors import GateInputError
from rubricgate.gating.case_edits import with_case_digests
from rubricgate.gating.changes import changed_first, line_end_noted, rule_changes, with_rule_changes
from rubricgate.isolation.reaping import adopting_for_the_run
from rubricgate.models.results import LEFT_OUT_CASES, Summary, TrialResult
from rubricgate.records.run_index import index_run
from rubricgate.reports.ahead import ReportsAhead
from rubricgate.runner.cache import note_rejections, notes_dir
from rubricgate.runner.options import CaseSlice, RunOptions, default_jobs
from rubricgate.runner.scheduler import Job
from rubricgate.runner.startup import StartedRun, start_run, with_cache_dir, with_isolation
from rubricgate.runner.trials import run_trials
from rubricgate.runner.workspace import GitListing
from rubricgate.suite.cases import selected
from rubricgate.suite.load import Loaded, load_all
from rubricgate.suite.trees import autocrlf_note

__all__ = ["CaseSlice", "Loaded", "RunOptions", "RunOutcome", "load_all", "plan", "run_suite"]


@dataclass
class RunOutcome:
    summary: Summary
    run_dir: Path
    exit_code: int
    workspaces: Path | None = None  # where --keep-workspaces left each trial's folder
    interrupted: bool = False  # Ctrl-C / SIGTERM stopped its trials: a caller starts nothing more


def run_suite(options: RunOptions) -> RunOutcome:
    """load -> plan -> run -> aggregate and gate -> report. Raises GateInputError(s) on bad input."""
    listing = GitListing(options.repo)  # git lists the tree on the other core while the suite loads
    loaded = load_all(options.repo, options.config_path, options.require_baseline, options.reviewer_from,
                      options.foreign_rules, options.only)
    loaded = with_case_digests(loaded, options.repo)  # a case edited since the baseline is judged as new
    if options.gate is not None:  # compare --base: the base's gate settings decide
        loaded.config = loaded.config.model_copy(update={"gate": options.gate})
    options = with_cache_dir(options, loaded.config.cache_dir)  # before anything is written
    jobs = plan(loaded, options)
    workers = options.jobs or default_jobs(loaded.config.agent.jobs, [j.agent for j in jobs])
    options = replace(options, jobs=workers)
    rounds = adaptive_rounds(loaded, jobs, options)  # a continued run takes up its trials (gating/continuation.py)
    continued = rounds.continued if rounds is not None else None
    held = continued.held() if continued is not None else nullcontext()  # claimed: continued once
    # One run of the design at a time, to its report (gating/design_mark.py): two at once were two chances to PASS.
    mark = rounds.design_mark if rounds is not None else None
    with mark or nullcontext(), held, adopting_for_the_run(), \
            start_run(options, loaded, jobs, listing, agent_factory=get_agent) as run:
        if mark is not None:
            mark.name_run(run.ctx.run_dir)
        ahead = ReportsAhead(run.ctx.slots.filled if run.ctx.slots else None)
        results = run_trials(run, jobs, workers, on_graded=ahead.prerender, rounds=rounds)
        if mark is not None:
            run.state.design_lost = mark.lost()  # removed meanwhile: another run could have started beside it
        if continued is not None:
            results = continued.trials + results
            continued.hand_over(run.ctx.run_dir, run.state.interrupted)
        summary = report(run, loaded, aggregate_and_gate(loaded, jobs, results, run, ahead), ahead)
        if continued is not None:
            continued.settle(summary)  # could not judge (a report not written too): the run it took up is free again
    return RunOutcome(summary, run.ctx.run_dir, summary.decision.exit_code, run.kept, run.state.interrupted)


def plan(loaded: Loaded, options: RunOptions) -> list[Job]:
    """(case, trial, agent) jobs; --agent beats a task's agent, which beats the config's."""
    cases = selected(loaded.cases, options.only)  # the cases load_all read for LFS pointers
    if not cases:
        raise GateInputError("--only", "", f"no case id contains {options.only}",
                             "list the case ids with `rubricgate validate --list`")
    if options.shard is not None:
        cases = options.shard.select(cases, options.trials)
    cases = changed_first(cases, rule_changes(loaded.rubric, loaded.cases, loaded.baseline))
    return [Job(c, t, options.agent or c.agent or loaded.config.agent.name)
            for c in cases for t in range(options.first_trial, options.first_trial + (options.trials or c.trials))]


def adaptive_rounds(loaded: Loaded, jobs: list[Job], options: RunOptions):
    """The statistical gate's adaptive rounds (gating/adaptive.py) over the planned cases, in plan
    order (changed cases first); None for a fixed design: strict, a baseline run, a shard."""
    if loaded.config.gate.method != "statistical" or options.shard is not None:
        if options.continues is not None and options.shard is not None:
            raise GateInputError("--continue", str(options.continues), "a shard runs no adaptive rounds to continue",
                                 "continue the run without --shard, or run the shards afresh")
        if options.continues is not None:
            raise GateInputError("--continue", str(options.continues),
                                 "only the statistical gate's adaptive rounds continue",
                                 "set gate.method: statistical, or run afresh")
        return None
    from rubricgate.gating.adaptive import rounds_for

    order = list(dict.fromkeys(j.case.id for j in jobs))
    first = options.trials or loaded.config.trials
    rounds = rounds_for(loaded.baseline, loaded.config.gate, order, first, options.kind,
                        loaded.config.graded_dimensions())
    if rounds is not None and options.kind == "run":
        from rubricgate.gating.continuation import prepare

        continued, rounds.design_key, rounds.design_mark, rounds.passed_over = prepare(
            options.repo, loaded, order, first, options.agent or loaded.config.agent.name, options.continues,
            notes_dir(options.repo, loaded.config.cache_dir))
        try:
            rounds.take_up(continued)
        except BaseException:
            if rounds.design_mark is not None:
                rounds.design_mark.release()
            raise
        rounds.continue_command = options.continue_command
    elif options.continues is not None:
        raise GateInputError("--continue", str(options.continues), "this run shares no case with the baseline",
                             "continue with the cases the run had")
    return rounds


def aggregate_and_gate(loaded: Loaded, jobs: list[Job], results: list[TrialResult], run: StartedRun,
                       ahead: ReportsAhead) -> Summary:
    """Rates, intervals and the decision against the baseline (gating/summarize.py), with how
    agents were isolated, which cache entries were rejected, the reviewer compared with the
    baseline's and the rules changed since it (the change-aware decision)."""
    ahead.wait()
    from rubricgate.gating.summarize import build_summary  # loaded by the warm-up
    from rubricgate.reports.explain import annotate

    summary = build_summary(loaded, jobs, results, run.state)
    summary = note_rejections(with_isolation(summary, run.policy, run.cache_retired, run.ctx.scrub_notes),
                              run.ctx.cache_rejected)
    summary = with_changes(annotate(summary, loaded, run.ctx.repo, os.environ), loaded)
    summary = with_selection(summary, jobs, loaded)
    return line_end_noted(summary, partial(autocrlf_note, run.ctx.repo), loaded.edited)


def with_selection(summary: Summary, jobs: list[Job], loaded: Loaded) -> Summary:
    """A run of some of the suite's cases (`--only`) records how many it left out
    (`config.left_out_cases`): `trend` and the viewer's trend show runs of the whole suite, and a
    one-case run's rate read there as a jump of the suite's."""
    left = len(loaded.cases) - len({j.case.id for j in jobs})
    return summary.model_copy(update={"config": {**summary.config, LEFT_OUT_CASES: left}}) if left > 0 else summary


def with_changes(summary: Summary, loaded: Loaded) -> Summary:
    """Coverage, the rules changed since the baseline and the change-aware decision (gating/changes.py)."""
    return with_rule_changes(summary, loaded.rubric, loaded.cases, loaded.baseline, loaded.config.gate,
                             loaded.config.reviewer.rubric)


def report(run: StartedRun, loaded: Loaded, summary: Summary, ahead: ReportsAhead) -> Summary:
    """Replay artifacts, HTML, comment.md, junit.xml, then summary.json last (reports/bundle.py),
    then the viewer's index of the run (records/run_index.py).

    Returns the summary as finally decided: a report that could not be written makes it exit 2.
    """
    final = write_reports(run, loaded, summary, ahead)
    # From the summary in memory: ~0.1 s CPU at 2,000 cases x 3 trials, where the viewer's first
    # look would parse the summary.json again (seconds for a year of such runs). Best effort: the
    # viewer builds what is missing.
    index_run(run.ctx.run_dir, final, "shard" if run.options.shard is not None else None, run.ctx.secrets)
    return final


def write_reports(run: StartedRun, loaded: Loaded, summary: Summary, ahead: ReportsAhead) -> Summary:
    """The run's report files and summary.json, with run_completed logged before the summary."""
    from rubricgate.reports.bundle import finish_run_reports  # loaded by the warm-up

    ctx = run.ctx
    earlier = list(ctx.events.write_failures)  # a transcript or an event line during the run

    def completed(final: Summary) -> list:
        ctx.events.emit("run_completed", decision=final.decision.model_dump(mode="json"))
        ctx.events.close()  # a full disk may only show when the last line is flushed
        return ctx.events.write_failures[len(earlier):]

    return finish_run_reports(summary, ctx.run_dir, cases=loaded.cases, secrets=ctx.secrets, repo=ctx.repo,
                              earlier=earlier, before_summary=completed, bodies=ahead.bodies)
