"""The trend chart (report.html given earlier runs, `trend --chart`): drawn by matplotlib,
written as inline SVG.

Each chart is one `<svg role="img">` with an aria-label, a <title> and a viewBox (the report's
CSS scales it to the page). The SVG is made self-contained and deterministic: text stays text
(`svg.fonttype: none`: no glyph outlines, nothing to fetch), ids come from a per-chart salt
(`svg.hashsalt`, so two charts on one page never share an id) and no date is written. Every
text from a user file (case ids, dimension names, run ids) is cleaned of XML-illegal characters
and drawn with math parsing off; the SVG is then re-serialised by ElementTree, which escapes it,
so no text can become markup. Colour is never the only cue: each trend series has its own dash
and marker.

The series carry a class, data attributes and a <title> tooltip (`_Tags`), for the report's
readers and its tests. matplotlib is imported when a chart is drawn, never by a run: a run's own
report draws no chart.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rubricgate.models.results import Summary
from rubricgate.models.reviewer_digests import reviewer_changed
from rubricgate.reports.junit import xml_safe

SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

RED, BLUE, GREY, BLACK, LIGHT = "#c62828", "#1565c0", "#555555", "#1b1b1b", "#e4e4e4"
# Trend series: dimensions often share a rate (all 100%), so each differs in colour, dash, marker
# and marker size (smaller markers are drawn later, on top of larger ones).
_COLOURS = ["#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#455a64"]
_STYLES = [("-", "o", 7.0), ("--", "s", 6.0), (":", "^", 5.5), ("-.", "D", 4.0)]
_RC: dict[Any, Any] = {"svg.fonttype": "none", "text.parse_math": False, "text.usetex": False,
       "font.family": "sans-serif", "font.size": 9, "axes.titlesize": 11, "axes.titleweight": "bold",
       "axes.titlelocation": "left", "hatch.linewidth": 0.8, "svg.image_inline": True}


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
    return _themed(ET.tostring(root, encoding="unicode"))


def _themed(svg: str) -> str:
    """The sentinel colours as the page's own, in the style, fill and stroke attributes only (a
    user's text that happens to spell a sentinel stays as it is)."""
    def swap(found: re.Match) -> str:
        text = found.group(0)
        for sentinel, css in _SENTINELS.items():
            text = text.replace(sentinel, css)
        return text
    return re.sub(r'\b(?:style|fill|stroke)="[^"]*"', swap, svg)


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


# Colours are drawn as sentinels and replaced by the page's own custom properties (theme.css), so
# one SVG reads in the light and the dark scheme: text and axes in the text colour, the rest by role.
_SENTINELS = {"#010203": "currentColor", "#020304": "var(--border, #d0d7de)", "#030405": "var(--meter-bar, #0969da)",
              "#040506": "var(--meter-margin, #ffd8b5)", "#050607": "var(--badge-pass, #1a7f37)",
              "#060708": "var(--badge-regression, #b42318)", "#070809": "var(--warn, #7d4e00)",
              "#08090a": "var(--muted, #59636e)", "#090a0b": "var(--mark, #6639ba)"}
TEXT, GRID, LINE, BAND, PASS, FAIL, WARN, MUTED, MARK = _SENTINELS
_RC.update({"text.color": TEXT, "axes.edgecolor": TEXT, "axes.labelcolor": TEXT, "xtick.color": TEXT,
            "ytick.color": TEXT, "figure.facecolor": "none", "axes.facecolor": "none", "savefig.facecolor": "none"})
# A decision as a marker: its shape says it without colour.
_DECISION_MARKS = {"pass": ("o", PASS, "PASS"), "regression": ("X", FAIL, "REGRESSION"),
                   "inconclusive": ("D", WARN, "INCONCLUSIVE"), "baseline": ("o", LINE, "BASELINE")}
WIDE, NARROW = 860, 340  # points; the page shows the one that fits (view.css, report.css)
NARROW_RUNS = 12  # the narrow chart's latest runs (the table below lists every one)
CHART_VERSION = "trend-4"  # part of a drawn chart's cache key: bump when the drawing changes


@dataclass
class TrendPoint:
    """One run as the trend draws it."""

    run_id: str
    started_at: str
    status: str  # the decision's status
    complete: bool
    rates: dict[str, tuple[float | None, float | None, float | None]]  # dimension -> (rate, low, high)
    baseline: dict[str, float | None] = field(default_factory=dict)
    margin: float | None = None
    reviewer_changed: bool = False
    drift: str = ""  # "model m-1 -> m-2", or ""

    @property
    def partial(self) -> bool:
        """Not a rate point: interrupted, budget spent, or could not be judged."""
        return not self.complete or self.status == "error"

    def as_json(self) -> dict:
        return {k: getattr(self, k) for k in ("run_id", "started_at", "status", "complete", "rates", "baseline",
                                              "margin", "reviewer_changed", "drift")}


def points_of(summaries: list[Summary]) -> list[TrendPoint]:
    """Summaries (oldest first) as trend points, with the changes since the run before each."""
    out, prev = [], None
    for s in summaries:
        drift = [f"{label} {getattr(prev, a) or '?'} → {getattr(s, a) or '?'}" for a, label in
                 (("agent", "agent"), ("agent_version", "CLI"), ("model", "model"))
                 if prev is not None and getattr(prev, a) != getattr(s, a)]
        changed = (prev is not None and s.reviewer is not None and prev.reviewer is not None
                   and reviewer_changed((prev.reviewer.fingerprint, prev.reviewer.digests),
                                        (s.reviewer.fingerprint, s.reviewer.digests)))
        margin = (s.gate.plan or {}).get("margin") if s.gate else None
        out.append(TrendPoint(s.run_id, s.started_at, s.decision.status, s.complete,
                              {d: (r.rate, r.low, r.high) for d, r in s.rates.items()},
                              {d: r.baseline for d, r in s.rates.items()}, margin, changed, "; ".join(drift)))
        prev = s
    return out


def trend_chart(summaries: list[Summary], width: int = WIDE) -> str:
    """The trend of these runs (oldest first) as inline SVG (report.html, `trend --chart`)."""
    return draw_trend(points_of(summaries), width)


def fitted_range(values: list[float | None], floor_span: float = 0.1) -> tuple[float, float]:
    """A y-axis fitted to the data: from 2 points below the lowest value, in 5-point steps, to just
    above 100%; at least `floor_span` tall (a 0-100% axis makes a 4-point drop a few pixels)."""
    seen = [v for v in values if v is not None]
    low = min(seen, default=0.0)
    bottom = max(0.0, int((low - 0.02) * 20 + 1e-9) / 20)
    return min(bottom, 1.0 - floor_span), 1.01


def _labels(points: list[TrendPoint], most: int) -> list[tuple[int, str]]:
    """Dated x labels ('Dec 03', with the time when a date has several runs), at most `most`."""
    from datetime import datetime

    def parsed(p: TrendPoint):
        try:
            return datetime.fromisoformat(p.started_at.replace("Z", "+00:00"))
        except ValueError:
            return None
    dates = [parsed(p) for p in points]
    days = [d.date() if d else None for d in dates]
    step = max(1, -(-len(points) // most))
    out = []
    for i in range(0, len(points), step):
        d = dates[i]
        text = _clean(points[i].run_id, 14) if d is None else d.strftime("%b %d") + (
            d.strftime("\n%H:%M") if days.count(days[i]) > 1 else "")
        out.append((i, text))
    return out


def draw_trend(points: list[TrendPoint], width: int = WIDE) -> str:
    """Small multiples, one panel per dimension sharing the dated x axis: the rate with its interval,
    each run's decision as a marker of its own shape, the latest baseline and the margin below it;
    a run that could not be judged (interrupted, errored) is a hollow square on the axis, never a
    rate point; dotted lines where the reviewer files or the agent, CLI or model changed."""
    if width < WIDE:
        points = points[-NARROW_RUNS:]
    dims = list(dict.fromkeys(d for p in points for d in p.rates)) or ["(no rates)"]
    panel, top, bottom = 118.0, 44.0, 44.0
    height = top + bottom + panel * len(dims)
    tags = _Tags()
    with _drawing(width, height) as fig:
        left = 52 if width < WIDE else 64
        axes = []
        for k, dim in enumerate(dims):
            y0 = bottom + panel * (len(dims) - 1 - k)
            ax = fig.add_axes((left / width, (y0 + 14) / height, 1 - (left + 14) / width, (panel - 24) / height))
            _panel(ax, tags, points, dim)
            axes.append(ax)
        labels = _labels(points, 10 if width >= WIDE else 4)
        for ax in axes:  # one x axis for every panel: the same runs, labelled under the last
            ax.set_xticks([i for i, _ in labels], [t for _, t in labels])
        for ax in axes[:-1]:
            ax.tick_params(labelbottom=False)
        _legend(fig, width >= WIDE)
        fig.text(8 / width, 1 - 14 / height, "Pass rate per dimension over runs" + (
            f" (latest {len(points)})" if width < WIDE else ""), fontweight="bold", fontsize=11, va="top")
        label = _chart_label(points, dims)
        return _svg(fig, "chart-trend" if width >= WIDE else "chart-trend-narrow", label, tags)


def _panel(ax: Any, tags: _Tags, points: list[TrendPoint], dim: str) -> None:
    """One dimension: its line through the judged runs, intervals, decision markers, baseline, margin."""
    from matplotlib.ticker import MultipleLocator, PercentFormatter

    xs = list(range(len(points)))
    rates = [None if p.partial else p.rates.get(dim, (None, None, None))[0] for p in points]
    base = next((p.baseline.get(dim) for p in reversed(points) if p.baseline.get(dim) is not None), None)
    margin = next((p.margin for p in reversed(points) if p.margin), None)
    low, high = fitted_range([*rates, base, None if base is None or not margin else base - margin])
    ax.set_ylim(low, high)
    ax.set_xlim(-0.6, max(len(points), 1) - 0.4)
    _backdrop(ax, tags, dim, base, margin)
    _marks(ax, tags, points, low, high)
    ys = [float("nan") if r is None else r for r in rates]
    (line,) = ax.plot(xs, ys, color=LINE, linewidth=1.6, zorder=3)
    tags.tag(line, "series", f"{dim}: " + ", ".join(_pct(r) for r in rates), dimension=dim)
    for i, p in enumerate(points):
        _run_mark(ax, tags, i, p, dim, low, high)
    step = 0.05 if high - low <= 0.3 else 0.1 if high - low <= 0.6 else 0.25
    ax.yaxis.set_major_locator(MultipleLocator(step))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.grid(axis="y", color=GRID, linewidth=0.8)
    ax.set_axisbelow(True)
    ax.set_ylabel(_clean(dim, 16), fontweight="bold")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _backdrop(ax: Any, tags: _Tags, dim: str, base: float | None, margin: float | None) -> None:
    if base is None:
        return
    if margin:
        band = ax.axhspan(base - margin, base, color=BAND, zorder=1, linewidth=0)
        tags.tag(band, "margin", f"{dim}: the {margin * 100:.0f}-point margin below the baseline", value=margin)
    (line,) = ax.plot([-0.6, 1e6], [base, base], color=TEXT, linestyle="--", linewidth=1.1, zorder=2)
    tags.tag(line, "baseline", f"{dim} baseline {_pct(base)}", value=base)


def _marks(ax: Any, tags: _Tags, points: list[TrendPoint], low: float, high: float) -> None:
    for i, p in enumerate(points):
        if p.reviewer_changed:
            (m,) = ax.plot([i - 0.5, i - 0.5], [low, high], color=MARK, linestyle=":", linewidth=1.4, zorder=2)
            tags.tag(m, "mark-tested", f"{p.run_id}: the reviewer files changed")
        if p.drift:
            (m,) = ax.plot([i - 0.42, i - 0.42], [low, high], color=WARN, linestyle=(0, (1, 2)), linewidth=1.4,
                           zorder=2)
            tags.tag(m, "mark-drift", f"{p.run_id}: {p.drift}")


def _run_mark(ax: Any, tags: _Tags, i: int, p: TrendPoint, dim: str, low: float, high: float) -> None:
    """The run's decision as a marker on its rate (with its interval), or, for a run that could not
    be judged, a hollow square on the axis."""
    rate, lo, hi = p.rates.get(dim, (None, None, None))
    when = f"{p.run_id} ({p.started_at[:16].replace('T', ' ')})"
    if p.partial:
        (m,) = ax.plot([i], [low], marker="s", markersize=8, markerfacecolor="none", markeredgecolor=MUTED,
                       markeredgewidth=1.6, linestyle="none", clip_on=False, zorder=4)
        why = "partial run" if not p.complete else "could not judge"
        tags.tag(m, "run partial", f"{when}: {why}, not a rate point", run=p.run_id, status=p.status)
        return
    if rate is None:
        return
    if lo is not None and hi is not None:
        (bar,) = ax.plot([i, i], [_clamp(lo, low, high), _clamp(hi, low, high)], color=LINE, alpha=0.45,
                         linewidth=3, solid_capstyle="butt", zorder=2)
        tags.tag(bar, "interval", f"{dim} interval {_pct(lo)}–{_pct(hi)}")
    shape, colour, word = _DECISION_MARKS.get(p.status, ("o", LINE, p.status.upper()))
    (m,) = ax.plot([i], [_clamp(rate, low, high)], marker=shape, markersize=8, color=colour, markeredgecolor="none",
                   linestyle="none", zorder=5)
    tags.tag(m, f"run {p.status}", f"{when}: {dim} {_pct(rate)}, {word}", run=p.run_id, status=p.status)


def _legend(fig: Any, wide: bool) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Line2D([], [], marker=m, color=c, linestyle="none", markersize=7, label=w)
               for m, c, w in (_DECISION_MARKS[s] for s in ("pass", "regression", "inconclusive"))]
    handles += [Line2D([], [], marker="s", markerfacecolor="none", markeredgecolor=MUTED, linestyle="none",
                       markersize=7, label="could not judge / partial"),
                Line2D([], [], color=TEXT, linestyle="--", label="baseline"), Patch(color=BAND, label="margin")]
    if wide:
        handles += [Line2D([], [], color=MARK, linestyle=":", label="reviewer changed"),
                    Line2D([], [], color=WARN, linestyle=(0, (1, 2)), label="agent/CLI/model changed")]
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 0.0), ncol=len(handles) if wide else 3,
               frameon=False, fontsize=8, handlelength=1.6, columnspacing=1.2)


def _chart_label(points: list[TrendPoint], dims: list[str]) -> str:
    judged = [p for p in points if not p.partial]
    counts = {w: sum(p.status == s for p in judged) for s, (_, _, w) in _DECISION_MARKS.items()}
    said = ", ".join(f"{n} {w}" for w, n in counts.items() if n)
    partial = len(points) - len(judged)
    latest = judged[-1] if judged else None
    now = "; ".join(f"{d} {_pct(latest.rates.get(d, (None,))[0])}" for d in dims) if latest else "no judged run"
    return (f"Pass rate per dimension over {len(points)} runs: {said or 'no judged run'}"
            + (f", {partial} partial or not judged" if partial else "") + f"; latest judged: {now}")

