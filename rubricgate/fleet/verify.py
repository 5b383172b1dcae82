"""What `merge` takes from a shard is checked, not trusted.

A shard folder comes from another machine (or another job's artifact). Its summary could flip a
grade, count a trial twice, carry a case another shard ran, a trial no plan has, or a negative
cost. So every trial is checked against the plan (each planned trial exactly once, in the shard
that was assigned its case; a shard that says it completed has every one of its trials), every
number against its range, and every grade against the one its own transcript earns when graded
again here. Transcripts are read without following links, only from the shard's transcripts/
folder. Anything that does not add up is a one-line GateInputError (exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from rubricgate import boundary
from rubricgate.boundary import is_amount
from rubricgate.errors import GateInputError
from rubricgate.graders import judge
from rubricgate.isolation.untrusted import UntrustedPath, read_under, relative_parts
from rubricgate.models.case import CaseSpec
from rubricgate.models.results import TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.runner.scheduler import Job, trial_result
from rubricgate.suite.load import Loaded

if TYPE_CHECKING:
    from rubricgate.fleet.merge import Shard

TREE_CHANGED = "the original repository changed during this trial"
TRANSCRIPT_CAP = 64_000_000
FIX = "merge the shards' folders as `run --shard` wrote them"


def verify_shards(shards: list[Shard], jobs: list[Job], loaded: Loaded) -> None:
    """Raise GateInputError unless every shard's trials are the plan's, once each, and their
    numbers and grades are what their transcripts give."""
    cases = {j.case.id: j.case for j in jobs}
    seen: dict[tuple[str, int], Path] = {}
    paths: set[str] = set()
    for s in shards:
        own = {(c, t) for c, t, _ in s.record.jobs}
        ran = {(c.id, t.trial) for c in s.summary.cases for t in c.trials}
        for case in s.summary.cases:
            for t in case.trials:
                key = (t.case_id, t.trial)
                if t.case_id != case.id or key not in own:
                    raise _bad(s, key, "is not in this shard's plan", FIX)
                if key in seen:
                    raise _bad(s, key, f"is counted twice (also in {seen[key]})", FIX)
                seen[key] = s.run_dir
                if t.transcript and t.transcript in paths:
                    raise _bad(s, key, f"shares its transcript {t.transcript} with another trial", FIX)
                paths.add(t.transcript)
                check_numbers(s, t)
                check_grades(s, t, cases[t.case_id], loaded)
        if s.summary.complete and own - ran:
            raise _bad(s, sorted(own - ran)[0], "is missing from a shard that says it completed", FIX)
        spent = s.summary.cost.get("budget", {}).get("spent_usd", 0.0)
        if not is_amount(spent):
            raise GateInputError(str(s.run_dir / "summary.json"), "cost.budget.spent_usd",
                                 f"{spent!r} is not a non-negative amount", FIX)


def check_numbers(shard: Shard, t: TrialResult) -> None:
    """Costs, tokens, steps and durations are non-negative and finite."""
    for name in ("cost_usd", "duration_s", "input_tokens", "output_tokens", "steps"):
        value = getattr(t, name)
        if value is not None and not is_amount(value):
            raise _bad(shard, (t.case_id, t.trial), f"has {name} {value!r} (must be finite and >= 0)", FIX)


def check_grades(shard: Shard, t: TrialResult, case: CaseSpec, loaded: Loaded) -> None:
    """The recorded outcome and grades equal what the trial's own transcript earns."""
    if not t.transcript or t.errored or any(g.category == "not_run" or g.reason.startswith(TREE_CHANGED)
                                            for g in t.grades.values()):
        return  # nothing a transcript can judge again: never run, errored, or wrote to the repository
    transcript = read_shard_transcript(shard, t)
    parsed, grades = judge(case, transcript, loaded.rubric, loaded.config)
    fresh = trial_result(t.case_id, t.trial, transcript, parsed, grades, t.transcript)
    recorded = {d: g.passed for d, g in t.grades.items()}
    if fresh.outcome != t.outcome or {d: g.passed for d, g in fresh.grades.items()} != recorded:
        raise _bad(shard, (t.case_id, t.trial), "has grades its transcript does not earn", FIX)


def read_shard_transcript(shard: Shard, t: TrialResult) -> Transcript:
    """The trial's transcript, a regular file directly in the shard's transcripts/ folder."""
    data = transcript_bytes(shard, t, missing_ok=False)
    try:
        return boundary.validate_json(Transcript, data or b"")
    except (ValidationError, ValueError) as exc:
        raise GateInputError(str(shard.run_dir / "summary.json"), f"{t.case_id}#{t.trial}.transcript",
                             f"{t.transcript}: {_first_line(exc)}", FIX) from None


def transcript_bytes(shard: Shard, t: TrialResult, missing_ok: bool = True) -> bytes | None:
    """The bytes of the trial's transcript (None when absent and `missing_ok`): only a regular
    file directly in the shard's transcripts/ folder, no link followed, at most TRANSCRIPT_CAP."""
    where, field = str(shard.run_dir / "summary.json"), f"{t.case_id}#{t.trial}.transcript"
    try:
        parts = relative_parts(t.transcript)
        if len(parts) != 2 or parts[0] != "transcripts":
            raise UntrustedPath(f"{t.transcript!r} is not transcripts/<file>")
        return read_under(shard.run_dir, t.transcript, TRANSCRIPT_CAP)
    except UntrustedPath as exc:
        raise GateInputError(where, field, _first_line(exc), FIX) from None
    except FileNotFoundError:
        if missing_ok:
            return None
        raise GateInputError(where, field, f"{t.transcript} does not exist", FIX) from None
    except OSError as exc:
        raise GateInputError(where, field, f"cannot read {t.transcript}: {exc.strerror or exc}", FIX) from None


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _bad(shard: Shard, key: tuple[str, int], what: str, fix: str) -> GateInputError:
    return GateInputError(str(shard.run_dir / "summary.json"), f"trial {key[0]}#{key[1]}", what, fix)


EVENTS_CAP = 256_000_000


def shard_events(shard: Shard) -> list[dict]:
    """The shard's events.jsonl (a regular file, no link followed), each event naming a case of
    this shard's own plan; an event about another case is refused."""
    try:
        data = read_under(shard.run_dir, "events.jsonl", EVENTS_CAP)
    except FileNotFoundError:
        return []
    except (OSError, UntrustedPath) as exc:
        raise GateInputError(str(shard.run_dir / "events.jsonl"), "", _first_line(exc), FIX) from None
    own = {c for c, _, _ in shard.record.jobs}
    events = [e for e in _json_lines(data) if isinstance(e, dict)]
    for event in events:
        case_id = event.get("case_id")
        if case_id is not None and case_id not in own:
            raise GateInputError(str(shard.run_dir / "events.jsonl"), str(event.get("event", "")),
                                 f"names case {case_id!r}, which is not in this shard's plan", FIX)
    return events


def _json_lines(data: bytes) -> list[object]:
    out = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            out.append(boundary.loads(line))
        except ValueError:
            continue  # only the last line of a killed run can be partial
    return out
