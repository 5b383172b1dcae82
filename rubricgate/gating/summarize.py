"""Aggregate and gate a run's trial results into the Summary every report renders."""

from __future__ import annotations

from datetime import UTC, datetime

from rubricgate.agents.support import support_for
from rubricgate.gating.aggregate import Counts, as_rates, case_counts, dimension_rates, tag_counts, trial_frame
from rubricgate.gating.case_rows import CaseRows, SharedRow, rounded_interval
from rubricgate.gating.errored import errored_gate, errored_list
from rubricgate.gating.gate import cannot_judge, decide
from rubricgate.gating.stats import add_intervals, case_consistency, compared, counted, suite_consistency
from rubricgate.models.baseline import MeasuredWith
from rubricgate.models.results import CaseSpec, CaseSummary, Decision, GateDetail, RateRow, Summary, TrialResult
from rubricgate.runner.cost import cost_summary
from rubricgate.runner.run_state import RunState
from rubricgate.runner.scheduler import Job
from rubricgate.suite.load import Loaded


def build_summary(loaded: Loaded, jobs: list[Job], results: list[TrialResult], state: RunState) -> Summary:
    """Aggregate and gate: the Summary every report renders (also used by regrade)."""
    jobs = state.jobs_run if state.jobs_run is not None else jobs  # adaptive rounds: what ran
    planned = len(jobs) + _taken_up(state)
    results = marked_confirmations(results, state.adaptive)
    frame = trial_frame(loaded.cases, results)  # the trials the gate compared: no confirmation
    rates = dimension_rates(frame, loaded.config.graded_dimensions())
    confidence = loaded.config.gate.confidence
    per_case, per_tag = case_counts(frame), tag_counts(frame)
    add_intervals(rates, per_case, confidence)
    default = jobs[0].agent if jobs else loaded.config.agent.name
    run_with = MeasuredWith(agent=default, agent_version=state.agent_versions.get(default),
                            model=loaded.config.agent.model or reported_model(results))
    decision, gate = _decision(loaded, rates, state, len(results), planned, per_case, run_with,
                               errored_counts(results))
    decision = errored_gate(decision, results, planned, loaded.config.gate.max_errored)  # taken-up trials too
    decision = unjudged_next(decision, gate, state.adaptive, str(loaded.config.reports))
    cases = case_summaries(loaded, jobs, results, per_case, confidence)
    return Summary(run_id=state.run_id, started_at=state.started, kind=state.kind, counted_runs=_continued_runs(state),
                   finished_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
                   complete=not state.interrupted and len(results) == planned and not state.not_run, agent=default,
                   agent_version=state.agent_versions.get(default), agent_support=support_for(state.agent_versions),
                   model=loaded.config.agent.model or reported_model(results),
                   trials_default=state.trials or loaded.config.trials,
                   decision=decision, rates=rates, rates_by_tag=as_rates(per_tag),
                   intervals_by_tag=intervals(per_tag, confidence), cases=cases,
                   flaky_cases=[c.id for c in cases if c.flaky], errored=errored_list(results),
                   cost=cost_summary(cases, state.budget),
                   pass_k=suite_consistency([[t for t in c.trials if compared(t)] for c in cases]), gate=gate,
                   config={"method": loaded.config.gate.method, "rubric": loaded.config.reviewer.rubric})


def _continued_runs(state: RunState) -> list[str]:
    """The runs whose trials a continued run takes up: the one it continues and what that one held."""
    continued = state.adaptive.continued if state.adaptive is not None else None
    return [*continued.summary.counted_runs, continued.summary.run_id] if continued is not None else []


def _taken_up(state: RunState) -> int:
    """Trials of the run this one continues (gating/continuation.py): they are in `results` and
    were planned, by that run, so a continued run that ran its budget is complete."""
    continued = state.adaptive.continued if state.adaptive is not None else None
    return len(continued.trials) if continued is not None else 0


def _ran(done: int, total: int, state: RunState) -> str:
    """'D of T trials', and for a continuation how many of them it ran itself (the progress line's
    count): "11/24 trials" and "interrupted after 60 of 65 trials" were said of one run. An adaptive
    run's total is the progress line's too (the design's most), not the rounds handed out so far."""
    taken = _taken_up(state)
    if state.adaptive is not None:  # the progress line's total: the most the design may run, confirmations sent too
        total = max(total, state.adaptive.most_trials() + len(state.adaptive.confirmation_trials))
    if not taken:
        return f"{done} of {total} trials"
    return f"{done - taken} trials of its own ({done} of {total} with the {taken} it continues)"


def case_summaries(loaded: Loaded, jobs: list[Job], results: list[TrialResult], per_case: Counts,
                   confidence: float) -> list[CaseSummary]:
    """One CaseSummary per planned case, in suite order. Every lookup is a dict built once, so this
    stays linear in the suite (never all cases' rates again for each case)."""
    by_case: dict[str, list[TrialResult]] = {}
    for r in results:
        by_case.setdefault(r.case_id, []).append(r)
    planned = {j.case.id for j in jobs}
    shared = CaseRows(confidence)
    return [_case_summary(c, loaded.case_digests.get(c.id, ""), shared.rows(per_case.get(c.id, {})),
                          by_case.get(c.id, []))
            for c in loaded.cases if c.id in planned]


def _case_summary(case: CaseSpec, digest: str, rows: tuple[SharedRow, SharedRow],
                  trials: list[TrialResult]) -> CaseSummary:
    """One case's summary, built from values this run made and typed: not validated again, and
    its rates and intervals shared with the cases of equal counts (case_rows.py), not copied."""
    rates, bounds = rows
    return CaseSummary.model_construct(id=case.id, source=case.source, tags=case.tags,
                                       expected_tier=case.expect.tier, why=case.why,
                                       workspace_paths=dict(case.workspace_paths), digest=digest,
                                       rates=rates, intervals=bounds, trials=trials, **_consistency(trials))


def intervals(counts: Counts, confidence: float) -> dict[str, dict[str, list[float]]]:
    """Wilson interval [low, high] of every per-case or per-tag rate."""
    return {g: {d: rounded_interval(p, n, confidence) for d, (p, n) in dims.items() if n}
            for g, dims in counts.items()}


def reported_model(results: list[TrialResult]) -> str | None:
    """The model(s) the agent said it used when none is configured, so `trend` sees a default change."""
    models = sorted({r.model for r in results if r.model})
    return ", ".join(models) or None


def _consistency(trials: list[TrialResult]) -> dict:
    """pass@k and pass^k (k = the case's trials) over the trials the gate compared, as the rates;
    flakiness over every trial that ran (a one-off failure a confirmation passed is flaky)."""
    pass_at, pass_hat, _ = case_consistency([t for t in trials if compared(t)])
    flaky = case_consistency([t for t in trials if counted(t)])[2]
    return {"pass_at_k": pass_at, "pass_hat_k": pass_hat, "flaky": flaky}


def marked_confirmations(results: list[TrialResult], adaptive) -> list[TrialResult]:
    """The trials an adaptive run ran as confirmations, marked (`confirmation`): summary.json
    keeps them apart from the design trials the rates count."""
    marks = getattr(adaptive, "confirmation_trials", None)
    if not marks:
        return results
    return [r.model_copy(update={"confirmation": True}) if (r.case_id, r.trial) in marks else r for r in results]


def errored_counts(results: list[TrialResult]) -> dict[str, int]:
    """Errored design trials per case: the gate counts them as failures in the worst case."""
    out: dict[str, int] = {}
    for r in results:
        if r.errored and not r.confirmation:
            out[r.case_id] = out.get(r.case_id, 0) + 1
    return out


def _decision(loaded: Loaded, rates, state: RunState, done: int, total: int,
              per_case: Counts, run_with: MeasuredWith, errored: dict[str, int]) -> tuple[Decision, GateDetail | None]:
    decision, detail = _decided(loaded, rates, state, done, total, per_case, run_with, errored)
    if state.budget.reason and not state.not_run:
        # Every trial started before the budget learned it could not count (all at once, the agent
        # pricing none): the run is whole, but the budget the user set did not hold.
        unheld = f"--max-cost was not enforced: {state.budget.reason}; every trial ran"
        decision = decision.model_copy(update={"warnings": [*decision.warnings, unheld]})
    return decision, detail


def _decided(loaded: Loaded, rates, state: RunState, done: int, total: int,
             per_case: Counts, run_with: MeasuredWith, errored: dict[str, int]) -> tuple[Decision, GateDetail | None]:
    method = loaded.config.gate.method  # the configured gate's, even when it could not judge
    if state.not_run:
        return cannot_judge([f"{state.budget.reason}: {state.not_run} of {total} trials not run; "
                             "the report is partial"], method), None
    if state.interrupted:
        return cannot_judge([f"run interrupted after {_ran(done, total, state)}; the report is partial"], method), None
    if state.tree_violations:
        return cannot_judge(["the original repository was modified during the run: "
                             f"{', '.join(state.tree_violations[:5])}"], method), None
    if state.design_lost:
        return cannot_judge([state.design_lost], method), None
    if loaded.baseline is None and state.kind == "baseline":
        return Decision(status="baseline", exit_code=0, method=loaded.config.gate.method,
                        reasons=["baseline run: rates measured for baseline.json, not gated"]), None
    if loaded.baseline is None:
        return cannot_judge(["no baseline to compare against"], method), None
    if state.adaptive is not None:  # the design's counts and the last look (gating/adaptive.py)
        decision, detail = _adaptive_decision(loaded, rates, state.adaptive, run_with)
        return continuation_detail(detail, decision, state.adaptive, f"{loaded.config.reports}/{state.run_id}")
    return decide(rates, loaded.baseline, loaded.config.gate, per_case, run_with, errored=errored, edited=loaded.edited)


GATE_FIELDS = ("baseline", "delta", "status", "p_value", "drop_upper", "label")


def continuation_detail(detail: GateDetail, decision: Decision, adaptive,
                        run_path: str) -> tuple[Decision, GateDetail]:
    """What identifies the design, the runs this one continues (said first among the warnings),
    and, undecided, the one command that continues it (gating/continuation.py)."""
    continued = adaptive.continued
    detail.design_key, detail.continuations = adaptive.design_key, adaptive.continuations()
    if continued is not None:
        earlier = continued.summary.gate.continues if continued.summary.gate else []
        detail.continues = [*earlier, continued.summary.run_id]
        detail.notes.insert(0, continued.note())
        decision = decision.model_copy(update={"warnings": [continued.note(), *decision.warnings]})
    if adaptive.passed_over:  # said first too: the run spends the error afresh beside that one
        detail.notes.insert(0, adaptive.passed_over)
        decision = decision.model_copy(update={"warnings": [adaptive.passed_over, *decision.warnings]})
    if decision.status == "inconclusive":
        detail.next = next_step(adaptive, run_path)
        decision = decision.model_copy(update={"warnings": [*decision.warnings, f"next: {detail.next}"]})
    return decision, detail


def next_step(adaptive, run_path: str) -> str:
    """The one command that continues an undecided run, what an unchanged reviewer needs, and,
    when it is not expected to PASS within the budget, what to add: cases or trials per case.
    When not even an unlimited run is expected to PASS against this baseline (its own trials
    bound the drop), no continuation is offered: the baseline size that would is named."""
    from rubricgate.gating.power import to_pass

    sched = adaptive.schedule
    planned = sched.looks[sched.planned]
    when = "" if sched.planned >= len(sched.looks) - 1 else _expected_pass(planned, adaptive.done_rounds)
    plan = adaptive.plan() if adaptive.shared else None
    add = next((a for d in plan.dimensions if (a := to_pass(d, plan.max_trials)) is not None), None) if plan else None
    what = f"; to decide within the budget: {add}" if add else ""
    limited = [d for d in plan.dimensions if d.run_limited] if plan else []
    if plan is not None and limited:  # a continuation adds run trials: against this baseline none is expected to PASS
        return (f"no continuation of this run is expected to PASS against this baseline "
                f"({', '.join(d.dimension for d in limited)}); to decide: {to_pass(limited[0], plan.max_trials)}; "
                "`rubricgate plan` shows the figures")
    if adaptive.limit >= len(sched.looks) or not adaptive.shared:
        return (f"add cases or raise gate.max_trials_per_case (this design's continuations are spent){what}; "
                "`rubricgate plan` shows what would reach the margin")
    if adaptive.trials_from and adaptive.trials_refused:  # its baseline updated since, say: refused
        return (f"run afresh: rubricgate run (the run these trials came from cannot be continued now: "
                f"{adaptive.trials_refused}){what}")
    if adaptive.trials_from:  # a regrade is not continued: the run it judged again is
        return f"continue the run these trials came from: {adaptive.continue_command(adaptive.trials_from)}{when}{what}"
    return f"continue this run: {adaptive.continue_command(run_path)}{when}{what}"


def unjudged_next(decision: Decision, detail: GateDetail | None, adaptive, reports: str) -> Decision:
    """The next step of a run the errored trials turned into "could not judge" after its looks
    said INCONCLUSIVE: it is not continued (it ended ERROR), so "continue this run" named a
    command that fails. A continuation names the run it took up (its mark lifted:
    gating/continuation.py settle); a first run none (the reports say: fix, then re-run)."""
    if decision.status != "error" or detail is None or not detail.next:
        return decision
    stale = f"next: {detail.next}"
    continued = adaptive.continued if adaptive is not None else None
    detail.next = "" if continued is None else (
        "fix what made its trials error, then continue the run it took up: "
        + adaptive.continue_command(f"{reports}/{continued.summary.run_id}"))
    warnings = [w for w in decision.warnings if w != stale] + ([f"next: {detail.next}"] if detail.next else [])
    return decision.model_copy(update={"warnings": warnings})


def _expected_pass(planned: int, done: int) -> str:
    """When an unchanged reviewer was expected to PASS: ahead, or already past (then a continuation
    rarely PASSes: the design spent most of its PASS error by the planned look, and a run this far
    past it said "expected to PASS after 3 trials per case" at 40)."""
    if done < planned:
        return f"; an unchanged reviewer is expected to PASS after {planned} trials per case"
    return (f"; an unchanged reviewer was expected to PASS after {planned} trials per case and this run has "
            f"{done}: the design has little PASS error left to spend, so a continuation rarely PASSes (more "
            "likely the reviewer changed: `rubricgate plan` shows what would decide)")


def _adaptive_decision(loaded: Loaded, rates: dict[str, RateRow], adaptive, run_with: MeasuredWith):
    """Judged on the design's trials and the last look (confirmations apart). The run's rows then
    count the design trials the gate compared, so each rate and its delta count the same trials;
    the confirmations are kept apart (gate.confirmations). Only called with a baseline."""
    if loaded.baseline is None:  # _decision returns before this without one
        raise ValueError("an adaptive decision needs a baseline")
    design, look = adaptive.gate_inputs()
    rows = {}
    for dim in rates:
        x = sum(c[dim][0] for c in design.values() if dim in c)
        n = sum(c[dim][1] for c in design.values() if dim in c)
        rows[dim] = RateRow(rate=x / n if n else None, passes=x, trials=n)
    add_intervals(rows, design, loaded.config.gate.confidence)
    decision, detail = decide(rows, loaded.baseline, loaded.config.gate, design, run_with, look, adaptive.lost,
                              loaded.edited)
    for dim, row in rows.items():
        rates[dim] = row
    detail.looks, detail.plan = adaptive.history(), adaptive.plan().as_json()
    detail.confirmations = {c: {d: [x, n] for d, (x, n) in dims.items()}
                            for c, dims in adaptive.confirm.frozen().items()}
    return decision, detail
