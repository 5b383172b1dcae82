"""`compare --base REF`: the suite with the reviewer at REF and as in the working tree.

"At REF" is where HEAD forked from REF: their merge base (compare_trees.BaseTrees), as `changed`
diffs against, so a reviewer change REF made after the fork is not read as the pull request's;
REF's tip still supplies the gate settings and the baseline's citations that judge it.

The reviewer is its whole closure (suite/closure.py): the prompt, skill and rubric and every
repository file they reference, so a policy the prompt links to is at REF on the base side too.

Base and head trials are interleaved: the run is split into rounds of one trial per case, and in
each round the base and head runs go in a random order drawn from a recorded seed, so anything
that drifts during the run (API behaviour, rate limiting, a warming cache) falls on both sides
alike instead of reading as a reviewer change. Each round is an ordinary `run_suite` call (the
runner is not changed); the rounds of a side are merged into one summary for the comparison.
Under the statistical gate the rounds are adaptive, as `run`'s are: a look after the first K
rounds (K = --trials or the config's `trials`, as `run`'s first round), then after every round
of both sides, stopping at the first that decides, at most gate.max_trials_per_case rounds
(gating/paired.py). The strict gate (or K at least the budget) runs K rounds and looks once.
Per-task `trials:` is not used here. Round r runs trial number r, so with --cache (answers
keyed by trial index) the rounds replay different answers and stay interleaved too.
An INCONCLUSIVE comparison says what to run next (a warning 'next: ...'): a comparison is not
continued, so a fresh one with the rounds at which these rates would decide, or cases to add.
"""

from __future__ import annotations

import random
import secrets
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.flows.compare_config import config_as_written, config_relpath, gate_at_base, reviewer_at_base
from rubricgate.flows.compare_scope import (
    Unseen,
    blank_dimensions,
    case_ids,
    edited_cases,
    grading_changes,
    judged_cases,
    load_sides,
    pr_rule_changes,
    replayed_cases,
    rules_base_lacks,
    rules_base_lacks_line,
    scoped,
    unrecorded_edits,
)
from rubricgate.flows.compare_trees import BaseTrees, base_checkout, base_trees
from rubricgate.gating.compare import (
    MOST_SCALE,
    Comparison,
    Counts,
    compare_summaries,
    one_sided,
    rounds_to_decide,
    summary_counts,
    unjudged_comparison,
)
from rubricgate.gating.paired import PairedDesign, PairedLook, paired_design
from rubricgate.gating.stats import counted
from rubricgate.models.config import Config, GateConfig
from rubricgate.models.results import Decision, Summary
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.records.files import new_run_id
from rubricgate.runner.cache import resolve_cache_dir
from rubricgate.suite.config import CONFIG_NAME, load_config
from rubricgate.suite.load import load_all
from rubricgate.suite.rubric import Rule

SIDES = ("base", "head")


@dataclass
class PairedOutcome:
    comparison: Comparison
    base_run_dir: Path
    head_run_dir: Path


def paired_run(options: RunOptions, ref: str, method: str | None = None,
               listeners: Callable[[str], list] | None = None, seed: int | None = None) -> PairedOutcome:
    """Run the suite with the reviewer at REF and as in the working tree, interleaved; compare.

    `method` overrides gate.method from rubricgate.yaml; `listeners(label)` makes fresh progress
    listeners for each run; `seed` fixes the interleaving (drawn and recorded when None).
    """
    seed = secrets.randbits(32) if seed is None else seed
    repo = options.repo
    with base_trees(repo, ref) as trees:
        ref_tree = trees.fork  # the base side's reviewer and cases: where HEAD forked from REF
        rounds = _paired_rounds(options, ref, method, listeners, seed, trees)
        config = rounds.config
        # REF's cases where REF keeps them: a PR that moves the suite folders must not hide the ones it deletes.
        base_ids, head_ids = case_ids(ref_tree, rounds.at_ref or config), case_ids(repo, config)
        removed = sorted(base_ids - head_ids)
        rounds.judged, judged_note = judged_cases(base_ids, head_ids)
        configs = {"base": config.with_reviewer_of(rounds.at_ref), "head": config}
        with base_checkout(repo, ref_tree, configs, trees.name(ref), {config.reports.split("/")[0]},
                           (config.suite.tasks, config.suite.fixtures),
                           config_relpath(repo.resolve(), rounds.options.config_path), rounds.at_ref) as base_repo:
            head_baseline_loads(repo, config)  # after the checks on the sides, before any trial
            rounds.foreign = rules_base_lacks(base_repo, repo, rounds.options.config_path, rounds.at_ref)
            rounds.base_notes += rules_base_lacks_line(rounds.foreign, trees.name(ref))
            rounds.run({"base": base_repo, "head": repo})
            sides = load_sides({"base": base_repo, "head": repo}, rounds.options.config_path, rounds.at_ref,
                               rounds.foreign, cited=trees.tip / (rounds.at_tip or config).baseline)
        edited = edited_cases(ref_tree, rounds.at_ref, rounds.config_rel, repo, sides[1] if sides else None)
    comparison = rounds.conclusion()
    last = {side: runs[-1] if runs else None for side, runs in rounds.ran.items()}
    ran = {c.id for c in last["head"].cases} if last["head"] else None
    unseen = Unseen(changes=pr_rule_changes(sides, ran), removed=removed, regraded=rounds.regraded,
                    config_changed=rounds.config_changed,
                    edited=edited, unrecorded=unrecorded_edits(edited, sides[1] if sides else None, repo),
                    replayed=replayed_cases(sides, options.agent),
                    blank=blank_dimensions(rounds.judged_counts("base")) if rounds.ran["base"] else [],
                    one_sided=one_sided(rounds.judged_counts("base"), rounds.judged_counts("head"))
                    if rounds.ran["base"] and rounds.ran["head"] else [])
    comparison.decision = scoped(comparison.decision, last["base"], last["head"], unseen, rounds.gate)
    comparison.decision = _next_step(comparison, rounds, options, ref, method)
    comparison.decision.warnings[:0] = rounds.base_notes + ([judged_note] if judged_note else [])
    return PairedOutcome(comparison, rounds.out / "base", rounds.out / "head")


@dataclass
class _PairedRounds:
    """One comparison as it runs: its plan (the rounds' order, the gate, where runs go) and what
    its rounds have shown so far."""

    options: RunOptions
    config: Config
    gate: GateConfig
    labels: dict[str, str]
    out: Path
    cache_dir: Path | None
    fresh: Callable[[str], list]
    first: int  # trials before the first look (--trials or the config's `trials`)
    adaptive: bool
    schedule: list[list[str]]
    seed: int
    at_ref: Config | None = None  # the merge base's config as written: the base side runs its reviewer
    at_tip: Config | None = None  # REF's own: its gate decides, its baseline's citations count (BaseTrees)
    config_rel: str | None = None  # the config's path in the repository as given (config_relpath)
    config_changed: bool = False  # this checkout's config sets the reviewer up otherwise (reviewer_at_base)
    base_notes: list[str] = field(default_factory=list)  # where the base's settings differ from this checkout's
    regraded: list[str] = field(default_factory=list)  # how this checkout grades answers otherwise (grading_changes)
    ran: dict[str, list[Summary]] = field(default_factory=lambda: {side: [] for side in SIDES})
    design: PairedDesign | None = None
    comparison: Comparison | None = None  # the last look's
    stopped_at: tuple[str, int] | None = None  # the side and round an interrupt stopped
    spent: float = 0.0  # --max-cost is one budget for the whole comparison, every side and round
    judged: set[str] | None = None  # the cases the tests are on (judged_cases); None: every case
    foreign: list[Rule] = field(default_factory=list)  # rules the base side grades by that REF lacks (rules_base_lacks)

    def run(self, roots: dict[str, Path]) -> None:
        """Each round's sides in their order, until a look decides, the rounds end or an interrupt."""
        current = self.schedule[0][0], 1
        try:
            for r, order in enumerate(self.schedule, 1):
                for side in order:
                    current = side, r
                    self._run_side(roots[side], side, r)
                if self._decided_at(r):
                    return
        except KeyboardInterrupt:  # Ctrl-C / SIGTERM: no further side, round or trial starts
            self.stopped_at = current

    def _run_side(self, root: Path, side: str, r: int) -> None:
        many = len(self.schedule) > 1  # interleaved: one trial a case per round, numbered r
        try:
            outcome = self._run_suite(root, side, r, many)
        except (GateInputError, GateInputErrors) as exc:
            if side != "base":
                raise
            # The base side loads this checkout's suite with REF's reviewer: say which side refused
            # it, unless this checkout's own side refuses the same (its own files are at fault).
            load_all(self.options.repo, self.options.config_path, require_baseline=False, only=self.options.only)
            raise GateInputErrors([GateInputError(e.file, e.field, f"{e.problem}, with the reviewer at the base "
                                                  f"side ({self.labels['base']})", e.fix) for e in _listed(exc)])
        self.spent += budget_spent(outcome.summary)
        self.ran[side].append(outcome.summary)
        if outcome.interrupted:  # the run caught it and kept a partial summary
            raise KeyboardInterrupt

    def _run_suite(self, root: Path, side: str, r: int, many: bool):
        return run_suite(replace(
            self.options, repo=root, reports_dir=self.out / side, trials=1 if many else self.first,
            reviewer_from=self.at_ref if side == "base" else None,
            foreign_rules=tuple(self.foreign) if side == "base" else (),
            first_trial=r if many else 1, listeners=self.fresh(_label(self.labels[side], r, len(self.schedule))),
            require_baseline=False, cache_dir=self.cache_dir,
            max_cost=budget_left(self.options.max_cost, self.spent)))

    def _decided_at(self, r: int) -> bool:
        """Look if round r is one of the design's looks (a look after the first `first` rounds,
        then after every round); True once a look decides."""
        if not self.adaptive:
            return False
        cases = sum(self.judged is None or c.id in self.judged for c in self.ran["head"][0].cases)
        self.design = self.design or paired_design(cases, self.first, len(self.schedule), self.gate,
                                                   len(self.config.graded_dimensions()))
        k = self.design.index(r)
        if k is not None:
            self.comparison = _compare(self.ran, self.gate, self.labels, self.design.look(k), self.judged)
        return self.comparison is not None and self.comparison.decision.status != "inconclusive"

    def judged_counts(self, side: str) -> Counts:
        """A side's counts over its rounds so far, on the judged cases."""
        counts = summary_counts(merge_rounds(self.ran[side]))
        return counts if self.judged is None else {c: dims for c, dims in counts.items() if c in self.judged}

    def conclusion(self) -> Comparison:
        """The comparison as it ended: the deciding look, an interrupted one (exit 2), or the one look
        of a fixed design; with the order the rounds ran in."""
        if self.stopped_at is not None:  # a side may have no round at all: nothing to compare
            sides = {s: merge_rounds(self.ran[s]) if self.ran[s] else None for s in SIDES}
            line = interrupted_line(self.ran, self.stopped_at, len(self.schedule), self.adaptive)
            comparison = unjudged_comparison(sides["base"], sides["head"], [line], self.gate,
                                             self.labels["base"], self.labels["head"])
        else:
            comparison = self.comparison or _compare(self.ran, self.gate, self.labels, judged=self.judged)
        rounds = max(len(self.ran["base"]), len(self.ran["head"]), self.stopped_at[1] if self.stopped_at else 0)
        comparison.order = {"seed": self.seed, "interleaved": len(self.schedule) > 1,
                            "cached": self.cache_dir is not None,
                            "rounds": self.schedule[:rounds], "adaptive": self.adaptive,
                            "looks": list(self.design.looks) if self.design else [len(self.schedule)]}
        return comparison


def _paired_rounds(options: RunOptions, ref: str, method: str | None,
                   listeners: Callable[[str], list] | None, seed: int, trees: BaseTrees) -> _PairedRounds:
    """The comparison's plan from the config and flags: adaptive rounds under the statistical gate,
    REF's gate settings deciding (gate_at_base), the base side running the merge base's reviewer."""
    repo = options.repo
    config_path = (options.config_path or repo / CONFIG_NAME).resolve()
    config = load_config(repo, config_path)
    # Both configs as their files say (load_config makes some paths absolute): compared key by key.
    config_rel = config_relpath(repo, options.config_path)
    at_ref, as_written = config_as_written(config_rel, trees.fork, trees.name(ref)), config_as_written(config_rel, repo)
    at_tip = at_ref if trees.tip == trees.fork else config_as_written(config_rel, trees.tip, ref)
    base_gate, gate_note = gate_at_base(at_tip, ref, config.gate)
    reviewer_note = reviewer_at_base(at_ref, trees.name(ref), as_written or config)
    config = config.model_copy(update={"gate": base_gate})
    gate = config.gate.model_copy(update={"method": method}) if method else config.gate
    first = options.trials or config.trials
    adaptive = gate.method == "statistical" and first < gate.max_trials_per_case
    return _PairedRounds(
        options=replace(options, config_path=config_path, gate=gate), config=config, gate=gate,
        at_ref=at_ref, at_tip=at_tip, config_rel=config_rel, config_changed=bool(reviewer_note),
        base_notes=[n for n in (gate_note, reviewer_note) if n],
        regraded=grading_changes(at_ref, as_written, trees.fork, repo),
        labels={"base": trees.label(ref), "head": "working tree"},
        out=options.reports_dir or repo / config.reports / f"compare-{new_run_id()}",
        cache_dir=resolve_cache_dir(repo, config.cache_dir, options.cache_dir) if options.cache else None,
        fresh=listeners or (lambda label: list(options.listeners)), first=first, adaptive=adaptive,
        schedule=interleaving(seed, gate.max_trials_per_case if adaptive else first), seed=seed)


def head_baseline_loads(repo: Path, config) -> None:
    """This checkout's baseline.json, when it has one, loads (else the one-line error, exit 2). The
    comparison judges without it, but the pull request carries it: one that broke it passed the
    gate (exit 0) and the job failed later in `report` with "no run with a summary.json here"."""
    from rubricgate.suite.baseline_file import load_baseline

    path = repo / config.baseline
    if path.exists():
        load_baseline(path, config.baseline)


def _listed(exc: GateInputError | GateInputErrors) -> list[GateInputError]:
    return exc.errors if isinstance(exc, GateInputErrors) else [exc]


def interrupted_line(rounds: dict[str, list[Summary]], at: tuple[str, int], total: int, adaptive: bool) -> str:
    """What an interrupted comparison ran, in one line: where it stopped, the trials each side ran."""
    side, r = at
    where = f"the {side} side" + (f", round {r} of {total}" if total > 1 else "")
    cases = next((len(s.cases) for s in rounds["base"] + rounds["head"]), None)
    if cases is None:
        return f"comparison interrupted during {where}, before any trial ran; nothing is decided"
    most = ("up to " if adaptive else "") + str(cases * total)
    ran = {s: sum(counted(t) or t.errored for summary in rounds[s] for c in summary.cases for t in c.trials)
           for s in SIDES}
    return (f"comparison interrupted during {where}: {ran['base']} of {most} base trials and {ran['head']} of "
            f"{most} head trials ran; nothing is decided")


def budget_left(max_cost: float | None, spent: float) -> float | None:
    """What a comparison's next run may spend: --max-cost less what its earlier runs spent (each run
    would otherwise get the whole budget, and a comparison spend 2 x rounds times it)."""
    return None if max_cost is None else max(0.0, max_cost - spent)


def budget_spent(summary: Summary) -> float:
    """What one run of the comparison spent against its budget (none set: nothing counted)."""
    return float((summary.cost.get("budget") or {}).get("spent_usd") or 0.0)


def _next_step(comparison: Comparison, rounds: _PairedRounds, options: RunOptions, ref: str,
               method: str | None) -> Decision:
    """An undecided comparison names what to run next: a fresh one with more rounds (one look
    after them), or, when more rounds at these rates would not decide, more cases."""
    decision = comparison.decision
    if decision.status != "inconclusive" or not any(t.status == "inconclusive" for t in comparison.tests):
        return decision
    ran = len(rounds.ran["head"])
    need = rounds_to_decide(rounds.judged_counts("base"), rounds.judged_counts("head"), ran, rounds.gate)
    command = " ".join(["rubricgate compare --base", shlex.quote(ref),
                        *([f"--config {shlex.quote(str(options.config_path))}"] if options.config_path else []),
                        *([f"--method {method}"] if method else []),
                        *([f"--agent {shlex.quote(options.agent)}"] if options.agent else []),
                        *(f"--only {shlex.quote(o)}" for o in options.only)])
    line = (f"next: a comparison is not continued; run a fresh one with more rounds: {command} --trials {need} "
            f"(at the rates these {ran} rounds showed, {need} rounds decide, one look after them), or add cases"
            if need else
            f"next: a comparison is not continued, and even {MOST_SCALE * ran} rounds at the rates these {ran} rounds "
            "showed would not decide: add cases (`rubricgate plan` shows what would reach the margin)")
    return decision.model_copy(update={"warnings": [*decision.warnings, line]})


def _compare(rounds: dict[str, list[Summary]], gate: GateConfig, labels: dict[str, str],
             look: PairedLook | None = None, judged: set[str] | None = None) -> Comparison:
    """Base against head over the rounds so far (`look`: the levels of an adaptive look; `judged`:
    the cases the tests are on, judged_cases)."""
    return compare_summaries(merge_rounds(rounds["base"]), merge_rounds(rounds["head"]), gate, labels["base"],
                             labels["head"], look, judged)


def interleaving(seed: int, trials: int, interleave: bool = True) -> list[list[str]]:
    """The order of the runs: per round (one trial per case), base and head in a seeded random order."""
    if not interleave or trials < 2:
        return [list(SIDES)]
    rng = random.Random(seed)
    return [rng.sample(SIDES, 2) for _ in range(trials)]


def merge_rounds(summaries: list[Summary]) -> Summary:
    """One side's rounds as one summary: each case's trials concatenated and renumbered 1..K.

    Only what the comparison reads is merged (cases, errored trials, completeness and the first
    incomplete round's decision, run ids); the per-round
    summaries on disk keep their own rates and reports.
    """
    if len(summaries) == 1:
        return summaries[0]
    cases: dict = {}
    incomplete = [s for s in summaries if not s.complete]
    for summary in summaries:
        for case in summary.cases:
            merged = cases.setdefault(case.id, case.model_copy(update={"trials": []}))
            start = len(merged.trials)
            merged.trials.extend([t.model_copy(update={"trial": start + i + 1}) for i, t in enumerate(case.trials)])
    return summaries[0].model_copy(update={"cases": list(cases.values()), "complete": not incomplete,
                                           "decision": (incomplete or summaries)[0].decision,
                                           "errored": [e for s in summaries for e in s.errored],
                                           "run_id": "+".join(s.run_id for s in summaries)})


def _label(side: str, r: int, total: int) -> str:
    return side if total == 1 else f"{side}, round {r}/{total}"
