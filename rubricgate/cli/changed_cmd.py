"""Command: changed (the CI gate run on every pull request, so it loads only git, the config and
path matching: not the suite, the agents, the reports or numpy; bench/startup.py)."""

from __future__ import annotations

import os

import click

from rubricgate.adopt.changed import changed_files
from rubricgate.boundary import printable
from rubricgate.cli.app import main
from rubricgate.cli.options import config_option, fail_input, repo_option, repo_root
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.suite.config import CONFIG_NAME, load_config


@main.command()
@click.option("--base", required=True, help="The revision the change is measured from (e.g. origin/main).")
@repo_option
@config_option
def changed(base, repo, config_path) -> None:
    """Say whether any gated file changed since BASE; exit 2 when BASE is not in this clone.

    Gated: the reviewer (its prompt, skill and rubric and every file they reference), the tasks and
    fixtures folders, the baseline and the config (rubricgate.yaml, and the --config file). Each changed
    file is listed with why it is gated.
    Writes `changed=true|false` and `new_at_base=true|false` (BASE has no rubricgate config and no
    reviewer: nothing to compare with) to $GITHUB_OUTPUT when that is set. Names are printed with control
    characters and line separators escaped (a name holding a newline stays on its one line).
    """
    root = repo_root(repo)
    try:
        config = load_config(root, config_path)
        result = changed_files(root, base, config, config_path)
        _github_output(result.changed, result.new_at_base)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    if result.changed:
        # A file name is the pull request's to choose: printed raw, one holding a newline would
        # forge lines of its own in the CI log ("unchanged: ...", a `::error::` command).
        click.echo(printable(f"changed: {len(result.files)} gated file(s) since {base} "
                             f"(merge base {result.merge_base[:12]})"))
        for name in result.files:
            click.echo(f"  {printable(name)}  ({printable(result.reasons.get(name, 'gated'))})")
        if config.verdict is not None and config.verdict.defines_rules():
            from rubricgate.adopt.changed_rules import changed_rules  # rules named in rubricgate.yaml only

            for line in changed_rules(root, config, result.merge_base):
                click.echo(f"  {printable(line)}")
    else:
        click.echo(printable(f"unchanged: no gated file changed since {base} (merge base {result.merge_base[:12]})"))
    if result.new_at_base:
        click.echo(printable(f"note: {base} has no {CONFIG_NAME} and not this reviewer's files: rubricgate is new "
                             "since it, so `compare --base` has no base reviewer to compare with; the run against "
                             "this checkout's baseline decides (the PR workflow does so)"), err=True)
    if result.capped:
        click.echo("note: the reviewer references more files than rubricgate follows (500), so every changed "
                   "file counts as the reviewer's; name what it reads in reviewer.files (never capped)", err=True)


def _github_output(is_changed: bool, is_new: bool) -> None:
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(f"changed={'true' if is_changed else 'false'}\nnew_at_base={'true' if is_new else 'false'}\n")
    except OSError as exc:
        raise GateInputError(target, "GITHUB_OUTPUT", f"cannot append: {exc.strerror}",
                             "unset it or fix the path") from exc
