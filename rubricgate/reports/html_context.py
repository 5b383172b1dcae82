"""What report.html shows, as plain data for its template (templates/report.html.j2).

The page reads in the order a maintainer asks: the decision and its one line (reports/story.py),
the next step, the rates against baseline and the margin, each failing case with its trials
grouped and the reviewer's findings, then, folded, the statistics and the run's details, and
last every case: the failing ones open, the passing ones collapsed in one list (a 1,000-case
run's page stays under 1 MB and a few thousand elements).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from rubricgate.models.results import CaseSummary, RateRow, Summary, TrialResult
from rubricgate.reports import explain, story
from rubricgate.reports.replay import trial_failed

# Passing trials whose timeline is inlined (closed); failing ones are, in the first SHOWN_FAILING cases.
INLINE_PASSING = 100
SHOWN_FAILING = 50  # failing cases told in full; the rest listed with their line
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def anchor(case_id: str) -> str:
    """An element id for a case: its safe characters and 10 hex of its hash (unique, never markup)."""
    digest = hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"case-{_UNSAFE.sub('_', case_id).strip('_-')[:50]}-{digest}"


@dataclass
class Cell:
    """One trial as a cell of a case's strip: its class, glyph, label and where it leads."""

    cls: str
    glyph: str
    label: str
    href: str


def trial_cell(case_id: str, t: TrialResult, inlined: bool) -> Cell:
    failed = [f"{d} {g.category or 'failed'}" for d, g in t.grades.items() if not g.passed]
    if t.errored:
        cls, glyph, what = "errored", "!", "errored (infrastructure)"
    elif failed or t.outcome == "ERROR":
        cls, glyph, what = "fail", "✗", "failed " + ", ".join(failed or ["no verdict"])
    else:
        cls, glyph, what = "ok", "✓", "passed"
    href = f"#{anchor(case_id)}-t{t.trial}" if inlined else t.transcript
    if t.confirmation:  # a re-tried case's fresh trial: tested on its own, in no rate
        cls, what = f"{cls} confirm", f"{what} (a confirmation trial, not in the rates)"
    return Cell(cls, glyph, f"trial {t.trial}: {what}", href)


@dataclass
class Meter:
    """A rate drawn against its baseline and the margin below it, in percent of the bar's width."""

    rate: float
    base: float | None
    zone: tuple[float, float] | None  # (left, width): from baseline - margin to the baseline
    regressed: bool
    label: str


def meter(row: RateRow, margin: float | None) -> Meter | None:
    """The bar spans the range the values need (never less than 10 points), so a 5-point drop
    shows; None when there is no rate."""
    if row.rate is None:
        return None
    values = [v for v in (row.rate, row.baseline) if v is not None]
    if row.baseline is not None and margin:
        values.append(row.baseline - margin)
    floor = max(0.0, min(int((min(values) - 0.02) * 20) / 20, 0.9))  # 5-point steps, 10 points at least
    span = 1.0 - floor

    def at(v: float) -> float:
        return round(max(0.0, min(100.0, (v - floor) / span * 100)), 1)
    zone = None
    if row.baseline is not None and margin:
        left = at(row.baseline - margin)
        zone = (left, round(at(row.baseline) - left, 1))
    label = f"{story.pct(row.rate)} on an axis from {story.pct(floor)} to 100%" + (
        f"; baseline {story.pct(row.baseline)}" if row.baseline is not None else "")
    base = None if row.baseline is None else min(at(row.baseline), 98.5)  # a 2-pixel line inside the bar
    return Meter(at(row.rate), base, zone, row.status == "regression", label)


@dataclass
class TrialView:
    trial: TrialResult
    failed: bool
    tiers: str
    warnings: list[str]
    body: object  # the rendered timeline (markup), or None: linked, not inlined
    anchor: str

    @property
    def failed_what(self) -> str:
        """'verdict wrong_tier, tool_use forbidden_tool' (or 'no verdict')."""
        return (", ".join(f"{d} {g.category or 'failed'}" for d, g in self.trial.grades.items() if not g.passed)
                or "no verdict")


@dataclass
class CaseView:
    case: CaseSummary
    failed: bool  # shown open: a judged trial failed, or a trial errored
    cells: list[Cell]
    trials: list[TrialView]
    story: story.CaseStory | None
    anchor: str
    outcome: str = "passing"  # failing, flaky, errored, passing (what the filter and the status say)


def honesty(t: TrialResult) -> list[str]:
    """Errored / run-error / attempt lines of a trial, shown with its verdict warnings."""
    lines = [f"run error after the verdict: {t.run_error}"] if t.run_error else []
    if len(t.attempts) > 1 or t.errored:
        lines.append(f"{len(t.attempts)} attempt(s): " + "; ".join(
            f"{a.termination} {a.error}".strip() for a in t.attempts))
    return lines + list(t.notes)


def case_views(s: Summary, body_of) -> list[CaseView]:
    """Every case, failing first (most failing trials first), each trial with its body while the
    inline budget lasts (`body_of(trial)` renders or fetches it)."""
    stories = {st.case.id: st for st in story.case_stories(s)}
    errored = [c for c in story.errored_cases(s) if c.id not in stories]
    seen = set(stories) | {c.id for c in errored}
    order = [st.case for st in stories.values()] + errored + [c for c in s.cases if c.id not in seen]
    out: list[CaseView] = []
    passing = 0
    for c in order:
        views = []
        for t in c.trials:
            failed = trial_failed(t)
            passing += not failed
            inline = (failed and len(out) < SHOWN_FAILING) or (not failed and passing <= INLINE_PASSING)
            tiers = (f"reported {t.reported_tier or '-'} → effective {t.effective_tier or '-'}"
                     + (" (escalated)" if t.escalated else ""))
            views.append(TrialView(t, failed, tiers, [*t.verdict_warnings, *honesty(t)],
                                   body_of(t) if inline else None, f"{anchor(c.id)}-t{t.trial}"))
        cells = [trial_cell(c.id, v.trial, v.body is not None) for v in views]
        outcome = ("flaky" if c.flaky else "failing") if c.id in stories else "errored" if c.id in seen else (
            "passing" if c.trials else "not run")
        out.append(CaseView(c, c.id in seen or not c.trials, cells, views, stories.get(c.id), anchor(c.id), outcome))
    return out


def margin_of(s: Summary) -> float | None:
    plan = s.gate.plan if s.gate else {}
    return plan.get("margin") if plan else None


def cost_context(s: Summary) -> dict:
    cost = s.cost or {}
    extra = ", ".join(f"{cost[key]} {key.replace('_', ' ')}"
                      for key in ("unpriced_trials", "cached_trials", "not_run_trials") if cost.get(key))
    by_tag = list(cost.get("by_tag", {}).items()) if cost.get("input_tokens") or cost.get("cost_usd") else []
    return {"spend": "not reported" if cost.get("cost_usd") is None else f"${cost['cost_usd']:.4f}",
            "tokens": f"{cost.get('input_tokens', 0)} in / {cost.get('output_tokens', 0)} out tokens",
            "cost_extra": extra, "by_tag": by_tag}


def case_cost(tally: dict | None) -> str:
    """One case's spend: '$0.0123 · 900 tokens', 'not reported' when any trial was unpriced."""
    if not tally:
        return "n/a"
    usd = "not reported" if tally.get("cost_usd") is None else f"${tally['cost_usd']:.4f}"
    return f"{usd} · {tally.get('input_tokens', 0) + tally.get('output_tokens', 0)} tokens"


def warnings(s: Summary) -> list[str]:
    """Every warning the run carries: the decision's, an agent outside its tested range, the
    isolation when copy-only."""
    out = list(s.decision.warnings) + [a.warning for a in s.agent_support.values() if a.warning]
    if s.isolation == "copy-only":
        out.append(f"agents ran copy-only (no sandbox): {s.isolation_reason or 'agent.sandbox: none'}")
    return out


def page_context(s: Summary, body_of, explain_lines: dict) -> dict:
    """Everything the template shows, but the trend charts and the page's own assets."""
    lead = story.lead(s)
    facts = story.partial(s)
    views = case_views(s, body_of)
    failing = [v for v in views if v.failed]
    told = [v for v in failing if v.story is not None]
    return {"s": s, "lead": lead, "glyph": story.GLYPHS.get(s.decision.status, "!"), "partial": facts,
            "meters": {d: meter(r, margin_of(s)) for d, r in s.rates.items()}, "margin": margin_of(s),
            "failing": failing, "told": told, "passing": [v for v in views if not v.failed],
            "shown_failing": SHOWN_FAILING,
            "unconfirmed": story.unconfirmed_line(s), "flaky": story.flaky_line(s), "errored": story.errored_line(s),
            "warnings": warnings(s), "not_gated": story.not_gated(s),
            "case_costs": (s.cost or {}).get("by_case") if (s.cost or {}).get("by_case") else None,
            "rules_of": {v.case.id: sorted({f.rule for t in v.case.trials for f in t.findings}) for v in views},
            **explain_lines, **cost_context(s)}


def explain_context(s: Summary) -> dict:
    """The reviewer against the baseline's, the next step, the coverage table."""
    cov = s.coverage or {}
    return {"next_step": story.next_step(s), "reviewer_lines": explain.reviewer_lines(s),
            "reviewer_changed": explain.reviewer_change(s).changed, "coverage_rows": cov.get("rules") or [],
            "uncovered": cov.get("uncovered") or [], "cited_known": cov.get("cited_known")}
