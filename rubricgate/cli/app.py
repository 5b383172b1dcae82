"""The root click group."""

from __future__ import annotations

import click

from rubricgate import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rubricgate")
def main() -> None:
    """Gate changes to an agent reviewer's rubric and prompt against a baseline."""
