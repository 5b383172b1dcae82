"""`rubricgate merge RUN_DIR...`: join the partial runs of `run --shard K/N` into one gated run.

The shards must belong together: the same rubricgate version, config, baseline, reviewer files,
agent versions, plan options and N, every shard 1..N exactly once, no case twice, none missing,
and the repository the merge runs in must hold the same config, baseline and reviewer. Then the
trials are re-assembled in plan order and pass through the same build_summary and report writers
as a single run, so the merged summary, events, reports and decision are what one machine would
have produced for the same trials.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from rubricgate.errors import GateInputError
from rubricgate.fleet.shard import SHARD_FILE, input_digests, read_shard_record
from rubricgate.fleet.verify import FIX, shard_events, verify_shards
from rubricgate.gating.case_edits import with_case_digests
from rubricgate.gating.recorded import copy_transcripts
from rubricgate.gating.summarize import build_summary
from rubricgate.isolation.environment import build_env, secret_values
from rubricgate.isolation.netaccess import NetworkAccess
from rubricgate.isolation.sandbox import SandboxPolicy
from rubricgate.models.results import Summary, TrialResult
from rubricgate.models.shard import ShardRecord
from rubricgate.pipeline import RunOptions, plan, with_changes
from rubricgate.records.events import open_locked
from rubricgate.records.files import make_run_folder, new_run_id, read_summary
from rubricgate.records.run_index import index_run
from rubricgate.reports.bundle import finish_run_reports
from rubricgate.reports.explain import annotate
from rubricgate.runner.cost import Budget, is_not_run
from rubricgate.runner.run_state import RunState
from rubricgate.runner.scheduler import TREE_CHANGED, Job
from rubricgate.runner.startup import with_isolation
from rubricgate.secrets import scrub_json
from rubricgate.suite.load import Loaded, load_all
from rubricgate.suite.trees import with_autocrlf_note

# Fields every shard of one run records identically (the assignment is checked on its own).
SAME = ("count", "harness_version", "config_digest", "baseline_digest", "reviewer", "agent_versions", "plan")


@dataclass
class Shard:
    run_dir: Path
    record: ShardRecord
    summary: Summary


@dataclass
class Merged:
    summary: Summary
    run_dir: Path


def merge_runs(repo: Path, run_dirs: list[Path], config_path: Path | None = None,
               reports_dir: Path | None = None) -> Merged:
    """Check the shards, rebuild the run from their trials, write it as a new run folder."""
    shards = [Shard(d, read_shard_record(d), read_summary(d)) for d in run_dirs]
    check_together(shards)
    first = shards[0].record
    # The shards read their selected cases' files for LFS pointers (suite/cases.py): so does the merge.
    loaded = with_case_digests(load_all(repo, config_path, only=first.plan.only), repo)
    options = RunOptions(repo=repo, config_path=config_path, only=first.plan.only, trials=first.plan.trials,
                         agent=first.plan.agent, max_cost=first.plan.max_cost)
    check_against_repo(shards[0], loaded, options)
    for shard in shards:
        check_cases_against_repo(shard, loaded)
    jobs = plan(loaded, options)  # the whole suite's plan, as one machine would run it
    check_coverage(shards, jobs)
    verify_shards(shards, jobs, loaded)  # counts, numbers and grades re-derived, not trusted
    return write_merged(loaded, options, jobs, shards, reports_dir)


def check_together(shards: list[Shard]) -> None:
    """Same N, same inputs, each index 1..N exactly once; else a one-line error naming the shard."""
    if not shards:
        raise GateInputError("merge", "RUN_DIR", "no shard runs given", "pass every shard's run folder")
    first = shards[0]
    for s in shards[1:]:
        for name in SAME:
            if getattr(s.record, name) != getattr(first.record, name):
                raise _mismatch(s, name, f"differs from {first.run_dir}'s",
                                "merge shards of one run (same commit and options)")
    seen: dict[int, Path] = {}
    for s in shards:
        if s.record.index in seen:
            raise _mismatch(s, "index", f"shard {s.record.index}/{s.record.count} is also {seen[s.record.index]}",
                            "pass each shard once")
        seen[s.record.index] = s.run_dir
    missing = sorted(set(range(1, first.record.count + 1)) - set(seen))
    if missing:
        raise GateInputError(str(first.run_dir / SHARD_FILE), "index",
                             f"shard(s) {', '.join(f'{k}/{first.record.count}' for k in missing)} missing",
                             "pass every shard's run folder (a failed shard job must be rerun)")


def check_against_repo(shard: Shard, loaded: Loaded, options: RunOptions) -> None:
    """The merge gates with this repository's config and baseline: they must be what the shards ran with."""
    for name, value in input_digests(loaded, options.repo, options.config_path).items():
        if getattr(shard.record, name) != value:  # digests of bytes: a CRLF checkout differs unchanged
            raise with_autocrlf_note(_mismatch(shard, name, "differs from this repository's",
                                               "merge in a checkout of the commit the shards ran"), options.repo)


def check_cases_against_repo(shard: Shard, loaded: Loaded) -> None:
    """Each case a shard ran asked and reviewed what it does here: the merge grades its answers with
    this repository's expectations (a shard of an edited suite would mix two cases under one id)."""
    for case in shard.summary.cases:
        if case.id in loaded.case_digests and not case.digest:  # nothing to compare: not a difference
            raise _mismatch(shard, "cases", f"case {case.id} has no case digest: an older rubricgate ran the shard, "
                            "and without one no merge can check that the case asks and reviews what it does here",
                            "run the shards again with this rubricgate, then merge them")
        if case.id in loaded.case_digests and case.digest != loaded.case_digests[case.id]:
            raise _mismatch(shard, "cases", f"case {case.id} differs from this repository's (what it asks or reviews)",
                            "merge in a checkout of the commit the shards ran")


def check_coverage(shards: list[Shard], jobs: list[Job]) -> None:
    """Every shard ran exactly its assigned jobs of the whole plan: no case twice, none missing."""
    planned = {j.case.id for j in jobs}
    for s in shards:
        if set(s.record.assignment) != planned or s.record.assignment != shards[0].record.assignment:
            raise _mismatch(s, "assignment", "splits a different set of cases", "merge shards of one run")
    owner: dict[str, Path] = {}
    for s in shards:
        for case_id, _, _ in s.record.jobs:
            if owner.setdefault(case_id, s.run_dir) != s.run_dir:
                raise _mismatch(s, "jobs", f"case {case_id} was also run by {owner[case_id]}",
                                "merge shards of one run")
    expected = {(j.case.id, j.trial, j.agent) for j in jobs}
    ran = {tuple(j) for s in shards for j in s.record.jobs}
    if ran != expected:
        gone = sorted(expected - ran)[:3] or sorted(ran - expected)[:3]
        raise GateInputError(str(shards[0].run_dir / SHARD_FILE), "jobs", f"the shards do not cover the plan: {gone}",
                             "merge every shard of one run")


def _mismatch(shard: Shard, field: str, what: str, fix: str) -> GateInputError:
    return GateInputError(str(shard.run_dir / SHARD_FILE), field, what, fix)


def write_merged(loaded: Loaded, options: RunOptions, jobs: list[Job], shards: list[Shard],
                 reports_dir: Path | None) -> Merged:
    """summary.json, events.jsonl, transcripts and every report, as `run` writes them."""
    cfg = loaded.config
    secrets = secret_values(build_env(cfg.agent.env_allowlist, cfg.agent.secret_env), cfg.agent.secret_env)
    order = {(j.case.id, j.trial): i for i, j in enumerate(jobs)}
    results = sorted((t for s in shards for c in s.summary.cases for t in c.trials),
                     key=lambda t: order[(t.case_id, t.trial)])
    summary = build_summary(loaded, jobs, results, merged_state(shards, results, options.trials))
    summary = summary.model_copy(update={"counted_runs": [r for s in shards
                                                          for r in (*s.summary.counted_runs, s.summary.run_id)]})
    summary = with_isolation(summary, _isolation(shards))
    summary = with_changes(annotate(summary, loaded, options.repo, os.environ), loaded)  # as `run` does
    summary = _with_shards_setup(summary, shards)
    run_dir = make_run_folder(reports_dir or options.repo / cfg.reports, summary.run_id,
                              tuple(s.run_dir for s in shards))
    (run_dir / "transcripts").mkdir()
    for s in shards:
        _copy_transcripts(s, run_dir)
    # Locked as a run's is (records/events.py) until its end: else the viewer shows it as stopped.
    with open_locked(run_dir / "events.jsonl") as events:
        _write_events(events, shards, jobs, summary, secrets)

        def completed(final: Summary) -> list:
            _append_event(events, "run_completed", secrets, decision=final.decision.model_dump(mode="json"))
            return []

        # As `run` does: reports, run_completed, summary.json last; a write failure makes it exit 2.
        summary = finish_run_reports(summary, run_dir, cases=loaded.cases, secrets=secrets, repo=options.repo,
                                     before_summary=completed)
    index_run(run_dir, summary, "merged", secrets)  # the viewer's index, as a run writes its own
    return Merged(summary, run_dir)


def _isolation(shards: list[Shard]) -> SandboxPolicy:
    """The weakest isolation any shard ran with: one copy-only shard makes the whole run copy-only,
    one whose sandbox shared the host's network makes it shared."""
    weak = next((s.summary for s in shards if s.summary.isolation != "bwrap"), shards[0].summary)
    shared = any(s.summary.sandbox_network == "shared" for s in shards)
    return SandboxPolicy(isolation=weak.isolation, reason=weak.isolation_reason,
                         network=NetworkAccess("shared" if shared else "allowlist"))


def merged_state(shards: list[Shard], results: list[TrialResult], trials: int | None) -> RunState:
    """The run-level facts of the whole: interrupted, tree violations and budget of any shard."""
    first = shards[0].record
    state = RunState(run_id=new_run_id(), started=min(s.summary.started_at for s in shards),
                     agent_versions=dict(first.agent_versions), trials=trials,
                     interrupted=any(len(s.record.jobs) > sum(len(c.trials) for c in s.summary.cases) for s in shards),
                     budget=Budget(first.plan.max_cost))
    state.not_run = sum(1 for r in results if is_not_run(r))
    state.tree_violations = sorted({path for r in results for g in r.grades.values()
                                    if g.reason.startswith(TREE_CHANGED)
                                    for path in g.reason.removeprefix(TREE_CHANGED).split(", ")})
    budgets = [s.summary.cost.get("budget", {}) for s in shards]
    state.budget.spent_usd = sum(b.get("spent_usd", 0.0) for b in budgets)
    state.budget.reason = next((b["reason"] for b in budgets if b.get("reason")), "")
    return state


def _copy_transcripts(shard: Shard, run_dir: Path) -> None:
    """Regular files from the shard's transcripts/ only (no link followed, none written through)."""
    copy_transcripts(shard.run_dir, [t for case in shard.summary.cases for t in case.trials], run_dir, FIX)


def _write_events(events: IO[str], shards: list[Shard], jobs: list[Job], summary: Summary,
                  secrets: list[str]) -> None:
    """run_started for the whole, then every shard's case and trial events in time order."""
    _append_event(events, "run_started", secrets, at=summary.started_at, run_id=summary.run_id,
                  total_trials=len(jobs), cases=len({j.case.id for j in jobs}),
                  case_trials={j.case.id: j.trial for j in jobs}, agents=shards[0].record.agent_versions,
                  shards=[s.record.run_id for s in sorted(shards, key=lambda s: s.record.index)])
    middle = [e for s in shards for e in shard_events(s) if e.get("event") not in ("run_started", "run_completed")]
    for event in sorted(middle, key=lambda e: str(e.get("at", ""))):
        events.write(scrub_json(json.dumps(event, default=str), secrets) + "\n")
    events.flush()


def _append_event(events: IO[str], event: str, secrets: list[str], at: str | None = None, **fields) -> None:
    stamp = at or datetime.now(UTC).isoformat(timespec="milliseconds")
    events.write(scrub_json(json.dumps({"event": event, "at": stamp, **fields}, default=str), secrets) + "\n")
    events.flush()  # run_completed is on disk before summary.json is


def _with_shards_setup(summary, shards):
    """The shards' own program and environment digest when they agree (the merging machine's is no
    shard's), else one digest of them all, which is no single setup's. "" (not recorded) let a
    baseline of any setup pool the mixed trials, the pooled baseline then recording none."""
    setups = sorted({s.summary.reviewer.setup if s.summary.reviewer else "" for s in shards})
    one = setups[0] if len(setups) == 1 else "mixed-" + hashlib.sha256(json.dumps(setups).encode()).hexdigest()[:16]
    if summary.reviewer is None:
        return summary
    return summary.model_copy(update={"reviewer": summary.reviewer.model_copy(update={"setup": one})})
