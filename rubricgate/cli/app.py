"""The root click group."""

from __future__ import annotations

import os
import sys

import click

from rubricgate import __version__, exitcodes


class GateGroup(click.Group):
    """Any unexpected error becomes one line and exit 2: the gate could not judge.

    A traceback is never the user interface; RUBRICGATE_DEBUG=1 shows it for bug reports.
    """

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("RUBRICGATE_DEBUG") == "1":
                raise
            click.echo(f"error: internal error: {type(exc).__name__}: {exc} "
                       "(fix: rerun with RUBRICGATE_DEBUG=1 and report the traceback)", err=True)
            sys.exit(exitcodes.CANNOT_JUDGE)


@click.group(cls=GateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rubricgate")
def main() -> None:
    """Gate changes to an agent reviewer's rubric and prompt against a baseline."""
