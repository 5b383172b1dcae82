"""`rubricgate mutate`: generate mutants, check the unmutated suite is not failing, run every
mutant, score, explain the survivors and write a fixture skeleton for each survivor of a rule.

The unmutated (control) run must not fail: a mutant is judged against a suite that holds. Under
the statistical gate a noisy reviewer's control run may be undecided (INCONCLUSIVE within the
budget); the mutants then run all the same, each decided by the gate on its own (caught,
survived or undecided), and the report says the control was undecided."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rubricgate.boundary import printable
from rubricgate.errors import GateInputError
from rubricgate.models.mutation import MutationReport, SkippedMutant
from rubricgate.mutate.execute import Outcome, RunSettings, reported, run_all, run_one
from rubricgate.mutate.mutants import Mutant, all_mutants, select
from rubricgate.mutate.progress import Progress
from rubricgate.mutate.score import mechanical, result, score
from rubricgate.records.files import new_run_id, write_json_atomic
from rubricgate.suite.load import Loaded, load_all
from rubricgate.suite.skeletons import refuse_inside, skeleton, write_skeletons

EXTRA_TARGETS = ("prompt", "tier:warning-threshold")
CONTROL_OK = ("survived", "undecided")  # PASS, or a statistical INCONCLUSIVE: never a failing suite


@dataclass
class MutateRequest:
    repo: Path
    config_path: Path | None = None
    agent: str | None = None  # None: the config's agent.name
    jobs: int = 1  # mutants at once
    cache: bool = False
    cache_dir: Path | None = None
    max_cost: float | None = None
    shard: str | None = None  # K/N
    only_rules: list[str] = field(default_factory=list)
    out: Path | None = None  # default <reports>/mutate-<run id>/
    timeout_s: float = 1800.0
    progress: Callable[[str], None] | None = None  # a line at each run's start and end, and every progress_s
    progress_s: float = 10.0


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'2/4' -> (2, 4); a malformed value is an input error."""
    if text is None:
        return None
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise GateInputError("--shard", "", f"{text!r} is not K/N with 1 <= K <= N", "use e.g. --shard 1/4")
    return int(match.group(1)), int(match.group(2))


def _settings(request: MutateRequest, loaded: Loaded) -> RunSettings:
    cache_dir = None
    if request.cache or request.cache_dir is not None:
        from rubricgate.runner.cache import resolve_cache_dir

        cache_dir = resolve_cache_dir(request.repo, loaded.config.cache_dir, request.cache_dir)
    return RunSettings(agent=request.agent, config=_config_arg(request), jobs=request.jobs, cache_dir=cache_dir,
                       max_cost=request.max_cost, timeout_s=request.timeout_s, reports=loaded.config.reports,
                       exclude=tuple(loaded.config.suite.workspace_exclude))


def _config_arg(request: MutateRequest) -> str | None:
    """--config as each copy's run takes it: inside the repository, the same file in the copy."""
    if request.config_path is None:
        return None
    path = request.config_path.resolve()
    repo = request.repo.resolve()
    return path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)


def _check_rules(request: MutateRequest, loaded: Loaded) -> None:
    for rid in request.only_rules:
        if rid not in loaded.rubric.rules and rid not in EXTRA_TARGETS:
            raise GateInputError("--only-rules", "", f"unknown rule {rid!r}",
                                 f"use ids from {loaded.rubric.ids_from}, or {' / '.join(EXTRA_TARGETS)}")


def _chosen(request: MutateRequest, mutants: list[Mutant]) -> list[Mutant]:
    """The mutants --only-rules and --shard select; none is bad input naming the flag that left none."""
    chosen = select(mutants, request.only_rules, None)
    if not chosen:
        raise GateInputError("--only-rules", "", "no mutant to run", "name rules the rubric has, or drop --only-rules")
    sharded = select(chosen, [], parse_shard(request.shard))
    if not sharded:
        raise GateInputError("--shard", "", f"shard {request.shard} has no mutant: only {len(chosen)} are selected",
                             f"use at most {len(chosen)} shards")
    return sharded


def _check_out(request: MutateRequest, loaded: Loaded) -> None:
    """--out holds the skeletons, which never go into the suite (a skeleton would become a case)."""
    if request.out is not None:
        suite = loaded.config.suite
        refuse_inside(request.out, [request.repo / suite.fixtures, request.repo / suite.tasks], "--out",
                      "give a folder outside it (default: <reports>/mutate-<id>/)")


def mutate(request: MutateRequest) -> tuple[MutationReport, Path]:
    """Run every selected mutant; returns the report and the folder it was written to."""
    loaded = load_all(request.repo, request.config_path)
    _check_rules(request, loaded)
    _check_out(request, loaded)  # before any run: refused after them, every result was lost
    cfg = loaded.config.reviewer
    mutants, skipped = all_mutants(request.repo, loaded.rubric, cfg.rubric, cfg.prompt)
    chosen = _chosen(request, mutants)
    settings = _settings(request, loaded)
    started = time.monotonic()
    agent = request.agent or loaded.config.agent.name
    with Progress(request.progress or (lambda line: None), len(chosen), request.progress_s) as progress:
        control = reported(lambda: run_one(request.repo, None, settings, request.max_cost), "control", progress)
        if control.status not in CONTROL_OK:
            raise GateInputError("rubricgate run", "", f"the unmutated suite does not pass ({control.detail})",
                                 "make `rubricgate run` pass first: a mutant is judged against a green suite")
        outcomes, interrupted = run_all(request.repo, chosen, settings, progress)
    out = request.out or request.repo / loaded.config.reports / f"mutate-{new_run_id()}"
    report = _report(request, loaded, agent, outcomes, skipped, out, control, time.monotonic() - started)
    report.interrupted = interrupted
    out.mkdir(parents=True, exist_ok=True)  # no survivor, no skeleton folder to have made it
    write_json_atomic(out / "mutation.json", report.model_dump(mode="json"))
    return report, out


def _report(request: MutateRequest, loaded: Loaded, agent: str, outcomes: list[Outcome], skipped, out: Path,
            control: Outcome, wall_s: float) -> MutationReport:
    folders = _skeletons(request, loaded, outcomes, out)
    results = [result(o, loaded.rubric, agent, folders.get(o.mutant.rule, ""), _expecting(loaded, o.mutant.rule))
               for o in outcomes]
    selected = {o.mutant.rule for o in outcomes}
    return MutationReport(agent=agent, jobs=request.jobs, shard=request.shard or "", mutants=results,
                          control_status=control.status, undecided=sum(o.status == "undecided" for o in outcomes),
                          skipped=[SkippedMutant(id=s.id, rule=s.rule, reason=s.reason) for s in skipped
                                   if s.rule in selected or not request.only_rules],
                          killed=sum(o.status in ("killed", "rejected") for o in outcomes), score=score(outcomes),
                          mechanical_score=score([o for o in outcomes if mechanical(o, loaded.rubric)]),
                          control_seconds=round(control.seconds, 3), wall_seconds=round(wall_s, 3))


def _expecting(loaded: Loaded, rule: str) -> list[str]:
    """The cases that expect a finding of `rule`: a survivor's explanation must not ask for one."""
    return [c.id for c in loaded.cases if rule in c.expect.rules]


def _skeletons(request: MutateRequest, loaded: Loaded, outcomes: list[Outcome], out: Path) -> dict[str, str]:
    """A fixture skeleton per rule with a surviving (or only flagged) mutant, under out/skeletons/."""
    rules = sorted({o.mutant.rule for o in outcomes if o.status in ("survived", "flagged")
                    and o.mutant.rule in loaded.rubric.rules})
    made = [skeleton(loaded.rubric.rules[r], loaded.rubric, loaded.config.suite.layout) for r in rules]
    suite = loaded.config.suite
    # keep_edited: a skeleton edited since an earlier mutate into this --out is the user's work, and
    # refusing it here, after every mutant ran, would lose the report.
    folders = write_skeletons(out / "skeletons", made, [request.repo / suite.fixtures, request.repo / suite.tasks],
                              keep_edited=True)
    return {sk.rule: str(folder) for sk, folder in zip(made, folders, strict=True)}


def report_lines(report: MutationReport, out: Path) -> list[str]:
    """The terminal summary: score, survivors with their rule and why, skipped mutants."""
    pct = lambda x: "n/a" if x is None else f"{x:.1%}"  # noqa: E731
    ran = [m for m in report.mutants if m.status not in ("error", "not_run", "undecided")]
    undecided = (f"; {report.undecided} undecided (the gate could not settle them within the budget)"
                 if report.undecided else "")
    lines = [f"mutation score {pct(report.score)} ({report.killed}/{len(ran)} mutants caught), "
             f"mechanical rules {pct(report.mechanical_score)}; {len(report.skipped)} skipped{undecided}; "
             f"wall {report.wall_seconds:.1f} s at --jobs {report.jobs}"]
    if report.control_status == "undecided":
        lines.append("note: the unmutated run was undecided (INCONCLUSIVE): "
                     "each mutant was decided by the gate on its own")
    for m in report.mutants:
        if m.status not in ("killed", "rejected"):
            lines.append(f"  {m.status:<8} {m.id}: {m.description} - {m.explanation or m.detail}")
            if m.skeleton:
                lines.append(f"           skeleton: {m.skeleton}/")
    lines += [f"  skipped  {s.id}: {s.reason}" for s in report.skipped]
    cached = sum(m.cached_trials for m in report.mutants)
    if cached:
        lines.append(f"{cached} of {sum(m.trials for m in report.mutants)} mutant trials replayed from the trial cache")
    lines.append(f"report: {printable(str(out / 'mutation.json'))}")
    return lines
