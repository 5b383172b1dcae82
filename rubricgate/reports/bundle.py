"""Write every report of a run in one call (used by `run`, `report` and `regrade`).

A report that cannot be written (disk full, a directory in the way, no permission) must never
leave a run looking like a pass. `finish_run_reports` therefore writes everything else first,
collects the failures, turns the decision into exit 2 when there are any (re-rendering the
human-facing reports so they say so too), and writes summary.json last: a reader never finds a
summary claiming pass for a run that exited 2. The pages showing the decision (report.html,
comment.md, junit.xml) are written under hidden staging names and moved to their own only once
summary.json is there: a run killed (SIGKILL, a lost runner) at any write leaves no page without
its summary, where it left a PASS page in a folder every reader calls unfinished.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from rubricgate import exitcodes
from rubricgate.errors import GateInputError
from rubricgate.models.comparison import ComparisonRecord
from rubricgate.models.results import CaseSpec, Decision, Summary
from rubricgate.records.files import write_summary
from rubricgate.records.writing import (
    WriteFailure,
    failure,
    is_failure_line,
    write_pieces_atomic,
    write_text_atomic,
)
from rubricgate.reports.comment import DEFAULT_ARTIFACT
from rubricgate.reports.comparison_comment import pr_comment, render_gated_body
from rubricgate.reports.html import Bodies, html_pieces
from rubricgate.reports.junit import junit_pieces
from rubricgate.reports.replay import REPLAY_DIR, write_replay_artifacts
from rubricgate.reports.step_summary import append_step_summary

COMMENT_FILE = "comment.md"
JUNIT_FILE = "junit.xml"
HTML_FILE = "report.html"
SUMMARY_FILE = "summary.json"

Step = tuple[Path, Callable[[], list[Path]]]


def write_reports(summary: Summary, run_dir: Path, cases: list[CaseSpec] | None = None,
                  history: list[Summary] | None = None, secrets: list[str] | None = None,
                  env: Mapping[str, str] | None = None, artifact: str = DEFAULT_ARTIFACT,
                  repo: Path | None = None, comparison: ComparisonRecord | None = None) -> list[Path]:
    """Replay artifacts (when the cases are known), report.html, comment.md, junit.xml, step summary.

    `comparison`: the `compare --base` that decides (the PR workflow): comment.md and the step
    summary state its decision, with this run below as context.
    Raises GateInputError naming the first file that could not be written (after trying all).
    """
    written, failures = write_reports_collecting(summary, run_dir, cases, history, secrets, env, artifact, repo,
                                                 comparison=comparison)
    if failures:
        first = failures[0]
        fix = "check the reports folder" if first.verb == "write" else "restore the run's file, or run again"
        raise GateInputError(first.path, "", f"cannot {first.verb}: {first.reason}", fix)
    return written


def write_reports_collecting(summary: Summary, run_dir: Path, cases: list[CaseSpec] | None = None,
                             history: list[Summary] | None = None, secrets: list[str] | None = None,
                             env: Mapping[str, str] | None = None, artifact: str = DEFAULT_ARTIFACT,
                             repo: Path | None = None, bodies: Bodies | None = None,
                             comparison: ComparisonRecord | None = None,
                             staged: bool = False) -> tuple[list[Path], list[WriteFailure]]:
    """Try every report; return the files written and the ones that failed (never raises for a write).
    `staged`: the decision's pages under their staging names (finish_run_reports moves them in)."""
    secrets = secrets or []
    steps = _page_steps(summary, run_dir, history, secrets, artifact, bodies, comparison, staged)
    if cases is not None:
        steps.insert(0, (run_dir / REPLAY_DIR, lambda: write_replay_artifacts(run_dir, cases, summary, secrets, repo)))
    steps.append((Path("$GITHUB_STEP_SUMMARY"), lambda: _optional(append_step_summary(
        summary, env, artifact, None if comparison is None else render_gated_body(comparison, summary, artifact)))))
    return _attempt(steps)


def _page_steps(summary: Summary, run_dir: Path, history: list[Summary] | None, secrets: list[str],
                artifact: str, bodies: Bodies | None = None, comparison: ComparisonRecord | None = None,
                staged: bool = False) -> list[Step]:
    """The reports that show the decision: rewritten when a write failure changes it. `staged`:
    each written under its staging name (staging_name), moved in by move_staged_pages."""
    html, comment, junit = run_dir / HTML_FILE, run_dir / COMMENT_FILE, run_dir / JUNIT_FILE
    to = staging_name if staged else (lambda page: page)
    return [(html, lambda: [write_pieces_atomic(to(html), html_pieces(summary, run_dir, history, bodies), secrets)]),
            (comment, lambda: [write_text_atomic(to(comment), pr_comment(summary, artifact, comparison), secrets)]),
            (junit, lambda: [write_pieces_atomic(to(junit), junit_pieces(summary), secrets)])]


def staging_name(page: Path) -> Path:
    """Where a page waits for its run's summary.json: hidden (no reader lists it, upload-artifact
    leaves it out), in the same folder so moving it in is one rename."""
    return page.with_name(f".{page.name}.staged")


def move_staged_pages(run_dir: Path) -> list[WriteFailure]:
    """Each staged page moved to its own name, once summary.json is written; the moves that failed."""
    failed = []
    for page in (run_dir / HTML_FILE, run_dir / COMMENT_FILE, run_dir / JUNIT_FILE):
        try:
            if staging_name(page).exists():
                os.replace(staging_name(page), page)
        except OSError as exc:
            failed.append(failure(page, exc))
    return failed


def _pages_that_cannot_move_in(run_dir: Path) -> list[WriteFailure]:
    """The staged pages whose own name a rename cannot take (a directory in the way), found
    before the decision is recorded: after summary.json, events.jsonl's run_completed would keep
    the decision the failure replaces. Their staged copies are dropped (nothing to move in)."""
    failed = []
    for page in (run_dir / HTML_FILE, run_dir / COMMENT_FILE, run_dir / JUNIT_FILE):
        if staging_name(page).exists() and page.is_dir():
            staging_name(page).unlink()
            failed.append(failure(page, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(page))))
    return failed


def _discard_staged(run_dir: Path) -> None:
    for page in (HTML_FILE, COMMENT_FILE, JUNIT_FILE):
        staging_name(run_dir / page).unlink(missing_ok=True)


def _verb(target: Path, exc: GateInputError) -> str:
    """'read' when what failed is a file the report is made from (a damaged transcript), not the report."""
    file = Path(exc.file)
    return "write" if exc.field == "GITHUB_STEP_SUMMARY" or file == target or target in file.parents else "read"


def _optional(path: Path | None) -> list[Path]:
    return [path] if path else []


def _attempt(steps: list[Step]) -> tuple[list[Path], list[WriteFailure]]:
    written: list[Path] = []
    failures: list[WriteFailure] = []
    for target, step in steps:
        try:
            written += step()
        except GateInputError as exc:
            failures.append(WriteFailure(exc.file, exc.problem, _verb(target, exc)))
        except Exception as exc:  # a report that failed to render is as missing as one that failed to write
            failures.append(failure(target, exc))
    return written, failures


def finish_run_reports(summary: Summary, run_dir: Path, *, cases: list[CaseSpec] | None,
                       secrets: list[str] | None = None, repo: Path | None = None,
                       earlier: list[WriteFailure] | None = None, artifact: str = DEFAULT_ARTIFACT,
                       before_summary: Callable[[Summary], list[WriteFailure]] | None = None,
                       bodies: Bodies | None = None) -> Summary:
    """Write a run's reports, then summary.json last; any failure makes the decision exit 2.

    `earlier` are failures from during the run (a transcript, events.jsonl); `before_summary` is
    called with the decision about to be written (e.g. to log run_completed) and may add failures.
    `bodies`: the HTML's trial bodies rendered during the run (reports/html.py).
    Returns the summary as finally decided (what the run must exit with).
    """
    try:
        return _finish(summary, run_dir, cases, secrets, repo, earlier, artifact, before_summary, bodies)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM) before summary.json: the run exits 2, "nothing was
        # gated", and its folder must not keep a comment.md, report.html or junit.xml saying PASS.
        _discard_staged(run_dir)
        if not (run_dir / SUMMARY_FILE).exists():
            for page in (HTML_FILE, COMMENT_FILE, JUNIT_FILE):
                (run_dir / page).unlink(missing_ok=True)
        raise


def _finish(summary: Summary, run_dir: Path, cases: list[CaseSpec] | None, secrets: list[str] | None,
            repo: Path | None, earlier: list[WriteFailure] | None, artifact: str,
            before_summary: Callable[[Summary], list[WriteFailure]] | None, bodies: Bodies | None) -> Summary:
    _, failures = write_reports_collecting(summary, run_dir, cases, secrets=secrets, env={}, artifact=artifact,
                                           repo=repo, bodies=bodies, staged=True)
    failures = [*(earlier or []), *failures, *_pages_that_cannot_move_in(run_dir)]
    if failures:
        summary = with_write_failures(summary, failures)
    late = before_summary(summary) if before_summary else []
    if late:
        failures += late
        summary = with_write_failures(summary, failures)
    if failures:  # the pages already written show the old decision: render them again
        _, again = _attempt(_page_steps(summary, run_dir, None, secrets or [], artifact, bodies, staged=True))
        _pages_that_cannot_move_in(run_dir)  # staged again above; already among the failures
        summary = with_write_failures(summary, failures + [f for f in again if f not in failures])
    try:
        write_summary(run_dir, summary, secrets)
    except OSError as exc:
        _discard_staged(run_dir)
        summary = with_write_failures(summary, [*failures, failure(run_dir / SUMMARY_FILE, exc)])
        _no_stale_pages(summary, run_dir, secrets or [], artifact, bodies)
        return summary
    if unmoved := move_staged_pages(run_dir):  # a page missing: its summary must say so
        _discard_staged(run_dir)
        summary = with_write_failures(summary, [*failures, *unmoved])
        # The pages moved in show the decision this one replaces: rendered again in place first
        # (a kill before the summary's rewrite leaves pages saying exit 2, never PASS).
        _, again = _attempt(_page_steps(summary, run_dir, None, secrets or [], artifact, bodies))
        summary = with_write_failures(summary, [*failures, *unmoved, *(f for f in again if f not in unmoved)])
        write_summary(run_dir, summary, secrets)
    return summary


def _no_stale_pages(summary: Summary, run_dir: Path, secrets: list[str], artifact: str, bodies: Bodies | None) -> None:
    """The pages written before summary.json failed show a decision that no longer holds (PASS):
    rendered again with the exit-2 one, and each that cannot be is removed, never left saying
    PASS. junit.xml goes either way: it holds per-trial results only, all passing."""
    (run_dir / JUNIT_FILE).unlink(missing_ok=True)
    steps = _page_steps(summary, run_dir, None, secrets, artifact, bodies)[:2]
    _, again = _attempt(steps)
    failed = {str(f.path) for f in again}
    for target, _ in steps:
        if str(target) in failed:
            target.unlink(missing_ok=True)


def with_write_failures(summary: Summary, failures: list[WriteFailure]) -> Summary:
    """The summary with its decision turned into exit 2, naming every file that could not be written."""
    lines = list(dict.fromkeys(f.line() for f in failures))
    old = summary.decision
    if old.exit_code == exitcodes.CANNOT_JUDGE:  # already exit 2 (maybe by an earlier call): keep why
        rest = [r for r in old.reasons if not is_failure_line(r)]
    else:
        rest = [f"the reports are incomplete; the rates alone said {old.status} (exit {old.exit_code})", *old.reasons]
    decision = Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, method=old.method,
                        reasons=lines + rest, warnings=old.warnings)
    return summary.model_copy(update={"decision": decision})
