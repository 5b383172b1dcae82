"""The HTML report's and `trend`'s charts: drawn by matplotlib, written as inline SVG.

Each chart is one `<svg role="img">` with an aria-label, a <title> and a viewBox (the report's
CSS scales it to the page). The SVG is made self-contained and deterministic: text stays text
(`svg.fonttype: none`: no glyph outlines, nothing to fetch), ids come from a per-chart salt
(`svg.hashsalt`, so two charts on one page never share an id) and no date is written. Every
text from a user file (case ids, dimension names, run ids) is cleaned of XML-illegal characters
and drawn with math parsing off; the SVG is then re-serialised by ElementTree, which escapes it,
so no text can become markup. Colour is never the only cue: a regression bar is hatched, failed
and errored grid cells carry their own hatch, and each trend series has its own dash and marker.

The bars, cells and series carry a class, data attributes and a <title> tooltip (`_Tags`), for
the report's readers and its tests. matplotlib is imported when a chart is drawn, never at
start-up; a run's warm-up loads it beside the trials (reports/ahead.py).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rubricgate.models.results import CaseSummary, RateRow, Summary, TrialResult
from rubricgate.reports.junit import xml_safe

SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

RED, BLUE, GREY, BLACK, LIGHT = "#c62828", "#1565c0", "#555555", "#1b1b1b", "#e4e4e4"
# Grid cell values: 0 passed every dimension, 1 failed a dimension, 2 no verdict, 3 no such trial.
_GRID_COLOURS = ["#2e7d32", "#c62828", "#6d6d6d", "#ffffff"]
_GRID_HATCHES = ["", "xxx", "...", ""]
_GRID_NAMES = ["passed", "failed a dimension", "ERROR", "no such trial"]
GRID_LEGEND = {"passed": _GRID_COLOURS[0], "failed a dimension": _GRID_COLOURS[1], "ERROR": _GRID_COLOURS[2]}
GRID_MAX_CASES = 50  # past this a picture stops being readable; the case table lists every case
# Trend series: dimensions often share a rate (all 100%), so each differs in colour, dash, marker
# and marker size (smaller markers are drawn later, on top of larger ones).
_COLOURS = ["#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#455a64"]
_STYLES = [("-", "o", 7.0), ("--", "s", 6.0), (":", "^", 5.5), ("-.", "D", 4.0)]
_RC: dict[Any, Any] = {"svg.fonttype": "none", "text.parse_math": False, "text.usetex": False, "font.family": "sans-serif",
       "font.size": 9, "axes.titlesize": 11, "axes.titleweight": "bold", "axes.titlelocation": "left",
       "hatch.linewidth": 0.8, "svg.image_inline": True}


def y_range(values: list[float | None], pad: float = 0.05) -> tuple[float, float]:
    """A y-axis that shows the change: from just below the lowest value (in 5-point steps) to 100%.

    A 0-100% axis makes a 5-point drop a few pixels tall; zooming to the data keeps it visible.
    """
    seen = [v for v in values if v is not None]
    low = min(seen, default=0.0)
    bottom = max(0.0, (int((low - pad) * 20 + 1e-9) / 20) if low - pad > 0 else 0.0)
    return min(bottom, 0.9), 1.02


def _clean(text: object, chars: int = 0) -> str:
    """User text as a chart draws it: XML-illegal characters shown as escapes, clipped to `chars`."""
    text = xml_safe(str(text))
    return text if not chars or len(text) <= chars else text[: chars - 1] + "…"


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}%}"


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


@dataclass
class _Tags:
    """What the SVG's elements get after drawing: {gid: (class and data attributes, tooltip)}."""

    items: dict[str, tuple[dict[str, str], str]] = field(default_factory=dict)

    def tag(self, artist: Any, cls: str, tip: str = "", **data: object) -> None:
        gid = f"rgtag{len(self.items)}"
        artist.set_gid(gid)
        attrs = {"class": cls, **{f"data-{k}": _clean(v) for k, v in data.items()}}
        self.items[gid] = (attrs, _clean(tip))


@contextmanager
def _drawing(width: float, height: float) -> Iterator[Any]:
    """A figure of `width` x `height` points under the charts' rcParams (text as text, no math)."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        yield Figure(figsize=(width / 72, height / 72), dpi=72)


def _svg(fig: Any, element_id: str, label: str, tags: _Tags) -> str:
    """The figure as one self-contained <svg>: id, role, aria-label and <title> on the root, the
    tags applied, matplotlib's metadata and every id nothing refers to removed."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({**_RC, "svg.hashsalt": element_id}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    root = ET.fromstring(buf.getvalue())
    # matplotlib's metadata (its name and URL), and its <style> rule, which inline in the report
    # would apply to the whole page: the strokes' own attributes say the same.
    for el in [*root.findall(f"{{{SVG_NS}}}metadata"), *root.findall(f"{{{SVG_NS}}}defs")]:
        if el.tag.endswith("metadata") or all(child.tag == f"{{{SVG_NS}}}style" for child in el):
            root.remove(el)
    _apply_tags(root, tags)
    w, h = (round(float(v)) for v in root.get("viewBox", "0 0 0 0").split()[2:])
    version = root.get("version", "1.1")
    root.attrib.clear()
    root.attrib.update({"id": element_id, "class": "chart", "role": "img", "aria-label": _clean(label),
                        "viewBox": f"0 0 {w} {h}", "width": str(w), "height": str(h), "version": version})
    title = ET.Element(f"{{{SVG_NS}}}title")
    title.text = _clean(label)
    root.insert(0, title)
    return ET.tostring(root, encoding="unicode")


def _apply_tags(root: ET.Element, tags: _Tags) -> None:
    text = ET.tostring(root, encoding="unicode")
    referenced = set(re.findall(r'(?:href="#|url\(#)([^")]+)', text))
    for el in root.iter():
        gid = el.get("id")
        if gid in tags.items:
            attrs, tip = tags.items[gid]
            el.attrib.update(attrs)
            if tip:
                tooltip = ET.Element(f"{{{SVG_NS}}}title")
                tooltip.text = tip
                el.insert(0, tooltip)
        if gid is not None and gid not in referenced:
            del el.attrib["id"]


def _percent_axis(ax: Any, low: float, high: float, label: str) -> None:
    from matplotlib.ticker import MultipleLocator, PercentFormatter

    ax.set_ylim(low, high)
    step = 0.05 if high - low <= 0.3 else 0.1 if high - low <= 0.6 else 0.2
    ax.yaxis.set_major_locator(MultipleLocator(step))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.grid(axis="y", color=LIGHT, linewidth=0.8)
    ax.set_axisbelow(True)
    ax.set_ylabel(label if low == 0 else f"{label} (axis from {low:.0%})")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _place(fig: Any, tags: _Tags, size: tuple[float, float], margins: tuple[float, float, float, float]) -> Any:
    """One axes with (left, right, top, bottom) margins in points (room for the title, the labels
    and a legend on the right); its background is tagged `plot-area`."""
    (width, height), (left, right, top, bottom) = size, margins
    ax = fig.add_axes((left / width, bottom / height, 1 - (left + right) / width, 1 - (top + bottom) / height))
    tags.tag(ax.patch, "plot-area")
    return ax


def rates_chart(summary: Summary) -> str:
    """Bars: each dimension's rate (red and hatched when it regressed) with its interval; a black
    tick: its baseline."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = list(summary.rates.items())
    low, high = y_range([v for _, r in rows for v in (r.rate, r.baseline, r.low)])
    title = "Pass rate per dimension against baseline"
    width, height = max(150 + 72 * max(len(rows), 1), 380), 260
    tags = _Tags()
    with _drawing(width, height) as fig:
        ax = _place(fig, tags, (width, height), (56, 100, 30, 40))
        for i, (dim, row) in enumerate(rows):
            _bar(ax, tags, i, dim, row, low, high)
        ax.set_xticks(range(len(rows)), [_clean(d, 12) for d, _ in rows])
        ax.set_xlim(-0.6, max(len(rows), 1) - 0.4)
        if not rows:
            ax.text(0.5, 0.5, "no rates", transform=ax.transAxes, ha="center")
        _percent_axis(ax, low, high, "pass rate")
        ax.set_title(title)
        handles = [Patch(color=BLUE, label="rate"), Patch(facecolor=RED, hatch="///", label="regression"),
                   Line2D([], [], color=GREY, marker="_", markersize=8, label="interval"),
                   Line2D([], [], color=BLACK, linewidth=2.5, label="baseline")]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
        label = f"{title}: " + "; ".join(f"{d} {_pct(r.rate)} (baseline {_pct(r.baseline)})" for d, r in rows[:20])
        return _svg(fig, "chart-rates", label, tags)


def _bar(ax: Any, tags: _Tags, i: int, dim: str, row: RateRow, low: float, high: float) -> None:
    """One dimension: its bar (drawn from the axis floor), interval whisker and baseline tick."""
    if row.rate is None:
        ax.text(i, low + 0.02 * (high - low), "n/a", ha="center", color="#777777")
        return
    rate, regressed = _clamp(row.rate, low, high), row.status == "regression"
    (bar,) = ax.bar([i], [rate - low], bottom=low, width=0.6, color=RED if regressed else BLUE,
                    hatch="///" if regressed else None, edgecolor="white" if regressed else None)
    tip = f"{dim}: {_pct(row.rate)} ({row.passes}/{row.trials}), baseline {_pct(row.baseline)}, {row.status}"
    tags.tag(bar, "bar", tip, dimension=dim, status=row.status, rate=f"{row.rate:.6f}")
    if row.low is not None and row.high is not None:
        # min/max: a bound equal to the rate may differ from it by float dust and must not flip the whisker.
        lo, hi = _clamp(min(row.low, row.rate), low, high), _clamp(max(row.high, row.rate), low, high)
        (whisker,) = ax.plot([i - 0.07, i + 0.07, None, i, i, None, i - 0.07, i + 0.07], [lo, lo, None, lo, hi, None, hi, hi],
                             color=GREY, linewidth=1.5)
        tags.tag(whisker, "interval", f"{dim} interval {_pct(row.low)}–{_pct(row.high)}", low=lo, high=hi)
    if row.baseline is not None:
        (tick,) = ax.plot([i - 0.35, i + 0.35], [_clamp(row.baseline, low, high)] * 2, color=BLACK, linewidth=2.5)
        tags.tag(tick, "baseline", f"{dim} baseline {_pct(row.baseline)}", value=row.baseline)


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
    shown = "" if len(ranked) <= GRID_MAX_CASES else f", first {GRID_MAX_CASES} of {len(ranked)} cases"
    title = f"Outcome per case and trial (failing cases first{shown})"
    failing = sum(any(_cell(t) in (1, 2) for t in c.trials) for c in ranked)
    left = 16 + 5.4 * max([len(_clean(c.id, 40)) for c in cases] + [4])
    width, height = max(left + 16 * trials + 24, 8 + 6.5 * len(title)), 64 + 16 * max(len(cases), 1)
    tags = _Tags()
    with _drawing(width, height) as fig:
        ax = _place(fig, tags, (width, height), (left, width - left - 16 * trials, 30, 34))
        for row, case in enumerate(cases):
            _grid_row(ax, tags, row, case, trials)
        ax.set_xlim(0.5, trials + 0.5)
        ax.set_ylim(max(len(cases), 1) - 0.5, -0.5)
        ax.set_xticks(range(1, trials + 1))
        ax.set_yticks(range(len(cases)), [_clean(c.id, 40) for c in cases])
        for tick, case in zip(ax.get_yticklabels(), cases):
            tags.tag(tick, "case-label", case.id, case=case.id)
        ax.set_xlabel("trial")
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        if not cases:
            ax.text(0.5, 0.5, "no cases", transform=ax.transAxes, ha="center")
        ax.set_title(title, loc="left")
        label = f"{title}: {failing} of {len(ranked)} cases failed or errored in some trial"
        return _svg(fig, "chart-grid", label, tags)


def _grid_row(ax: Any, tags: _Tags, row: int, case: CaseSummary, trials: int) -> None:
    """One case: a cell per trial number, coloured and hatched by its outcome."""
    from matplotlib.patches import Rectangle

    by_trial = {t.trial: t for t in case.trials}
    for n in range(1, trials + 1):
        value = _cell(by_trial.get(n))
        cell = Rectangle((n - 0.45, row - 0.45), 0.9, 0.9, facecolor=_GRID_COLOURS[value], hatch=_GRID_HATCHES[value],
                         edgecolor=LIGHT if value == 3 else "white", linewidth=0.8)
        ax.add_patch(cell)
        tags.tag(cell, "cell", f"{case.id} trial {n}: {_GRID_NAMES[value]}", case=case.id, trial=n,
                 outcome=_GRID_NAMES[value])


def trend_chart(summaries: list[Summary]) -> str:
    """One line per dimension across runs, oldest first, each with its own colour, dash and marker."""
    dims = sorted({d for s in summaries for d in s.rates})
    low, high = y_range([s.rates[d].rate for s in summaries for d in dims if d in s.rates])
    step = max(24.0, min(72.0, 560 / max(len(summaries), 1)))  # a year of weekly runs still fits a page
    title = "Pass rate per dimension over runs"
    width = max(72 + step * max(len(summaries), 1) + 150, 8 + 7 * len(title))
    height = max(330.0, 60 + 18 * len(dims))
    tags = _Tags()
    with _drawing(width, height) as fig:
        ax = _place(fig, tags, (width, height), (64, 150, 30, 110))
        xs = list(range(len(summaries)))
        for i, dim in enumerate(dims):
            _series(ax, tags, xs, dim, [s.rates[dim].rate if dim in s.rates else None for s in summaries], i, (low, high))
        names = [_clean(s.started_at[:16].replace("T", " ") or s.run_id, 20) for s in summaries]
        ax.set_xticks(xs, names, rotation=35, ha="right")
        ax.set_xlim(-0.5, max(len(summaries), 1) - 0.5)
        _percent_axis(ax, low, high, "pass rate")
        ax.set_title(title)
        if dims:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
        label = f"{title}: {len(summaries)} runs, {len(dims)} dimensions ({', '.join(dims[:20])})"
        return _svg(fig, "chart-trend", _clean(label), tags)


def _series(ax: Any, tags: _Tags, xs: list[int], dim: str, rates: list[float | None], index: int,
            axis: tuple[float, float]) -> None:
    """One dimension's line (broken where a run lacks the dimension) with a marker per run."""
    dash, marker, size = _STYLES[index % len(_STYLES)]
    ys = [float("nan") if r is None else _clamp(r, *axis) for r in rates]
    (line,) = ax.plot(xs, ys, linestyle=dash, marker=marker, markersize=size, linewidth=1.8,
                      color=_COLOURS[index % len(_COLOURS)], label=_clean(dim, 24), zorder=2 + index)
    tip = f"{dim}: " + ", ".join(_pct(r) for r in rates)
    tags.tag(line, "series", tip, dimension=dim, linestyle=dash, marker=marker)
