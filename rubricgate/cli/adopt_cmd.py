"""Commands for adopting rubricgate in a repository: init, record.

Module imports stay light (no numpy, no pipeline): `record` loads the run machinery only
when it runs the new task.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rubricgate import exitcodes
from rubricgate.adopt.workflows import INIT_AGENTS
from rubricgate.cli.app import main
from rubricgate.errors import GateInputError, GateInputErrors


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
@click.option("--skill", default=None, help="The evaluator skill's SKILL.md, or with --agent command the program "
              "that runs the review (default: found, else a starter).")
@click.option("--rubric", default=None, help="The rubric with the rule table, or with --agent command the file "
              "stating the rules (default: found, else a starter; for command the prompt).")
@click.option("--pip", "pip_spec", default=None,
              help="What the workflows `pip install`: a pinned requirement (rubricgate==X.Y.Z, "
                   "'rubricgate @ git+https://...@COMMIT'). Default: where this rubricgate was installed from.")
@click.option("--command", "command", default=None,
              help="With --agent command: the command line that runs your reviewer once (placeholders: "
                   "{workspace} {changed_files} {prompt_file} ...); its stdout is the answer.")
@click.option("--secret", default=None, metavar="VAR",
              help="With --agent command: the environment variable holding its API key (default OPENAI_API_KEY).")
@click.option("--endpoint-env", "endpoint_env", multiple=True, metavar="VAR",
              help="With --agent command: a variable naming its model endpoint, passed through (repeatable).")
@click.option("--layout", type=click.Choice(["skills", "files"]), default=None,
              help="What a fixture folder holds: a skill (SKILL.md) or any files (default: files for "
                   "--agent command, else skills).")
def init(repo, agent, prompt, skill, rubric, pip_spec, command, secret, endpoint_env, layout) -> None:
    """Set up rubricgate here: config, example task and fixtures, workflows. Never overwrites."""
    from rubricgate.adopt.init import InitOptions, init_repo

    try:
        done = init_repo(InitOptions(repo=repo, agent=agent, prompt=prompt, skill=skill, rubric=rubric,
                                     pip_spec=pip_spec, command=command, secret=secret,
                                     endpoint_env=list(endpoint_env), layout=layout))
    except (GateInputError, GateInputErrors) as exc:
        _fail(exc)
    for role, path in done.reviewer.items():
        click.echo(f"reviewer {role}: {path} ({_how(done.found[role])})")
    click.echo("".join(f"wrote {p}\n" for p in done.written), nl=False)
    click.echo("".join(f"skipped {p} (exists; not overwritten)\n" for p in done.skipped), nl=False)
    click.echo("".join(f"note: {n}\n" for n in done.notes), nl=False)
    click.echo(f"workflows install {done.install.requirement} ({done.install.origin})")
    if (needs := _decision_needs(repo)) is not None:
        click.echo(f"plan: {needs}")
    click.echo(_next_steps(agent, repo))


def _decision_needs(repo: Path) -> str | None:
    """Under the statistical gate, what a decision needs before the first run (gating/planning.py)."""
    from rubricgate.suite.config import CONFIG_NAME, load_config

    try:
        config = load_config(repo, repo / CONFIG_NAME)
    except (GateInputError, GateInputErrors):
        return None  # an existing config init did not write, with its own problems: `validate` reports them
    if config.gate.method != "statistical":
        return None
    from rubricgate.gating.planning import decision_needs

    return decision_needs(config.gate, config.trials, config.graded_dimensions())


def _how(source: str) -> str:
    return {"found": "found in the repository", "given": "as given",
            "starter": "starter written: edit it into your reviewer",
            "command": "the program --command runs", "prompt": "the prompt: --rubric names another file"}[source]


def _next_steps(agent: str, repo: Path) -> str:
    where = "" if repo.resolve() == Path.cwd().resolve() else f" --repo {repo}"
    key = "" if agent == "builtin" else " (with the agent's API key in the environment)"
    return ("next:\n"
            f"  rubricgate baseline update{where}   # runs the suite once{key} and writes baseline.json\n"
            f"  rubricgate run{where}               # the gate: exit 0 pass, 1 regression, 2 could not judge")


@main.command()
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Repository root (default: nearest folder with rubricgate.yaml).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Config file (default: <repo>/rubricgate.yaml).")
@click.option("--pr", type=click.IntRange(min=1), default=None,
              help="Source: a pull request (GitHub REST; GITHUB_TOKEN and GITHUB_REPOSITORY as in Actions).")
@click.option("--github-repo", default=None, metavar="OWNER/NAME", help="With --pr: instead of $GITHUB_REPOSITORY.")
@click.option("--base", default=None,
              help="Source: skills (suite.layout files: any files) changed since the merge base with BASE ...")
@click.option("--head", default=None,
              help="... up to HEAD, read at HEAD; WORKTREE (the default with --base): the working tree, "
                   "uncommitted and untracked files included.")
@click.option("--from", "from_run", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Source: a run folder with replay artifacts (with --case).")
@click.option("--case", "case_id", default=None, help="With --from: the case whose replay to record.")
@click.option("--diff", "diff_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Source: a .diff or .patch file (git diff, diff -u); the task reviews the patch.")
@click.option("--expect", type=click.Choice(["PASS", "WARN", "BLOCK"], case_sensitive=False), required=True,
              help="The correct tier.")
@click.option("--rule", "rules", multiple=True, help="A rule id the correct review cites (repeatable).")
@click.option("--absent-rule", "absent_rules", multiple=True, help="A rule id it must not cite (repeatable).")
@click.option("--why", default="", help="What the task protects, in a sentence (shown when it fails).")
@click.option("--id", "task_id", default=None, help="Task id (default: from the tier, rule and source).")
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable).")
@click.option("--redact", is_flag=True, default=False,
              help="Record a credential found in the snapshotted files as a placeholder of the same shape "
                   "marked REDACTED (ghp_REDACTEDbyRUBRICGATE) instead of stopping.")
@click.option("--run/--no-run", "run_it", default=True, show_default=True,
              help="Run the new task once against the current reviewer.")
def record(repo, config_path, pr, github_repo, base, head, from_run, case_id, diff_file, expect, rules, absent_rules,
           why, task_id, tags, redact, run_it) -> None:
    """Turn a real review into a regression task: snapshot the reviewed files, write, validate, run once.

    Exit 0 when the task is recorded (whether or not the reviewer gets it right today), 2 when not.
    """
    from rubricgate.adopt.record import (
        RecordRequest,
        as_change,
        build_task,
        guard_credentials,
        leave_reviewer_out,
        review_root,
        slug,
        validate_new_task,
        write_task,
    )
    from rubricgate.runner.run_secrets import refuse_secret_task
    from rubricgate.suite.config import find_repo, load_config

    root = (repo or find_repo(Path.cwd())).resolve()
    request = RecordRequest(expect=expect.upper(), rules=list(rules), absent_rules=list(absent_rules), why=why,
                            task_id=task_id, tags=list(tags))
    try:
        config = load_config(root, config_path)
        reviewed, source_tag = _reviewed(root, config, pr, github_repo, base, head, from_run, case_id, diff_file,
                                          config_path)
        reviewed = as_change(reviewed, review_root(config))
        left_out = leave_reviewer_out(reviewed, root, config)
        redacted = guard_credentials(reviewed, redact)
        default_id = slug(f"{request.expect}-{request.rules[0] if request.rules else 'review'}-{source_tag}")
        task = build_task(reviewed, request, review_root(config), default_id)
        refuse_secret_task(task.id, task.tags, config)  # before a file is named by it
        path = write_task(root, config.suite.tasks, task)
        validate_new_task(root, path, config_path)
    except (GateInputError, GateInputErrors) as exc:
        _fail(exc)
    own = reviewed.patch or reviewed.at_own_paths
    click.echo(f"recorded {path.relative_to(root)} from {reviewed.origin}: {len(task.review)} "
               f"{'file(s) reviewed' if own else 'skill(s)'}, {len(task.files)} file(s) snapshotted"
               + ("" if own else f" under {review_root(config)}/"))
    if left_out:
        click.echo(f"note: left out of removed: the reviewer's own {', '.join(left_out)} (the change deletes "
                   "it; each trial's workspace holds the reviewer as it is in the repository)")
    if redacted:
        click.echo(f"redacted {len(redacted)} credential(s): {', '.join(redacted)}")
    if run_it:
        _report_today(root, task.id, config_path)


def _reviewed(root, config, pr, github_repo, base, head, from_run, case_id, diff_file=None, config_path=None):
    """Exactly one source; returns (Reviewed, a short tag for the default id)."""
    from rubricgate.adopt import record_changes as changes
    from rubricgate.adopt import record_sources as sources

    chosen = [name for name, on in (("--pr", pr), ("--base/--head", base or head),
                                    ("--from/--case", from_run or case_id), ("--diff", diff_file)) if on]
    if len(chosen) != 1:
        raise GateInputError("record", "source",
                             f"{'no source' if not chosen else 'several sources: ' + ', '.join(chosen)}",
                             "give exactly one of --pr N, --base REF [--head REF], --from RUN_DIR --case ID, "
                             "--diff FILE")
    excluded = _not_reviewed(config, root, config_path)
    files = config.suite.layout == "files"
    if diff_file:
        return changes.from_diff(diff_file), "patch"
    if pr:  # GitHub names the files from the top of the repository, the config from its folder
        prefix = sources.repo_prefix(root)
        return (changes.changed_from_pull_request(_target(github_repo), pr, excluded, prefix) if files
                else sources.from_pull_request(_target(github_repo), pr, excluded, prefix)), f"pr-{pr}"
    if base or head:
        if not base:
            raise GateInputError("record", "--base", "--base is needed with --head", "give --base REF")
        head = head or sources.WORKTREE
        if head == sources.WORKTREE:
            return (changes.changed_from_worktree(root, base, excluded) if files
                    else sources.from_worktree(root, base, excluded)), "worktree"
        return (changes.changed_from_git(root, base, head, excluded) if files
                else sources.from_git(root, base, head, excluded)), f"{head}"
    if not (from_run and case_id):
        raise GateInputError("record", "--from/--case", "both are needed", "give --from RUN_DIR --case ID")
    return (changes.changed_from_replay(from_run, case_id, root) if files
            else sources.from_replay(from_run, case_id, root)), case_id


def _not_reviewed(config, root: Path, config_path: Path | None) -> list[str]:
    """The reviewer's own folder and the suite are what is gated, not skills under review; the
    rest of the answer key (the baseline, the config, the reports) no workspace may hold either,
    so a change that updates baseline.json beside the code does not put it in the task."""
    from rubricgate.adopt.changed import reviewer_paths
    from rubricgate.suite.answer_key import answer_key_paths, config_rel_of

    hidden = answer_key_paths(config, config_rel_of(root, config_path), root)
    return [*reviewer_paths(config), config.suite.fixtures, config.suite.tasks, *sorted(hidden)]


def _target(github_repo: str | None):
    import os

    from rubricgate.reports.github import GitHubTarget

    env = dict(os.environ) | ({"GITHUB_REPOSITORY": github_repo} if github_repo else {})
    return GitHubTarget.from_env(env)


def _report_today(root: Path, task_id: str, config_path: Path | None) -> None:
    from rubricgate.adopt.record import run_once
    from rubricgate.cli.core import one_malloc_arena

    one_malloc_arena()  # a run of the new case: before its first thread
    try:
        today = run_once(root, task_id, config_path)
    except (GateInputError, GateInputErrors) as exc:
        _fail(exc)
    if today.also_ran:
        click.echo(f"note: the run also included {', '.join(today.also_ran)} (their ids contain {task_id!r})")
    if today.correct:
        click.echo(f"the current reviewer gets it right today (run {today.run_dir})")
        return
    click.echo(f"the current reviewer gets it WRONG today (run {today.run_dir}):")
    click.echo("".join(f"  {f}\n" for f in today.failures), nl=False)
    click.echo("the task now fails until the reviewer is fixed; commit it with the fix")
