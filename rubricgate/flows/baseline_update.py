"""The `baseline update` flow: check the inputs before running anything, run (or read) a
complete measurement, and refuse one that does not cover the whole suite unless told.

Under the statistical gate a measurement is several sessions (separate runs, each every case at
the same trials): what lets the gate check that the trials of one run are independent
(gating/dependence.py), with at least the trials a single collapsing case needs at this suite
size (gating/planning.py's baseline_measure; --sessions and --trials choose otherwise)."""

from __future__ import annotations

import fcntl
import os
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.gating.baseline import reviewer_fingerprint, updated_baseline, write_baseline
from rubricgate.gating.planning import baseline_measure
from rubricgate.models.baseline import Baseline
from rubricgate.models.results import CaseSpec, Summary
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.records.files import read_summary
from rubricgate.records.writing import is_failure_line
from rubricgate.runner.digests import reviewer_digest
from rubricgate.suite.answer_key import config_rel_of
from rubricgate.suite.baseline_file import load_baseline
from rubricgate.suite.load import load_all


@dataclass
class BaselineRequest:
    repo: Path
    config_path: Path | None = None
    reason: str | None = None
    from_runs: list[Path] = field(default_factory=list)  # measured already: one run folder a session
    allow_partial: bool = False
    listeners: list | None = None
    sessions: int | None = None  # separate runs of the measurement (default: baseline_measure)
    trials: int | None = None  # trials per case in all, split among the sessions (default: baseline_measure)


@dataclass
class BaselineUpdated:
    baseline: Baseline
    lowered: list[str]
    source: str  # the run folder the rates came from
    warnings: list[str]
    pooled: bool = False  # the run re-measured the baseline's setup: its trials were added


def check_reason(request: BaselineRequest) -> None:
    """Before anything runs: a --reason given blank is a mistake, not "no reason"."""
    if request.reason is not None and not request.reason.strip():
        raise GateInputError("--reason", "", "the reason is empty",
                             "say why the baseline changes, or leave --reason out")


def _lowering_needs_reason(exc: GateInputError, runs: list[str], measured_here: bool) -> GateInputError:
    """The runs are kept: finishing the update needs only the reason, not another measurement."""
    if not measured_here:
        return exc
    again = " ".join(f"--from {shlex.quote(r)}" for r in runs)
    kept = "run is" if len(runs) == 1 else f"{len(runs)} runs are"
    return GateInputError(exc.file, exc.field, exc.problem,
                          f"the measured {kept} kept: rubricgate baseline update {again} --reason '...'")


def partial_problems(summary: Summary, cases: list[CaseSpec]) -> list[str]:
    """Why a run does not measure the whole suite: interrupted, cases left out, trials errored."""
    problems = []
    if not summary.complete:
        problems.append("the run did not complete (interrupted, or trials were not run)")
    missing = sorted({c.id for c in cases} - {c.id for c in summary.cases})
    if missing:
        problems.append(f"the run covers {len(cases) - len(missing)} of {len(cases)} cases (missing {missing[0]}"
                        + (f" and {len(missing) - 1} more" if len(missing) > 1 else "") + ")")
    if summary.errored:
        problems.append(f"{len(summary.errored)} trial(s) errored (infrastructure), so the rates leave them out")
    return problems


def nothing_measured(summary: Summary, source: str) -> GateInputError | None:
    """A run whose every trial errored measured nothing (an unreachable endpoint, a broken agent
    setup): the update stops with the trials' own most common error, and a fix that is not
    --allow-partial or --from (a run of errors cannot make a baseline either way)."""
    trials = [t for c in summary.cases for t in c.trials]
    if not trials or not all(t.errored for t in trials):
        return None
    causes = Counter(re.split(r" #\d+: ", entry, maxsplit=1)[-1] for entry in summary.errored)
    cause = causes.most_common(1)[0][0] if causes else "no reason recorded"
    return GateInputError(source, "", f"all {len(trials)} trial(s) errored, so nothing was measured: {cause}",
                          "check the agent's endpoint and configuration (agent in rubricgate.yaml, the model "
                          "server it reaches), then rerun rubricgate baseline update")


def unrecorded(summary: Summary, source: str) -> GateInputError | None:
    """A run that could not write all its records (a full reports disk: transcripts, events,
    summary.json) is no measurement to keep: the baseline's history would name a run whose trials
    no one can read again, regrade or pool (`--from`)."""
    lost = [r for r in summary.decision.reasons if is_failure_line(r)]
    if not lost:
        return None
    more = f" and {len(lost) - 1} more" if len(lost) > 1 else ""
    return GateInputError(source, "", f"the run's records were not all written ({lost[0]}{more}), so the "
                          "baseline was left as it was",
                          "make room in the reports folder, then rerun rubricgate baseline update")


# A verdict grade that says no answer was read at all: none parsed (no_verdict) or none matched
# the configured shape (malformed_verdict); or the reviewer ended without one (it failed, exit 1
# with a traceback say, or timed out), graded its failure, not errored: a baseline of 0% all the same.
UNREAD = ("no_verdict", "malformed_verdict")
ENDED = ("agent_error", "timeout")


def nothing_read(summary: Summary, source: str, config: str, verdict_set: bool) -> GateInputError | None:
    """A run in which not one answer was read as a verdict measured the `verdict:` key (or a
    reviewer that never answered), not the reviewer: a baseline of 0% from it can never drop, so
    every later run would pass whatever the reviewer answers. Refused, naming the most common reason."""
    grades = [t.grades.get("verdict") for c in summary.cases for t in c.trials if not t.errored]
    if not grades or any(g is None or g.category not in UNREAD + ENDED for g in grades):
        return None
    category, cause = Counter((g.category, g.reason) for g in grades if g is not None).most_common(1)[0][0]
    if category in ENDED:
        return _never_answered(config, source, len(grades), cause)
    unset = "" if verdict_set else "; verdict: is unset, so each answer is read as the JSON contract"
    return GateInputError(config, "verdict", f"no answer of the {len(grades)} trial(s) of {source} was read as "
                          f"a verdict ({cause or 'no verdict'}{unset}): a baseline of 0% from it would pass every "
                          "later run", "set verdict: to the answers' own format (docs/code-review.md#the-verdict-key), "
                          "check it against an answer in the run's transcripts/, then rerun rubricgate "
                          "baseline update")


def _never_answered(config: str, source: str, trials: int, cause: str) -> GateInputError:
    """No trial ended with an answer: the reviewer failed (or timed out) every time."""
    return GateInputError(config, "agent", f"no trial of the {trials} of {source} ended with an answer ({cause}): "
                          "a baseline of 0% from it would pass every later run",
                          "run the reviewer's command by hand on a case (its stderr is in the run's transcripts/), "
                          "fix what stops it, then rerun rubricgate baseline update")


def measure(request: BaselineRequest, loaded) -> tuple[int, int]:
    """(sessions, trials per case in each) of a new measurement: the request's, else the default."""
    gate, dims = loaded.config.gate, loaded.config.graded_dimensions()
    sessions, per_session = baseline_measure(len(loaded.cases), len(dims), gate, request.trials or loaded.config.trials)
    if request.sessions is not None or request.trials is not None:
        sessions = request.sessions or sessions
        total = request.trials or sessions * per_session
        per_session = max(1, -(-total // sessions))
    return sessions, per_session


def _nothing_read(summary: Summary, source: str, request: BaselineRequest, loaded) -> GateInputError | None:
    config = config_rel_of(request.repo, request.config_path) or str(request.config_path)
    return nothing_read(summary, source, config, loaded.config.verdict is not None)


def _not_a_measurement(summary: Summary, source: str, request: BaselineRequest, loaded) -> GateInputError | None:
    """Why this run cannot set the baseline at all (not even with --allow-partial), or None."""
    return (unrecorded(summary, source) or nothing_measured(summary, source)
            or _nothing_read(summary, source, request, loaded))


def update_baseline(request: BaselineRequest) -> BaselineUpdated:
    """Check inputs, measure (or read) the run, refuse a partial one unless allowed, write baseline.json."""
    check_reason(request)
    loaded = load_all(request.repo, request.config_path, require_baseline=False)
    path = request.repo / loaded.config.baseline
    if path.exists():  # a broken baseline is named before anything is measured
        load_baseline(path, loaded.config.baseline, allow_format_1=True)
    make_baseline_folder(path, loaded.config.baseline, str(request.config_path or "rubricgate.yaml"))
    if request.from_runs:
        runs = [str(r) for r in request.from_runs]
        if len({r.resolve() for r in request.from_runs}) < len(runs):
            raise GateInputError("--from", ", ".join(runs), "a run is given twice: its trials would count twice",
                                 "give each session's run folder once")
        summaries = [read_summary(r) for r in request.from_runs]
        for got, run in zip(summaries, runs, strict=True):
            if (failed := _not_a_measurement(got, run, request, loaded)) is not None:
                raise failed
        summary, more = summaries[0], summaries[1:]
    else:
        sessions, trials = measure(request, loaded)
        outcomes = []
        for _ in range(sessions):  # each session a run of its own, one after the other
            outcomes.append(run_suite(RunOptions(repo=request.repo, config_path=request.config_path,
                                                 require_baseline=False, listeners=list(request.listeners or []),
                                                 kind="baseline", trials=trials)))
            done, run_dir = outcomes[-1].summary, str(outcomes[-1].run_dir)
            if (failed := _not_a_measurement(done, run_dir, request, loaded)) is not None:
                raise failed  # the next run would fail alike: stop at once
            if not outcomes[-1].summary.complete:
                break  # interrupted: the partial check below says so
        summary, more = outcomes[0].summary, [o.summary for o in outcomes[1:]]
        runs = [str(o.run_dir) for o in outcomes]
    source = ", ".join(runs)
    problems = [p for s in (summary, *more) for p in partial_problems(s, loaded.cases)]
    if problems and not request.allow_partial:
        raise GateInputError(source, "", "not a measurement of the whole suite: " + "; ".join(problems),
                             "update from a complete run of every case, or pass --allow-partial")
    # The run's own reviewer fingerprint (a `--from` run may predate edits); older summaries: today's files.
    recorded = summary.reviewer.fingerprint if summary.reviewer else ""
    digest = recorded or reviewer_fingerprint(reviewer_digest(request.repo, loaded.config))
    with baseline_locked(path):  # read again: another update may have written while this one measured
        old = load_baseline(path, loaded.config.baseline, allow_format_1=True) if path.exists() else None
        try:  # merged per case: a partial run (--allow-partial) refreshes only its cases
            update = updated_baseline(old, summary, request.reason or "", [c.id for c in loaded.cases], digest, more)
        except GateInputError as exc:
            raise _lowering_needs_reason(exc, runs, not request.from_runs) from None
        write_baseline(path, update.baseline)
    return BaselineUpdated(update.baseline, update.lowered, source, problems, update.pooled)


def make_baseline_folder(path: Path, display: str, config_file: str) -> None:
    """The folder `baseline:` names is made before measuring: a measurement of minutes ended in an
    internal error at the write when it was missing, and one that is a file is named."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GateInputError(config_file, "baseline", f"cannot make the folder of {display}: "
                             f"{exc.strerror}", "point baseline at a file in a folder of the repository") from None


@contextmanager
def baseline_locked(path: Path) -> Iterator[None]:
    """Hold the baseline's folder locked from reading the baseline to writing it back. Two updates
    measured side by side (minutes each) would otherwise each merge into the file as it was before
    both, and the second write would drop the first's history entry. The folder, not the file, is
    locked: the write replaces the file, so a lock on it would lock a file no longer there."""
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the kernel drops the lock with its last descriptor
