"""`trend SUMMARY...`: rates over time for the weekly job, flagging agent CLI or model drift.

A rate that moves when the agent CLI version or the model changed is a different finding from
one that moves after a rubric edit, so every such change between consecutive runs is flagged
next to the rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.results import Summary
from rubricgate.reports.comment import escape_md, pct, signed_pp
from rubricgate.records.files import read_summary

_WATCHED = (("agent", "agent"), ("agent_version", "agent CLI version"), ("model", "model"))


@dataclass(frozen=True)
class Drift:
    """One change of agent, CLI version or model between two consecutive runs."""

    what: str
    before: str
    after: str
    from_run: str
    to_run: str

    def line(self) -> str:
        return f"{self.what} changed: {self.before} → {self.after} (between {self.from_run} and {self.to_run})"


def load_summaries(paths: list[Path]) -> list[Summary]:
    """Read each summary (a summary.json or a run dir), oldest first by started_at."""
    if not paths:
        raise GateInputError("trend", "SUMMARY", "no summaries given", "pass one or more summary.json files or run dirs")
    summaries = [read_summary(p) for p in paths]
    return sorted(summaries, key=lambda s: (s.started_at, s.run_id))


def drifts(summaries: list[Summary]) -> list[Drift]:
    """Every change of agent, agent CLI version or model between consecutive runs."""
    out = []
    for prev, cur in zip(summaries, summaries[1:]):
        for attr, label in _WATCHED:
            before, after = getattr(prev, attr), getattr(cur, attr)
            if before != after:
                out.append(Drift(label, str(before or "unknown"), str(after or "unknown"), prev.run_id, cur.run_id))
    return out


def _dims(summaries: list[Summary]) -> list[str]:
    seen = {d for s in summaries for d in s.rates}
    return [d for d in DIMENSIONS if d in seen] + sorted(seen - set(DIMENSIONS))


def _cell(s: Summary, prev: Summary | None, dim: str) -> str:
    row = s.rates.get(dim)
    if row is None or row.rate is None:
        return "n/a"
    before = prev.rates.get(dim) if prev else None
    if before is None or before.rate is None:
        return pct(row.rate)
    return f"{pct(row.rate)} ({signed_pp(row.rate - before.rate)})"


def render_trend(summaries: list[Summary]) -> str:
    """Markdown: one row per run with each rate and its change from the previous run, then drift flags."""
    dims = _dims(summaries)
    lines = ["## rubricgate trend", "",
             "| run | started | agent | CLI version | model | " + " | ".join(escape_md(d) for d in dims) + " | decision |",
             "| --- " * (6 + len(dims)) + "|"]
    changed_runs = {d.to_run for d in drifts(summaries)}
    for i, s in enumerate(summaries):
        mark = " (changed)" if s.run_id in changed_runs else ""
        cells = " | ".join(_cell(s, summaries[i - 1] if i else None, d) for d in dims)
        lines.append(f"| {escape_md(s.run_id)}{mark} | {escape_md(s.started_at)} | {escape_md(s.agent)} | "
                     f"{escape_md(s.agent_version or 'unknown')} | {escape_md(s.model or 'unknown')} | {cells} | "
                     f"{escape_md(s.decision.status)} |")
    found = drifts(summaries)
    lines += ["", "### Agent drift"] + ([f"- WARNING: {escape_md(d.line(), 500)}" for d in found]
                                       or ["No change of agent, CLI version or model across these runs."])
    return "\n".join(lines) + "\n"
