"""`run --shard K/N`: one machine's deterministic, balanced slice of the suite, and the record of it.

Every shard computes the same assignment of the whole suite (case id -> shard), so N machines
given the same commit, options and cost source split the cases without talking to each other.
All trials of a case stay in one shard (a case's pass@k and flakiness need all of them). Cases
are balanced by expected cost: longest first onto the least-loaded shard (LPT), where a case's
cost is its planned trials times its mean trial duration in an earlier run (`--shard-costs`),
or just its planned trials when no earlier run is given. Ties break by suite order, so the
result never depends on the machine. `rubricgate merge` (merge.py) checks and joins the shards.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rubricgate import __version__
from rubricgate.errors import GateInputError
from rubricgate.models.results import CaseSpec, Summary
from rubricgate.models.shard import MAX_SHARDS, PlanOptions, ShardRecord
from rubricgate.records.run_index import SHARD_FILE
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.load import Loaded
from rubricgate.suite.yaml_json import load_model

if TYPE_CHECKING:  # for annotations only; run_shard imports the pipeline when it runs
    from rubricgate.pipeline import RunOptions, RunOutcome



@dataclass(frozen=True)
class ShardSpec:
    """K/N (1-based) plus the expected seconds per trial of the cases an earlier run measured."""

    index: int
    count: int
    costs: dict[str, float] = field(default_factory=dict)

    def select(self, cases: list[CaseSpec], trials: int | None) -> list[CaseSpec]:
        """This shard's cases, in suite order; a shard left with no case is bad input."""
        assignment = assign(cases, lambda c: trials or c.trials, self.count, self.costs)
        chosen = [c for c in cases if assignment[c.id] == self.index]
        if not chosen:
            raise GateInputError("--shard", "", f"shard {self.index}/{self.count} has no case: only "
                                 f"{len(cases)} case(s) are selected", f"use at most {len(cases)} shards")
        return chosen


def parse_shard(text: str, costs: dict[str, float] | None = None) -> ShardSpec:
    """'K/N' with 1 <= K <= N <= MAX_SHARDS, or a one-line GateInputError."""
    k, sep, n = text.partition("/")
    if not (sep and k.strip().isdigit() and n.strip().isdigit()) or not 1 <= int(k) <= int(n):
        raise GateInputError("--shard", "", f"{text!r} is not K/N with 1 <= K <= N", "e.g. --shard 2/4")
    if int(n) > MAX_SHARDS:
        raise GateInputError("--shard", "", f"{text!r} splits into more than {MAX_SHARDS} shards",
                             f"use at most {MAX_SHARDS} (and no more than the suite has cases)")
    return ShardSpec(int(k), int(n), costs or {})


def trial_costs(summary: Summary) -> dict[str, float]:
    """Mean seconds per trial of every case of an earlier run (trials that ran only)."""
    out = {}
    for case in summary.cases:
        ran = [t.duration_s for t in case.trials if not any(g.category == "not_run" for g in t.grades.values())]
        if ran:
            out[case.id] = sum(ran) / len(ran)
    return out


def assign(cases: list[CaseSpec], trials_of: Callable[[CaseSpec], int], count: int,
           costs: dict[str, float]) -> dict[str, int]:
    """case id -> shard (1..count): longest expected case first onto the least-loaded shard."""
    fallback = statistics.median(costs.values()) if costs else 1.0  # a new case costs a typical trial
    cost = [trials_of(c) * costs.get(c.id, fallback) for c in cases]
    loads = [0.0] * count
    out: dict[str, int] = {}
    for i in sorted(range(len(cases)), key=lambda i: (-cost[i], i)):
        k = min(range(count), key=lambda k: (loads[k], k))
        loads[k] += cost[i]
        out[cases[i].id] = k + 1
    return out


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, or 'missing'."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def input_digests(loaded: Loaded, repo: Path, config_path: Path | None) -> dict:
    """The inputs every shard (and the merge) must share: version, config, baseline, reviewer files."""
    from rubricgate.runner.digests import reviewer_digest  # the reviewer digest the trial cache keys on

    return {"harness_version": __version__, "config_digest": file_digest(config_path or repo / CONFIG_NAME),
            "baseline_digest": file_digest(repo / loaded.config.baseline),
            "reviewer": reviewer_digest(repo, loaded.config)}


def shard_record(loaded: Loaded, spec: ShardSpec, plan: PlanOptions, run_id: str, repo: Path,
                 config_path: Path | None, jobs: list[tuple[str, int, str]],
                 agent_versions: dict[str, str | None]) -> ShardRecord:
    """What `merge` needs to check that this shard belongs with the others."""
    assignment = assign(_selected(loaded.cases, plan.only), lambda c: plan.trials or c.trials, spec.count, spec.costs)
    return ShardRecord(run_id=run_id, index=spec.index, count=spec.count, agent_versions=agent_versions, plan=plan,
                       assignment=assignment, jobs=jobs, **input_digests(loaded, repo, config_path))


def _selected(cases: list[CaseSpec], only: list[str]) -> list[CaseSpec]:
    return [c for c in cases if not only or any(s in c.id for s in only)]


def write_shard_record(run_dir: Path, record: ShardRecord) -> Path:
    from rubricgate.records.files import write_json_atomic

    path = run_dir / SHARD_FILE
    write_json_atomic(path, record.model_dump(mode="json"))
    return path


def read_shard_record(run_dir: Path) -> ShardRecord:
    """The shard.json of a partial run, or a one-line error saying it is not one."""
    path = run_dir / SHARD_FILE
    if not path.is_file():
        raise GateInputError(str(run_dir), SHARD_FILE, "not a shard run (no shard.json)",
                             "pass the run folders written by `rubricgate run --shard K/N`")
    return load_model(ShardRecord, path, str(path))


def run_shard(options: RunOptions) -> RunOutcome:
    """run_suite on this shard's slice (options.shard), then shard.json beside its summary.json."""
    from rubricgate.pipeline import plan, run_suite
    from rubricgate.records.events import read_events
    from rubricgate.suite.load import load_all

    spec = options.shard
    if not isinstance(spec, ShardSpec):
        raise ValueError("run_shard needs options.shard set to a ShardSpec")
    outcome = run_suite(options)
    loaded = load_all(options.repo, options.config_path, options.require_baseline, only=options.only)
    started = next((e for e in read_events(outcome.run_dir / "events.jsonl") if e["event"] == "run_started"), {})
    plan_options = PlanOptions(only=options.only, trials=options.trials, agent=options.agent,
                               max_cost=options.max_cost)
    jobs = [(j.case.id, j.trial, j.agent) for j in plan(loaded, options)]
    record = shard_record(loaded, spec, plan_options, outcome.summary.run_id, options.repo, options.config_path,
                          jobs, started.get("agents", {}))
    write_shard_record(outcome.run_dir, record)
    return outcome


def spec_from_flags(shard: str | None, costs_from: Path | None) -> ShardSpec | None:
    """--shard K/N and --shard-costs RUN_DIR -> a ShardSpec (None when not sharding)."""
    if shard is None:
        if costs_from is not None:
            raise GateInputError("--shard-costs", "", "given without --shard", "add --shard K/N or drop it")
        return None
    from rubricgate.records.files import read_summary

    return parse_shard(shard, trial_costs(read_summary(costs_from)) if costs_from else None)


def shard_exit_code(summary: Summary) -> int:
    """A shard does not gate (its slice is not the suite; `merge` gates): 2 when its slice could not
    be judged at all (interrupted, budget spent, errored trials, a report unwritten), else 0.

    An INCONCLUSIVE slice is no such failure: under the statistical gate a slice is usually too
    small to show its drop within the margin, which the merge of every shard can."""
    return 2 if summary.decision.status == "error" else 0
