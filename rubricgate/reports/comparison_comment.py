"""The pull-request comment and step summary when `compare --base` decides (the PR workflow):
the comparison's decision first (head against base, interleaved in the same job), its per-dimension
tests and the cases that moved; then the run against baseline.json, folded, as context.

The comparison is read from the record `compare --json FILE` wrote (models/comparison.py). A
record that is missing or unreadable is no pass: the comparison did not finish, and the comment
says the change could not be judged (exit 2), as the job's own decision step does.
"""

from __future__ import annotations

from pathlib import Path

from rubricgate import boundary, exitcodes
from rubricgate.isolation.untrusted import read_under
from rubricgate.models.comparison import ComparisonRecord
from rubricgate.models.results import Decision, Summary
from rubricgate.reports import story
from rubricgate.reports.comment import DEFAULT_ARTIFACT, MARKER, escape_md, pct, render_body, render_comment

MAX_FLIPS = 10  # cases named one by one per kind; the rest counted (the record has them all)
CAP = 8_000_000
_SHOWN_KINDS = ("regressed", "fixed", "removed", "added", "unjudged")


def read_comparison(path: Path) -> tuple[ComparisonRecord, str | None]:
    """The record at `path` and None; one that cannot be read is a could-not-judge record, and
    the problem (one line naming the file)."""
    try:
        return boundary.validate_json(ComparisonRecord, read_under(path.parent, path.name, CAP)), None
    except FileNotFoundError:
        why = "no comparison record (the comparison of head against base did not finish)"
    except (OSError, ValueError) as exc:  # UntrustedPath and pydantic's ValidationError are ValueErrors
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        why = f"not a comparison record ({first})"
    problem = f"{path}: {why}"
    decision = Decision(status="error", exit_code=exitcodes.CANNOT_JUDGE, reasons=[problem])
    return ComparisonRecord(base="", head="", decision=decision), problem


def comparison_lead(record: ComparisonRecord) -> str:
    """The one line: the decision that gates the pull request, and its first reason."""
    d = record.decision
    badge = story.BADGES.get(d.status, d.status.upper())
    head = f"{story.EMOJI.get(d.status, '')} rubricgate **{badge}**".strip()
    if d.status == "inconclusive" and d.exit_code == 0:
        head += " (passed by gate.inconclusive: pass)"
    what = f"head against base, interleaved in this job (exit {d.exit_code})"
    reason = f" — {escape_md(d.reasons[0], 600)}" if d.reasons else ""
    return f"### {head}: {what}{reason}"


def _tests_table(record: ComparisonRecord) -> list[str]:
    if not record.tests:
        return []
    lines = ["| dimension | base | head | p (one-sided) | judged |", "| --- | --- | --- | --- | --- |"]
    for t in record.tests:
        base = f"{pct(t.base_passes / t.base_trials) if t.base_trials else 'n/a'} ({t.base_passes}/{t.base_trials})"
        head = f"{pct(t.head_passes / t.head_trials) if t.head_trials else 'n/a'} ({t.head_passes}/{t.head_trials})"
        p = f"{t.p_value:.3g}" + ("" if t.p_holm is None else f", Holm {t.p_holm:.3g}")
        lines.append(f"| {escape_md(t.dimension)} | {base} | {head} | {p} | {escape_md(t.label or t.status)} |")
    return [*lines, ""]


def _flip_lines(record: ComparisonRecord) -> list[str]:
    lines = []
    for kind in _SHOWN_KINDS:
        flips = [f for f in record.flips if f.kind == kind]
        if not flips:
            continue
        named = "; ".join(f"{escape_md(f.case_id)} ({escape_md(f.base, 60)} → {escape_md(f.head, 60)})"
                          for f in flips[:MAX_FLIPS])
        more = f" … and {len(flips) - MAX_FLIPS} more" if len(flips) > MAX_FLIPS else ""
        lines.append(f"- {kind}: {named}{more}")
    return [*lines, ""] if lines else []


def _decision_lines(record: ComparisonRecord) -> list[str]:
    d = record.decision
    lines = [f"- reason: {escape_md(r, 600)}" for r in d.reasons[1:]]
    lines += [f"- warning: {escape_md(w, 600)}" for w in d.warnings]
    counts = ", ".join(f"{n} {k}" for k, n in record.counts.items() if n)
    if counts:
        lines.append(f"- cases: {escape_md(counts)}")
    if record.base or record.head:
        lines.append(f"- base: {escape_md(record.base)} · head: {escape_md(record.head)}")
    return [*lines, ""] if lines else []


def run_context(summary: Summary, artifact: str) -> list[str]:
    """The run against the stored baseline, folded: shown, not deciding (a model served under the
    same name drifts between the baseline's day and today; the interleaved comparison cancels that)."""
    d = summary.decision
    title = (f"Context: the run against baseline.json said {escape_md(story.badge(summary))} (exit {d.exit_code}); "
             "the comparison above decides")
    body = render_body(summary, artifact, lead=False)
    return [f"<details><summary>{title}</summary>", "", body, "</details>", ""]


def render_gated_body(record: ComparisonRecord, summary: Summary | None, artifact: str = DEFAULT_ARTIFACT) -> str:
    """The markdown for the step summary: the comparison's decision, then the run as context."""
    lines = [comparison_lead(record), "", *_tests_table(record), *_flip_lines(record), *_decision_lines(record)]
    if summary is not None:
        lines += run_context(summary, artifact)
    return "\n".join(lines).rstrip("\n") + "\n"


def pr_comment(summary: Summary, artifact: str = DEFAULT_ARTIFACT, comparison: ComparisonRecord | None = None) -> str:
    """comment.md and the PR comment: the comparison's decision with the run as context, else the run's own."""
    return render_comment(summary, artifact) if comparison is None else render_gated_comment(comparison, summary,
                                                                                             artifact)


def render_gated_comment(record: ComparisonRecord, summary: Summary | None, artifact: str = DEFAULT_ARTIFACT) -> str:
    """The PR comment: the marker (publish edits this comment in place), then the body."""
    return f"{MARKER}\n{render_gated_body(record, summary, artifact)}"
