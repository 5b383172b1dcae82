"""The pull-request comment (markdown): decision, rates vs baseline, failures by category.

The comment carries a hidden marker so `publish` edits the previous one instead of stacking a
new comment per push. Everything that came from a transcript is escaped: GitHub renders some
HTML, and an unescaped `@name` would ping people from a reviewer's output.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from rubricgate.models.results import CaseSummary, RateRow, Summary
from rubricgate.reports import explain
from rubricgate.secrets import mask_credentials

MARKER = "<!-- rubricgate:report -->"
DEFAULT_ARTIFACT = "rubricgate-report"
MAX_PER_CATEGORY = 20  # keeps a badly broken run under GitHub's 65,536-character body limit
MAX_REASON = 300
MAX_FAILING_CASES = 10  # explained one by one; the rest are in the failures list and the artifact
MAX_FINDINGS = 10
_EPS = 1e-6  # the strict gate's own tolerance (gate.EPS)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HEADLINE = {"pass": "PASS", "regression": "REGRESSION", "error": "ERROR (could not judge)",
             "inconclusive": "INCONCLUSIVE (could not judge)",
             "baseline": "BASELINE RUN (measured for baseline.json, not gated)"}


@dataclass(frozen=True)
class Failure:
    """One failed grade of one trial."""

    case_id: str
    trial: int
    dimension: str
    reason: str


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
        return "inconclusive (drop; run more trials)" if row.status == "inconclusive" else "drop not established (no bound recorded)"
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


def rates_table(summary: Summary) -> list[str]:
    """Markdown table: each dimension's rate, its Wilson interval, and the change against baseline."""
    lines = ["| dimension | rate | interval | baseline | delta | change |", "| --- | --- | --- | --- | --- | --- |"]
    for dim, row in summary.rates.items():
        lines.append(f"| {escape_md(dim)} | {pct(row.rate)} ({row.passes}/{row.trials}) | {interval(row)} | "
                     f"{pct(row.baseline)} | {signed_pp(row.delta)} | {escape_md(delta_label(row))} |")
    gate = summary.gate
    if gate is not None and gate.shared_cases:
        lines += ["", f"Rates, baseline and delta are over the {gate.shared_cases} case(s) both runs share. "
                  f"Intervals: {escape_md(gate.interval)}."]
    new = new_cases_line(summary)
    return lines + (["", escape_md(new, 2000)] if new else [])


def new_cases_line(summary: Summary) -> str:
    """Plain text: the cases not in the baseline and their rates, kept beside the gate's rates
    (which are over the shared cases only); '' when there are none."""
    gate = summary.gate
    if gate is None or not gate.new_cases:
        return ""
    rates = " · ".join(f"{d} {pct(r.rate)} ({r.passes}/{r.trials})" for d, r in gate.new_case_rates.items())
    return (f"New cases (not in baseline.json, not in the rates above): {len(gate.new_cases)} case(s)"
            + (f": {rates}" if rates else "") + f" — {', '.join(gate.new_cases[:10])}"
            + (" ..." if len(gate.new_cases) > 10 else ""))


def failures_by_category(summary: Summary) -> dict[str, list[Failure]]:
    """Every failed grade, grouped by its category (sorted for stable output)."""
    groups: dict[str, list[Failure]] = defaultdict(list)
    for case in summary.cases:
        for t in case.trials:
            for dim, grade in t.grades.items():
                if not grade.passed:
                    groups[grade.category or "uncategorized"].append(Failure(case.id, t.trial, dim, grade.reason))
    return {k: groups[k] for k in sorted(groups)}


def failures_section(summary: Summary) -> list[str]:
    """### Failed cases by category, each failure with its reason."""
    groups = failures_by_category(summary)
    if not groups:
        return ["No failed trials."]
    lines = ["### Failed cases by category"]
    for category, items in groups.items():
        cases = len({f.case_id for f in items})
        lines += ["", f"**{escape_md(category)}** — {len(items)} failed grade(s) in {cases} case(s)", ""]
        for f in items[:MAX_PER_CATEGORY]:
            lines.append(f"- {escape_md(f.case_id)} trial {f.trial} ({escape_md(f.dimension)}): "
                         f"{escape_md(f.reason) or 'no reason given'}")
        if len(items) > MAX_PER_CATEGORY:
            lines.append(f"- … and {len(items) - MAX_PER_CATEGORY} more (see the artifact)")
    return lines


def _decision_lines(summary: Summary) -> list[str]:
    d = summary.decision
    lines = [f"**Decision:** {headline(summary)} (exit {d.exit_code}, method {escape_md(d.method)})"]
    lines += [f"- {escape_md(r)}" for r in d.reasons]
    lines += [f"- warning: {escape_md(w)}" for w in d.warnings]
    lines += [f"- warning: {escape_md(a.warning)}" for a in summary.agent_support.values() if a.warning]
    if not summary.complete:
        lines.append("- warning: the run did not complete; rates cover finished trials only")
    return lines


def plan_lines(summary: Summary) -> list[str]:
    """The statistical gate's plan and looks (summary.json gate.plan, gate.looks): what this run
    could detect, and how many trials it took to decide."""
    plan = summary.gate.plan if summary.gate else {}
    if not plan:
        return []
    dims = "; ".join(f"{d['dimension']} {_points(d['detectable_budget'])} (first look {_points(d['detectable_first'])})"
                     for d in plan.get("dimensions", []))
    lines = [f"Plan: smallest drop detectable with 80% power at the full budget: {dims}; margin {_points(plan['margin'])}"]
    looks = summary.gate.looks if summary.gate else []
    if looks:
        last = looks[-1]
        lines.append(f"Adaptive rounds: {len(looks)} look(s), {last['trials']} trials; {last['why']}")
    return lines


def _points(value: float | None) -> str:
    return "none within the budget" if value is None else f"{value * 100:.1f} points"


def headline(summary: Summary) -> str:
    """PASS / REGRESSION / INCONCLUSIVE / ERROR; an undecided run let through by
    `gate.inconclusive: pass` says so first, and so does a pass beside a changed rule no case exercises."""
    d = summary.decision
    text = _HEADLINE.get(d.status, d.status)
    if d.status == "inconclusive" and d.exit_code == 0:
        text = "INCONCLUSIVE, passed by gate.inconclusive: pass (could not judge at this size)"
    elif d.status == "inconclusive" and any(not c.cases for c in summary.rule_changes) and not any(
            r.status == "inconclusive" for r in summary.rates.values()):
        text = "INCONCLUSIVE (a change no case exercises)"
    elif d.status == "inconclusive":
        text = "INCONCLUSIVE (could not judge at this size)"
    if d.status in ("pass", "inconclusive") and any(not c.cases for c in summary.rule_changes) and d.exit_code == 0:
        text += " (inconclusive: a changed rule no case exercises; gate.inconclusive: pass)"
    return text


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
    parts = [f"pass@{g['k']} {pct(g['pass_at_k'])} (some trial passed) · pass^{g['k']} {pct(g['pass_hat_k'])} "
             f"(all {g['k']} trials passed), over {g['cases']} case(s) with {g['k']} trials" for g in groups]
    beside = (f"; all-dimension pass rate {pct(every.get('rate'))} ({every.get('passes', 0)}/{every.get('trials', 0)})"
              if every else "")
    line = f"Consistency (a trial passes when every dimension passes{beside}): " + "; ".join(parts)
    return [line, ""]


def _run_line(summary: Summary) -> str:
    who = " ".join(escape_md(x) for x in (summary.agent, summary.agent_version or "", summary.model or "") if x)
    return f"Run {escape_md(summary.run_id)} · agent {who} · {len(summary.cases)} case(s)"


def _cost_lines(summary: Summary) -> list[str]:
    """Spend, only when the agent reported any (the builtin reviewer costs nothing)."""
    cost = summary.cost or {}
    if not cost.get("cost_usd") and not cost.get("input_tokens"):
        return []
    spend = "not reported" if cost.get("cost_usd") is None else f"${cost['cost_usd']:.4f}"
    return [f"Cost: {spend} · {cost.get('input_tokens', 0)} input / {cost.get('output_tokens', 0)} output tokens", ""]


def _honesty_section(summary: Summary) -> list[str]:
    """Errored trials (infrastructure, not judged) and run errors after a graded verdict."""
    lines = []
    if summary.errored:
        lines += [f"**Errored trials** (infrastructure; left out of every rate): {len(summary.errored)}", ""]
        lines += [f"- {escape_md(x)}" for x in summary.errored[:MAX_PER_CATEGORY]] + [""]
    run_errors = [f"- {escape_md(c.id)} trial {t.trial}: {escape_md(t.run_error)}"
                  for c in summary.cases for t in c.trials if t.run_error]
    if run_errors:
        lines += ["**Run errors after a graded verdict:**", "", *run_errors[:MAX_PER_CATEGORY], ""]
    return lines


def _context_lines(summary: Summary) -> list[str]:
    """The CI run link, the next step, and whether the reviewer differs from the baseline's."""
    lines = [f"[Workflow run]({summary.run_url})", ""] if summary.run_url else []
    step = explain.next_step(summary)
    if step is not None and summary.decision.status == "regression":
        lines += [f"**Next step:** {explain.NEXT_STEP_REVERT}; or, if the new behaviour is intended, "
                  f"`{explain.NEXT_STEP_ACCEPT}`", ""]
    elif step is not None:
        lines += [f"**Next step:** {step}", ""]
    first, *details = explain.reviewer_lines(summary)
    prefix, _, said = first.partition(": ")
    return lines + [f"**{escape_md(prefix)}:** {escape_md(said, 1000)}", *(f"- {escape_md(d)}" for d in details), ""]


def findings_table(case: CaseSummary) -> list[str]:
    """The first failed trial's findings: rule, severity, file:line (source path too), quote."""
    failed = explain.first_failure(case)
    if failed is None:
        return []
    if not failed.findings:
        said = f"tier {failed.effective_tier}" if failed.effective_tier else "no verdict"
        return [f"Trial {failed.trial}: the reviewer reported no findings ({said})."]
    lines = [f"Trial {failed.trial} findings ({failed.effective_tier or 'no tier'}):", "",
             "| rule | severity | file:line | quote |", "| --- | --- | --- | --- |"]
    for f in failed.findings[:MAX_FINDINGS]:
        lines.append(f"| {escape_md(f.rule)} | {escape_md(f.severity)} | "
                     f"{escape_md(explain.finding_location(f, case.workspace_paths))} | {escape_md(f.quote, 120)} |")
    if len(failed.findings) > MAX_FINDINGS:
        lines.append(f"| … | | | {len(failed.findings) - MAX_FINDINGS} more |")
    return lines


def failing_cases_section(summary: Summary) -> list[str]:
    """### Failing cases: each one's `why` and what the reviewer found."""
    failing = explain.failing_cases(summary)
    if not failing:
        return []
    lines = ["### Failing cases"]
    for case in failing[:MAX_FAILING_CASES]:
        why = escape_md(case.why) if case.why else "no `why` recorded for this case"
        lines += ["", f"**{escape_md(case.id)}** (expected {escape_md(case.expected_tier or 'n/a')}) — {why}", "",
                  *findings_table(case)]
    if len(failing) > MAX_FAILING_CASES:
        lines += ["", f"… and {len(failing) - MAX_FAILING_CASES} more failing case(s) (see the artifact)"]
    return lines + [""]


def _plan_block(summary: Summary) -> list[str]:
    lines = plan_lines(summary)
    return [f"- {escape_md(line)}" for line in lines] + ([""] if lines else [])


def render_body(summary: Summary, artifact: str = DEFAULT_ARTIFACT) -> str:
    """The report markdown without the marker (also used for $GITHUB_STEP_SUMMARY)."""
    lines = [f"## rubricgate: {headline(summary)}", "",
             _run_line(summary), "", *_decision_lines(summary), "", *_plan_block(summary), *_context_lines(summary),
             *rates_table(summary), "",
             *_consistency_line(summary)]
    if summary.flaky_cases:
        lines += ["Flaky cases (mixed results across trials): " + ", ".join(escape_md(c) for c in summary.flaky_cases), ""]
    lines += _cost_lines(summary)
    lines += _honesty_section(summary)
    lines += [*failing_cases_section(summary), *failures_section(summary), "",
              f"Replay files for each failed trial: workflow artifact **{escape_md(artifact, 100)}**, "
              f"folder reports/{escape_md(summary.run_id)}/replay/ (inspect offline with "
              f"`rubricgate report` or re-grade with `rubricgate regrade`)."]
    return "\n".join(lines) + "\n"


def render_comment(summary: Summary, artifact: str = DEFAULT_ARTIFACT) -> str:
    """The PR comment: the hidden marker first, so a later run can find and edit it."""
    return f"{MARKER}\n{render_body(summary, artifact)}"
