"""A stored run's next step shown again later (`report`, `publish`, `view`): checked now, or dated.

summary.json keeps the next step its run named (`gate.next`, and the `next: ...` warning that
says it). One naming `rubricgate run --continue reports/<run>` goes stale: after `baseline
update`, a reviewer edit or a continuation of that run, the command is refused (another design,
continued already). Where the repository is at hand (`report`, `publish`) the continuation is
checked as `run --continue` checks it (regrade.py refused_today); refused, the step reads "run
afresh: rubricgate run (...why...)". Where it cannot be checked, or the check costs too much for
every page (the viewer and its static build), the step is dated: "at the time of the run".
summary.json itself is never rewritten: it keeps what the run said.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.models.results import Summary

THEN = "at the time of the run"
CONTINUE_THIS = "continue this run: "
TAKEN_UP = "continue the run that took it up: "
MAX_CHAIN = 20  # continuations followed from a stored run to the one that can be taken up


def continued_run(summary: Summary) -> str | None:
    """The run whose `run --continue` the stored next step names (None: it names none)."""
    detail = summary.gate
    step = detail.next if detail is not None else ""
    if detail is None or "--continue" not in step:
        return None
    if step.startswith(CONTINUE_THIS):
        return summary.run_id
    if step.startswith("continue the run these trials came from: "):  # a regrade's: the run it judged again
        source = summary.config.get("regraded_from")
        return source if isinstance(source, str) else None
    if step.startswith("fix what made its trials error, then continue the run it took up: ") and detail.continues:
        return detail.continues[-1]  # a continuation whose trials errored: the run it took up
    return None


def with_next(summary: Summary, step: str) -> Summary:
    """The summary with `step` as its next step, in gate.next and in the warning that says it."""
    if summary.gate is None:
        return summary
    said = f"next: {summary.gate.next}"
    warnings = [f"next: {step}" if w == said else w for w in summary.decision.warnings]
    return summary.model_copy(update={"gate": summary.gate.model_copy(update={"next": step}),
                                      "decision": summary.decision.model_copy(update={"warnings": warnings})})


def dated(summary: Summary) -> Summary:
    """A continuation the stored next step names, said to be the run's ('at the time of the run')."""
    if continued_run(summary) is None or summary.gate is None:
        return summary
    when = (summary.finished_at or summary.started_at)[:16].replace("T", " ")
    return with_next(summary, f"{summary.gate.next} ({THEN}, {when}; after a later `baseline update` or reviewer "
                              "edit it is refused: then run afresh: rubricgate run)")


def checked(summary: Summary, repo: Path, depth: int = 0) -> Summary:
    """The continuation the stored next step names, checked against `repo` as it is now: kept when
    `run --continue` would take the run up, "run afresh" with why when it would refuse it, dated
    when it cannot be checked here (no suite, the run's folder not in its reports folder, or a
    run made with --config, which the stored summary does not name). A run continued already
    names the run that took it up instead: its continuation, or its decision."""
    run_id = continued_run(summary)
    if run_id is None or summary.gate is None:
        return summary
    if "--config" in summary.gate.next:
        return dated(summary)
    why = _refused(run_id, repo)
    if why is None:
        return dated(summary)
    if not why:
        return summary
    return with_next(summary, _taken_up_step(run_id, repo, depth)
                     or f"run afresh: rubricgate run (run {run_id} cannot be continued now: {why})")


def _taken_up_step(run_id: str, repo: Path, depth: int) -> str | None:
    """What follows for a run another run continued: that run's own continuation when it can be
    taken up now, else its decision to read (None: no such run here, or one still under way)."""
    from rubricgate.gating.continuation_marks import RUNNING, continued_by, mark_path
    from rubricgate.records.files import read_summary
    from rubricgate.suite.config import load_config

    try:
        reports = load_config(repo, None).reports
        by = continued_by(mark_path(repo / reports, run_id))
        if not by or by.startswith(RUNNING) or "/" in by or by.startswith(".") or depth >= MAX_CHAIN:
            return None
        later = read_summary(repo / reports / by)
    except (GateInputError, GateInputErrors):  # no suite here, or the mark names no run of it
        return None
    step = checked(later, repo, depth + 1).gate
    if step is None or later.decision.status != "inconclusive":
        # quoted as continue_command quotes: a folder named with a space, a quote or `$(...)` is one argument
        shown = shlex.quote(str(Path(reports) / by))
        return (f"read the run that took it up: rubricgate report {shown} (run {run_id} was "
                f"continued already by {by}, which ended {later.decision.status.upper()})")
    if step.next.startswith(CONTINUE_THIS):
        return f"{TAKEN_UP}{step.next.removeprefix(CONTINUE_THIS)} (run {run_id} was continued already by {by})"
    return step.next  # the run that took it up cannot be continued either: its own step says what then


def _refused(run_id: str, repo: Path) -> str | None:
    """Why `run --continue` of `run_id` would be refused in `repo` now ('': taken up; None: cannot tell)."""
    # Loaded only to check (`report`, `publish`): the viewer dates a step and never needs them.
    from rubricgate.gating.case_edits import with_case_digests
    from rubricgate.records.files import read_summary
    from rubricgate.reports.regrade import continue_as, refused_today
    from rubricgate.suite.cases import ExactIds
    from rubricgate.suite.config import load_config
    from rubricgate.suite.load import load_all

    try:
        folder = repo / load_config(repo, None).reports / run_id
        if not (folder / "summary.json").is_file():  # an artifact rendered outside its repository
            return None
        run = read_summary(folder)
        loaded = with_case_digests(load_all(repo, None, only=ExactIds(c.id for c in run.cases)), repo)
        return refused_today(continue_as(run, loaded, repo), loaded, run_id)
    except (GateInputError, GateInputErrors):  # no suite here, or one that does not load: not checked
        return None
