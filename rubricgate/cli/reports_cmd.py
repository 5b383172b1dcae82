"""Commands: regrade, report, publish, trend (the reports people read); `changed` is in changed_cmd.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from rubricgate import boundary, exitcodes
from rubricgate.cli.app import main
from rubricgate.cli.options import config_option, fail_input, repo_option
from rubricgate.cli.options import repo_root as _repo
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.records.files import read_summary
from rubricgate.reports.comment import DEFAULT_ARTIFACT
from rubricgate.reports.comparison_comment import pr_comment, read_comparison
from rubricgate.reports.github import DEFAULT_AUTHOR, DEFAULT_LABEL, GitHubError, GitHubTarget
from rubricgate.reports.github import publish as publish_comment
from rubricgate.reports.trend import left_out_line, render_trend, suite_runs
from rubricgate.suite.config import load_config

# regrade and report load the pipeline, the statistics (numpy) and the charts: imported inside
# those commands, so the light ones here do not pay for them.

run_dir_arg = click.argument("run_dir", type=click.Path(path_type=Path))
artifact_option = click.option("--artifact", default=DEFAULT_ARTIFACT, show_default=True,
                               help="Name of the CI artifact holding the run folder (named in the comment).")
compare_option = click.option(
    "--compare", "compare_json", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="The record `compare --base ... --json FILE` wrote: the comment, the step summary and the label state "
         "its decision, with the run as context (a missing or unreadable record reads as could not judge).")


@main.command()
@run_dir_arg
@repo_option
@config_option
@artifact_option
def regrade(run_dir, repo, config_path, artifact) -> None:
    """Re-grade a run's stored transcripts under the current expectations and rubric (no agent runs).

    Writes a new run folder beside RUN_DIR and exits like `run`: 0 pass, 1 regression, 2 cannot judge.
    """
    try:
        from dataclasses import replace

        from rubricgate.gating.case_edits import with_case_digests
        from rubricgate.records.run_index import index_run
        from rubricgate.reports.bundle import finish_run_reports
        from rubricgate.reports.regrade import continue_as, regrade_run
        from rubricgate.suite.baseline_file import load_baseline
        from rubricgate.suite.cases import ExactIds
        from rubricgate.suite.load import load_all

        old = read_summary(run_dir)
        # Its own cases alone are read for LFS pointers: a case the run left out (--only), or one
        # added since, is regraded by none of its transcripts.
        loaded = load_all(_repo(repo), config_path, require_baseline=False, only=ExactIds(c.id for c in old.cases))
        # The baseline as it is: a case removed since the run is dropped from the regraded run
        # (with a warning), not an error here.
        loaded = replace(loaded, baseline=load_baseline(_repo(repo) / loaded.config.baseline, loaded.config.baseline))
        loaded = with_case_digests(loaded, _repo(repo))  # a case edited since the baseline is judged as new
        # The next step names `run --continue` of the run only when that command would take it up.
        continuing = continue_as(old, loaded, _repo(repo), config_path)
        done = regrade_run(run_dir, loaded, continuing=continuing)
        # summary.json is rewritten last: a report that cannot be written makes it (and us) exit 2.
        final = finish_run_reports(done.summary, done.run_dir, cases=done.cases, artifact=artifact)
        index_run(done.run_dir, final)  # the viewer's index, as a run writes its own
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    for warning in done.warnings:
        click.echo(f"warning: {warning}", err=True)
    for reason in final.decision.reasons if final.decision.status == "error" else []:  # why it could not judge
        click.echo(f"error: {reason}", err=True)
    click.echo(f"regraded {old.run_id} -> {done.run_dir} · decision {final.decision.status}")
    sys.exit(final.decision.exit_code)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path), required=False)
@click.option("--history", multiple=True, type=click.Path(path_type=Path),
              help="Earlier summary.json files or run folders, for the trend chart (repeatable).")
@repo_option
@artifact_option
@compare_option
def report(run_dir, history, repo, artifact, compare_json) -> None:
    """Re-render report.html, comment.md and junit.xml of RUN_DIR from its summary and transcripts.

    RUN_DIR defaults to the newest run under the reports folder. Appends to $GITHUB_STEP_SUMMARY when set.
    With --compare, comment.md and the step summary state the comparison's decision, the run below it.
    """
    try:
        run_dir = run_dir or latest_run(_repo(repo))
        from rubricgate.reports.bundle import write_reports
        from rubricgate.reports.stored_next import checked

        # Its next step as of now: a `run --continue` a later baseline update refuses is not re-said.
        summary = checked(read_summary(run_dir), _repo(repo))

        chosen = suite_runs(list(history)) if history else None
        click.echo("".join(f"--history: note: {n}\n" for n in (chosen.notes if chosen else ())), nl=False, err=True)
        if chosen and chosen.left_out:
            click.echo(f"--history: {left_out_line(chosen.left_out)}", err=True)
        comparison = _comparison(compare_json)
        write_reports(summary, run_dir, history=chosen.runs if chosen else [], artifact=artifact,
                      comparison=comparison)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    from rubricgate.reports.bundle import COMMENT_FILE, HTML_FILE, JUNIT_FILE

    click.echo(f"wrote {run_dir / HTML_FILE}, {run_dir / COMMENT_FILE}, {run_dir / JUNIT_FILE}")


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path), required=False)
@click.option("--pr", "pr", type=click.IntRange(min=1), required=True, help="Pull request number.")
@click.option("--label", default=DEFAULT_LABEL, show_default=True, help="Label added on regression, removed on pass.")
@click.option("--comment-author", default=None, metavar="LOGIN",
              help="The account the token posts as: only its comment is edited in place (another's never). "
                   f"Default: the token's own (GET /user), else {DEFAULT_AUTHOR} (Actions' GITHUB_TOKEN).")
@repo_option
@artifact_option
@compare_option
@click.option("--unchanged-since", "unchanged_since", default=None, metavar="REF",
              help="No run: `changed --base REF` found no gated file changed. An earlier comment is edited to say "
                   "so (none is posted) and the label removed.")
@click.option("--cannot-judge", "cannot_judge", default=None, metavar="WHY",
              help="No run: the gate could not run at this push (WHY, one line). The comment says so; the label stays.")
def publish(run_dir, pr, label, comment_author, repo, artifact, compare_json, unchanged_since, cannot_judge) -> None:
    """Upsert the PR comment (edited in place on later runs) and sync the regression label.

    Uses GITHUB_API_URL, GITHUB_REPOSITORY and GITHUB_TOKEN as GitHub Actions sets them. The
    comment edited is the one --comment-author posted that starts with the gate's marker.
    RUN_DIR defaults to the newest run under the reports folder. With --compare, the comment and
    the label follow the comparison's decision (could not judge leaves the label as it is).
    With --unchanged-since or --cannot-judge no run is read: the comment stops stating an earlier
    push's decision. A run that cannot be read (none wrote its summary) is said as could not judge.
    """
    if unchanged_since is not None or cannot_judge is not None:
        _publish_unjudged(pr, label, comment_author, unchanged_since, cannot_judge,
                          given=bool(run_dir or compare_json))
        return
    try:
        summary = _run_to_publish(run_dir, repo)
    except (GateInputError, GateInputErrors) as exc:
        _publish_unreadable(pr, label, comment_author, exc)
    try:
        comparison = _comparison(compare_json)
        result = publish_comment(summary, pr_comment(summary, artifact, comparison), pr, GitHubTarget.from_env(),
                                 label, decision=comparison.decision if comparison else None, author=comment_author)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    except GitHubError as exc:
        click.echo(f"error: publish failed: {exc}", err=True)
        sys.exit(exitcodes.CANNOT_JUDGE)
    click.echo(f"comment {result.comment_id} {result.comment_action} on PR #{pr}; "
               f"label {label!r} {result.label_action}")


def _run_to_publish(run_dir: Path | None, repo: Path | None):
    """The run publish states: RUN_DIR, else the newest this user started, its next step as of now."""
    run_dir = run_dir or latest_run(_repo(repo), started_here=True)
    from rubricgate.reports.stored_next import checked

    return checked(read_summary(run_dir), _repo(repo))  # its next step as of now, as `report` says it


def _publish_unreadable(pr: int, label: str, author: str | None, exc: GateInputError | GateInputErrors) -> NoReturn:
    """No run to state (the job's run stopped before writing its summary: a task that no longer
    loads, a preflight stop): the comment says could not judge, as the job's red check does,
    where it kept an earlier push's PASS; the label stays. Exit 2 with the run's error."""
    from rubricgate.reports.github import publish_unjudged
    from rubricgate.reports.unjudged_comment import cannot_judge_body

    first = exc.errors[0] if isinstance(exc, GateInputErrors) else exc
    try:
        body = cannot_judge_body(f"no run to report: {first.one_line()}")
        publish_unjudged(body, pr, GitHubTarget.from_env(), label, author=author)
    except GateInputError as env_error:  # no token here: the run's error still comes first
        fail_input(GateInputErrors([*(exc.errors if isinstance(exc, GateInputErrors) else [exc]), env_error]))
    except GitHubError as api_error:
        click.echo(f"error: publish failed: {api_error}", err=True)
    fail_input(exc)


def _publish_unjudged(pr: int, label: str, author: str | None, unchanged_since: str | None,
                      cannot_judge: str | None, given: bool) -> None:
    """publish --unchanged-since / --cannot-judge: the comment for a push with nothing judged."""
    from rubricgate.reports.github import publish_unjudged
    from rubricgate.reports.unjudged_comment import cannot_judge_body, unchanged_body

    if given or (unchanged_since is not None and cannot_judge is not None):
        raise click.UsageError("--unchanged-since and --cannot-judge take no RUN_DIR, no --compare and not each other")
    body = unchanged_body(unchanged_since) if unchanged_since is not None else cannot_judge_body(cannot_judge or "")
    try:
        result = publish_unjudged(body, pr, GitHubTarget.from_env(), label, unchanged=unchanged_since is not None,
                                  author=author)
    except GateInputError as exc:
        fail_input(exc)
    except GitHubError as exc:
        click.echo(f"error: publish failed: {exc}", err=True)
        sys.exit(exitcodes.CANNOT_JUDGE)
    click.echo(f"comment {result.comment_action} on PR #{pr}; label {label!r} {result.label_action}")


def _comparison(path: Path | None):
    """--compare: the record (a missing or unreadable one as a could-not-judge record, said on stderr)."""
    if path is None:
        return None
    record, problem = read_comparison(path)
    if problem:
        click.echo(f"warning: --compare: {boundary.printable(problem)}; reported as could not judge", err=True)
    return record


def _started(run: Path) -> tuple[str, str]:
    """A run folder's order: its id's timestamp (to the second), then the millisecond its first
    event was logged, so two runs started in one second keep their order (the id's random suffix
    would not)."""
    try:
        with open(run / "events.jsonl", encoding="utf-8", errors="replace") as events:
            first = boundary.loads(events.readline() or "{}")
    except (OSError, ValueError):
        first = {}
    return run.name.split("-", 1)[0], str(first.get("at", "")) if isinstance(first, dict) else ""


def latest_run(repo: Path, started_here: bool = False) -> Path:
    """The newest run folder under the configured reports folder (run ids start with a UTC
    timestamp). Never an earlier one: when the newest has no summary.json (it could not be
    written, the run exited 2) that is an error, not a reason to report the run before it."""
    from rubricgate.runner.cache import notes_dir, ran_here

    config = load_config(repo)
    folder = repo / config.reports
    # A `baseline update` run (<run-id>-baseline) or `record`'s run (<run-id>-record) is not the
    # run a report is wanted for.
    runs = sorted({p.parent for name in ("summary.json", "events.jsonl") for p in folder.glob(f"*/{name}")
                   if not p.parent.name.endswith(("-baseline", "-record"))} if folder.is_dir() else set(), key=_started)
    # The newest run this user started, when there is one: a folder planted in the checkout (a
    # pull request can force-add one named for the year 9999) must not become the PR's comment.
    # `publish` (`started_here`) takes no other: with none, a planted folder would be all there is.
    notes = notes_dir(repo, config.cache_dir)
    ours = [r for r in runs if ran_here(notes, r.name)]
    if started_here and runs and not ours:
        raise GateInputError(str(folder), "", "no run here was started by this user (runs copied or checked in "
                             "are not published unasked)", "run `rubricgate run` first, or pass RUN_DIR")
    runs = ours or runs
    if not runs:
        raise GateInputError(str(folder), "", "no run with a summary.json here", "run `rubricgate run` or pass RUN_DIR")
    if not (runs[-1] / "summary.json").is_file():
        raise GateInputError(str(runs[-1]), "summary.json", "the newest run has no summary (it was killed before "
                             "writing one, or could not write it and exited 2)",
                             "rerun `rubricgate run`, or pass an earlier RUN_DIR on purpose")
    return runs[-1]


@main.command()
# readable=False: an unreadable summary is read_summary's one-line error, not a usage error.
@click.argument("summaries", nargs=-1, type=click.Path(readable=False, path_type=Path))
@click.option("--chart", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the trend chart here, as SVG (a .png path is written as .svg beside it).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the markdown here.")
@click.option("--all-kinds", is_flag=True, default=False,
              help="Also show record, baseline and shard runs "
                   "(left out by default: they are not runs of the whole suite).")
def trend(summaries, chart, out, all_kinds) -> None:
    """Rates over time from several runs' summaries; flags agent CLI version or model changes.

    Only runs of the whole suite are shown unless --all-kinds; the output says how many were left out.
    Among several folders, one whose run wrote no summary (killed, or still going), a comparison's and a
    mutation test's are left out with a note.
    The markdown goes to stdout, and is appended to $GITHUB_STEP_SUMMARY when that is set.
    """
    try:
        chosen = suite_runs(list(summaries), all_kinds)
        click.echo("".join(f"note: {n}\n" for n in chosen.notes), nl=False, err=True)
        if not chosen.runs:
            parts = ", ".join(f"{n} {k}" for k, n in chosen.left_out.items())
            raise GateInputError("trend", "SUMMARY", f"no run of the whole suite among these (left out: {parts})",
                                 "pass gated runs' summaries, or --all-kinds to show these")
        loaded = chosen.runs
        text = render_trend(loaded, left_out=chosen.left_out)
        _write_outputs(text, out, chart, loaded)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    click.echo(text, nl=False)


def _svg_path(chart: Path) -> Path:
    """Where the SVG trend chart goes: a `--chart trend.png` gets `trend.svg` beside it (said on
    stderr) rather than SVG text in a .png file."""
    if chart.suffix.lower() != ".png":
        return chart
    click.echo(f"--chart {chart}: the trend chart is SVG; writing {chart.with_suffix('.svg')}", err=True)
    return chart.with_suffix(".svg")


def _write_outputs(text: str, out: Path | None, chart: Path | None, loaded) -> None:
    try:
        if out:
            out.write_text(text, encoding="utf-8")
        if chart:
            from rubricgate.reports.charts import trend_chart
            from rubricgate.reports.trend import by_branch

            series = by_branch(loaded)
            branch = max(series, key=lambda b: (b in ("main", "master"), len(series[b])))
            if len(series) > 1:
                click.echo(f"--chart: the trend of branch {branch} ({len(series[branch])} runs; "
                           f"{len(series) - 1} other branch(es) in the markdown)", err=True)
            _svg_path(chart).write_text(trend_chart(series[branch]) + "\n", encoding="utf-8")
        step = os.environ.get("GITHUB_STEP_SUMMARY")
        if step:
            with open(step, "a", encoding="utf-8") as fh:
                fh.write(text + "\n")
    except OSError as exc:
        raise GateInputError(str(exc.filename), "", f"cannot write: {exc.strerror}", "choose a writable path") from exc
