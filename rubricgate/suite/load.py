"""The load stage: config, rubric, cases and baseline, with every problem reported."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rubricgate.errors import GateInputError, GateInputErrors, collect
from rubricgate.models import dimensions
from rubricgate.models.baseline import Baseline
from rubricgate.models.case import CaseSpec
from rubricgate.models.config import Config
from rubricgate.suite.answer_key import config_rel_of
from rubricgate.suite.baseline_file import load_baseline
from rubricgate.suite.cases import load_suite
from rubricgate.suite.config import load_config
from rubricgate.suite.rubric import RubricSpec, Rule, load_rubric, vocabulary_from
from rubricgate.suite.rule_table import check_rule_map, table_rubric
from rubricgate.suite.sparse import sparse_errors
from rubricgate.suite.verdict_hook import load_hook


@dataclass
class Loaded:
    """Everything the load stage produced."""

    config: Config
    rubric: RubricSpec
    cases: list[CaseSpec]
    baseline: Baseline | None
    # Filled by gating/case_edits.py before a run: each case's digest, and the baseline cases set
    # aside because they were edited since it was measured (`baseline` is then without them).
    case_digests: dict[str, str] = field(default_factory=dict)
    edited: list[str] = field(default_factory=list)


def load_all(repo: Path, config_path: Path | None = None, require_baseline: bool = True,
             reviewer_from: Config | None = None, foreign_rules: Sequence[Rule] = (),
             only: Sequence[str] = ()) -> Loaded:
    """Load config, rubric, cases and baseline; raise GateInputErrors listing every problem.
    `reviewer_from`: a config whose reviewer runs in place of the file's (suite/config.py load_config);
    `foreign_rules`: rules the rubric lacks that cases may expect (runner/options.py RunOptions):
    known to the cases' checks only, never to grading (a finding citing one stays an unknown rule);
    `only`: the case-id substrings a run selects: every case is loaded and checked, but only
    theirs are read for LFS pointers (suite/reviewed_lfs.py), the cases a run reviews."""
    config = load_config(repo, config_path, reviewer_from)
    errors: list[GateInputError] = sparse_errors(repo, config)  # a case off disk was no case at all
    rubric = collect(errors, lambda: reviewer_rubric(repo, config))
    config_rel = config_rel_of(repo, config_path)
    cases = collect(errors, lambda: load_suite(repo, config, with_rules(rubric, foreign_rules), config_rel,
                                                       only)) or []
    errors += unseen_dimensions(config, cases, config_rel or str(config_path))
    baseline = None
    if require_baseline:
        ids = None if errors else [c.id for c in cases]  # a case that did not load is not unknown
        baseline = collect(errors, lambda: load_baseline(repo / config.baseline, config.baseline, case_ids=ids))
    if errors or rubric is None:  # no rubric: its problem is in `errors`
        raise GateInputErrors(errors)
    return Loaded(config, rubric, cases, baseline)


def unseen_dimensions(config: Config, cases: Sequence[CaseSpec], display: str) -> list[GateInputError]:
    """A dimension gate.dimensions names that no case's reviewer can show (tool calls, turns of an
    answer-only `command` reviewer): graded on nothing, it would pass every trial and be gated as
    if it had been measured."""
    if config.gate.dimensions is None or not cases:
        return []
    agents = {c.agent or config.agent.name for c in cases}
    shown = {seen for agent in agents for seen in dimensions.observed_by(agent, config.agent.format)}
    why = f"agent {config.agent.name}, format {config.agent.format or 'text'} prints its answer alone"
    return [GateInputError(display, "gate.dimensions", f"{d} cannot vary: the reviewer's transcript shows no "
                           f"{dimensions.spec(d).observes.replace('_', ' ')} ({why})", f"drop {d} from gate.dimensions")
            for d in config.gate.dimensions if dimensions.spec(d).observes not in shown]


def unseen_case_rubrics(config: Config, cases: Sequence[CaseSpec]) -> list[str]:
    """Warnings for cases whose own rubric.tool_use or rubric.trajectory (one differing from the
    config's default) their reviewer's transcript cannot show: an answer-only `command` reviewer
    prints no tool call and no turn, so the check the task writes is never made (a recorded task
    carries its own rubric; not an error, so a suite can change reviewer without editing each)."""
    warnings = []
    for d in dimensions.REGISTRY:
        if d.rubric is None:
            continue
        default = getattr(config.rubric, d.rubric)
        unseen = [c.id for c in cases if getattr(c.rubric, d.rubric) not in (None, default)
                  and d.observes not in dimensions.observed_by(c.agent or config.agent.name, config.agent.format)]
        if unseen:
            warnings.append(f"{len(unseen)} case(s) set their own rubric.{d.rubric}, never graded: the reviewer's "
                            f"transcript shows no {d.observes.replace('_', ' ')} (agent {config.agent.name}, format "
                            f"{config.agent.format or 'text'}): {', '.join(unseen[:3])}"
                            + (f" and {len(unseen) - 3} more" if len(unseen) > 3 else ""))
    return warnings


def with_rules(rubric: RubricSpec | None, rules: Sequence[Rule]) -> RubricSpec | None:
    """The rubric knowing `rules` too (what the cases' rule ids are checked against); its own rule
    of an id wins."""
    if rubric is None or not rules:
        return rubric
    return replace(rubric, rules={**{r.id: r for r in rules}, **rubric.rules})


def reviewer_rubric(repo: Path, config: Config) -> RubricSpec:
    """The reviewer's rules: rubricgate.yaml's `verdict.rules` when they carry severities, else the
    rubric file's table (which `verdict.rules` then maps finding titles onto); a verdict hook is
    loaded here, so a broken one is an input error before anything runs."""
    vocabulary = vocabulary_from(config.tiers)
    verdict = config.verdict
    if verdict is not None and verdict.hook is not None:
        load_hook(verdict.hook)
    if verdict is not None and verdict.defines_rules():
        return table_rubric(repo, config, vocabulary)
    rubric = load_rubric(repo / config.reviewer.rubric, config.reviewer.rubric, vocabulary)
    if verdict is not None and verdict.rules:
        check_rule_map(verdict, rubric)
    return rubric
