"""The terminal summary: readable in five seconds."""

from __future__ import annotations

from rubricgate.models.base import DIMENSIONS
from rubricgate.models.results import Summary


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:6.1%}"


def rate_lines(summary: Summary) -> list[str]:
    lines = []
    for dim in DIMENSIONS:
        row = summary.rates[dim]
        base = "" if row.baseline is None else f"  baseline {_pct(row.baseline)}  delta {row.delta:+.1%}" if row.delta is not None else ""
        mark = {"regression": "  REGRESSION", "inconclusive": "  inconclusive"}.get(row.status, "")
        lines.append(f"  {dim:<11}{_pct(row.rate)}  ({row.passes}/{row.trials}){base}{mark}")
    return lines


def failure_lines(summary: Summary, limit: int = 15) -> list[str]:
    """One line per failed (case, dimension), the first trial's reason."""
    out = []
    for case in summary.cases:
        for trial in case.trials:
            for dim, g in trial.grades.items():
                if not g.passed:
                    out.append(f"  {case.id} #{trial.trial} {dim}: {g.category}: {g.reason}")
    return out[:limit] + ([f"  ... and {len(out) - limit} more (see summary.json)"] if len(out) > limit else [])


def render_terminal(summary: Summary, run_dir: str) -> str:
    """Rates vs baseline, the failing cases with reasons, then the decision."""
    d = summary.decision
    n_trials = sum(len(c.trials) for c in summary.cases)
    head = f"rubricgate {summary.run_id}: {len(summary.cases)} cases, {n_trials} trials, agent {summary.agent}"
    lines = [head, "rates:", *rate_lines(summary)]
    fails = failure_lines(summary)
    if fails:
        lines += ["failures:", *fails]
    verdict = {"pass": "PASS (exit 0)", "regression": "REGRESSION (exit 1)", "error": "CANNOT JUDGE (exit 2)"}[d.status]
    lines += [f"decision: {verdict}" + (f" - {'; '.join(d.reasons)}" if d.reasons else "")]
    lines += [f"warning: {w}" for w in d.warnings]
    lines.append(f"report: {run_dir}")
    return "\n".join(lines)
