"""Charts stay readable and bounded on big suites."""

from __future__ import annotations

from rubricgate.models.results import CaseSummary
from rubricgate.reports import charts
from tests import reports_fixtures as rf


def _drawn(monkeypatch, summary):
    figures = []
    monkeypatch.setattr(charts, "_data_uri", lambda fig: figures.append(fig) or "data:")
    charts.grid_chart(summary)
    ax = figures[0].axes[0]
    return ax.get_title(), [t.get_text() for t in ax.get_yticklabels()]


def test_the_grid_shows_at_most_50_cases_failing_first(monkeypatch) -> None:
    failing = rf.cases()[1]
    passing = [CaseSummary(id=f"ok-{i:03d}", source="fixture", trials=[rf.trial(f"ok-{i:03d}", 1)]) for i in range(120)]
    title, rows = _drawn(monkeypatch, rf.summary(cases=[*passing, failing]))
    assert len(rows) == charts.GRID_MAX_CASES and rows[0] == failing.id
    assert f"first {charts.GRID_MAX_CASES} of 121 cases" in title


def test_a_small_suite_shows_every_case(monkeypatch) -> None:
    title, rows = _drawn(monkeypatch, rf.summary())
    assert len(rows) == len(rf.summary().cases) and "first" not in title.split("(")[1].replace("failing cases first", "")
