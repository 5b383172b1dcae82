"""The root click group."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from typing import NoReturn, TextIO

import click

from rubricgate import __version__, exitcodes
from rubricgate.cli.console import caused_by_interrupt, interrupted_line, output_failed, say_output_failed

SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader left

# Command name -> (module that registers it on `main`, its one-line help for `--help`).
# A command's module is imported only when that command runs, so `--help` and `validate` never pay
# for numpy, the charts or the runner (bench/startup.py). tests/cli/test_app.py checks this table
# against the commands the modules really register: a new command must be listed here.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "agents": ("rubricgate.cli.agents_cmd",
               "List agent adapters: CLI found on PATH, its version, the tested range; warn outside it."),
    "baseline": ("rubricgate.cli.core", "Inspect or update baseline.json."),
    "changed": ("rubricgate.cli.changed_cmd",
                "Say whether any gated file changed since BASE; exit 2 when BASE is not in this clone."),
    "compare": ("rubricgate.cli.compare_cmd",
                "Per-case flips, the stratified exact test per dimension (Holm), and a decision."),
    "coverage": ("rubricgate.cli.coverage_cmd",
                 "Which cases exercise each rule; the uncovered ones; --suggest writes fixture skeletons."),
    "export": ("rubricgate.cli.export_cmd",
               "Write runs, cases and trials of run folders as CSV, Parquet or JSON lines (pandas frames)."),
    "init": ("rubricgate.cli.adopt_cmd", "Set up rubricgate here: config, example task and fixtures, workflows."),
    "merge": ("rubricgate.cli.merge_cmd",
              "Join the shards of one run into one run and gate it, as if one machine had run every trial."),
    "mutate": ("rubricgate.cli.mutate_cmd",
               "Mutate the rubric and prompt (delete a rule, move a severity or the threshold, drop a paragraph);"
               " report the mutation score and every surviving mutant with a fixture skeleton."),
    "plan": ("rubricgate.cli.plan_cmd",
             "Smallest drop the statistical gate detects per dimension at this size, and what would reach a target."),
    "publish": ("rubricgate.cli.reports_cmd",
                "Upsert the PR comment (edited in place on later runs) and sync the regression label."),
    "record": ("rubricgate.cli.adopt_cmd",
               "Turn a real review into a regression task: snapshot the reviewed files, write, validate, run once."),
    "regrade": ("rubricgate.cli.reports_cmd",
                "Re-grade a run's stored transcripts under the current expectations and rubric (no agent runs)."),
    "report": ("rubricgate.cli.reports_cmd",
               "Re-render report.html, comment.md and junit.xml of RUN_DIR from its summary and transcripts."),
    "run": ("rubricgate.cli.core", "Run the suite against the reviewer and gate the rates against baseline.json."),
    "schema": ("rubricgate.cli.core",
               "Print the JSON Schema of a file format (task, baseline, config, fixture expect) for editors."),
    "trend": ("rubricgate.cli.reports_cmd",
              "Rates over time from several runs' summaries; flags agent CLI version or model changes."),
    "view": ("rubricgate.cli.view_cmd",
             "Browse runs, cases across runs, comparisons, the trend, transcripts and live runs in a browser."),
    "validate": ("rubricgate.cli.core", "Load config, rubric, cases and baseline; report every problem; run nothing."),
}


@contextlib.contextmanager
def collector_paused():
    """Imports build tens of thousands of objects (pydantic models, their schemas) and none of
    them is garbage: the cyclic collector would walk them again and again (7% of start-up)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class GateGroup(click.Group):
    """Any unexpected error becomes one line and exit 2: the gate could not judge.

    A traceback is never the user interface; RUBRICGATE_DEBUG=1 shows it for bug reports.
    Subcommands load on first use (LAZY_COMMANDS).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*LAZY_COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            with collector_paused():
                importlib.import_module(LAZY_COMMANDS[cmd_name][0])  # registers it on `main`
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from the table, so `--help` imports no command module."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)  # as click.Group does
        # A placeholder Command shortens a lazy command's help by click's own rule (its helper
        # function is deprecated as public API in click 8.5) without importing the command.
        rows = [(n, (click.Command(n, help=LAZY_COMMANDS[n][1]) if n in LAZY_COMMANDS else self.commands[n])
                 .get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except BrokenPipeError:
            # The reader left (`rubricgate validate | head -1`): stop quietly as a pipeline's writer
            # does, with SIGPIPE's status; a later flush into the closed pipe must not fail again.
            to_devnull(sys.stdout)
            sys.exit(SIGPIPE_STATUS)
        except (click.Abort, KeyboardInterrupt):  # before the run could judge: never exit 1 (regression)
            _interrupted(ctx.invoked_subcommand)
        except Exception as exc:
            if caused_by_interrupt(exc):  # the interpreter wrapped it (in __set_name__: RuntimeError)
                _interrupted(ctx.invoked_subcommand)
            if output_failed(exc):  # `rubricgate validate > /dev/full`
                sys.exit(say_output_failed(exc))
            if os.environ.get("RUBRICGATE_DEBUG") == "1":
                raise
            click.echo(f"error: internal error: {type(exc).__name__}: {exc} "
                       "(fix: rerun with RUBRICGATE_DEBUG=1 and report the traceback)", err=True)
            sys.exit(exitcodes.CANNOT_JUDGE)


def _interrupted(command: str | None) -> NoReturn:
    click.echo(interrupted_line(command), err=True)
    sys.exit(exitcodes.CANNOT_JUDGE)


@click.group(cls=GateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rubricgate")
def main() -> None:
    """Gate changes to an agent reviewer's rubric and prompt against a baseline."""


def to_devnull(*streams: TextIO) -> None:
    """Point the streams' descriptors at /dev/null: their reader left, and a later flush into the
    closed pipe must not fail again (a stream without a descriptor, as a test's, is left)."""
    for stream in streams:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())

