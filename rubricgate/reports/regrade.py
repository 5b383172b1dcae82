"""`regrade RUN_DIR`: grade a run's stored transcripts again under today's expectations and rubric.

No agent runs. The result is a new run directory beside the old one (the old run stays as it
was, so `compare` and `trend` can show what the rubric or expectation change did), holding a
copy of the transcripts, a fresh summary.json, replay artifacts and every report.
A run of the statistical gate's adaptive rounds is judged as it was, at its last look on its
design trials, its confirmations kept apart. What the transcripts cannot change is the run's:
its isolation (copy-only warned as it was), its agent CLI versions and its branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.gating.changes import with_rule_changes
from rubricgate.gating.design_mark import LOST
from rubricgate.gating.gate import cannot_judge
from rubricgate.gating.recorded import bad_trial, transcript_bytes
from rubricgate.gating.summarize import build_summary
from rubricgate.graders import judge
from rubricgate.isolation.netaccess import NetworkAccess
from rubricgate.isolation.sandbox import SandboxPolicy
from rubricgate.isolation.untrusted import write_fresh
from rubricgate.models.config import Config
from rubricgate.models.results import LEFT_OUT_CASES, CaseSpec, Summary, TrialResult
from rubricgate.records.files import new_run_id, read_summary, read_transcript, write_summary
from rubricgate.runner.options import RunOptions
from rubricgate.runner.run_state import RunState
from rubricgate.runner.scheduler import TREE_CHANGED, Job, trial_result
from rubricgate.runner.startup import with_isolation
from rubricgate.suite.cases import selected
from rubricgate.suite.load import Loaded
from rubricgate.suite.rubric import RubricSpec


@dataclass
class Regraded:
    summary: Summary
    run_dir: Path
    cases: list[CaseSpec]
    warnings: list[str]


def _keep_as_is(t: TrialResult) -> bool:
    """Trials a transcript cannot re-judge: never run, failed for writing to the real repo, or
    errored with no transcript written (in no rate either way)."""
    return (t.errored and not t.transcript) or any(g.category == "not_run" or g.reason.startswith(TREE_CHANGED)
                                                   for g in t.grades.values())


def regrade_trial(run_dir: Path, case: CaseSpec, t: TrialResult, rubric: RubricSpec, config: Config) -> TrialResult:
    """Parse and grade the stored transcript again; keeps the transcript path. A graded trial
    without one (its write failed) cannot be: kept with its old grades, the regrade passed on
    a grade the current rubric never gave."""
    if _keep_as_is(t):
        return t
    if not t.transcript:
        raise bad_trial(run_dir, (t.case_id, t.trial), "has grades but no transcript to grade again",
                        "regrade a run whose graded trials kept their transcripts, or run the suite again")
    transcript = read_transcript(run_dir, t.transcript)
    parsed, grades = judge(case, transcript, rubric, config)
    result = trial_result(case.id, t.trial, transcript, parsed, grades, t.transcript)
    return result.model_copy(update={"cached": t.cached, "confirmation": t.confirmation})


def _regrade_all(run_dir: Path, old: Summary, loaded: Loaded) -> tuple[list[Job], list[TrialResult], list[str]]:
    by_id = {c.id: c for c in loaded.cases}
    jobs, results, warnings = [], [], []
    for cs in old.cases:
        case = by_id.get(cs.id)
        if case is None:
            warnings.append(f"case {cs.id} is no longer in the suite; its {len(cs.trials)} trial(s) were dropped")
            continue
        for t in cs.trials:
            jobs.append(Job(case, t.trial, old.agent))
            results.append(regrade_trial(run_dir, case, t, loaded.rubric, loaded.config))
    return jobs, results, warnings


def _state(old: Summary, new_id: str, results: list[TrialResult]) -> RunState:
    """The old run's run-level facts, carried over: a regrade cannot undo them."""
    violations = sorted({g.reason for r in results for g in r.grades.values() if g.reason.startswith(TREE_CHANGED)})
    not_run = sum(1 for r in results if any(g.category == "not_run" for g in r.grades.values()))
    lost = next((r for r in old.decision.reasons if r.startswith(LOST)), "")  # another run may have run beside it
    state = RunState(run_id=new_id, started=old.started_at, interrupted=not old.complete,
                     tree_violations=violations, not_run=not_run, agent_versions=_versions(old), design_lost=lost)
    if not_run:
        state.budget.reason = "the original run left trials not run"
    return state


def _versions(old: Summary) -> dict[str, str | None]:
    """The agent CLI versions the run measured with (no agent runs here to ask): unknown, the
    baseline's versions read as a changed setup, a warning the run never had."""
    return {**{name: s.version for name, s in old.agent_support.items()}, old.agent: old.agent_version}


def _as_the_run_was(summary: Summary, old: Summary) -> Summary:
    """How the run's agents were isolated and which branch it was for: the transcripts' facts,
    a regrade cannot change them. Left to the defaults, a copy-only run's regrade read as
    sandboxed (its warning gone) and left its branch's trend."""
    policy = SandboxPolicy(isolation=old.isolation, reason=old.isolation_reason,
                           network=NetworkAccess(old.sandbox_network or "allowlist"))
    where = {k: old.config[k] for k in ("branch", "pr") if k in old.config}
    return with_isolation(summary, policy).model_copy(update={
        "sandbox_network": old.sandbox_network, "config": where | summary.config})


def _adaptive(old: Summary, loaded: Loaded, jobs: list[Job], results: list[TrialResult]):
    """The adaptive rounds the run was judged by, taken up with the regraded trials (None for a
    fixed design): judged at the run's last look on its design trials, confirmations apart, as
    the run was. Judged as one look over every trial pooled, an INCONCLUSIVE run could PASS.
    Its next step names the run to continue only when `run --continue` would take it up
    (continue_as)."""
    if old.kind != "run" or old.gate is None or not old.gate.looks:
        return None
    from rubricgate.gating.adaptive import rounds_for

    order = list(dict.fromkeys(j.case.id for j in jobs))
    rounds = rounds_for(loaded.baseline, loaded.config.gate, order, old.trials_default, "run",
                        loaded.config.graded_dimensions())
    if rounds is not None:
        rounds.resume(results, old.gate.looks, old.gate.continuations)
        rounds.trials_from = f"{loaded.config.reports}/{old.run_id}"
    return rounds


def continue_as(old: Summary, loaded: Loaded, repo: Path, config_path: Path | None = None) -> RunOptions:
    """The flags of `rubricgate run` that make the design of the run `old` again: its agent and
    first round's trials when not the config's, its cases when it left some out (`--only`)."""
    agent = old.agent if old.agent != loaded.config.agent.name else None
    trials = old.trials_default if old.trials_default != loaded.config.trials else None
    only = [c.id for c in old.cases] if old.config.get(LEFT_OUT_CASES) else []
    return RunOptions(repo=repo, config_path=config_path, agent=agent, trials=trials, only=only)


def refused_today(options: RunOptions, loaded: Loaded, run_id: str) -> str:
    """Why `rubricgate run --continue` of the run `run_id` under the reports folder, with
    `options`' flags, would be refused now ('' when it would be taken up): the design identity
    and marks the continuation checks (gating/continuation.py). After `baseline update`, a
    reviewer edit or a continuation of it, the old run is another design or taken already."""
    from rubricgate.gating.continuation import changed_settings, why_not
    from rubricgate.gating.continuation_marks import mark_path, user_mark
    from rubricgate.gating.design import design_of
    from rubricgate.runner.cache import notes_dir

    reports = options.repo / loaded.config.reports
    try:
        summary = read_summary(reports / run_id)
    except GateInputError as exc:
        return exc.problem or "its folder is not under the reports folder"
    cases = [c.id for c in selected(loaded.cases, options.only)]
    key, settings = design_of(options.repo, loaded, cases, options.trials or loaded.config.trials,
                              options.agent or loaded.config.agent.name)
    notes = user_mark(notes_dir(options.repo, loaded.config.cache_dir), run_id)
    return why_not(summary, key, reports / run_id, mark_path(reports, run_id), notes) or \
        changed_settings(summary, settings)


def regrade_run(run_dir: Path, loaded: Loaded, reports_dir: Path | None = None,
                continuing: RunOptions | None = None) -> Regraded:
    """Re-grade every stored trial; write the new run beside the old one (or under reports_dir).
    `continuing`: the flags that would continue the run (continue_as); its next step names that
    command only when it would be accepted, else a fresh run (None: no command is checked)."""
    old = read_summary(run_dir)
    jobs, results, warnings = _regrade_all(run_dir, old, loaded)
    if not jobs:
        raise GateInputError(str(run_dir / "summary.json"), "cases", "no case of this run is in the current suite",
                             "regrade a run of this repository's suite")
    # A case keeps its digest only if the run's trials reviewed what it is now (a regraded
    # transcript of an edited case is no measurement of the case as it stands).
    then = {c.id: c.digest for c in old.cases}
    subset = Loaded(loaded.config, loaded.rubric, [c for c in loaded.cases if c.id in {j.case.id for j in jobs}],
                    loaded.baseline, {c: d for c, d in loaded.case_digests.items() if then.get(c) == d}, loaded.edited)
    new_id = new_run_id()
    state = _state(old, new_id, results)
    state.adaptive = _adaptive(old, subset, jobs, results)
    if state.adaptive is not None and continuing is not None:
        state.adaptive.continue_command = continuing.continue_command
        state.adaptive.trials_refused = refused_today(continuing, loaded, old.run_id)
    fresh = build_summary(subset, jobs, results, state)
    decision = fresh.decision.model_copy(update={"warnings": fresh.decision.warnings + warnings})
    summary = fresh.model_copy(update={
        "agent": old.agent, "agent_version": old.agent_version, "model": old.model, "decision": decision,
        "kind": old.kind,  # a record or baseline run regraded is no point of the suite's trend either
        "counted_runs": [*old.counted_runs, old.run_id],  # its trials: a baseline pools them once
        "config": fresh.config | _selection(old) | {"regraded_from": old.run_id}})
    summary = _as_the_run_was(summary, old)
    # As a run: the coverage table, the rules changed since the baseline and the change-aware
    # decision. Rule-table changes only: the transcripts were answers to the run's own prompt.
    summary = with_rule_changes(summary, loaded.rubric, loaded.cases, loaded.baseline, loaded.config.gate,
                                loaded.config.reviewer.rubric)
    summary = _not_against_itself(summary, old, loaded)
    out = (reports_dir or run_dir.parent) / new_id
    _copy_transcripts(run_dir, out, results)
    write_summary(out, summary)
    return Regraded(summary, out, subset.cases, warnings)


def _not_against_itself(summary: Summary, old: Summary, loaded: Loaded) -> Summary:
    """Could not judge when the baseline's newest measurement holds the regraded run's own trials
    (`baseline update --from` it, or from a run that continued it): the test takes the two for
    samples measured apart, and the same trials on both sides are one (`compare` refuses such a
    pair too)."""
    measured = loaded.baseline.measured_with if loaded.baseline is not None else None
    run = measured.run_id if measured is not None else ""
    if not run or run not in {old.run_id, *old.counted_runs}:
        return summary
    why = (f"the baseline was measured from run {run}, whose trials this regrade grades again: the gate's test "
           "takes its two sides for samples measured apart, and these are one; regrade a run measured apart "
           "from the baseline, or measure the baseline afresh (`rubricgate run`, then `rubricgate baseline "
           "update --from` that run)")
    decision = cannot_judge([why], summary.decision.method)
    return summary.model_copy(update={"decision": decision.model_copy(update={"warnings": summary.decision.warnings})})


def _copy_transcripts(src: Path, dst: Path, results: list[TrialResult]) -> None:
    """Regular files from the run's transcripts/ only: a link there (a planted run folder) was
    followed, and the file it named copied into the new run's reports. All are read before the
    new run's folder is made, so a refused one leaves no folder without a summary behind."""
    fix = "regrade the run folder as its run wrote it"
    read = [(r.transcript, transcript_bytes(src, r, fix)) for r in results if r.transcript]
    (dst / "transcripts").mkdir(parents=True)
    for rel, data in read:
        if data is not None:
            write_fresh(dst / rel, data)


def _selection(old: Summary) -> dict:
    """The run's `config.left_out_cases` (`--only`): its regrade is of those cases alone too."""
    return {LEFT_OUT_CASES: old.config[LEFT_OUT_CASES]} if LEFT_OUT_CASES in old.config else {}
