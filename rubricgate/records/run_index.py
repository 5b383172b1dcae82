"""The viewer's per-run index, written from a run's summary (rubricgate/view/ reads it).

`view-index.json` (the run's head, what the runs page lists) and `view-cases.jsonl` (each case's
trials, one line a case), both stamped with the summary.json they stand for ("size:mtime_ns").
A run writes them itself right after its summary.json (`index_run`), from the summary it has in
memory, so the first view of a run parses no summary; the viewer builds them with the same
functions for any run folder without a current index (a summary written or edited by anything
else, a history checkout, a run whose index could not be written).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from secrets import token_hex
from typing import TYPE_CHECKING

from pydantic_core import PydanticSerializationError

from rubricgate.models.view_index import CaseCell, RateCell, RunCases, RunHead, TrialCell
from rubricgate.secrets import scrub_json

if TYPE_CHECKING:  # built from a summary; the viewer reads the index without these models
    from rubricgate.models.results import CaseSummary, Summary, TrialResult

HEAD_FILE = "view-index.json"
CASES_FILE = "view-cases.jsonl"
SUMMARY_FILE = "summary.json"
SHARD_FILE = "shard.json"  # beside the summary of a `run --shard K/N` (fleet/shard.py)
MAX_REASON = 300  # a grade's reason as the case strip's tooltip: the transcript page has the rest
MAX_CHANGES = 3  # rule changes a run's row names (its run page has every one)


def index_run(run_dir: Path, summary: Summary, kind: str | None = None, secrets: list[str] | None = None) -> bool:
    """Index a run whose summary.json was just written from `summary` (False: no summary on disk,
    or the folder is not writable; the viewer then builds the index on first view). `kind`
    overrides the summary's (shard, merged)."""
    try:
        st = os.stat(run_dir / SUMMARY_FILE, follow_symlinks=False)
    except OSError:
        return False
    stamp = f"{st.st_size}:{st.st_mtime_ns}"
    try:
        head, cases = head_of(summary, stamp, kind), dump_cases(cases_of(summary, stamp))
    except (PydanticSerializationError, UnicodeError):
        # A lone surrogate from a CLI's output: summary.json was written with it made writable;
        # the viewer indexes that file instead, on first view.
        return False
    return store(run_dir, head, cases, secrets)


def head_of(summary: Summary, stamp: str, kind: str | None = None) -> RunHead:
    """The runs page's row of a run; `kind` overrides the summary's (shard, merged: from the folder)."""
    from rubricgate.models.results import held_runs, judged_failed, of_some_cases  # loaded with the summary's models

    cost = summary.cost or {}
    failing = sum(any(judged_failed(t) for t in c.trials) for c in summary.cases)
    rules = {k: [r.severity, r.kind] for k, r in (summary.reviewer.rules if summary.reviewer else {}).items()}
    shown = "subset" if of_some_cases(summary) else summary.kind  # `run --only`: no point of the suite's trend
    return RunHead(
        stamp=stamp, run_id=summary.run_id, kind=kind or shown, branch=_text(summary.config.get("branch")),
        pr=_int(summary.config.get("pr")), started_at=summary.started_at, finished_at=summary.finished_at,
        complete=summary.complete, status=summary.decision.status, exit_code=summary.decision.exit_code,
        method=summary.decision.method, agent=summary.agent, agent_version=summary.agent_version, model=summary.model,
        reviewer=summary.reviewer.fingerprint if summary.reviewer else "",
        reviewer_files=dict(summary.reviewer.digests) if summary.reviewer else {}, rules=rules,
        rates={d: RateCell(rate=r.rate, passes=r.passes, trials=r.trials, low=r.low, high=r.high, baseline=r.baseline)
               for d, r in summary.rates.items()},
        cases=len(summary.cases), trials=sum(len(c.trials) for c in summary.cases), failing_cases=failing,
        flaky_cases=len(summary.flaky_cases), errored=len(summary.errored), cost_usd=cost.get("cost_usd"),
        tokens=(_int(cost.get("input_tokens")) or 0) + (_int(cost.get("output_tokens")) or 0), run_url=summary.run_url,
        margin=(summary.gate.plan or {}).get("margin") if summary.gate else None,
        changes=[f"{c.rule} {c.detail}" for c in summary.rule_changes[:MAX_CHANGES]],
        continues=held_runs(summary))


def cases_of(summary: Summary, stamp: str) -> RunCases:
    """Every case's trials as the case page reads them."""
    return RunCases(stamp=stamp, cases={c.id: _case(c) for c in summary.cases})


def _case(c: CaseSummary) -> CaseCell:
    return CaseCell(id=c.id, expected=c.expected_tier, flaky=c.flaky, trials=[_trial(t) for t in c.trials])


def _trial(t: TrialResult) -> TrialCell:
    fails = {d: f"{g.category or 'failed'}: {g.reason}"[:MAX_REASON] for d, g in t.grades.items() if not g.passed}
    return TrialCell(n=t.trial, outcome=t.outcome, tier=t.effective_tier, fails=fails, errored=t.errored,
                     transcript=t.transcript)


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dump_cases(cases: RunCases) -> bytes:
    """view-cases.jsonl: a header line (format, stamp), then one line a case, `<id as JSON>\\t<case>`,
    in suite order. A case page finds its one line with a byte search and parses only that:
    json.loads of a 2,000-case run is ~15 ms, times 52 runs is a second."""
    lines = [json.dumps({"format_version": cases.format_version, "stamp": cases.stamp})]
    lines += [f"{json.dumps(cid)}\t{cell.model_dump_json(exclude_defaults=True)}" for cid, cell in cases.cases.items()]
    return ("\n".join(lines) + "\n").encode("utf-8")


def store(folder: Path, head: RunHead, cases: bytes, secrets: list[str] | None = None) -> bool:
    """Write the index into the run folder (cases first, so a head on disk always has its cases),
    scrubbed of `secrets` as summary.json is. False when the folder is not writable: the caller
    keeps the index in memory."""
    try:
        _write_new(folder, CASES_FILE, _scrubbed(cases, secrets))
        _write_new(folder, HEAD_FILE, _scrubbed((head.model_dump_json() + "\n").encode("utf-8"), secrets))
    except OSError:
        return False
    return True


def _scrubbed(data: bytes, secrets: list[str] | None) -> bytes:
    return scrub_json(data.decode("utf-8"), secrets).encode("utf-8") if secrets else data


def _write_new(folder: Path, name: str, data: bytes) -> None:
    """Write through a temp file created new (O_EXCL: never through a planted link) and rename
    it over `name` (a link there is replaced, not followed)."""
    tmp = f".{name}.{os.getpid()}.{token_hex(4)}.tmp"
    fd = os.open(folder / tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(folder / tmp, folder / name)
    except OSError:
        (folder / tmp).unlink(missing_ok=True)
        raise


