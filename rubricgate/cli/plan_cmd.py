"""`rubricgate plan`: what the statistical gate can show at this size, without running anything."""

from __future__ import annotations

import json
from dataclasses import replace

import click

from rubricgate.cli.app import main
from rubricgate.cli.options import CASE_TEXT, TRIALS, FiniteFloatRange, config_option, fail_input, repo_option
from rubricgate.cli.options import repo_root as _repo
from rubricgate.errors import GateInputError, GateInputErrors


@main.command()
@repo_option
@config_option
@click.option("--trials", type=TRIALS, default=None,
              help="Trials per case in the first round (default: the config's trials).")
@click.option("--only", multiple=True, type=CASE_TEXT, help="Plan only cases whose id contains this text (repeatable).")
@click.option("--target", type=FiniteFloatRange(0.0, 1.0, min_open=True), default=None,
              help="A drop (fraction, above gate.margin) to ask what reaches it; default gate.margin + 0.05, "
                   "at most 1.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(repo, config_path, trials, only, target, as_json) -> None:
    """Smallest drop the statistical gate detects per dimension at this size, and what would reach a target."""
    from rubricgate.gating.planning import prior_plan, suite_plan
    from rubricgate.suite.load import load_all

    try:
        loaded = load_all(_repo(repo), config_path, require_baseline=False)
        loaded = replace(loaded, baseline=_baseline(loaded, _repo(repo)))
        _check_target(target, loaded.config.gate.margin)
        cases = [c.id for c in loaded.cases if not only or any(s in c.id for s in only)]
        first, dims = trials or loaded.config.trials, loaded.config.graded_dimensions()
        found = suite_plan(loaded.baseline, cases, loaded.config.gate, first, target, dims)
        if found is None and loaded.baseline is not None and loaded.baseline.cases:
            raise GateInputError(loaded.config.baseline, "cases", "no planned case is in the baseline",
                                 "run `rubricgate baseline update` to measure them")
        # Before the first baseline: what this many cases can show at best (a reviewer that never fails).
        found = found or prior_plan(max(len(cases), 1), loaded.config.gate, first, dims, target)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    from rubricgate.suite.coverage import coverage_lines, rule_coverage

    # What the planned cases can see at all: a rule none of them exercises has no power to plan.
    coverage = rule_coverage(loaded.rubric, [c for c in loaded.cases if c.id in set(cases)], loaded.baseline)
    if as_json:
        click.echo(json.dumps({**found.as_json(), "coverage": coverage.as_dict()}, indent=2))
    else:
        click.echo("\n".join([*found.lines(), *coverage_lines(coverage)]))


def _check_target(target: float | None, margin: float) -> None:
    """A target at or below gate.margin is no drop the gate calls a REGRESSION (its observed drop must
    exceed the margin): no number of trials reaches it, and the plan's line blamed the baseline."""
    if target is not None and target <= margin + 1e-9:
        raise GateInputError("--target", "", f"{target:g} is not above gate.margin {margin:g}: a drop of at most "
                             "the margin is never a REGRESSION", f"pass a drop above {margin:g}, at most 1")


def _baseline(loaded, root):
    """baseline.json when the file exists (a bad one is still an input error), else None: the plan
    before the first `baseline update`."""
    from rubricgate.suite.baseline_file import load_baseline

    path = root / loaded.config.baseline
    return load_baseline(path, loaded.config.baseline, case_ids=[c.id for c in loaded.cases]) if path.exists() else None
