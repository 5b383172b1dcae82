"""The report's SVG charts: well-formed, accessible, escaped, drawn to scale, bounded on big suites."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

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
    for markup in (charts.rates_chart(s), charts.grid_chart(s), charts.trend_chart([s, s])):
        root = _svg(markup)
        assert "<script" not in markup and not _all(root, "script")
        shown = {v for el in root.iter() for v in el.attrib.values()} | {el.text for el in root.iter()}
        assert HOSTILE_ID in shown  # read back as the exact text: it was data, never markup
    assert render_html(s).count("<script") == 1  # the report's own script and nothing else


def test_every_chart_is_an_accessible_scalable_svg_with_its_report_id():
    s = rf.summary()
    for markup, element_id in ((charts.rates_chart(s), "chart-rates"), (charts.grid_chart(s), "chart-grid"),
                               (charts.trend_chart([rf.passing_summary(), s]), "chart-trend")):
        root = _svg(markup)
        assert root.get("id") == element_id and root.get("role") == "img" and root.get("aria-label")
        assert root[0].tag == NS + "title" and root[0].text
        w, h = float(root.get("width")), float(root.get("height"))
        assert root.get("viewBox") == f"0 0 {w:.0f} {h:.0f}" and w > 100 and h > 50


def test_bar_heights_are_proportional_to_rates_on_the_zoomed_axis():
    root = _svg(charts.rates_chart(rf.summary(rates=_rates(0.9, 0.95, 1.0))))
    low, high = charts.y_range([0.9, 0.95, 1.0])
    assert low == 0.85
    top, bottom = _plot_box(root)
    heights = [max(_ys(b)) - min(_ys(b)) for b in _all(root, "g", "bar")]
    expected = [(bottom - top) * (r - low) / (high - low) for r in (0.9, 0.95, 1.0)]
    assert heights == pytest.approx(expected, abs=0.02)
    assert "pass rate (axis from 85%)" in "".join(root.itertext())


def test_a_full_axis_says_nothing_about_where_it_starts():
    text = "".join(_svg(charts.rates_chart(rf.summary(rates=_rates(0.02, 1.0)))).itertext())
    assert "pass rate" in text and "axis from" not in text


def test_the_regression_bar_is_red_and_the_others_blue():
    root = _svg(charts.rates_chart(rf.summary()))
    bars = {b.get("data-dimension"): (b.get("data-status"), _fill(b, root)) for b in _all(root, "g", "bar")}
    assert bars == {"verdict": ("regression", charts.RED.lower()), "tool_use": ("ok", charts.BLUE.lower()),
                    "trajectory": ("ok", charts.BLUE.lower())}
    # Not by colour alone: the regression bar is also hatched (a pattern laid over it), the others not.
    hatched = {b.get("data-dimension") for b in _all(root, "g", "bar")
               if any("url(#h" in p.get("style", "") for p in b.iter(NS + "path"))}
    assert hatched == {"verdict"}


def test_whiskers_and_ticks_stay_inside_the_plot_even_with_float_dust():
    # high a hair below the rate (Wilson at x = n), low a hair above: the whisker must not flip.
    row = RateRow(rate=1.0, passes=5, trials=5, low=0.9, high=0.9999999999999999, baseline=1.0)
    dust = RateRow(rate=0.0, passes=0, trials=5, low=1e-17, high=0.4, baseline=0.0)
    root = _svg(charts.rates_chart(rf.summary(rates={"a": row, "b": dust})))
    top, bottom = _plot_box(root)
    ys = [y for g in _all(root, "g", "interval") + _all(root, "g", "baseline") for y in _ys(g)]
    assert len(_all(root, "g", "interval")) == 2 and len(_all(root, "g", "baseline")) == 2
    assert ys and all(top - 0.01 <= y <= bottom + 0.01 for y in ys)


def test_values_off_the_axis_are_clamped_to_it():
    assert charts._clamp(-3.0, 0.5, 1.02) == 0.5 and charts._clamp(7.0, 0.5, 1.02) == 1.02
    assert charts._clamp(0.75, 0.5, 1.02) == 0.75
    root = _svg(charts.rates_chart(rf.summary(rates=_rates(0.9, 1.0, low=0.2, high=1.0, baseline=0.1))))
    top, bottom = _plot_box(root)
    ys = [y for cls in ("bar", "interval", "baseline") for g in _all(root, "g", cls) for y in _ys(g)]
    assert all(top - 0.01 <= y <= bottom + 0.01 for y in ys)


@pytest.mark.parametrize("rates", [{}, _rates(None), _rates(0.5, low=None, high=0.7), _rates(0.5, baseline=None),
                                   _rates(1.0, 1.0, low=1.0, high=1.0), _rates(0.0, low=0.0, high=0.2)],
                         ids=["no rates", "rate None", "low None", "baseline None", "all pass", "all fail"])
def test_degenerate_rates_draw_without_crashing(rates):
    root = _svg(charts.rates_chart(rf.summary(rates=rates)))
    assert len(_all(root, "g", "bar")) == sum(r.rate is not None for r in rates.values())
    assert ("no rates" in "".join(root.itertext())) == (not rates)


def test_the_grid_shows_at_most_50_cases_failing_first():
    failing = rf.cases()[1]
    passing = [CaseSummary(id=f"ok-{i:03d}", source="fixture", trials=[rf.trial(f"ok-{i:03d}", 1)]) for i in range(120)]
    root = _svg(charts.grid_chart(rf.summary(cases=[*passing, failing])))
    rows = [g.get("data-case") for g in _all(root, "g", "case-label")]
    assert len(rows) == charts.GRID_MAX_CASES and rows[0] == failing.id and rows[1:] == [c.id for c in passing[:49]]
    assert f"first {charts.GRID_MAX_CASES} of 121 cases" in "".join(root.itertext())


def test_a_small_suite_shows_every_case_with_its_outcome_colours():
    root = _svg(charts.grid_chart(rf.summary()))
    labels = _all(root, "g", "case-label")
    assert [g.get("data-case") for g in labels] == ["block-missing-description", "pass-weekly-revenue"]
    cells = {c: [g for g in _all(root, "g", "cell") if g.get("data-case") == c] for c in ("block-missing-description",
                                                                                      "pass-weekly-revenue")}
    assert [_fill(g, root).lower() for g in cells["block-missing-description"]] == [charts.GRID_LEGEND["failed a dimension"].lower()] * 2
    assert [_fill(g, root).lower() for g in cells["pass-weekly-revenue"]] == [charts.GRID_LEGEND["passed"].lower()] * 2
    assert ["".join(g.itertext()).strip() for g in labels][1].endswith("pass-weekly-revenue")
    assert "first" not in "".join(root.itertext()).replace("failing cases first", "")


def test_the_grid_marks_errors_and_missing_trials_and_survives_no_cases():
    errored = CaseSummary(id="e", source="task", trials=[rf.trial("e", 1, "ERROR"), rf.trial("e", 3, "PASS")])
    cells = _all(_svg(charts.grid_chart(rf.summary(cases=[errored]))), "g", "cell")
    assert [c.get("data-outcome") for c in cells] == ["ERROR", "no such trial", "passed"]
    assert "no cases" in "".join(_svg(charts.grid_chart(rf.summary(cases=[]))).itertext())


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


def test_charts_are_self_contained_deterministic_and_share_no_id():
    s = rf.summary()
    drawn = [charts.rates_chart(s), charts.grid_chart(s), charts.trend_chart([rf.passing_summary(), s])]
    assert drawn == [charts.rates_chart(s), charts.grid_chart(s), charts.trend_chart([rf.passing_summary(), s])]
    ids = []
    for markup in drawn:
        root = _svg(markup)
        assert not _all(root, "style") and not _all(root, "metadata") and not _all(root, "script")
        assert not _all(root, "image") and "<text" in markup  # text stays text: no glyph outlines
        refs = re.findall(r'(?:href="|url\()([^")]+)', markup)
        assert refs and all(r.startswith("#") for r in refs)  # only the chart's own markers and clips
        ids += [el.get("id") for el in root.iter() if el.get("id")]
    assert len(ids) == len(set(ids))
