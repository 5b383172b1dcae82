"""The report's SVG charts: well-formed, accessible, escaped, drawn to scale, bounded on big suites."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

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


def _plot_box(root: ET.Element) -> tuple[float, float]:
    """(top, bottom) of the plot, read off the axis path 'M left top V bottom H right'."""
    d = _all(root, "path", "axis")[0].get("d")
    top, bottom = re.match(r"M[\d.]+ ([\d.]+)V([\d.]+)H", d).groups()
    return float(top), float(bottom)


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
    heights = [float(b.get("height")) for b in _all(root, "rect", "bar")]
    expected = [(bottom - top) * (r - low) / (high - low) for r in (0.9, 0.95, 1.0)]
    assert heights == pytest.approx(expected, abs=0.02)
    assert "pass rate (axis from 85%)" in "".join(root.itertext())


def test_a_full_axis_says_nothing_about_where_it_starts():
    text = "".join(_svg(charts.rates_chart(rf.summary(rates=_rates(0.02, 1.0)))).itertext())
    assert "pass rate" in text and "axis from" not in text


def test_the_regression_bar_is_red_and_the_others_blue():
    bars = {b.get("data-dimension"): b.get("fill") for b in _all(_svg(charts.rates_chart(rf.summary())), "rect", "bar")}
    assert bars == {"verdict": charts.RED, "tool_use": charts.BLUE, "trajectory": charts.BLUE}


def test_whiskers_and_ticks_stay_inside_the_plot_even_with_float_dust():
    # high a hair below the rate (Wilson at x = n), low a hair above: the whisker must not flip.
    row = RateRow(rate=1.0, passes=5, trials=5, low=0.9, high=0.9999999999999999, baseline=1.0)
    dust = RateRow(rate=0.0, passes=0, trials=5, low=1e-17, high=0.4, baseline=0.0)
    root = _svg(charts.rates_chart(rf.summary(rates={"a": row, "b": dust})))
    top, bottom = _plot_box(root)
    ys = [float(v) for p in _all(root, "path", "interval") for v in re.findall(r"(?:M[\d.]+ |V)([\d.]+)", p.get("d"))]
    ys += [float(line.get("y1")) for line in _all(root, "line", "baseline")]
    assert len(ys) == 2 * 4 + 2 and all(top <= y <= bottom for y in ys)


def test_values_off_the_axis_are_clamped_to_it():
    plot = charts._Plot(left=0, top=10, width=100, low=0.5, high=1.02)
    assert plot.y(-3.0) == plot.bottom and plot.y(7.0) == plot.top and plot.top < plot.y(0.75) < plot.bottom


@pytest.mark.parametrize("rates", [{}, _rates(None), _rates(0.5, low=None, high=0.7), _rates(0.5, baseline=None),
                                   _rates(1.0, 1.0, low=1.0, high=1.0), _rates(0.0, low=0.0, high=0.2)],
                         ids=["no rates", "rate None", "low None", "baseline None", "all pass", "all fail"])
def test_degenerate_rates_draw_without_crashing(rates):
    root = _svg(charts.rates_chart(rf.summary(rates=rates)))
    assert len(_all(root, "rect", "bar")) == sum(r.rate is not None for r in rates.values())
    assert ("no rates" in "".join(root.itertext())) == (not rates)


def test_the_grid_shows_at_most_50_cases_failing_first():
    failing = rf.cases()[1]
    passing = [CaseSummary(id=f"ok-{i:03d}", source="fixture", trials=[rf.trial(f"ok-{i:03d}", 1)]) for i in range(120)]
    root = _svg(charts.grid_chart(rf.summary(cases=[*passing, failing])))
    rows = [g.get("data-case") for g in _all(root, "g", "row")]
    assert len(rows) == charts.GRID_MAX_CASES and rows[0] == failing.id and rows[1:] == [c.id for c in passing[:49]]
    assert f"first {charts.GRID_MAX_CASES} of 121 cases" in "".join(root.itertext())


def test_a_small_suite_shows_every_case_with_its_outcome_colours():
    root = _svg(charts.grid_chart(rf.summary()))
    rows = _all(root, "g", "row")
    assert [g.get("data-case") for g in rows] == ["block-missing-description", "pass-weekly-revenue"]
    assert [c.get("fill") for c in _all(rows[0], "rect", "cell")] == [charts.GRID_LEGEND["failed a dimension"]] * 2
    assert [c.get("fill") for c in _all(rows[1], "rect", "cell")] == [charts.GRID_LEGEND["passed"]] * 2
    assert [t.text for t in _all(rows[1], "text", "case-label")] == ["pass-weekly-revenue"]
    assert "first" not in "".join(root.itertext()).replace("failing cases first", "")


def test_the_grid_marks_errors_and_missing_trials_and_survives_no_cases():
    errored = CaseSummary(id="e", source="task", trials=[rf.trial("e", 1, "ERROR"), rf.trial("e", 3, "PASS")])
    cells = _all(_svg(charts.grid_chart(rf.summary(cases=[errored]))), "rect", "cell")
    assert [c.get("data-outcome") for c in cells] == ["ERROR", "no such trial", "passed"]
    assert "no cases" in "".join(_svg(charts.grid_chart(rf.summary(cases=[]))).itertext())


def test_the_trend_has_one_distinct_series_per_dimension_and_run_labels():
    runs = [rf.passing_summary(), rf.summary(started_at="", run_id="run-2"), rf.summary()]
    root = _svg(charts.trend_chart(runs))
    series = _all(root, "g", "series")
    assert [g.get("data-dimension") for g in series] == ["tool_use", "trajectory", "verdict"]
    styles = {(g.find(NS + "polyline").get("stroke-dasharray"), g.find(NS + "polyline").get("stroke"),
               g[-1].tag, g[-1].get("points", "")[:4]) for g in series}
    assert len(styles) == 3 and len({dash for dash, *_ in styles}) == 3
    assert all(len(_all(g, "polyline")) == 1 for g in series)
    assert {g[-1].tag for g in series} == {NS + "circle", NS + "polygon"}
    text = "".join(root.itertext())
    assert "2026-01-01 00:00" in text and "run-2" in text and "Pass rate per dimension over runs" in text


def test_the_trend_draws_one_run_and_gaps_without_crashing():
    one = _svg(charts.trend_chart([rf.summary()]))
    assert len(_all(one, "g", "series")) == 3 and not _all(one, "polyline") and len(_all(one, "circle")) >= 1
    gap = rf.summary(rates={"verdict": RateRow(rate=None, passes=0, trials=0)})
    root = _svg(charts.trend_chart([rf.summary(), gap, rf.summary()]))
    assert len(_all(root, "polyline")) == 0 and len(_all(root, "g", "series")) == 3  # every line broken at run 2
    assert _svg(charts.trend_chart([]))


def test_the_report_renders_with_no_plotting_library_importable():
    # None in sys.modules makes `import matplotlib` raise ImportError, as if it were not installed.
    probe = ("import sys; sys.modules['matplotlib'] = None\n"
             "from tests import reports_fixtures as rf\n"
             "from rubricgate.reports.html import render_html\n"
             "print(render_html(rf.summary(), None, [rf.passing_summary()]).count('role=\"img\"'))")
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert got.returncode == 0 and got.stdout.strip() == "3", got.stderr[-2000:]
