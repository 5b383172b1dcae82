"""The pull-request comment (markdown), cause first: one line with the decision, the dimension and
its drop, the changed rule and the failing cases (reports/story.py); the next step; the rates;
each failing case with its trials grouped and the reviewer's findings; then the statistics and
the run's details folded in <details>.

The comment carries a hidden marker so `publish` edits the previous one instead of stacking a
new comment per push. Everything that came from a transcript is escaped: GitHub renders some
HTML, and an unescaped `@name` would ping people from a reviewer's output.
"""

from __future__ import annotations

import re

from rubricgate.credentials import mask_credentials
from rubricgate.models.results import CaseSummary, RateRow, Summary
from rubricgate.reports import explain, story

MARKER = "<!-- rubricgate:report -->"
DEFAULT_ARTIFACT = "rubricgate-report"
MAX_REASON = 300
MAX_FAILING_CASES = 5  # explained one by one; the rest named with their counts (all are in the artifact)
MAX_FINDINGS = 5
MAX_LISTED = 20  # keeps a badly broken run under GitHub's 65,536-character body limit
MAX_WARNING = 500  # a folded warning's first words; report.html and summary.json have each in full
_EPS = 1e-6  # the strict gate's own tolerance (gate.EPS)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def escape_md(text: str, limit: int = MAX_REASON) -> str:
    """One line of inert markdown: no HTML, no table breaks, no mentions, no code spans, and no
    credential-shaped text (a quoted key shows as <masked:KIND>)."""
    text = " ".join(_CONTROL.sub(" ", mask_credentials(str(text))).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("`", "\\`"),
                      ("*", "\\*"), ("_", "\\_"), ("[", "\\["), ("]", "\\]")):
        text = text.replace(raw, safe)
    return text.replace("@", "@\u200b")  # zero-width space: no notification from quoted text


def delta_label(row: RateRow) -> str:
    """improvement / no change / REGRESSION, following the gate's own judgement of the row.

    REGRESSION only when the gate counted the row as one: under the statistical method a dip
    the evidence does not support is "not established", and one too small a sample cannot judge
    is "inconclusive", so the label never contradicts the decision above it.
    """
    if row.rate is None:
        return "not measured"
    if row.label:  # the gate's own label (rubricgate/gating/gate.py): it also knows the drop's bound
        return row.label
    if row.delta is None or row.baseline is None:
        return "no baseline"
    if row.status == "regression":
        return "REGRESSION"
    if row.delta > _EPS:
        return "improvement"
    if row.delta < -_EPS:
        return ("inconclusive (drop; run more trials)" if row.status == "inconclusive"
                else "drop not established (no bound recorded)")
    return "no change"


def pct(value: float | None) -> str:
    """0.75 -> '75.0%'; None -> 'n/a'."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def signed_pp(delta: float | None) -> str:
    if delta is None:
        return "n/a"
    return "0.0 pp" if abs(delta) <= _EPS else f"{delta * 100:+.1f} pp"


def interval(row: RateRow) -> str:
    """'88.7% – 97.5%' (the Wilson interval), or 'n/a' when nothing was measured."""
    return "n/a" if row.low is None or row.high is None else f"{pct(row.low)} – {pct(row.high)}"


def new_cases_line(summary: Summary) -> str:
    """Plain text: the cases not in the baseline and their rates, kept beside the gate's rates
    (which are over the shared cases only); '' when there are none."""
    gate = summary.gate
    if gate is None or not gate.new_cases:
        return ""
    rates = " · ".join(f"{d} {pct(r.rate)} ({r.passes}/{r.trials})" for d, r in gate.new_case_rates.items())
    what = ("New or edited cases (not in baseline.json, or edited since it was measured; not in the rates above)"
            if gate.edited_cases else "New cases (not in baseline.json, not in the rates above)")
    return (f"{what}: {len(gate.new_cases)} case(s)"
            + (f": {rates}" if rates else "") + f" — {', '.join(gate.new_cases[:10])}"
            + (" ..." if len(gate.new_cases) > 10 else ""))


def plan_lines(summary: Summary) -> list[str]:
    """The statistical gate's plan and looks (summary.json gate.plan, gate.looks): what this run
    could detect, and how many trials it took to decide."""
    plan = summary.gate.plan if summary.gate else {}
    if not plan:
        return []
    dims = "; ".join(f"{d['dimension']} {_points(d['detectable_budget'])} (first look {_points(d['detectable_first'])})"
                     for d in plan.get("dimensions", []))
    lines = [f"Plan: smallest drop detectable with 80% power at the full budget: {dims}; "
             f"margin {_points(plan['margin'])}"]
    looks = summary.gate.looks if summary.gate else []
    if looks:
        last = looks[-1]
        # A run that could not be judged (errored trials, an interrupt) must not read as decided.
        why = (last["why"] if summary.decision.status != "error"
               else "the rounds stopped, then the run could not be judged")
        lines.append(f"Adaptive rounds: {len(looks)} look(s), {last['trials']} trials; {why}")
    return lines


def _points(value: float | None) -> str:
    return "none within the budget" if value is None else f"{value * 100:.1f} points"


def k_groups(pass_k: dict | None) -> list[dict]:
    """pass@k / pass^k groups, one per k; a summary written before `by_k` has its one group."""
    pass_k = pass_k or {}
    if "by_k" in pass_k:
        return list(pass_k["by_k"])
    return [{**pass_k, "cases": pass_k.get("cases", "all")}] if pass_k.get("k") else []


def _consistency_line(summary: Summary) -> list[str]:
    """pass@k / pass^k per k (each over the cases that ran k trials), beside the all-dimension rate."""
    groups = [g for g in k_groups(summary.pass_k) if (g.get("k") or 0) >= 2]
    if not groups:
        return []
    every = summary.pass_k.get("all_pass") or {}
    parts = [f"pass@{g['k']} {pct(g['pass_at_k'])} · pass^{g['k']} {pct(g['pass_hat_k'])} over {g['cases']} case(s) "
             f"with {g['k']} trials" for g in groups]
    beside = (f"; every dimension passed in {pct(every.get('rate'))} of trials ({every.get('passes', 0)}/"
              f"{every.get('trials', 0)})" if every else "")
    line = "Consistency (pass@k: some trial passed every dimension; pass^k: all did): " + "; ".join(parts) + beside
    return [line, ""]


def _run_line(summary: Summary) -> str:
    who = " ".join(escape_md(x) for x in (summary.agent, summary.agent_version or "", summary.model or "") if x)
    link = f" · [workflow run]({summary.run_url})" if summary.run_url else ""
    return f"Run {escape_md(summary.run_id)} · agent {who} · {len(summary.cases)} case(s){link}"


def _cost_lines(summary: Summary) -> list[str]:
    """Spend, only when the agent reported any (the builtin reviewer costs nothing)."""
    cost = summary.cost or {}
    if not cost.get("cost_usd") and not cost.get("input_tokens"):
        return []
    spend = "not reported" if cost.get("cost_usd") is None else f"${cost['cost_usd']:.4f}"
    return [f"- Cost: {spend} · {cost.get('input_tokens', 0)} input / {cost.get('output_tokens', 0)} output tokens"]


def _honesty_lines(summary: Summary) -> list[str]:
    """Errored trials (infrastructure, not judged) and run errors after a graded verdict."""
    lines = []
    if summary.errored:
        lines.append(f"- Errored trials (infrastructure; left out of every rate): {len(summary.errored)}: "
                     + "; ".join(escape_md(x, 200) for x in summary.errored[:MAX_LISTED])
                     + (" …" if len(summary.errored) > MAX_LISTED else ""))
    run_errors = [f"{escape_md(c.id)} #{t.trial}: {escape_md(t.run_error, 200)}"
                  for c in summary.cases for t in c.trials if t.run_error]
    if run_errors:
        lines.append("- Run errors after a graded verdict: " + "; ".join(run_errors[:MAX_LISTED]))
    return lines


def lead_line(summary: Summary) -> str:
    """The one line the comment and the step summary start with (markdown, escaped)."""
    lead = story.lead(summary)
    head = f"{story.EMOJI.get(lead.status, '')} rubricgate **{lead.badge}**".strip()
    if lead.qualifier:
        head += f" ({escape_md(lead.qualifier)})"
    body = " ".join(escape_md(p, 600) for p in (lead.what, lead.cause) if p)
    cases = f"; {escape_md(lead.cases_label)}: {escape_md(story.shown_cases(lead.cases), 400)}" if lead.cases else ""
    return f"### {head}: {body}{cases}" if body else f"### {head}{cases}"


def _next_step(summary: Summary) -> list[str]:
    if summary.decision.status == "regression":
        return [f"**Next step:** {explain.NEXT_STEP_REVERT}; or, if the new behaviour is intended, "
                f"`{explain.NEXT_STEP_ACCEPT}`", ""]
    step = story.next_step(summary)
    return [f"**Next step:** {escape_md(step, 1000)}", ""] if step else []


def _partial_lines(summary: Summary) -> list[str]:
    facts = story.partial(summary)
    if not facts.why:
        return []
    title = "Partial run" if facts.why != "errored" else "Errored trials"
    lines = [f"**{title}:** " + "; ".join(escape_md(line, 600) for line in facts.lines()), ""]
    return lines + ["Every trial that ran has its transcript in the run folder; the rates below cover the "
                    "judged trials only and are not gated.", ""]


def rates_table(summary: Summary) -> list[str]:
    """Markdown table: each dimension's rate, its baseline and the change the gate judged."""
    lines = ["| dimension | rate | baseline | change |", "| --- | --- | --- | --- |"]
    for dim, row in summary.rates.items():
        mark = "❌ " if row.status == "regression" else "❔ " if row.status == "inconclusive" else ""
        change = "not gated (the run could not be judged)" if story.not_gated(summary) else (
            f"{mark}{signed_pp(row.delta)}: {escape_md(delta_label(row))}")
        lines.append(f"| {escape_md(dim)} | {pct(row.rate)} ({row.passes}/{row.trials}) | {pct(row.baseline)} "
                     f"| {change} |")
    new = new_cases_line(summary)
    return lines + (["", escape_md(new, 2000)] if new else [])


def findings_table(case: CaseSummary) -> list[str]:
    """The first failed trial's findings: rule, severity, file:line (source path too), issue, quote."""
    failed = explain.first_failure(case)
    if failed is None:
        return []
    if not failed.findings:
        said = f"tier {failed.effective_tier}" if failed.effective_tier else "no verdict"
        return [f"Trial {failed.trial}: the reviewer reported no findings ({said})."]
    lines = [f"Trial {failed.trial} findings ({failed.effective_tier or 'no tier'}):", "",
             "| rule | severity | file:line | issue | quote |", "| --- | --- | --- | --- | --- |"]
    for f in failed.findings[:MAX_FINDINGS]:
        lines.append(f"| {escape_md(f.rule)} | {escape_md(f.severity)} | "
                     f"{escape_md(explain.finding_location(f, case.workspace_paths))} | {escape_md(f.issue, 160)} | "
                     f"{escape_md(f.quote, 80)} |")
    if len(failed.findings) > MAX_FINDINGS:
        lines.append(f"| … | | | {len(failed.findings) - MAX_FINDINGS} more | |")
    return lines


def failing_cases_section(summary: Summary) -> list[str]:
    """Each failing case: its trials grouped in one line, its why, what the reviewer found."""
    stories = story.case_stories(summary)
    if not stories:
        return []
    lines = [f"**Failing cases** ({len(stories)} of {len(summary.cases)})"]
    tables: dict[str, str] = {}  # a findings table already shown -> the case it was shown for
    for st in stories[:MAX_FAILING_CASES]:
        case = st.case
        why = escape_md(case.why) if case.why else "no `why` recorded for this case"
        table = findings_table(case)
        shown = "\n".join(table[1:])
        said = ([f"{table[0].rstrip(':')}: the same as {tables[shown]}'s."]
                if shown in tables and len(table) > 1 else table)
        tables.setdefault(shown, escape_md(case.id))
        lines += ["", f"**{escape_md(case.id)}** (expected {escape_md(case.expected_tier or 'n/a')}) — "
                  f"{escape_md(st.line(), 600)}", "", f"Why it matters: {why}", "", *said]
    rest = stories[MAX_FAILING_CASES:]
    if rest:
        lines += ["", f"… and {len(rest)} more failing case(s): "
                  + "; ".join(f"{escape_md(st.case.id)} ({st.failed}/{st.trials})" for st in rest[:MAX_LISTED])
                  + (" …" if len(rest) > MAX_LISTED else "")]
    return lines + [""]


def _noise_lines(summary: Summary) -> list[str]:
    told = (story.unconfirmed_line(summary), story.flaky_line(summary), story.errored_line(summary))
    lines = [escape_md(line, 1500) for line in told if line]
    return [*(f"- {line}" for line in lines), ""] if lines else []


def _details(title: str, lines: list[str]) -> list[str]:
    """A folded block (GitHub renders <details> in comments); nothing when it would be empty."""
    body = [line for line in lines if line is not None]
    if not any(body):
        return []
    return [f"<details><summary>{title}</summary>", "", *body, "", "</details>", ""]


def _statistics(summary: Summary) -> list[str]:
    d = summary.decision
    lines = [f"- {escape_md(line)}" for line in plan_lines(summary)]
    lines += [f"- reason: {escape_md(r)}" for r in d.reasons]
    lines += [f"- {line}" for line in _consistency_line(summary) if line]
    gate = summary.gate
    if gate is not None and gate.shared_cases:
        lines.append(f"- Rates, baseline and delta are over {gate.cases_phrase()}; "
                     "intervals: "
                     + "; ".join(f"{escape_md(dim)} {interval(row)}" for dim, row in summary.rates.items()))
    return _details(f"Statistics ({escape_md(d.method)} gate, exit {d.exit_code})", lines)


def _run_details(summary: Summary) -> list[str]:
    first, *rest = explain.reviewer_lines(summary)
    prefix, _, said = first.partition(": ")
    warnings = [*summary.decision.warnings, *(a.warning for a in summary.agent_support.values() if a.warning)]
    if not summary.complete:
        warnings.append("the run did not complete; rates cover finished trials only")
    lines = [f"- {_run_line(summary)}", f"- {escape_md(prefix)}: {escape_md(said, 1000)}",
             *(f"  - {escape_md(r)}" for r in rest), *_cost_lines(summary), *_honesty_lines(summary),
             *(f"- warning: {escape_md(w, MAX_WARNING)}" for w in warnings)]
    title = "The run: reviewer vs baseline" + (f", {len(warnings)} warning(s)" if warnings else "")
    return _details(title, lines)


def render_body(summary: Summary, artifact: str = DEFAULT_ARTIFACT, lead: bool = True) -> str:
    """The report markdown without the marker (also used for $GITHUB_STEP_SUMMARY): the one line,
    the next step, the rates, the failing cases, then the statistics and the run folded.
    `lead=False`: without the one line and the next step, for a run shown as context below the
    decision of a comparison (reports/comparison_comment.py)."""
    top = [lead_line(summary), "", *_next_step(summary)] if lead else []
    lines = [*top, *_partial_lines(summary), *rates_table(summary), "",
             *failing_cases_section(summary), *_noise_lines(summary), *_statistics(summary), *_run_details(summary),
             f"Replay files for each failed trial: workflow artifact **{escape_md(artifact, 100)}**, folder "
             f"reports/{escape_md(summary.run_id)}/replay/ (`rubricgate report` renders them, `rubricgate regrade` "
             "grades them again)."]
    return "\n".join(lines) + "\n"


def render_comment(summary: Summary, artifact: str = DEFAULT_ARTIFACT) -> str:
    """The PR comment: the hidden marker first, so a later run can find and edit it."""
    return f"{MARKER}\n{render_body(summary, artifact)}"
