"""What `merge` takes from a shard is checked, not trusted.

A shard folder comes from another machine (or another job's artifact). Its summary could flip a
grade, count a trial twice, carry a case another shard ran, a trial no plan has, or a negative
cost. So every trial is checked against the plan (each planned trial exactly once, in the shard
that was assigned its case; a shard that says it completed has every one of its trials), every
number against its range, and every grade against the one its own transcript earns when graded
again here (gating/recorded.py, which a continued run's trials go through too). Anything that
does not add up is a one-line GateInputError (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rubricgate import boundary
from rubricgate.boundary import is_amount
from rubricgate.errors import GateInputError
from rubricgate.gating.recorded import TrialLedger, bad_trial, first_line
from rubricgate.isolation.untrusted import UntrustedPath, read_under
from rubricgate.runner.scheduler import Job
from rubricgate.suite.load import Loaded

if TYPE_CHECKING:
    from rubricgate.fleet.merge import Shard

FIX = "merge the shards' folders as `run --shard` wrote them"


def verify_shards(shards: list[Shard], jobs: list[Job], loaded: Loaded) -> None:
    """Raise GateInputError unless every shard's trials are the plan's, once each, and their
    numbers and grades are what their transcripts give."""
    cases = {j.case.id: j.case for j in jobs}
    ledger = TrialLedger(loaded, FIX)
    for s in shards:
        own = {(c, t) for c, t, _ in s.record.jobs}
        ran = {(c.id, t.trial) for c in s.summary.cases for t in c.trials}
        for case in s.summary.cases:
            for t in case.trials:
                key = (t.case_id, t.trial)
                if t.case_id != case.id or key not in own:
                    raise _bad(s, key, "is not in this shard's plan", FIX)
                if t.confirmation:  # a shard runs a fixed design: a trial marked so is left out of every rate
                    raise _bad(s, key, "is marked a confirmation trial, which a shard never runs", FIX)
                ledger.admit(s.run_dir, t, cases[t.case_id])
        if s.summary.complete and own - ran:
            raise _bad(s, sorted(own - ran)[0], "is missing from a shard that says it completed", FIX)
        spent = s.summary.cost.get("budget", {}).get("spent_usd", 0.0)
        if not is_amount(spent):
            raise GateInputError(str(s.run_dir / "summary.json"), "cost.budget.spent_usd",
                                 f"{spent!r} is not a non-negative amount", FIX)


def _bad(shard: Shard, key: tuple[str, int], what: str, fix: str) -> GateInputError:
    return bad_trial(shard.run_dir, key, what, fix)


EVENTS_CAP = 256_000_000


def shard_events(shard: Shard) -> list[dict]:
    """The shard's events.jsonl (a regular file, no link followed), each event naming a case of
    this shard's own plan; an event about another case is refused."""
    try:
        data = read_under(shard.run_dir, "events.jsonl", EVENTS_CAP)
    except FileNotFoundError:
        return []
    except (OSError, UntrustedPath) as exc:
        raise GateInputError(str(shard.run_dir / "events.jsonl"), "", first_line(exc), FIX) from None
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
