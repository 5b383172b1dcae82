"""The HTML report: one self-contained file (inline CSS, inline SVG charts, one inline script).

Everything that came from a transcript or a case goes through `e()`. As a second line of
defence a Content-Security-Policy admits only the report's own script, by hash, so even a
missed escape could not run injected code.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.results import CaseSummary, Summary, TrialResult
from rubricgate.models.transcript import Transcript
from rubricgate.records.files import read_transcript
from rubricgate.reports import charts, explain
from rubricgate.reports.comment import delta_label, failures_by_category, headline, interval, k_groups, pct, signed_pp
from rubricgate.reports.coverage_html import coverage_section
from rubricgate.reports.junit import xml_safe
from rubricgate.reports.replay import trial_failed

MAX_TEXT = 20_000  # a runaway final message should not make the report unusable
MAX_INPUT = 2_000
# Passing trials whose tool timeline is inlined; failing trials always are. A 2,000-trial run
# would otherwise read every transcript and write a page of megabytes that opens slowly; the
# rest link to their transcript files.
INLINE_PASSING = 200
_NO_TRANSCRIPT = '<p class="muted">transcript not available</p>'
Bodies = dict[str, str]  # a trial's transcript path (relative to the run dir) -> its rendered body


def e(value: object) -> str:
    """HTML-escape text (quotes too, so it is safe inside attributes); control characters shown as \\xNN."""
    return html.escape(xml_safe(str(value)), quote=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more characters]"


def _asset(name: str) -> str:
    return resources.files("rubricgate.reports").joinpath("templates", name).read_text(encoding="utf-8")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
            "base-uri 'none'; form-action 'none'")


def _header(s: Summary) -> str:
    who = " · ".join(e(x) for x in (s.agent, s.agent_version, s.model) if x)
    reasons = "".join(f"<li>{e(r)}</li>" for r in s.decision.reasons + [f"warning: {w}" for w in s.decision.warnings])
    partial = "" if s.complete else '<p class="bad">The run did not complete: rates cover finished trials only.</p>'
    # An agent CLI outside the versions CI tests (summary.agent_support): its results may be an artefact.
    partial += "".join(f'<p class="bad agent-support">warning: {e(a.warning)}</p>'
                       for a in s.agent_support.values() if a.warning)
    return (f'<h1>rubricgate report <span id="decision" class="decision {e(s.decision.status)}">'
            f"{e(headline(s))}</span></h1>"
            f'<p class="meta">run <code id="run-id">{e(s.run_id)}</code> · {who} · started {e(s.started_at)}'
            f" · finished {e(s.finished_at or 'n/a')} · exit {s.decision.exit_code}</p>"
            f"{partial}<ul>{reasons}</ul>{_context(s)}")


def _context(s: Summary) -> str:
    """The CI run link, the next step, and how the reviewer differs from the baseline's."""
    link = f'<p id="run-link"><a href="{e(s.run_url)}">workflow run</a></p>' if s.run_url else ""
    step = explain.next_step(s)
    if s.decision.status == "regression":
        step_html = (f"{e(explain.NEXT_STEP_REVERT)}; or, if the new behaviour is intended, "
                     f"<code>{e(explain.NEXT_STEP_ACCEPT)}</code>")
    else:
        step_html = e(step) if step else ""
    nxt = f'<p id="next-step"><b>Next step:</b> {step_html}</p>' if step_html else ""
    first, *details = explain.reviewer_lines(s)
    items = "".join(f"<li>{e(d)}</li>" for d in details)
    changed = "changed" if explain.reviewer_change(s).changed else "same"
    return f'{link}{nxt}<div id="reviewer-change" data-change="{changed}"><p>{e(first)}</p><ul>{items}</ul></div>'


def _findings(t: TrialResult, mapping: dict[str, str]) -> str:
    """The reviewer's findings as a table: rule, severity, file:line (with the source path), quote."""
    if not t.findings:
        return f'<p class="muted">no findings reported (tier {e(t.effective_tier or "none")})</p>'
    rows = "".join(f"<tr><td>{e(f.rule)}</td><td>{e(f.severity)}</td><td>{e(explain.finding_location(f, mapping))}</td>"
                   f"<td><code>{e(_clip(f.quote, MAX_INPUT))}</code></td></tr>" for f in t.findings)
    return ('<table class="findings"><tr><th>rule</th><th>severity</th><th>file:line</th><th>quote</th></tr>'
            f"{rows}</table>")


def _failing_cases(s: Summary) -> str:
    """Each failing case: why it matters, and what the reviewer found in its first failed trial."""
    parts = []
    for c in explain.failing_cases(s):
        t = explain.first_failure(c)
        why = e(c.why) if c.why else '<span class="muted">no why recorded for this case</span>'
        parts.append(f'<section class="failing" data-case="{e(c.id)}"><h3><a href="#case-{e(c.id)}">{e(c.id)}</a> '
                     f"(expected {e(c.expected_tier or 'n/a')})</h3><p class=\"why\">{why}</p>"
                     f"<p>trial {t.trial}: {e(t.outcome)}</p>{_findings(t, c.workspace_paths)}</section>")
    return f'<h2>Failing cases</h2><div id="failing-cases">{"".join(parts)}</div>' if parts else ""


def _rates_table(s: Summary) -> str:
    rows = "".join(
        f"<tr><td>{e(d)}</td><td>{pct(r.rate)} ({r.passes}/{r.trials})</td><td>{interval(r)}</td><td>{pct(r.baseline)}</td>"
        f"<td>{signed_pp(r.delta)}</td>"
        f'<td class="{"bad" if delta_label(r).startswith("REGRESSION") else ""}">{e(delta_label(r))}</td>'
        f"<td>{e(r.status)}</td></tr>" for d, r in s.rates.items())
    return ('<h2>Rates against baseline</h2><table id="rates"><tr><th>dimension</th><th>rate</th><th>interval</th><th>baseline</th>'
            f"<th>delta</th><th>change</th><th>gate</th></tr>{rows}</table>")


def _noise_and_cost(s: Summary) -> str:
    """Flaky cases, pass@k / pass^k and spend: how much of the result is noise, and what it cost."""
    k = s.pass_k or {}
    flaky = ", ".join(f"<code>{e(c)}</code>" for c in s.flaky_cases) or "none"
    every = k.get("all_pass") or {}
    consistency = "".join(f"<li>pass@{e(g['k'])} {pct(g['pass_at_k'])} · pass^{e(g['k'])} {pct(g['pass_hat_k'])} "
                          f"over {e(g['cases'])} case(s) with {e(g['k'])} trials · all-dimension rate "
                          f"{pct(every.get('rate'))}</li>" for g in k_groups(k))
    cost = s.cost or {}
    spend = "not reported" if cost.get("cost_usd") is None else f"${cost['cost_usd']:.4f}"
    tokens = f"{cost.get('input_tokens', 0)} in / {cost.get('output_tokens', 0)} out tokens"
    extra = ", ".join(f"{cost[key]} {key.replace('_', ' ')}" for key in ("unpriced_trials", "cached_trials", "not_run_trials")
                      if cost.get(key))
    by_tag = "; ".join(f"{e(tag)} {e(_case_cost(t))}" for tag, t in cost.get("by_tag", {}).items())
    tags = f'<li id="cost-by-tag">cost by tag: {by_tag}</li>' if by_tag and (cost.get("input_tokens") or cost.get("cost_usd")) else ""
    return (f'<h2>Noise and cost</h2><ul id="noise"><li>flaky cases (mixed outcomes across trials): {flaky}</li>'
            f"{consistency}<li id=\"cost\">cost {e(spend)} · {e(tokens)}{(' · ' + e(extra)) if extra else ''}</li>{tags}</ul>")


def _charts(s: Summary, history: list[Summary]) -> str:
    """The rates, grid and (given earlier runs) trend charts as inline SVG, each with its id."""
    legend = "".join(f'<span style="background:{c}"></span>{e(n)}' for n, c in charts.GRID_LEGEND.items())
    svgs = [charts.rates_chart(s), charts.grid_chart(s)] + ([charts.trend_chart([*history, s])] if history else [])
    return f'<h2>Charts</h2><div class="charts">{"".join(svgs)}</div><p class="legend">grid:{legend}</p>'


def _case_cost(tally: dict | None) -> str:
    """One case's spend: '$0.0123 · 900 tokens', 'not reported' when any trial was unpriced."""
    if not tally:
        return "n/a"
    usd = "not reported" if tally.get("cost_usd") is None else f"${tally['cost_usd']:.4f}"
    return f"{usd} · {tally.get('input_tokens', 0) + tally.get('output_tokens', 0)} tokens"


def _case_row(c: CaseSummary, cost: dict | None) -> str:
    failed = any(trial_failed(t) for t in c.trials)
    rates = " · ".join(f"{e(d)} {pct(v)}" for d, v in c.rates.items())
    flags = "flaky" if c.flaky else ""
    spend = "" if cost is None else f"<td>{e(_case_cost(cost.get(c.id)))}</td>"
    return (f'<tr class="case" data-failed="{int(failed)}" data-case="{e(c.id)}"><td><a href="#case-{e(c.id)}">'
            f"{e(c.id)}</a></td><td>{e(c.source)}</td><td>{e(', '.join(c.tags))}</td><td>{e(c.expected_tier or '')}</td>"
            f"<td>{rates}</td><td>{e(' '.join(t.outcome for t in c.trials))}</td>{spend}"
            f'<td class="{"bad" if failed else "good"}">{"FAILED" if failed else "ok"} {flags}</td></tr>')


def failing_first(cases: list[CaseSummary]) -> list[CaseSummary]:
    """Failing cases on top, suite order kept within each group."""
    return sorted(cases, key=lambda c: not any(trial_failed(t) for t in c.trials))


def _case_table(s: Summary) -> str:
    """Every case; a cost column when the agent reported any spend (the builtin costs nothing)."""
    total = s.cost or {}
    cost = total.get("by_case", {}) if total.get("input_tokens") or total.get("cost_usd") or total.get("unpriced_trials") else None
    rows = "".join(_case_row(c, cost) for c in failing_first(s.cases))
    return ('<h2>Cases</h2><label><input type="checkbox" id="only-failures"> show failed cases only</label>'
            '<table id="cases"><tr><th>case</th><th>source</th><th>tags</th><th>expected</th><th>rates</th>'
            f"<th>outcomes</th>{'' if cost is None else '<th>cost</th>'}<th>status</th></tr>{rows}</table>")


def _failure_groups(s: Summary) -> str:
    groups = failures_by_category(s)
    items = "".join(f"<li><b>{e(cat)}</b>: {len(fs)} — " + "; ".join(
        f"{e(f.case_id)} #{f.trial} ({e(f.dimension)}): {e(f.reason)}" for f in fs[:10]) + "</li>"
        for cat, fs in groups.items())
    return f'<h2>Failures by category</h2><ul id="failure-groups">{items or "<li>none</li>"}</ul>'


def _timeline(t: Transcript) -> str:
    rows = "".join(
        f'<tr><td>{c.step or "?"}</td><td>{e(c.name)}</td><td>{e(c.raw_name)}</td>'
        f'<td class="{"" if c.status == "ok" else "bad"}">{e(c.status)}</td>'
        f"<td><code>{e(_clip(json.dumps(c.input, ensure_ascii=False), MAX_INPUT))}</code></td></tr>"
        for c in t.tool_calls)
    return ('<table class="timeline"><tr><th>step</th><th>tool</th><th>raw name</th><th>status</th><th>input</th></tr>'
            f"{rows or '<tr><td colspan=5>no tool calls</td></tr>'}</table>")


def _grades(t: TrialResult) -> str:
    rows = "".join(f'<tr><td>{e(d)}</td><td class="{"good" if g.passed else "bad"}">{"pass" if g.passed else "FAIL"}'
                   f"</td><td>{e(g.category or '')}</td><td>{e(g.reason)}</td></tr>" for d, g in t.grades.items())
    return f'<table class="grades"><tr><th>dimension</th><th>result</th><th>category</th><th>reason</th></tr>{rows}</table>'


def _honesty(t: TrialResult) -> list[str]:
    """Errored / run-error / attempt lines of a trial, shown with its verdict warnings."""
    lines = [f"run error after the verdict: {t.run_error}"] if t.run_error else []
    if len(t.attempts) > 1 or t.errored:
        lines.append(f"{len(t.attempts)} attempt(s): " + "; ".join(
            f"{a.termination} {a.error}".strip() for a in t.attempts))
    return lines + list(t.notes)


def _trial_meta(t: TrialResult) -> str:
    tiers = f"reported {t.reported_tier or '-'} → effective {t.effective_tier or '-'}" + (" (escalated)" if t.escalated else "")
    warn = "".join(f"<li>{e(w)}</li>" for w in [*t.verdict_warnings, *_honesty(t)])
    return (f'<p class="meta">{e(tiers)} · {t.steps} steps · termination {e(t.termination)} · exit {e(t.exit_code)}'
            f" · {t.duration_s:.1f}s · {t.input_tokens}+{t.output_tokens} tokens</p>{f'<ul>{warn}</ul>' if warn else ''}")


def _trial(run_dir: Path | None, t: TrialResult, mapping: dict[str, str] | None = None, inline: bool = True,
           bodies: Bodies | None = None) -> str:
    failed = trial_failed(t)
    body = _transcript_body(run_dir, t, bodies) if inline or failed else _transcript_link(t)
    return (f'<details class="trial" data-failed="{int(failed)}"{" open" if failed else ""}>'
            f"<summary>trial {t.trial}: {e(t.outcome)} {'— FAILED' if failed else ''}</summary>"
            f"{_trial_meta(t)}{_grades(t)}<h4>findings</h4>{_findings(t, mapping or {})}{body}</details>")


def _transcript_body(run_dir: Path | None, t: TrialResult, bodies: Bodies | None = None) -> str:
    ready = bodies.get(t.transcript) if bodies and t.transcript else None
    return ready if ready is not None else transcript_body(_load(run_dir, t))


def transcript_body(transcript: Transcript | None) -> str:
    """A trial's tool timeline and final message, as the report inlines them."""
    if transcript is None:
        return _NO_TRANSCRIPT
    return (_timeline(transcript) + '<h4>final message</h4>'
            f'<pre class="final">{e(_clip(transcript.final_text, MAX_TEXT))}</pre>')


def prerender_body(bodies: Bodies, result: TrialResult, transcript: Transcript) -> None:
    """Render a trial's body as soon as its transcript is written, beside the other trials, so
    the run's end renders only the rest of the page. Every failing trial's, and passing ones
    while fewer than INLINE_PASSING bodies are held (no more can be inlined). A body not held
    here is rendered from the transcript file at the end, as without this."""
    if result.transcript and (trial_failed(result) or len(bodies) < INLINE_PASSING):
        bodies[result.transcript] = transcript_body(transcript)


def _transcript_link(t: TrialResult) -> str:
    if not t.transcript:
        return _NO_TRANSCRIPT
    return (f'<p class="muted not-inlined">passing trial past the first {INLINE_PASSING}: timeline not inlined, '
            f'see <a href="{e(t.transcript)}">{e(t.transcript)}</a></p>')


def _load(run_dir: Path | None, t: TrialResult) -> Transcript | None:
    """The stored transcript, or None when the run dir or file is absent (rendering from a summary alone)."""
    if run_dir is None or not t.transcript or not (run_dir / t.transcript).is_file():
        return None
    return read_transcript(run_dir, t.transcript)


def _details(s: Summary, run_dir: Path | None, bodies: Bodies | None = None) -> str:
    parts, passing = [], 0
    for c in failing_first(s.cases):
        failed = any(trial_failed(t) for t in c.trials)
        trials = []
        for t in c.trials:
            passing += not trial_failed(t)
            trials.append(_trial(run_dir, t, c.workspace_paths, inline=passing <= INLINE_PASSING, bodies=bodies))
        parts.append(f'<section class="case-detail" id="case-{e(c.id)}" data-failed="{int(failed)}">'
                     f"<h3>{e(c.id)}</h3>{''.join(trials)}</section>")
    return "<h2>Trials</h2>" + "".join(parts)


def render_html(summary: Summary, run_dir: Path | None = None, history: list[Summary] | None = None,
                bodies: Bodies | None = None) -> str:
    """The whole report as one HTML document; `bodies`: trial bodies rendered during the run
    (`prerender_body`), the rest read from the run's transcript files."""
    script = _asset("report.js")
    body = (_header(summary) + _rates_table(summary) + _failing_cases(summary) + _noise_and_cost(summary)
            + _charts(summary, history or [])
            + coverage_section(summary) + _case_table(summary) + _failure_groups(summary)
            + _details(summary, run_dir, bodies))
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{e(_csp(script))}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>rubricgate {e(summary.decision.status)} · {e(summary.run_id)}</title>"
            f"<style>{_asset('report.css')}</style></head><body>{body}<script>{script}</script></body></html>\n")


def write_html(summary: Summary, run_dir: Path, out: Path | None = None, history: list[Summary] | None = None) -> Path:
    """Render and write report.html (default: inside the run dir)."""
    out = out or run_dir / "report.html"
    try:
        out.write_text(render_html(summary, run_dir, history), encoding="utf-8")
    except OSError as exc:
        raise GateInputError(str(out), "", f"cannot write the report: {exc.strerror}", "choose a writable path") from exc
    return out
