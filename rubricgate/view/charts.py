"""The trend page's chart, drawn by matplotlib (reports/charts.py) on its first view and kept by
content: in memory for as long as the viewer runs and in the render cache's private folder
(reports/render_cache.py) for the next process, so no request after the first draws it again and
no page but the trend imports matplotlib. The same runs give the same SVG, so the key is the
SHA-256 of what the chart is drawn from and of the drawing code's version."""

from __future__ import annotations

import json
import threading

from rubricgate.models.reviewer_digests import reviewer_changed
from rubricgate.models.view_index import RunHead
from rubricgate.reports import render_cache

_drawn: dict[str, str] = {}
_lock = threading.Lock()


def points(heads: list[RunHead]):
    """The runs (oldest first) as the chart's points, with the changes since the run before each."""
    from rubricgate.reports.charts import TrendPoint

    out, prev = [], None
    for h in heads:
        drift = [f"{label} {getattr(prev, a) or '?'} → {getattr(h, a) or '?'}" for a, label in
                 (("agent", "agent"), ("agent_version", "CLI"), ("model", "model"))
                 if prev is not None and getattr(prev, a) != getattr(h, a)]
        changed = prev is not None and reviewer_changed((prev.reviewer, prev.reviewer_files),
                                                        (h.reviewer, h.reviewer_files))
        out.append(TrendPoint(h.run_id, h.started_at, h.status, h.complete,
                              {d: (c.rate, c.low, c.high) for d, c in h.rates.items()},
                              {d: c.baseline for d, c in h.rates.items()}, h.margin, changed, "; ".join(drift)))
        prev = h
    return out


def trend_svgs(heads: list[RunHead]) -> tuple[str, str]:
    """(wide, narrow) SVG of these runs' trend, drawn once per content."""
    from rubricgate.reports import charts

    found = points(heads)
    data = json.dumps([p.as_json() for p in found], sort_keys=True, ensure_ascii=False)
    return tuple(_cached(charts.CHART_VERSION, width, data, lambda w=width: charts.draw_trend(found, w))
                 for width in (charts.WIDE, charts.NARROW))  # type: ignore[return-value]


def _cached(version: str, width: int, data: str, draw) -> str:
    key = render_cache.content_key("trend", version, str(width), data)
    with _lock:
        svg = _drawn.get(key) or render_cache.read_chart(key)
        if svg is None:
            svg = draw()
            render_cache.write_chart(key, svg)
        _drawn[key] = svg
        return svg
