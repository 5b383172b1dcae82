"""Commands for adopting rubricgate in a repository: init, record.

Module imports stay light (no pandas, no matplotlib): `record` loads the run machinery only
when it runs the new task.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rubricgate import exitcodes
from rubricgate.cli.app import main
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.workflows import INIT_AGENTS


def _fail(exc: GateInputError | GateInputErrors) -> None:
    errors = exc.errors if isinstance(exc, GateInputErrors) else [exc]
    for err in errors:
        click.echo(f"error: {err.one_line()}", err=True)
    sys.exit(exitcodes.CANNOT_JUDGE)


@main.command()
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="The git repository to set up.")
@click.option("--agent", type=click.Choice(INIT_AGENTS), default="builtin", show_default=True,
              help="The reviewer's agent CLI: the config and workflows are written for it.")
@click.option("--prompt", default=None, help="The reviewer's prompt file (default: found, else a starter).")
@click.option("--skill", default=None, help="The evaluator skill's SKILL.md (default: found, else a starter).")
@click.option("--rubric", default=None, help="The rubric with the rule table (default: found, else a starter).")
@click.option("--pip", "pip_spec", default="rubricgate", show_default=True,
              help="What the workflows `pip install` (a version pin or a git URL).")
def init(repo, agent, prompt, skill, rubric, pip_spec) -> None:
    """Set up rubricgate here: config, example task and fixtures, workflows. Never overwrites."""
    from rubricgate.scaffold import InitOptions, init_repo

    try:
        done = init_repo(InitOptions(repo=repo, agent=agent, prompt=prompt, skill=skill, rubric=rubric,
                                     pip_spec=pip_spec))
    except (GateInputError, GateInputErrors) as exc:
        _fail(exc)
    for role, path in done.reviewer.items():
        click.echo(f"reviewer {role}: {path} ({_how(done.found[role])})")
    click.echo("".join(f"wrote {p}\n" for p in done.written), nl=False)
    click.echo("".join(f"skipped {p} (exists; not overwritten)\n" for p in done.skipped), nl=False)
    click.echo("".join(f"note: {n}\n" for n in done.notes), nl=False)
    click.echo(_next_steps(agent, repo))


def _how(source: str) -> str:
    return {"found": "found in the repository", "given": "as given",
            "starter": "starter written: edit it into your reviewer"}[source]


def _next_steps(agent: str, repo: Path) -> str:
    where = "" if repo.resolve() == Path.cwd().resolve() else f" --repo {repo}"
    key = "" if agent == "builtin" else " (with the agent's API key in the environment)"
    return ("next:\n"
            f"  rubricgate baseline update{where}   # runs the suite once{key} and writes baseline.json\n"
            f"  rubricgate run{where}               # the gate: exit 0 pass, 1 regression, 2 could not judge")
