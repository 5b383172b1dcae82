"""Command: coverage (which cases exercise each rule; skeletons for the uncovered ones)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from rubricgate.cli.app import main
from rubricgate.cli.options import config_option, fail_input, repo_option, repo_root
from rubricgate.errors import GateInputError, GateInputErrors


def coverage_report(repo: Path, config_path: Path | None = None):
    """(loaded suite, Coverage, rule changes since the baseline): what `coverage` prints."""
    from rubricgate.gating.changes import rule_changes
    from rubricgate.runner.digests import recorded_digests
    from rubricgate.suite.baseline_file import load_baseline
    from rubricgate.suite.coverage import rule_coverage
    from rubricgate.suite.load import load_all

    loaded = load_all(repo, config_path, require_baseline=False)
    path = repo / loaded.config.baseline
    baseline = load_baseline(path, loaded.config.baseline) if path.is_file() else None
    digests = recorded_digests(repo, loaded.config)
    changes = rule_changes(loaded.rubric, loaded.cases, baseline, digests, loaded.config.reviewer.rubric)
    return loaded, rule_coverage(loaded.rubric, loaded.cases, baseline), changes


@main.command()
@repo_option
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the coverage table and changed rules as JSON.")
@click.option("--suggest", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Write a fixture skeleton for each uncovered rule into DIR (never into the suite).")
def coverage(repo, config_path, as_json, suggest) -> None:
    """Which cases exercise each rule; the uncovered ones; --suggest writes fixture skeletons.

    Tier-derivation rules are covered too; rules changed since the baseline are listed with their cases.
    """
    from rubricgate.gating.changes import change_line
    from rubricgate.suite.coverage import coverage_lines

    root = repo_root(repo)
    try:
        loaded, cov, changes = coverage_report(root, config_path)
        written = _suggest(root, loaded, cov, suggest) if suggest is not None else []
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    if as_json:
        click.echo(json.dumps({**cov.as_dict(), "changes": [c.model_dump() for c in changes]}, indent=2))
    else:
        click.echo("\n".join(coverage_lines(cov)))
        for change in changes:
            click.echo(f"changed: {change_line(change)}")
    for line in written:
        click.echo(line, err=as_json)


def _reviewer_folders(reviewer) -> set[Path]:
    """The folders of the prompt, skill and rubric and the one they share (reviewer/), not the root."""
    parents = {Path(rel).parent for rel in (reviewer.prompt, reviewer.skill, reviewer.rubric)}
    shared = Path(os.path.commonpath([p.as_posix() for p in parents]))
    return {p for p in (*parents, shared) if p != Path(".")}


def _suggest(root: Path, loaded, cov, out: Path) -> list[str]:
    from rubricgate.suite.skeletons import skeleton, write_skeletons

    rules = [loaded.rubric.rules[r] for r in cov.uncovered if r in loaded.rubric.rules]
    skeletons = [skeleton(rule, loaded.rubric, loaded.config.suite.layout) for rule in rules]
    forbidden = [root / loaded.config.suite.fixtures, root / loaded.config.suite.tasks]
    forbidden += [root / folder for folder in _reviewer_folders(loaded.config.reviewer)]
    folders = write_skeletons(out, skeletons, forbidden)
    lines = [f"wrote {f}/ "
             f"({'violation written out' if s.written_out else 'write the violation where its comment says'})"
             for f, s in zip(folders, skeletons, strict=True)]
    lines += [f"no skeleton for {r}: a tier-derivation rule; add a case whose findings sit at its boundary"
              for r in cov.uncovered if r not in loaded.rubric.rules]
    return lines or ["every rule is exercised: nothing to suggest"]
