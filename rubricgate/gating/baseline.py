"""Reading baseline.json, and the update rules: raise freely, lower only with a reason.

An update merges per case: the cases the run holds are replaced by the run's counts, the others
are kept (so `baseline update --from` an `--only` run refreshes just those cases), and cases no
longer in the suite are dropped. When the reviewer files, agent, CLI version and model are the
ones the baseline was measured with, the run's trials are added to the baseline's instead (a
re-measurement of the same thing: more trials, and no way to keep only a lucky run). Format 1
files (suite rates only) and format 2 files are read, and written back as format 4 on the next
update, which also records the reviewer file by file, its rule table and
warning threshold, and the rule ids the run's reviewer cited per case (rule coverage).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rubricgate.errors import GateInputError
from rubricgate.gating.changes import listed
from rubricgate.models.baseline import Baseline, BaselineChange, CaseCount, MeasuredWith, RuleRecord, suite_rates
from rubricgate.models.dimensions import ordered
from rubricgate.models.reviewer_digests import comparable, sections_unrecorded

# `validate` only reads the baseline: the run's result models (stats, records) load with the
# update functions that need them, not on every start (bench/startup.py).
if TYPE_CHECKING:
    from rubricgate.models.results import Summary, TrialResult

EPS = 1e-6
# Re-measuring an unchanged setup pools the trials instead of replacing them: keeping the best of
# several runs would bias the baseline upwards and make later unchanged runs look like drops
# (bench/gate_soundness.py: "best of 3").
POOLED_REASON = "re-measured with the same reviewer, agent, CLI version and model: trials pooled"
CaseCounts = dict[str, dict[str, CaseCount]]


def summary_counts(summary: Summary) -> CaseCounts:
    """Per case and dimension, passes and trials over the trials the gate compared (not errored,
    not run, no confirmation: gating/stats.py compared)."""
    from rubricgate.gating.stats import compared

    out: CaseCounts = {}
    for case in summary.cases:
        trials = [t for t in case.trials if compared(t)]
        graded = ordered({d for t in trials for d in t.grades})  # the run's dimensions (gate.dimensions)
        if trials:
            out[case.id] = {d: _sessions_count(trials, d) for d in graded}
    if not out:
        raise GateInputError("summary.json", "cases", "the run graded no trial", "run the suite first")
    return out


def _sessions_count(trials: Sequence[TrialResult], dim: str) -> CaseCount:
    """A case's count of `dim`, a session per run that ran its trials: a continuation holds the
    trials of the run it took up, and read as one session the two runs' counts summed into one
    (the dependence check, which compares sessions, then saw half a repeating reviewer's correlation)."""
    runs: dict[str, list[int]] = {}
    for t in trials:
        if dim in t.grades:
            count = runs.setdefault(t.session, [0, 0])
            count[0] += t.grades[dim].passed
            count[1] += 1
    sessions = tuple((x, n) for x, n in runs.values())
    return CaseCount(passes=sum(x for x, _ in sessions), trials=sum(n for _, n in sessions),
                     sessions=sessions if len(sessions) > 1 else ())


@dataclass(frozen=True)
class Update:
    baseline: Baseline
    lowered: list[str]  # "case dimension old -> new" (or "dimension" for a format 1 suite rate)
    changed_cases: list[str]
    pooled: bool = False  # the run re-measured the baseline's setup: trials were added


def updated_baseline(old: Baseline | None, summary: Summary, reason: str, suite_ids: list[str] | None = None,
                     reviewer_digest: str | None = None, sessions: Sequence[Summary] = ()) -> Update:
    """Merge the run's per-case counts into the baseline; lowering anything needs a reason.

    `suite_ids` (the cases the suite has now) drops entries of removed or renamed cases;
    `sessions` are more runs of the same measurement (its other sessions, measured alike): their
    counts are added, each kept as a session of its own (gating/dependence.py checks them).
    """
    _not_counted_before(old, (summary, *sessions))
    measured = MeasuredWith(reviewer_digest=reviewer_digest, agent=summary.agent, agent_version=summary.agent_version,
                            model=summary.model, setup=(summary.reviewer.setup if summary.reviewer else "") or None,
                            run_id=summary.run_id)
    pooled = old is not None and same_setup(old.measured_with, as_recorded_by(old, measured, summary))
    fresh = summary_counts(summary)
    for each in sessions:
        fresh = pool(fresh, summary_counts(each), keep_new=True)
    digests = measured_digests((summary, *sessions))
    unrecorded(old, digests, fresh, summary)
    edited = edited_since(old, digests, fresh)  # another case under the same id: replaced, never pooled
    run = pool({c: v for c, v in old.cases.items() if c not in edited}, fresh) if old is not None and pooled else fresh
    kept = _kept(old, run, suite_ids)
    cases = {**kept, **run}
    # Pooling lowers a rate too when the new trials fail more often: like any lowering, it needs a
    # reason; so does an edited case's lower rate (an edit beside a regression must not lower it unasked).
    lowered = _lowered(old, run, suite_rates(cases), set(edited))
    if lowered and not reason.strip():
        how = "pooling this run lowers " if pooled else "lowering "
        raise GateInputError("baseline.json", "cases", how + "; ".join(lowered[:5])
                             + (" ..." if len(lowered) > 5 else "") + " and needs a reason",
                             "pass --reason 'why the lower rate is right'")
    run_ids = "+".join(run_ids_of((summary, *sessions)))
    fell = old is not None and any(r < old.rates.get(d, 0.0) - EPS for d, r in suite_rates(cases).items())
    auto = _auto_reason(old, bool(kept), suite_rates(cases), fell)
    change = _change(old, cases, run_ids, _history_reason(reason, pooled, edited, auto),
                     sorted(run) if kept else [])
    kept_digests = {c: d for c, d in (old.case_digests if old else {}).items() if c in kept}
    new = Baseline(rates=change.rates, trials=change.trials, cases=cases, measured_with=measured,
                   history=(old.history if old else []) + [change], **reviewer_fields(summary),
                   case_digests={c: d for c, d in {**kept_digests, **digests}.items() if c in cases},
                   cited=merged_cited(old, summary, set(cases), pooled, set(edited)))
    return Update(new, lowered, sorted(run), pooled)


def measured_digests(summaries: Sequence[Summary]) -> dict[str, str]:
    """Per case, the digest its trials were measured on; a case the runs measured edited in
    between is refused (its trials would mix two cases under one id)."""
    digests: dict[str, str] = {}
    for summary in summaries:
        for case in summary.cases:
            if case.digest and digests.setdefault(case.id, case.digest) != case.digest:
                raise GateInputError("--from", summary.run_id, f"case {case.id} was edited between the runs given "
                                     "(what it asks or reviews differs)", "measure every session on the same suite")
    return digests


def unrecorded(old: Baseline | None, digests: dict[str, str], fresh: CaseCounts, summary: Summary) -> None:
    """A run that does not say what a case asked and reviewed (a regrade of an edited case, a run
    of an older rubricgate) cannot be pooled with, nor replace, counts the baseline keeps a digest of."""
    kept = old.case_digests if old is not None else {}
    missing = sorted(c for c in fresh if c in kept and c not in digests)
    if missing:
        raise GateInputError("--from", summary.run_id, f"the run does not record what case {missing[0]} asked and "
                             "reviewed (a regrade of an edited case, or a run of an older rubricgate)",
                             "measure it afresh: rubricgate baseline update")


def edited_since(old: Baseline | None, digests: dict[str, str], fresh: CaseCounts) -> list[str]:
    """The run's cases whose digest differs from the one the baseline kept (gating/case_edits.py)."""
    kept = old.case_digests if old is not None else {}
    return sorted(c for c in fresh if c in kept and c in digests and kept[c] != digests[c])


def _history_reason(reason: str, pooled: bool, edited: list[str], auto: str) -> str:
    """The history entry's reason: the user's, after "pooled" when it was, else the automatic one;
    then the cases whose counts an edit replaced."""
    said = "; ".join(x for x in (POOLED_REASON if pooled else "", reason.strip()) if x) or auto
    if not edited:
        return said
    return f"{said}; re-measured after an edit (counts replaced): {listed(edited)}"


def run_ids_of(summaries: Sequence[Summary]) -> list[str]:
    """Every run whose trials these summaries hold: each one's own and the runs it continued,
    merged or regraded."""
    return list(dict.fromkeys(r for s in summaries for r in (s.run_id, *s.counted_runs) if r))


def _not_counted_before(old: Baseline | None, summaries: Sequence[Summary]) -> None:
    """A run already in the baseline's history would be pooled again (3/3 -> 6/6): refused, also
    when it comes inside another summary (a shard, then the run merged from it; a run, then the
    run that continued it) or was one session of a measurement ("A+B" in the history)."""
    held = [r for s in summaries for r in dict.fromkeys((s.run_id, *s.counted_runs)) if r]
    twice = next((r for r in held if held.count(r) > 1), None)
    if twice is not None:  # --from A --from B where B continued (or merged) A
        raise GateInputError("--from", twice, "this run's trials are in two of the runs given",
                             "give each run once: a run that continued, merged or regraded it already holds its trials")
    for run_id in run_ids_of(summaries):
        earlier = next((h for h in (old.history if old else []) if run_id in h.run_id.split("+")), None)
        if earlier is not None:
            raise GateInputError("--from", run_id, f"this run's trials are already counted in baseline.json "
                                 f"(since {earlier.at})", "give a run the baseline has not counted, "
                                 "or measure a new one: rubricgate baseline update")


def reviewer_fields(summary: Summary) -> dict:
    """Format 3's record of the reviewer the run measured: digests, rule table, threshold."""
    rec = summary.reviewer
    if rec is None:
        return {}
    return {"reviewer_digests": dict(rec.digests), "tier_threshold": rec.tier_threshold,
            "rubric_rules": {r: RuleRecord(severity=row.severity, kind=row.kind, statement=row.statement,
                                           means=row.means)
                             for r, row in rec.rules.items()}}


def cited_rules(summary: Summary) -> dict[str, list[str]]:
    """Per case, one rule id per finding the reviewer reported (the most any counted trial did)."""
    from collections import Counter

    from rubricgate.gating.stats import counted

    out: dict[str, list[str]] = {}
    for case in summary.cases:
        most: Counter[str] = Counter()
        for trial in (t for t in case.trials if counted(t)):
            most |= Counter(f.rule for f in trial.findings if f.rule)
        if any(counted(t) for t in case.trials):
            out[case.id] = sorted(most.elements())
    return out


def merged_cited(old: Baseline | None, summary: Summary, suite: set[str], pooled: bool,
                 edited: set[str] | frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """The run's citations over the baseline's: kept for cases it did not run, joined when pooled
    (an `edited` case's old citations were of another case: replaced)."""
    from collections import Counter

    before = {c: v for c, v in (old.cited if old else {}).items() if c in suite}
    now = cited_rules(summary)
    if pooled:
        now = {c: v if c in edited else sorted((Counter(v) | Counter(before.get(c, []))).elements())
               for c, v in now.items()}
    return {**before, **now}


def _kept(old: Baseline | None, run: CaseCounts, suite_ids: list[str] | None) -> CaseCounts:
    """The baseline's cases the run did not hold, less those no longer in the suite."""
    kept = {c: v for c, v in (old.cases if old else {}).items() if c not in run}
    return kept if suite_ids is None else {c: v for c, v in kept.items() if c in set(suite_ids)}


def _change(old: Baseline | None, cases: CaseCounts, run_id: str, reason: str, changed: list[str]) -> BaselineChange:
    at = datetime.now(UTC).isoformat(timespec="seconds")
    trials = max((count.trials for c in cases.values() for count in c.values()), default=1) or 1
    return BaselineChange(at=at, rates=suite_rates(cases), trials=trials, reason=reason, run_id=run_id, cases=changed)


def same_setup(before: MeasuredWith | None, now: MeasuredWith) -> bool:
    """Same reviewer files, agent, CLI version and model, and the same program and environment
    where both recorded theirs (a baseline written before they were kept has none): a new run
    re-measures the same thing."""
    if before is None or before.reviewer_digest is None or now.reviewer_digest is None:
        return False
    keys = ("reviewer_digest", "agent", "agent_version", "model")
    setups = {before.setup, now.setup} - {None}
    return all(getattr(before, k) == getattr(now, k) for k in keys) and len(setups) < 2


def as_recorded_by(old: Baseline, measured: MeasuredWith, summary: Summary) -> MeasuredWith:
    """The run's setup fingerprinted as `old` fingerprinted its own: a baseline measured before
    rubricgate.yaml's sections were recorded beside the reviewer's files (runner/digests.py
    CONFIG_KEY) fingerprints the files alone. Against the run's files and sections, the first
    update after an upgrade read every reviewer as changed and replaced the pooled counts."""
    if summary.reviewer is None or not sections_unrecorded(old.reviewer_digests):
        return measured
    own = comparable(summary.reviewer.digests, old.reviewer_digests)
    return measured.model_copy(update={"reviewer_digest": reviewer_fingerprint(own)})


def pool(old: CaseCounts, run: CaseCounts, keep_new: bool = False) -> CaseCounts:
    """The run's counts added to the baseline's, case by case, each measurement kept as sessions
    of its own (cases new to the baseline as they are; `keep_new`: the old's cases the run does
    not hold are kept too)."""
    out = {c: dict(v) for c, v in old.items()} if keep_new else {}
    for case, dims in run.items():
        before = old.get(case, {})
        out[case] = {d: _added(before.get(d), c) for d, c in dims.items()}
    return out


def _added(before: CaseCount | None, now: CaseCount) -> CaseCount:
    if before is None:
        return now
    runs = before.runs() + now.runs()
    return CaseCount(passes=before.passes + now.passes, trials=before.trials + now.trials, sessions=tuple(runs))


def _lowered(old: Baseline | None, run: CaseCounts, rates: dict[str, float],
             edited: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Every per-case rate (format 2) or suite rate (format 1) the update would lower (an `edited`
    case's marked so)."""
    if old is None:
        return []
    if not old.cases:
        return [f"{d} {old.rates[d]:.1%} -> {rates[d]:.1%}" for d in ordered(old.rates)
                if d in rates and rates[d] < old.rates[d] - EPS]
    out = []
    for case, dims in run.items():
        before = old.cases.get(case)
        if before is None:
            continue
        for d in ordered(set(before) & set(dims)):
            b, n = before[d], dims[d]
            if b.trials and n.trials and n.passes / n.trials < b.passes / b.trials - EPS:
                out.append(f"{case} {d} {b.passes}/{b.trials} -> {n.passes}/{n.trials}"
                           + (" (edited since)" if case in edited else ""))
    return out


def _auto_reason(old: Baseline | None, partial: bool, rates: dict[str, float], fell: bool) -> str:
    """What the update did, when no --reason says why (`fell`: a suite rate is lower, though no
    case's is). A dimension the baseline never measured is neither raised nor lowered: at 0% it
    was recorded as "raised: the suite passes at the higher rate", and so was a re-measurement
    at the rates the baseline had."""
    if old is None:
        return "initial baseline"
    first = [d for d in ordered(rates) if d not in old.rates]
    rose = any(r > old.rates[d] + EPS for d, r in rates.items() if d in old.rates)
    did = ("merged the run's cases: none lower" if partial and old.format_version != 1
           else RAISED if rose else "" if first else SAME)
    if fell:
        did = "re-measured: no case's rate is lower; a suite rate fell with the cases added or left out"
    said = [did, f"{', '.join(first)} measured for the first time" if first else "",
            "migrated from format 1 to per-case counts" if old.format_version == 1 else ""]
    return "; ".join(x for x in said if x)


RAISED = "raised: the suite passes at the higher rate"
SAME = "re-measured: no rate changed"


def reviewer_fingerprint(per_file: dict[str, str]) -> str:
    """One sha256 over the reviewer files' own digests (rubricgate.runner.digests.reviewer_digest)."""
    return hashlib.sha256(json.dumps(per_file, sort_keys=True).encode("utf-8")).hexdigest()


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Atomic, like every file a run writes: an interrupted update never leaves half a baseline."""
    from rubricgate.records.files import write_json_atomic

    write_json_atomic(path, baseline.model_dump(mode="json", exclude_none=False))
