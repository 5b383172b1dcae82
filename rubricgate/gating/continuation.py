"""Continue, do not restart: a run that ended INCONCLUSIVE takes more trials, errors still controlled.

Running the same reviewer again from scratch until it PASSes spends alpha anew each time (five
fresh tries PASS a drop of exactly the margin in 6.5% of cases, not 5%). The adaptive design
(rubricgate/gating/sequential.py) is planned past its budget instead: CONTINUATIONS more budgets
of rounds, with their share of each error spent over the whole sequence. `rubricgate run
--continue RUN` takes up that run where it stopped (its trials, looks and confirmations), runs
the next budget, and judges everything together; the new run folder holds the old run's trials
and transcripts as well, and says which run it continues.

A plain `rubricgate run` whose newest run of the same design (the same reviewer files, agent
and model, against the same baseline, cases and gate settings: its `design_key`; a run of
another in between, one case with --only say, is passed over) ended INCONCLUSIVE is such a
rerun: it continues that run, and says so, rather than spending the error again. What cannot
be continued (another design, a run that decided, no continuation left, a run continued
already, or being continued now: a plain rerun too) is a one-line error naming the run and the fix.

A run folder is not trusted for being under reports/: a pull request or a copied artifact can
plant one. A plain rerun continues only a run this user started (runner/cache.py
`remember_run`, a note outside the repository), and every continued run's trials are checked
as `merge` checks a shard's (gating/recorded.py): each a case of the design once, no more per
case than the design can have run, none taken out, grades its own transcript earns. Its transcripts are copied
as regular files only, no link followed.

A run is marked before the continuation's first trial (gating/continuation_marks.py: by run id,
so a copy of its folder is the same run), so two continuations started together do not both
spend the error; an interrupted or failed continuation, or one that could not judge (its looks
notwithstanding: more errored trials than gate.max_errored, say), lifts the mark (such a run
cannot be continued, and the old one would be stranded).

Before it looks for a run to continue, a run holds its design's mark (gating/design_mark.py) to
its end: a second run of the design started meanwhile, which could not see this one's result
(a fresh spend of the error beside it), is refused.
"""

from __future__ import annotations

import itertools
import os
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rubricgate.boundary import printable
from rubricgate.errors import GateInputError
from rubricgate.gating.adaptive import shared_design
from rubricgate.gating.continuation_marks import (
    CONTINUED_BY,
    RUNNING,
    continued_by,
    mark_path,
    open_mark,
    running_mark,
    user_mark,
    why_not_again,
    write_mark,
)
from rubricgate.gating.design import design_of, unrecorded_by_older
from rubricgate.gating.design_mark import DesignMark, design_mark_path, hold_design
from rubricgate.gating.planning import CONFIRM_FACTOR
from rubricgate.gating.recorded import TrialLedger, bad_trial, copy_transcripts
from rubricgate.isolation.untrusted import UntrustedPath, opened_folder, read_under_fd
from rubricgate.models.results import Summary, TrialResult
from rubricgate.records.files import read_summary
from rubricgate.records.run_index import SHARD_FILE
from rubricgate.runner.cache import ran_here
from rubricgate.suite.trees import with_autocrlf_note
from rubricgate.suite.yaml_json import MAX_FILE_BYTES


@dataclass
class Continued:
    """The run being continued."""

    run_dir: Path
    summary: Summary
    recognized: bool  # found as the newest run (a plain rerun), not named with --continue
    mark: Path | None = None  # where it is marked continued (mark_path); None: in its own folder
    claimed: bool = False  # this process marked it (claim): its mark is this run's to settle
    also: list[Path] = field(default_factory=list)  # more places that name its continuation (_mark_also)
    written: list[Path] = field(default_factory=list)  # those this process wrote: lifted with the mark

    @property
    def marker(self) -> Path:
        return self.mark or self.run_dir / CONTINUED_BY

    @property
    def trials(self) -> list[TrialResult]:
        """Its trials, each naming the run that ran it (a session of its own: TrialResult.session)."""
        run = self.summary.run_id
        return [t if t.session else t.model_copy(update={"session": run}) for c in self.summary.cases for t in c.trials]

    def note(self) -> str:
        """What the run says about it."""
        how = "a rerun of the same design: it" if self.recognized else "it"
        return (f"continues {self.run_dir} ({how} ended INCONCLUSIVE): its {len(self.trials)} trials count here too, "
                "the errors still controlled over both (one pre-planned design)")

    def copy_transcripts(self, run_dir: Path) -> None:
        """The old run's transcripts into the new folder, at the same relative paths (the trials
        point there): regular files only, no link followed."""
        copy_transcripts(self.run_dir, self.trials, run_dir, FIX)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Claimed for as long as the continuing run goes on; the claim lifted when it fails."""
        self.claim()
        try:
            yield
        except BaseException:
            self.release()
            raise

    def claim(self) -> None:
        """Mark the run as being continued before the first trial, in every place that names its
        continuation: a second continuation started meanwhile would take it up too and spend the
        error twice, so it is refused, under another reports folder too (it finds the run's own
        folder's mark, or this user's cache folder's)."""
        if not self._claim_at(self.marker):
            return  # a folder that cannot be written: nothing can be marked
        self.claimed = True
        try:
            self.written += [path for path in self.also if self._claim_at(path, 0o700)]
        except GateInputError:
            self.release()
            raise

    def _claim_at(self, marker: Path, mode: int = 0o777) -> bool:
        """A mark naming this process at `marker` (False: the place cannot be written); a
        one-line GateInputError when another continuation holds it, or held it to its end."""
        try:
            marker.parent.mkdir(mode=mode, parents=True, exist_ok=True)
            fd = open_mark(marker)
        except FileExistsError:
            raise self._refused(continued_by(marker) or "another run") from None
        except OSError:
            return False
        with os.fdopen(fd, "w") as out:
            out.write(running_mark() + "\n")
        return True

    def _refused(self, by: str) -> GateInputError:
        if self.recognized:  # a plain rerun took it up: no --continue was given to blame
            return GateInputError(str(self.run_dir), "", f"this run would continue it, but {why_not_again(by)}",
                                  "wait for that run to end, then run again")
        return GateInputError("--continue", str(self.run_dir), why_not_again(by), NAMED_FIX)

    def hand_over(self, run_dir: Path, interrupted: bool) -> None:
        """Once the trials are over: the old run's transcripts into `run_dir`, and the mark names
        `run_dir`; interrupted, the mark is lifted instead (the interrupted run cannot be
        continued, so the old one would be stranded, its only way on a fresh run)."""
        self.copy_transcripts(run_dir)
        if interrupted:
            self.release()
        elif self.claimed:
            write_mark(self.marker, run_dir.name)
            self._mark_also(run_dir)

    def settle(self, summary: Summary) -> None:
        """A continuation that could not judge lifts its marks as an interrupted one does: it cannot
        be continued itself, and the run it took up was stranded ("continued already" by a run that
        ended ERROR). Whether its design looked or not: the repository modified during it, trials
        left unrun for the budget, more errored trials than gate.max_errored (a reviewer whose
        trials crashed for a while: its looks kept the mark), a report not written."""
        if not_judged(summary):
            self.release()

    def _mark_also(self, run_dir: Path) -> None:
        """The run's own folder and this user's cache folder name `run_dir` too (why_not reads
        both): the mark under the reports folder is found by the config's `reports:`, and a
        config pointing it elsewhere took the same run up again, from its folder or a copy made
        before. A place that cannot be written keeps the others."""
        for path in self.also:
            if write_mark(path, run_dir.name) and path not in self.written:
                self.written.append(path)

    def release(self) -> None:
        """Lift this run's marks: the continuation did not run to its end."""
        if self.claimed:
            self.marker.unlink(missing_ok=True)
            self.claimed = False
        for path in self.written:
            path.unlink(missing_ok=True)
        self.written = []


def not_judged(summary: Summary) -> bool:
    """Did this run end "could not judge" (exit 2 but not INCONCLUSIVE)? A continuation that did
    lifted its marks (Continued.settle): the run it took up is the one to continue."""
    return summary.decision.status == "error"


FIX = "continue a run as rubricgate wrote it, or run afresh without --continue"
NAMED_FIX = "continue the newest INCONCLUSIVE run of this reviewer and baseline, or run afresh without --continue"
OLDER = "an older rubricgate wrote this run"
ANOTHER_DESIGN = "another design"  # why_not's and changed_settings' line begins so


def prepare(repo: Path, loaded, case_ids: Sequence[str], first: int, agent: str, named: Path | None,
            cache_dir: Path | None = None) -> tuple[Continued | None, str, DesignMark | None, str]:
    """(the run this one continues, this run's design key, its mark on the design: held, the
    caller's to release, and what a fresh run passed over: passed_over) for a statistical run of
    `case_ids`."""
    if loaded.baseline is None:
        if named is not None:
            raise GateInputError("--continue", str(named), "there is no baseline to continue against",
                                 "run `rubricgate baseline update` first")
        return None, "", None, ""
    key, settings = design_of(repo, loaded, case_ids, first, agent)
    # Held before looking for the run to continue: a run of the design ending meanwhile is then
    # found (and continued), never passed over for a fresh start beside its INCONCLUSIVE.
    try:
        mark = hold_design(design_mark_path(repo / loaded.config.reports, key, settings))
    except GateInputError:
        _to_continue(repo, loaded, case_ids, named, key, cache_dir, settings)  # being continued: that line
        raise
    try:
        continued = _to_continue(repo, loaded, case_ids, named, key, cache_dir, settings)
        fresh = named is None and continued is None
        passed = passed_over(repo / loaded.config.reports, key, settings, cache_dir) if fresh else ""
        return continued, key, mark, passed
    except BaseException:
        mark.release()
        raise


def _to_continue(repo: Path, loaded, case_ids: Sequence[str], named: Path | None, key: str,
                 cache_dir: Path | None, settings: dict[str, str]) -> Continued | None:
    """The run this one continues, its trials checked; None: a fresh run."""
    try:
        continued = continued_run(named, repo / loaded.config.reports, key, cache_dir, settings)
    except GateInputError as exc:  # a CRLF checkout of an unchanged reviewer reads as another design
        raise with_autocrlf_note(exc, repo) if exc.problem.startswith(ANOTHER_DESIGN) else exc from None
    if continued is not None:
        try:
            verify_trials(continued, loaded, case_ids)
        except GateInputError:
            if named is not None:
                raise
            return None  # found unasked and its trials do not hold up: this run starts afresh
    return continued


def verify_trials(continued: Continued, loaded, case_ids: Sequence[str]) -> None:
    """Each trial a case of this design, once, within what the design can have run per case
    (its budgets so far and the confirmations), numbers in range and grades its transcript
    earns (gating/recorded.py); else a one-line GateInputError."""
    run_dir, gate = continued.run_dir, loaded.config.gate
    taken = continued.summary.gate.continuations if continued.summary.gate else 0
    most = gate.max_trials_per_case * (taken + 1 + CONFIRM_FACTOR)
    chosen = set(case_ids)
    specs = {c.id: c for c in loaded.cases if c.id in chosen}
    ledger = TrialLedger(loaded, FIX)
    for case in continued.summary.cases:
        for t in case.trials:
            key = (t.case_id, t.trial)
            if t.case_id != case.id or t.case_id not in specs:
                raise bad_trial(run_dir, key, "is not a case of this run's design", FIX)
            if not 1 <= t.trial <= most:
                raise bad_trial(run_dir, key, f"is past the {most} trials a case of this design can have run", FIX)
            ledger.admit(run_dir, t, specs[t.case_id])
    check_complete(continued, loaded, case_ids)


def check_complete(continued: Continued, loaded, case_ids: Sequence[str]) -> None:
    """Every trial the run ran is still there: trials taken out of its summary (its failing ones,
    say) would be taken up as never run, and the rest could PASS. A run numbers each case's trials
    1, 2, ... (confirmations too), runs every round on every case of the design, and its last look
    counted every trial it ran; else a one-line GateInputError."""
    by_case: dict[str, list[TrialResult]] = {}
    for t in continued.trials:
        by_case.setdefault(t.case_id, []).append(t)
    for case, trials in by_case.items():
        _check_numbering(continued.run_dir, case, [t.trial for t in trials])
        _check_ran(continued.run_dir, trials)
    _check_rounds(continued.run_dir, by_case, loaded, case_ids)
    _check_last_look(continued)


def _check_numbering(run_dir: Path, case: str, numbers: list[int]) -> None:
    """A case's trials are numbered 1..N, none left out."""
    missing = sorted(set(range(1, max(numbers) + 1)) - set(numbers))
    if missing:
        raise bad_trial(run_dir, (case, missing[0]), "is missing: a run keeps every trial it ran", FIX)


def _check_ran(run_dir: Path, trials: list[TrialResult]) -> None:
    """No trial is marked never run: a run that left one (its budget spent, interrupted) could
    not judge, so one that ended INCONCLUSIVE ran every trial. A failing trial marked so would be
    left out of every rate, as one taken out."""
    for t in trials:
        if any(g.category == "not_run" for g in t.grades.values()):
            raise bad_trial(run_dir, (t.case_id, t.trial), "is marked never run: an INCONCLUSIVE run ran every trial",
                            FIX)


def _check_rounds(run_dir: Path, by_case: dict[str, list[TrialResult]], loaded, case_ids: Sequence[str]) -> None:
    """Every case the design shares with the baseline ran the same rounds (gating/sequential.py
    caps: every case gets every round), so each holds as many design trials."""
    _, shared = shared_design(loaded.baseline, case_ids, loaded.config.graded_dimensions())
    design = {c: sum(not t.confirmation for t in by_case.get(c, [])) for c in shared}
    if len(set(design.values())) > 1:
        low, high = min(design, key=design.__getitem__), max(design, key=design.__getitem__)
        raise GateInputError(str(run_dir / "summary.json"), "cases",
                             f"{low} holds {design[low]} design trials and {high} {design[high]}: "
                             "every case of the design runs every round", FIX)


def _check_last_look(continued: Continued) -> None:
    """The last look counted every trial that ran, errored ones too (_check_ran: every one ran)."""
    looks = continued.summary.gate.looks if continued.summary.gate else []
    ran = len(continued.trials)
    if looks and looks[-1].get("trials") != ran:
        raise GateInputError(str(continued.run_dir / "summary.json"), "gate.looks",
                             f"its last look counted {looks[-1].get('trials')} trials, the summary holds {ran}", FIX)


def continued_run(named: Path | None, reports: Path, key: str, cache_dir: Path | None = None,
                  settings: dict[str, str] | None = None) -> Continued | None:
    """The run to continue: the one named (--continue; an error when it cannot be), else the newest
    run of this design under `reports` when this user started it and it ended INCONCLUSIVE."""
    if named is not None:
        summary = read_summary(named)
        mark, note = mark_path(reports, summary.run_id), user_mark(cache_dir, summary.run_id)
        problem = why_not(summary, key, named, mark, note) or changed_settings(summary, settings)
        if problem:
            raise GateInputError("--continue", str(named), problem,
                                 "run afresh without --continue" if problem.startswith(OLDER) else NAMED_FIX)
        return Continued(named, summary, False, mark, also=_also(named, note))
    found = _newest_run_here(reports, cache_dir, lambda summary: of_design(summary, key, settings))
    if found is None:
        return None
    newest, summary = found
    mark, note = mark_path(reports, summary.run_id), user_mark(cache_dir, summary.run_id)
    if summary.run_id != newest.name:
        return None
    being_continued(newest, [mark, *_also(newest, note)])
    if why_not(summary, key, newest, mark, note) or changed_settings(summary, settings):
        return None
    return Continued(newest, summary, True, mark, also=_also(newest, note))


def being_continued(run_dir: Path, marks: list[Path]) -> None:
    """A plain rerun whose run to take up is being continued right now is refused (one line, exit
    2): passing it over started afresh, a fresh spend of the error beside the continuation's,
    and either could PASS. Once the continuation ends, the next plain rerun takes it up."""
    by = next((b for b in map(continued_by, marks) if b is not None), None)
    if by is not None and by.startswith(RUNNING):
        raise GateInputError(str(run_dir), "", f"this run would continue it, but {why_not_again(by)}",
                             "wait for that run to end, then run again")


def of_design(summary: Summary, key: str, settings: dict[str, str] | None) -> bool:
    """Is this run's summary one of the design `key` (and rubricgate.yaml's `settings`)? A run of
    another (one case with --only, other flags or settings) is no rerun of this one's."""
    return summary.gate is not None and summary.gate.design_key == key and not changed_settings(summary, settings)


def _also(run_dir: Path, note: Path | None) -> list[Path]:
    """Where a continuation is named besides the reports folder's mark: the run's folder, and
    this user's cache folder when there is one."""
    return [run_dir / CONTINUED_BY, *([note] if note is not None else [])]


def changed_settings(summary: Summary, settings: dict[str, str] | None) -> str:
    """Why the run's rubricgate.yaml settings make it another design ('' when they do not): the
    design key holds the reviewer's files, not these, and trials of another command line, tiers or
    grading rubric would be taken up as this one's. A section the run did not record is not known
    to differ."""
    recorded = summary.reviewer.digests if summary.reviewer is not None else {}
    changed = [k for k, v in (settings or {}).items() if recorded.get(k, v) != v]
    if not changed:
        return ""
    return f"{ANOTHER_DESIGN}: {changed[0]} changed since (a changed reviewer is judged afresh)"


def why_not(summary: Summary, key: str, run_dir: Path | None = None, mark: Path | None = None,
            note: Path | None = None) -> str:
    """Why this run cannot be continued by this design ('' when it can); marked continued in
    `mark`, in its folder or in this user's cache folder (`note`, user_mark)."""
    marks = [m for m in (mark, run_dir / CONTINUED_BY if run_dir is not None else None, note) if m is not None]
    by = next((b for b in map(continued_by, marks) if b is not None), None)
    if by is not None:
        return why_not_again(by)
    gate = summary.gate
    if summary.kind != "run" or gate is None or not gate.looks:
        return "not a run of the statistical gate's adaptive rounds"
    if summary.decision.status != "inconclusive":
        return f"it ended {summary.decision.status.upper()}, not INCONCLUSIVE: nothing to continue"
    if not gate.design_key or gate.design_key != key:
        if gaps := unrecorded_by_older(summary):  # not a change: a key computed from less
            return (f"{OLDER}: it recorded no {' and no '.join(gaps)}, which a design "
                    "now holds, so no run of this rubricgate is its design; a fresh run is needed")
        return (f"{ANOTHER_DESIGN}: the reviewer, agent, model, its environment, baseline, cases or gate settings "
                "changed since (a changed reviewer is judged afresh)")
    return ""


def _newest_run_here(reports: Path, cache_dir: Path | None,
                     mine: Callable[[Summary], bool] = lambda summary: True,
                     naming: str | None = None) -> tuple[Path, Summary] | None:
    """The newest gated run this user started here that ran to its end and is `mine` (of this
    design: of_design), with its summary. Passed over: a run of another design (one case with
    --only, say), a folder not started here (planted, or from another machine), an interrupted run (an
    interrupted continuation lifts its mark: the run it continued is the one to take up again), a
    continuation that could not judge (it lifted its mark too: Continued.settle), a regrade (its
    transcripts' run is the one that ran) and a shard (`run --shard K/N`: a slice, continued by
    none). Each hid the INCONCLUSIVE run behind it, and the next plain run started afresh,
    spending the error again."""
    if not reports.is_dir():
        return None
    runs = sorted((p.parent for p in reports.glob("*/summary.json")
                   if not p.parent.name.endswith(("-baseline", "-record"))), reverse=True)
    # Run ids start with a UTC timestamp to the second, then a random suffix: runs of one second
    # are ordered by their summaries' start (to the millisecond), or the older could be taken up.
    for _, second in itertools.groupby(runs, key=lambda run: run.name.split("-", 1)[0]):
        here = _summaries_here(second, cache_dir, naming)
        for run, summary in sorted(here, key=lambda rs: rs[1].started_at, reverse=True):
            if summary.complete and "regraded_from" not in summary.config and not (run / SHARD_FILE).exists() \
                    and not (summary.counted_runs and not_judged(summary)) and mine(summary):
                return run, summary
    return None


def passed_over(reports: Path, key: str, settings: dict[str, str], cache_dir: Path | None) -> str:
    """Why a plain rerun that continues nothing passed over the newest INCONCLUSIVE run of its
    design here ('' when there is none): no note says this user started it. A folder planted or
    copied here is never continued unasked, but a note is also lost when a copy-only run, started
    before it was written, clears the cache folder and puts back only the notes it read first:
    the rerun then started afresh in silence, a second spend of the error."""
    found = _newest_run_here(reports, cache_dir, lambda summary: of_design(summary, key, settings), naming=key)
    if found is None or ran_here(cache_dir, found[0].name) or \
            why_not(found[1], key, found[0], mark_path(reports, found[1].run_id)):
        return ""
    # A planted folder's name is shown escaped: a newline in it began a line of its own in the
    # output, a CI log's `::error::` or `::stop-commands::` workflow command.
    shown = printable(str(found[0]))
    return (f"started afresh: {shown} of this design ended INCONCLUSIVE, but no note says this user ran it "
            "(a run folder copied or planted here, or a note lost when a copy-only run cleared the cache "
            "folder meanwhile), so it is not continued unasked; if you ran it, continue it instead: "
            f"rubricgate run --continue {shlex.quote(shown)} (a fresh run beside it spends the error again)")


def _summaries_here(runs: Iterable[Path], cache_dir: Path | None,
                    naming: str | None = None) -> list[tuple[Path, Summary]]:
    """The readable summaries of the runs this user started here, or (`naming` a design key) of
    every run here whose summary names it."""
    found = []
    for run in runs:
        if ran_here(cache_dir, run.name) if naming is None else _names(run, naming):
            try:
                found.append((run, read_summary(run)))
            except GateInputError:
                continue
    return found


def _names(run: Path, key: str) -> bool:
    """Does the run's summary.json hold the design key `key`? A search of its bytes before it is
    parsed: every run folder here is looked at, most of other designs (2,000 cases: 7 MB each).
    A link, a FIFO or a device there is no run's summary, and no more is read than read_summary reads."""
    # Read as untrusted: a planted summary.json linked to /dev/zero was read until memory ran out,
    # a FIFO blocked the run, and a 10 GB file was read whole, on every plain rerun of the design.
    try:
        with opened_folder(run) as folder:
            data = read_under_fd(folder, "summary.json", MAX_FILE_BYTES + 1)
    except (OSError, UntrustedPath):
        return False
    return len(data) <= MAX_FILE_BYTES and key.encode() in data  # a larger one read_summary refuses
