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
from rubricgate.reports.junit import xml_safe

SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

RED, BLUE, GREY, BLACK, LIGHT = "#c62828", "#1565c0", "#555555", "#1b1b1b", "#e4e4e4"
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
