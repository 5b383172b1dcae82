"""The trend chart (matplotlib, inline SVG): one panel per dimension with its y range fitted to the
data, the baseline and margin drawn, dated x labels, each run's decision as a marker of its own
shape, partial runs marked and never a rate point; well-formed, accessible, escaped, themed by
the page's own colours, deterministic; and a narrow version for phones."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from rubricgate.models.results import CaseSummary, Decision, GateDetail, RateRow
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
    return [el for el in root.iter(NS + tag) if cls is None or (el.get("class") or "").split()[:1] == cls.split()[:1]
            and all(c in (el.get("class") or "").split() for c in cls.split())]


def _month(statuses: list[str], rates: list[float], margin: float | None = 0.05) -> list:
    """Runs a day apart with these decisions and verdict rates (the other dimensions at 100%)."""
    out = []
    for i, (status, rate) in enumerate(zip(statuses, rates)):
        row = {"verdict": RateRow(rate=rate, passes=0, trials=1, low=rate - 0.03, high=min(1.0, rate + 0.02), baseline=0.96),
               "tool_use": RateRow(rate=1.0, passes=1, trials=1, baseline=1.0)}
        gate = GateDetail(plan={"margin": margin, "dimensions": []}) if margin else None
        partial = status == "partial"  # interrupted: could not judge, and incomplete
        out.append(rf.summary(run_id=f"run-{i:02d}", started_at=f"2026-11-{i + 1:02d}T10:00:00Z", rates=row, gate=gate,
                              decision=Decision(status="error" if partial else status, exit_code=0), complete=not partial))
    return out


def test_the_y_range_is_fitted_to_the_data_not_0_to_100():
    assert charts.fitted_range([0.95, 1.0]) == (0.9, 1.01)  # a 5-point drop spans half the axis
    assert charts.fitted_range([0.83, 0.97]) == (0.8, 1.01)
    assert charts.fitted_range([1.0]) == (0.9, 1.01)  # at least 10 points tall
    assert charts.fitted_range([0.07]) == (0.05, 1.01) and charts.fitted_range([None]) == (0.0, 1.01)


def test_each_dimension_has_its_panel_baseline_margin_and_fitted_axis():
    root = _svg(charts.trend_chart(_month(["pass", "pass", "regression", "pass"], [0.97, 0.96, 0.88, 0.97])))
    assert [g.get("data-dimension") for g in _all(root, "g", "series")] == ["verdict", "tool_use"]
    assert len(_all(root, "g", "baseline")) == 2 and len(_all(root, "g", "margin")) == 2
    ticks = {t.strip() for t in root.itertext() if re.fullmatch(r"\s*\d+%\s*", t)}
    assert "85%" in ticks and "0%" not in ticks and "50%" not in ticks  # verdict's axis starts near its data
    text = "".join(root.itertext())
    assert "Nov 01" in text and "Nov 04" in text  # dated x labels


def test_decisions_are_marked_by_shape_and_a_partial_run_is_no_rate_point():
    runs = _month(["pass", "regression", "inconclusive", "partial", "error", "pass"], [0.97, 0.85, 0.93, 0.5, 0.4, 0.97])
    runs[4] = runs[4].model_copy(update={"complete": True})  # errored: complete, but could not judge
    root = _svg(charts.trend_chart(runs))
    marks = {(g.get("data-run"), g.get("data-status")) for g in _all(root, "g", "run")}
    assert ("run-01", "regression") in marks and ("run-02", "inconclusive") in marks
    partial = _all(root, "g", "run partial")
    assert {g.get("data-run") for g in partial} == {"run-03", "run-04"}
    series = next(g for g in _all(root, "g", "series") if g.get("data-dimension") == "verdict")
    assert "50.0%" not in series[0].text and "40.0%" not in series[0].text  # the line skips them
    assert "n/a" in series[0].text
    assert "2 partial or not judged" in root.get("aria-label")
    legend = "".join(root.itertext())
    for word in ("PASS", "REGRESSION", "INCONCLUSIVE", "could not judge / partial", "baseline", "margin"):
        assert word in legend


def test_reviewer_and_agent_changes_are_marked_between_runs():
    runs = _month(["pass", "pass", "pass"], [0.97, 0.97, 0.97])
    first, second = rf.reviewer_records()
    runs[0] = runs[0].model_copy(update={"reviewer": first.model_copy(update={"fingerprint": "a" * 64})})
    runs[1] = runs[1].model_copy(update={"reviewer": second.model_copy(update={"fingerprint": "b" * 64})})
    runs[2] = runs[2].model_copy(update={"reviewer": runs[1].reviewer})
    runs[2] = runs[2].model_copy(update={"model": "m-2"})
    root = _svg(charts.trend_chart(runs))
    assert {g.get("class") for g in root.iter() if g.get("class", "").startswith("mark-")} == {"mark-tested", "mark-drift"}


def test_the_first_run_after_an_upgrade_is_no_reviewer_change_unless_its_files_changed():
    # An older rubricgate fingerprinted the reviewer files alone, a newer one adds rubricgate.yaml's
    # sections: the first run on new code was marked "the reviewer files changed".
    runs = _month(["pass", "pass", "pass"], [0.97, 0.97, 0.97])
    files, _ = rf.reviewer_records()
    newer = files.digests | {"rubricgate.yaml#agent": "d" * 64}
    runs[0] = runs[0].model_copy(update={"reviewer": files.model_copy(update={"fingerprint": "a" * 64})})
    runs[1] = runs[1].model_copy(update={"reviewer": files.model_copy(update={"fingerprint": "b" * 64,
                                                                                "digests": newer})})
    runs[2] = runs[2].model_copy(update={"reviewer": files.model_copy(update={"fingerprint": "c" * 64,
                                                                                "digests": newer | {"x.md": "e" * 64}})})
    assert [p.reviewer_changed for p in charts.points_of(runs)] == [False, False, True]


def test_the_narrow_chart_shows_the_latest_runs_for_a_phone():
    runs = _month(["pass"] * 20, [0.97] * 20)
    narrow = _svg(charts.trend_chart(runs, charts.NARROW))
    assert narrow.get("id") == "chart-trend-narrow" and float(narrow.get("width")) == charts.NARROW
    assert {g.get("data-run") for g in _all(narrow, "g", "run")} == {f"run-{i:02d}" for i in range(8, 20)}
    assert f"latest {charts.NARROW_RUNS}" in "".join(narrow.itertext())


def test_colours_are_the_pages_own_so_the_chart_reads_in_light_and_dark():
    markup = charts.trend_chart(_month(["pass", "regression"], [0.97, 0.88]))
    assert "currentColor" in markup and "var(--badge-regression" in markup and "var(--meter-margin" in markup
    assert not any(sentinel in markup for sentinel in charts._SENTINELS)


def test_a_hostile_dimension_and_run_id_are_inert_text():
    case = CaseSummary(id=HOSTILE_ID, source="task", trials=[rf.trial(HOSTILE_ID, 1)])
    s = rf.summary(cases=[case], rates={HOSTILE_ID: RateRow(rate=0.5, passes=1, trials=2)}, run_id=HOSTILE_ID,
                   started_at="")
    markup = charts.trend_chart([s, s])
    root = _svg(markup)
    assert "<script" not in markup and not _all(root, "script")
    shown = {v for el in root.iter() for v in el.attrib.values()} | {el.text for el in root.iter()}
    assert any(HOSTILE_ID in (v or "") for v in shown)  # read back as the exact text: it was data, never markup
    assert render_html(s, history=[s]).count("<script") == 1  # the report's own script and nothing else


def test_the_chart_is_an_accessible_scalable_svg():
    root = _svg(charts.trend_chart([rf.passing_summary(), rf.summary()]))
    assert root.get("id") == "chart-trend" and root.get("role") == "img" and root.get("aria-label")
    assert root[0].tag == NS + "title" and root[0].text
    w, h = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {w:.0f} {h:.0f}" and w == charts.WIDE and h > 100


@pytest.mark.parametrize("runs", [[], [rf.summary()], [rf.summary(rates={"verdict": RateRow(rate=None, passes=0, trials=0)})]],
                         ids=["no runs", "one run", "no rate"])
def test_degenerate_histories_draw_without_crashing(runs):
    assert _svg(charts.trend_chart(runs))


def test_the_chart_is_self_contained_deterministic_and_its_ids_unique():
    runs = [rf.passing_summary(), rf.summary()]
    markup = charts.trend_chart(runs)
    assert markup == charts.trend_chart(runs)
    root = _svg(markup)
    assert not _all(root, "style") and not _all(root, "metadata") and not _all(root, "script")
    assert not _all(root, "image") and "<text" in markup  # text stays text: no glyph outlines
    refs = re.findall(r'(?:href="|url\()([^")]+)', markup)
    assert all(r.startswith("#") for r in refs)  # only the chart's own markers and clips
    ids = [el.get("id") for el in root.iter() if el.get("id")]
    assert len(ids) == len(set(ids))
