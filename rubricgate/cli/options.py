"""What several command modules share: the --repo/--config options and the exit-2 error printer.

Kept apart from cli/core.py so a light command (`changed`) does not import the suite loader,
the agent adapters and the terminal report with them (bench/startup.py).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import NoReturn

import click

from rubricgate import exitcodes
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.models.bounds import MAX_TRIALS
from rubricgate.suite.config import find_repo


def fail_input(exc: GateInputError | GateInputErrors) -> NoReturn:
    """Print one line per problem and exit 2: never a traceback."""
    errors = exc.errors if isinstance(exc, GateInputErrors) else [exc]
    for err in errors:
        click.echo(f"error: {err.one_line()}", err=True)
    sys.exit(exitcodes.CANNOT_JUDGE)


def repo_root(repo: Path | None) -> Path:
    """--repo, else the nearest folder (from the working directory up) holding rubricgate.yaml."""
    return (repo or find_repo(Path.cwd())).resolve()


repo_option = click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=None,
                           help="Repository root (default: nearest folder with rubricgate.yaml).")
config_option = click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                             default=None, help="Config file (default: <repo>/rubricgate.yaml).")


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange that also refuses nan and infinities: nan compares false with both
    bounds, so `--target nan` passed the range and `--max-cost nan` never stopped a run."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value} is not a finite number", param, ctx)
        return number


# Every --trials flag: at most what rubricgate.yaml's trials and gate.max_trials_per_case allow, so
# a typo is refused before anything is planned (`--trials 100000000` grew by 70 MB a second).
TRIALS = click.IntRange(min=1, max=MAX_TRIALS)


class CaseText(click.ParamType):
    """--only's text: part of a case id. Empty, it would be in every id and select them all."""

    name = "text"

    def convert(self, value, param, ctx):
        if not str(value).strip():
            self.fail("an empty text is part of every case id; give part of the ids to run", param, ctx)
        return value


CASE_TEXT = CaseText()
