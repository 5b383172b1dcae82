"""The HTML report's charts as inline SVG: nothing to import, crisp at any zoom, works offline.

A plotting library cost every run ~0.9 s and ~50 MB for three small charts (issue 13). Each chart
is one `<svg role="img">` with an aria-label, a <title> and a viewBox (the CSS scales it to the
page). Every text from a user file (case ids, dimension names, run ids) goes through `_esc`, so
it cannot inject markup; every value is clamped to its axis, so nothing draws outside the plot.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from rubricgate.models.results import CaseSummary, RateRow, Summary, TrialResult
from rubricgate.reports.junit import xml_safe

RED, BLUE, GREY, BLACK, LIGHT = "#c62828", "#1565c0", "#555555", "#1b1b1b", "#e4e4e4"
# Grid cell values: 0 passed every dimension, 1 failed a dimension, 2 no verdict, 3 no such trial.
_GRID_COLOURS = ["#2e7d32", "#c62828", "#6d6d6d", "#ffffff"]
_GRID_NAMES = ["passed", "failed a dimension", "ERROR", "no such trial"]
GRID_LEGEND = {"passed": _GRID_COLOURS[0], "failed a dimension": _GRID_COLOURS[1], "ERROR": _GRID_COLOURS[2]}
GRID_MAX_CASES = 50  # past this a picture stops being readable; the case table lists every case
# Trend series: dimensions often share a rate (all 100%), so each differs in colour, dash, marker
# shape and size (smaller markers are drawn later, on top of larger ones).
_COLOURS = ["#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#455a64"]
_STYLES = [("", "circle", 6.0), ("7 4", "square", 4.5), ("2 3", "triangle", 4.0), ("9 3 2 3", "diamond", 3.0)]
_SLOT, _CELL, _PLOT_H, _CHAR = 72, 20, 190, 6.6  # px: a bar's slot, a grid cell, the plot, a glyph at 11px


def _esc(text: object) -> str:
    """Text safe in SVG/HTML text and attributes: markup escaped, XML-illegal characters shown."""
    return html.escape(xml_safe(str(text)), quote=True)


def _fit(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}%}"


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{_esc(text)}</text>'


def _svg(element_id: str, label: str, size: tuple[float, float], title: str, body: str) -> str:
    """The chart's root: role, aria-label and <title> for screen readers; a viewBox so CSS scales it."""
    w, h = size
    heading = _text(8, 18, title, "start", ' class="chart-title" font-size="13" font-weight="600"')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="{element_id}" class="chart" role="img" '
            f'aria-label="{_esc(label)}" viewBox="0 0 {w:.0f} {h:.0f}" width="{w:.0f}" height="{h:.0f}" '
            f'font-family="system-ui, sans-serif" font-size="11" fill="{BLACK}"><title>{_esc(label)}</title>'
            f'<rect width="100%" height="100%" fill="#fff"/>{heading}{body}</svg>')


@dataclass
class _Plot:
    """The plotting area in SVG pixels and its y-axis (fractions, from y_range)."""

    left: float
    top: float
    width: float
    low: float = 0.0
    high: float = 1.02
    height: float = _PLOT_H

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def y(self, value: float) -> float:
        """The pixel row of a rate, clamped to the axis so nothing draws outside the plot."""
        value = min(max(value, self.low), self.high)
        return self.top + self.height * (self.high - value) / (self.high - self.low)


def y_range(values: list[float | None], pad: float = 0.05) -> tuple[float, float]:
    """A y-axis that shows the change: from just below the lowest value (in 5-point steps) to 100%.

    A 0-100% axis makes a 5-point drop a few pixels tall; zooming to the data keeps it visible.
    """
    seen = [v for v in values if v is not None]
    low = min(seen, default=0.0)
    bottom = max(0.0, (int((low - pad) * 20 + 1e-9) / 20) if low - pad > 0 else 0.0)
    return min(bottom, 0.9), 1.02


def _y_axis(p: _Plot, label: str) -> str:
    """Percent ticks with grid lines, the axes, and a label saying where a zoomed axis starts."""
    step = 5 if p.high - p.low <= 0.3 else 10 if p.high - p.low <= 0.6 else 20
    first = -(-round(p.low * 100) // step) * step
    ticks = "".join(f'<line x1="{p.left:.1f}" x2="{p.left + p.width:.1f}" y1="{p.y(t / 100):.1f}" '
                    f'y2="{p.y(t / 100):.1f}" stroke="{LIGHT}"/>' + _text(p.left - 5, p.y(t / 100) + 4, f"{t}%", "end")
                    for t in range(first, 101, step))
    name = label if p.low == 0 else f"{label} (axis from {p.low:.0%})"
    cy = p.top + p.height / 2
    return (ticks + f'<path class="axis" d="M{p.left:.1f} {p.top:.1f}V{p.bottom:.1f}H{p.left + p.width:.1f}" fill="none" '
            f'stroke="{GREY}"/>' + _text(14, cy, name, extra=f' transform="rotate(-90 14 {cy:.1f})"'))


def _legend(x: float, y: float, entries: list[tuple[str, str]]) -> str:
    """Entries (label, swatch markup drawn in a 20x10 box at the origin), stacked outside the plot."""
    rows = "".join(f'<g transform="translate({x:.1f} {y + 18 * i:.1f})">{swatch}{_text(26, 9, _fit(label, 24), "start")}</g>'
                   for i, (label, swatch) in enumerate(entries))
    return f'<g class="legend">{rows}</g>'


def _legend_width(entries: list[tuple[str, str]]) -> float:
    return 34 + _CHAR * max((len(_fit(label, 24)) for label, _ in entries), default=0)


_RATES_LEGEND = [("rate", f'<rect y="1" width="20" height="9" fill="{BLUE}"/>'),
                 ("regression", f'<rect y="1" width="20" height="9" fill="{RED}"/>'),
                 ("interval", f'<path d="M6 0H14M10 0V10M6 10H14" stroke="{GREY}" fill="none"/>'),
                 ("baseline", f'<line x1="2" x2="18" y1="5" y2="5" stroke="{BLACK}" stroke-width="2.5"/>')]


def rates_chart(summary: Summary) -> str:
    """Bars: each dimension's rate (red when it regressed) with its interval; a black tick: its baseline."""
    rows = list(summary.rates.items())
    low, high = y_range([v for _, r in rows for v in (r.rate, r.baseline, r.low)])
    p = _Plot(left=64, top=34, width=_SLOT * max(len(rows), 1), low=low, high=high)
    bars = "".join(_bar(p, p.left + _SLOT * (i + 0.5), d, r) for i, (d, r) in enumerate(rows))
    empty = "" if rows else _text(p.left + p.width / 2, p.top + p.height / 2, "no rates")
    title = "Pass rate per dimension against baseline"
    label = f"{title}: " + "; ".join(f"{d} {_pct(r.rate)} (baseline {_pct(r.baseline)})" for d, r in rows[:20])
    width = max(p.left + p.width + 16 + _legend_width(_RATES_LEGEND), 8 + 8 * len(title))
    body = _y_axis(p, "pass rate") + bars + empty + _legend(p.left + p.width + 16, p.top, _RATES_LEGEND)
    return _svg("chart-rates", label, (width, p.bottom + 30), title, body)


def _bar(p: _Plot, cx: float, dim: str, row: RateRow) -> str:
    """One dimension: its bar, interval whisker, baseline tick and x label."""
    label = _text(cx, p.bottom + 16, _fit(dim, int(_SLOT / _CHAR)), extra=' class="x-label"')
    if row.rate is None:
        return label + _text(cx, p.bottom - 6, "n/a", extra=' fill="#777"')
    top = p.y(row.rate)
    tip = f"{dim}: {_pct(row.rate)} ({row.passes}/{row.trials}), baseline {_pct(row.baseline)}, {row.status}"
    bar = (f'<rect class="bar" data-dimension="{_esc(dim)}" x="{cx - 0.3 * _SLOT:.1f}" y="{top:.2f}" '
           f'width="{0.6 * _SLOT:.1f}" height="{p.bottom - top:.2f}" fill="{RED if row.status == "regression" else BLUE}">'
           f"<title>{_esc(tip)}</title></rect>")
    return bar + _whisker(p, cx, row) + _baseline_tick(p, cx, row.baseline) + label


def _whisker(p: _Plot, cx: float, row: RateRow) -> str:
    """Grey interval from the rate down to its low and up to its high. min/max: a bound equal to
    the rate may differ from it by float dust and must not flip the whisker."""
    if row.low is None or row.high is None or row.rate is None:
        return ""
    lo, hi = p.y(min(row.low, row.rate)), p.y(max(row.high, row.rate))
    return (f'<path class="interval" d="M{cx - 5:.1f} {lo:.2f}H{cx + 5:.1f}M{cx:.1f} {lo:.2f}V{hi:.2f}'
            f'M{cx - 5:.1f} {hi:.2f}H{cx + 5:.1f}" stroke="{GREY}" stroke-width="1.5" fill="none"/>')


def _baseline_tick(p: _Plot, cx: float, baseline: float | None) -> str:
    if baseline is None:
        return ""
    y = p.y(baseline)
    return (f'<line class="baseline" x1="{cx - 0.35 * _SLOT:.1f}" x2="{cx + 0.35 * _SLOT:.1f}" y1="{y:.2f}" '
            f'y2="{y:.2f}" stroke="{BLACK}" stroke-width="2.5"/>')


def _cell(t: TrialResult | None) -> int:
    if t is None:
        return 3
    if t.outcome == "ERROR":
        return 2
    return 1 if any(not g.passed for g in t.grades.values()) else 0


def grid_chart(summary: Summary) -> str:
    """A case-by-trial grid of outcomes, failing cases on top; at most GRID_MAX_CASES rows (the
    case table below it lists every case)."""
    ranked = sorted(summary.cases or [], key=lambda c: not any(_cell(t) in (1, 2) for t in c.trials))
    cases = ranked[:GRID_MAX_CASES]
    trials = max([t.trial for c in cases for t in c.trials] + [1])
    left, top = 12 + _CHAR * max([len(_fit(c.id, 40)) for c in cases] + [4]), 34
    rows = "".join(_grid_row(left, top + _CELL * i, c, trials) for i, c in enumerate(cases))
    bottom = top + _CELL * max(len(cases), 1)
    xs = "".join(_text(left + _CELL * (n - 0.5), bottom + 14, str(n)) for n in range(1, trials + 1))
    empty = "" if cases else _text(left + _CELL * trials / 2, top + 14, "no cases", "start")
    shown = "" if len(ranked) <= GRID_MAX_CASES else f", first {GRID_MAX_CASES} of {len(ranked)} cases"
    title = f"Outcome per case and trial (failing cases first{shown})"
    failing = sum(any(_cell(t) in (1, 2) for t in c.trials) for c in ranked)
    label = f"{title}: {failing} of {len(ranked)} cases failed or errored in some trial"
    body = rows + xs + empty + _text(left + _CELL * trials / 2, bottom + 30, "trial")
    return _svg("chart-grid", label, (max(left + _CELL * trials + 16, 8 + 8 * len(title)), bottom + 38), title, body)


def _grid_row(x: float, y: float, case: CaseSummary, trials: int) -> str:
    """One case: its id (clipped; whole in the tooltip) and a cell per trial number."""
    by_trial = {t.trial: t for t in case.trials}
    cells = "".join(_grid_cell(x + _CELL * (n - 1), y, case.id, n, _cell(by_trial.get(n))) for n in range(1, trials + 1))
    label = _text(x - 6, y + 14, _fit(case.id, 40), "end", ' class="case-label"')
    return f'<g class="row" data-case="{_esc(case.id)}">{label}{cells}</g>'


def _grid_cell(x: float, y: float, case_id: str, trial: int, value: int) -> str:
    tip = f"{case_id} trial {trial}: {_GRID_NAMES[value]}"
    return (f'<rect class="cell" data-trial="{trial}" data-outcome="{_GRID_NAMES[value]}" x="{x + 1:.1f}" '
            f'y="{y + 1:.1f}" width="{_CELL - 2}" height="{_CELL - 2}" fill="{_GRID_COLOURS[value]}" '
            f'stroke="{LIGHT if value == 3 else _GRID_COLOURS[value]}"><title>{_esc(tip)}</title></rect>')


def trend_chart(summaries: list[Summary]) -> str:
    """One line per dimension across runs, oldest first, each with its own colour, dash and marker."""
    dims = sorted({d for s in summaries for d in s.rates})
    low, high = y_range([s.rates[d].rate for s in summaries for d in dims if d in s.rates])
    step = max(24.0, min(_SLOT, 560 / max(len(summaries), 1)))  # a year of weekly runs still fits a page
    p = _Plot(left=96, top=34, width=step * max(len(summaries), 1), low=low, high=high)  # room for slanted labels
    xs = [p.left + step * (i + 0.5) for i in range(len(summaries))]
    series = [_series(p, xs, d, [s.rates[d].rate if d in s.rates else None for s in summaries], i)
              for i, d in enumerate(dims)]
    ticks = _run_labels(p, xs, summaries)
    entries = [(d, _swatch(i)) for i, d in enumerate(dims)]
    title = "Pass rate per dimension over runs"
    label = f"{title}: {len(summaries)} runs, {len(dims)} dimensions ({', '.join(dims[:20])})"
    width = max(p.left + p.width + 16 + _legend_width(entries), 8 + 8 * len(title))
    height = max(p.bottom + 110, p.top + 18 * len(dims) + 8)
    body = _y_axis(p, "pass rate") + ticks + "".join(series) + _legend(p.left + p.width + 16, p.top, entries)
    return _svg("chart-trend", label, (width, height), title, body)


def _run_labels(p: _Plot, xs: list[float], summaries: list[Summary]) -> str:
    """Each run's start (YYYY-MM-DD HH:MM), else its id, slanted under its x position."""
    names = [s.started_at[:16].replace("T", " ") or s.run_id for s in summaries]
    y = p.bottom + 14
    return "".join(_text(x, y, _fit(n, 20), "end", f' transform="rotate(-35 {x:.1f} {y:.1f})"') for x, n in zip(xs, names))


def _series(p: _Plot, xs: list[float], dim: str, rates: list[float | None], index: int) -> str:
    """One dimension's polyline (broken where a run lacks the dimension) and a marker per run."""
    colour, (dash, shape, size) = _COLOURS[index % len(_COLOURS)], _STYLES[index % len(_STYLES)]
    runs: list[list[tuple[float, float, float]]] = []
    current: list[tuple[float, float, float]] = []
    for x, rate in zip(xs, rates):
        if rate is None:
            runs, current = runs + [current], []
        else:
            current.append((x, p.y(rate), rate))
    lines = "".join(f'<polyline points="{" ".join(f"{x:.1f},{y:.2f}" for x, y, _ in run)}" fill="none" '
                    f'stroke="{colour}" stroke-width="2" stroke-dasharray="{dash or "none"}"/>'
                    for run in [*runs, current] if len(run) > 1)
    marks = "".join(_marker(shape, x, y, size, colour, f"{dim}: {_pct(rate)}") for run in [*runs, current]
                    for x, y, rate in run)
    return f'<g class="series" data-dimension="{_esc(dim)}">{lines}{marks}</g>'


def _marker(shape: str, x: float, y: float, r: float, colour: str, tip: str) -> str:
    points = {"square": [(-r, -r), (r, -r), (r, r), (-r, r)], "triangle": [(0, -r * 1.2), (r * 1.1, r * 0.8), (-r * 1.1, r * 0.8)],
              "diamond": [(0, -r * 1.3), (r * 1.3, 0), (0, r * 1.3), (-r * 1.3, 0)]}.get(shape)
    title = f"<title>{_esc(tip)}</title>" if tip else ""
    if points is None:
        return f'<circle class="marker" cx="{x:.1f}" cy="{y:.2f}" r="{r}" fill="{colour}">{title}</circle>'
    coords = " ".join(f"{x + dx:.1f},{y + dy:.2f}" for dx, dy in points)
    return f'<polygon class="marker" points="{coords}" fill="{colour}">{title}</polygon>'


def _swatch(index: int) -> str:
    """The legend's sample of series `index`: its dash and its marker."""
    colour, (dash, shape, size) = _COLOURS[index % len(_COLOURS)], _STYLES[index % len(_STYLES)]
    return (f'<line x1="0" x2="20" y1="5" y2="5" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash or "none"}"/>'
            + _marker(shape, 10, 5, min(size, 4.5), colour, ""))
