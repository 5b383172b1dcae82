"""Command: merge (join the partial runs of `run --shard K/N` and gate the whole)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rubricgate.cli.app import main
from rubricgate.cli.options import config_option, fail_input, repo_option
from rubricgate.cli.options import repo_root as _repo
from rubricgate.errors import GateInputError, GateInputErrors


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@repo_option
@config_option
def merge(run_dirs, repo, config_path) -> None:
    """Join the shards of one run into one run and gate it, as if one machine had run every trial.

    Exits 2 when a shard is missing, given twice, or ran other inputs (config, baseline, reviewer,
    versions, options) than the rest or than this repository holds.
    """
    from rubricgate.fleet.merge import merge_runs
    from rubricgate.reports.terminal import render_terminal

    try:
        merged = merge_runs(_repo(repo), list(run_dirs), config_path)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    click.echo(render_terminal(merged.summary, str(merged.run_dir)))
    sys.exit(merged.summary.decision.exit_code)
