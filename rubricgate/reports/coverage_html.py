"""The report's rule-coverage section: each rule, the cases that exercise it, the uncovered ones,
and the rules the reviewer changed since the baseline. Everything shown is escaped."""

from __future__ import annotations

import html

from rubricgate.models.results import Summary


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def coverage_section(s: Summary) -> str:
    """<h2>Rule coverage</h2> with the changed rules first; empty when the summary has no coverage."""
    cov = s.coverage or {}
    rows = cov.get("rules") or []
    if not rows:
        return ""
    body = "".join(_row(r) for r in rows)
    uncovered = cov.get("uncovered") or []
    note = (f'<p class="bad" id="uncovered">uncovered: {", ".join(f"<code>{_e(r)}</code>" for r in uncovered)} '
            "(an edit to these passes unseen)</p>") if uncovered else '<p id="uncovered">every rule is exercised</p>'
    source = "" if cov.get("cited_known") else ('<p class="muted">expectations only: the baseline does not '
                                                "record which rules its reviewer cited</p>")
    return (f"<h2>Rule coverage</h2>{_changes(s)}{note}{source}"
            '<table id="coverage"><tr><th>rule</th><th>severity</th><th>kind</th><th>expected by</th>'
            f"<th>cited by the baseline's reviewer</th></tr>{body}</table>")


def _row(r: dict) -> str:
    blind = not (r.get("expected") or r.get("cited"))
    cells = [r.get("rule", ""), r.get("severity", ""), r.get("kind", ""),
             ", ".join(r.get("expected") or []) or "-", ", ".join(r.get("cited") or []) or "-"]
    return f'<tr class="{"bad" if blind else ""}">' + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>"


def _changes(s: Summary) -> str:
    if not s.rule_changes:
        return ""
    items = "".join(f'<li class="{"bad" if not c.cases else ""}"><code>{_e(c.rule)}</code> {_e(c.detail)}: '
                    + (_e(", ".join(c.cases)) if c.cases else "no case exercises it") + "</li>"
                    for c in s.rule_changes)
    return f'<div id="rule-changes"><p>Changed since the baseline:</p><ul>{items}</ul></div>'
