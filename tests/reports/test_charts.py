"""The trend chart's SVG: well-formed, accessible, escaped, deterministic."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET


from rubricgate.models.results import CaseSummary, RateRow
from rubricgate.reports import charts
from rubricgate.reports.html import render_html
from tests import reports_fixtures as rf

NS = "{http://www.w3.org/2000/svg}"
HOSTILE_ID = "<script>alert(1)</script>&\"'"


def _svg(markup: str) -> ET.Element:
    """Parse a chart; ElementTree raises on anything that is not well-formed XML."""
    root = ET.fromstring(markup)
    assert root.tag == NS + "svg"
    return root


def _all(root: ET.Element, tag: str, cls: str | None = None) -> list[ET.Element]:
    return [el for el in root.iter(NS + tag) if cls is None or el.get("class") == cls]


def _ys(el: ET.Element) -> list[float]:
    """Every y coordinate of the paths under `el` (matplotlib writes 'M x y L x y ... z')."""
    return [float(y) for p in el.iter(NS + "path") for y in re.findall(r"[ML] [-\d.]+ ([-\d.]+)", p.get("d", ""))]


def _plot_box(root: ET.Element) -> tuple[float, float]:
    """(top, bottom) of the plot area, read off its background path."""
    ys = _ys(_all(root, "g", "plot-area")[0])
    return min(ys), max(ys)


def _fill(el: ET.Element, root: ET.Element) -> str:
    """The fill colour of the first path under `el` (matplotlib writes it in a style attribute);
    a hatched fill is a pattern over a background rect of that colour."""
    style = next(el.iter(NS + "path")).get("style", "")
    fill = re.search(r"fill: (#[0-9a-f]{6}|url\(#[^)]+\))", style).group(1)
    if fill.startswith("url(#"):
        pattern = next(p for p in root.iter(NS + "pattern") if p.get("id") == fill[5:-1])
        return pattern.find(NS + "rect").get("fill")
    return fill


def _rates(*values: float | None, **row) -> dict[str, RateRow]:
    return {f"dim{i}": RateRow(rate=v, passes=0, trials=1, **row) for i, v in enumerate(values)}


def test_a_hostile_case_id_dimension_and_run_id_are_inert_text():
    case = CaseSummary(id=HOSTILE_ID, source="task", trials=[rf.trial(HOSTILE_ID, 1)])
    s = rf.summary(cases=[case], rates={HOSTILE_ID: RateRow(rate=0.5, passes=1, trials=2)}, run_id=HOSTILE_ID,
                   started_at="")
    for markup in (charts.trend_chart([s, s]),):
        root = _svg(markup)
        assert "<script" not in markup and not _all(root, "script")
        shown = {v for el in root.iter() for v in el.attrib.values()} | {el.text for el in root.iter()}
        assert HOSTILE_ID in shown  # read back as the exact text: it was data, never markup
    assert render_html(s).count("<script") == 1  # the report's own script and nothing else


def test_every_chart_is_an_accessible_scalable_svg_with_its_report_id():
    s = rf.summary()
    for markup, element_id in ((charts.trend_chart([rf.passing_summary(), s]), "chart-trend"),):
        root = _svg(markup)
        assert root.get("id") == element_id and root.get("role") == "img" and root.get("aria-label")
        assert root[0].tag == NS + "title" and root[0].text
        w, h = float(root.get("width")), float(root.get("height"))
        assert root.get("viewBox") == f"0 0 {w:.0f} {h:.0f}" and w > 100 and h > 50


def test_the_trend_has_one_distinct_series_per_dimension_and_run_labels():
    runs = [rf.passing_summary(), rf.summary(started_at="", run_id="run-2"), rf.summary()]
    root = _svg(charts.trend_chart(runs))
    series = _all(root, "g", "series")
    assert [g.get("data-dimension") for g in series] == ["tool_use", "trajectory", "verdict"]
    # Readable without colour: every series has its own dash pattern and its own marker.
    assert len({g.get("data-linestyle") for g in series}) == 3 and len({g.get("data-marker") for g in series}) == 3
    assert all(len(_all(g, "use")) == 3 for g in series)  # a marker per run
    text = "".join(root.itertext())
    assert "2026-01-01 00:00" in text and "run-2" in text and "Pass rate per dimension over runs" in text


def test_the_trend_draws_one_run_and_gaps_without_crashing():
    one = _svg(charts.trend_chart([rf.summary()]))
    assert len(_all(one, "g", "series")) == 3 and all(len(_all(g, "use")) == 1 for g in _all(one, "g", "series"))
    gap = rf.summary(rates={"verdict": RateRow(rate=None, passes=0, trials=0)})
    root = _svg(charts.trend_chart([rf.summary(), gap, rf.summary()]))
    series = {g.get("data-dimension"): g for g in _all(root, "g", "series")}
    assert len(series) == 3 and len(_all(series["verdict"], "use")) == 2  # no marker where the rate is missing
    assert _svg(charts.trend_chart([]))


def test_the_chart_is_self_contained_deterministic_and_its_ids_unique():
    s = rf.summary()
    drawn = [charts.trend_chart([rf.passing_summary(), s]), charts.trend_chart([s, rf.passing_summary(), s])]
    assert drawn == [charts.trend_chart([rf.passing_summary(), s]), charts.trend_chart([s, rf.passing_summary(), s])]
    for markup in drawn:
        root = _svg(markup)
        assert not _all(root, "style") and not _all(root, "metadata") and not _all(root, "script")
        assert not _all(root, "image") and "<text" in markup  # text stays text: no glyph outlines
        refs = re.findall(r'(?:href="|url\()([^")]+)', markup)
        assert refs and all(r.startswith("#") for r in refs)  # only the chart's own markers and clips
        ids = [el.get("id") for el in root.iter() if el.get("id")]
        assert len(ids) == len(set(ids))
