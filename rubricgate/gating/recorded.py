"""Trials read back from a run folder are checked, not trusted.

`merge` takes trials from shard folders another job wrote, and a continued run (`run
--continue`, or a plain rerun of an INCONCLUSIVE run) takes the trials of a folder under
reports/, which a pull request or anyone with the checkout can plant. Either way a trial counts
only if its numbers are in range and its grades are what its own transcript earns when graded
again here; a trial with nothing to grade again must say why in full (never run: every grade
not_run; wrote to the repository: every grade failed for it; errored: in no rate). Transcripts
are read without following links, only from the folder's transcripts/. Anything that does not
add up is a one-line GateInputError (exit 2).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from rubricgate import boundary
from rubricgate.boundary import is_amount
from rubricgate.errors import GateInputError
from rubricgate.graders import judge
from rubricgate.isolation.untrusted import UntrustedPath, read_under, relative_parts, write_fresh
from rubricgate.models.case import CaseSpec
from rubricgate.models.results import TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.runner.scheduler import TREE_CHANGED, trial_result
from rubricgate.suite.load import Loaded

TRANSCRIPT_CAP = 64_000_000


def bad_trial(run_dir: Path, key: tuple[str, int], what: str, fix: str) -> GateInputError:
    return GateInputError(str(run_dir / "summary.json"), f"trial {key[0]}#{key[1]}", what, fix)


class TrialLedger:
    """The trials read back so far, from one folder or several (a merge's shards): each admitted
    once, with a transcript of its own, numbers in range and grades its transcript earns."""

    def __init__(self, loaded: Loaded, fix: str) -> None:
        self.loaded, self.fix = loaded, fix
        self.seen: dict[tuple[str, int], Path] = {}
        self.paths: set[str] = set()

    def admit(self, run_dir: Path, t: TrialResult, case: CaseSpec) -> None:
        """Check one trial of `run_dir` (a one-line GateInputError when it does not add up)."""
        key = (t.case_id, t.trial)
        if key in self.seen:
            raise bad_trial(run_dir, key, f"is counted twice (also in {self.seen[key]})", self.fix)
        self.seen[key] = run_dir
        if t.transcript and t.transcript in self.paths:
            raise bad_trial(run_dir, key, f"shares its transcript {t.transcript} with another trial", self.fix)
        self.paths.add(t.transcript)
        check_numbers(run_dir, t, self.fix)
        check_grades(run_dir, t, case, self.loaded, self.fix)


def check_numbers(run_dir: Path, t: TrialResult, fix: str) -> None:
    """Costs, tokens, steps and durations are non-negative and finite."""
    for name in ("cost_usd", "duration_s", "input_tokens", "output_tokens", "steps"):
        value = getattr(t, name)
        if value is not None and not is_amount(value):
            raise bad_trial(run_dir, (t.case_id, t.trial), f"has {name} {value!r} (must be finite and >= 0)", fix)


def check_grades(run_dir: Path, t: TrialResult, case: CaseSpec, loaded: Loaded, fix: str) -> None:
    """The recorded outcome and grades equal what the trial's own transcript earns; a trial
    that cannot be graded again says why with every grade."""
    key, grades = (t.case_id, t.trial), list(t.grades.values())
    if any(g.category == "not_run" for g in grades):
        if not all(g.category == "not_run" and not g.passed for g in grades):
            raise bad_trial(run_dir, key, "mixes not-run grades with graded ones", fix)
        return
    if any(g.reason.startswith(TREE_CHANGED.rstrip(": ")) for g in grades):
        if not all(g.reason.startswith(TREE_CHANGED) and not g.passed for g in grades):
            raise bad_trial(run_dir, key, "says it wrote to the repository, but not in every grade", fix)
        return
    if t.errored:
        return  # in no rate; too many make the run exit 2 (gate.max_errored)
    if not t.transcript:
        raise bad_trial(run_dir, key, "has grades but no transcript that earns them", fix)
    transcript = read_recorded_transcript(run_dir, t, fix)
    parsed, fresh_grades = judge(case, transcript, loaded.rubric, loaded.config)
    fresh = trial_result(t.case_id, t.trial, transcript, parsed, fresh_grades, t.transcript)
    recorded = {d: g.passed for d, g in t.grades.items()}
    if fresh.outcome != t.outcome or {d: g.passed for d, g in fresh.grades.items()} != recorded:
        raise bad_trial(run_dir, key, "has grades its transcript does not earn", fix)


def read_recorded_transcript(run_dir: Path, t: TrialResult, fix: str) -> Transcript:
    """The trial's transcript, a regular file directly in the folder's transcripts/."""
    data = transcript_bytes(run_dir, t, fix, missing_ok=False)
    try:
        return boundary.validate_json(Transcript, data or b"")
    except (ValidationError, ValueError) as exc:
        raise GateInputError(str(run_dir / "summary.json"), f"{t.case_id}#{t.trial}.transcript",
                             f"{t.transcript}: {first_line(exc)}", fix) from None


def transcript_bytes(run_dir: Path, t: TrialResult, fix: str, missing_ok: bool = True) -> bytes | None:
    """The bytes of the trial's transcript (None when absent and `missing_ok`): only a regular
    file directly in the folder's transcripts/, no link followed, at most TRANSCRIPT_CAP."""
    where, field = str(run_dir / "summary.json"), f"{t.case_id}#{t.trial}.transcript"
    try:
        parts = relative_parts(t.transcript)
        if len(parts) != 2 or parts[0] != "transcripts":
            raise UntrustedPath(f"{t.transcript!r} is not transcripts/<file>")
        return read_under(run_dir, t.transcript, TRANSCRIPT_CAP)
    except UntrustedPath as exc:
        raise GateInputError(where, field, first_line(exc), fix) from None
    except FileNotFoundError:
        if missing_ok:
            return None
        raise GateInputError(where, field, f"{t.transcript} does not exist", fix) from None
    except OSError as exc:
        raise GateInputError(where, field, f"cannot read {t.transcript}: {exc.strerror or exc}", fix) from None


def copy_transcripts(source: Path, trials: list[TrialResult], run_dir: Path, fix: str) -> None:
    """The trials' transcripts into `run_dir` at the same relative paths: regular files from the
    source's transcripts/ only (no link followed, none written through, nothing else copied)."""
    (run_dir / "transcripts").mkdir(exist_ok=True)  # a run stopped before its first transcript has none
    for t in trials:
        data = transcript_bytes(source, t, fix) if t.transcript else None  # transcripts/<file> only
        if data is not None:
            write_fresh(run_dir / t.transcript, data)


def first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
