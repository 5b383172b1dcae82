"""Chart geometry for the templates: numbers and labels only, drawn as SVG by chart.html."""

from __future__ import annotations

from dataclasses import dataclass, field

COLORS = {"verdict": "#0969da", "tool_use": "#8250df", "trajectory": "#1a7f37", "flaky": "#cf222e"}
FALLBACK = ("#bf3989", "#9a6700", "#57606a")


@dataclass
class Series:
    name: str
    color: str
    points: list[tuple[float, float]] = field(default_factory=list)
    bars: list[tuple[float, float, float]] = field(default_factory=list)  # x, low y, high y
    dots: list[tuple[float, float, str]] = field(default_factory=list)  # x, y, tooltip


@dataclass
class Mark:
    x: float
    kind: str  # "tested" (reviewer changed) or "drift" (CLI or model changed)
    label: str


@dataclass
class Chart:
    id: str
    title: str
    width: int = 900
    height: int = 260
    left: int = 44
    top: int = 22
    series: list[Series] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)

    @property
    def plot_w(self) -> int:
        return self.width - self.left - 12

    @property
    def plot_h(self) -> int:
        return self.height - self.top - 20

    @property
    def ticks(self) -> list[tuple[float, str]]:
        return [(self.y(v), f"{round(v * 100)}%") for v in (0, 0.25, 0.5, 0.75, 1.0)]

    def x(self, i: int, n: int) -> float:
        return round(self.left + (self.plot_w * (i + 0.5) / max(n, 1)), 1)

    def y(self, value: float) -> float:
        return round(self.top + self.plot_h * (1 - max(0.0, min(1.0, value))), 1)


def trend_chart(points, dims: list[str]) -> Chart:
    """Each dimension's rate (line) and interval (bar) per run, with the change marks."""
    chart, n = Chart("trend-chart", "rates per run with intervals"), len(points)
    for k, dim in enumerate(dims):
        s = Series(dim, COLORS.get(dim, FALLBACK[k % len(FALLBACK)]))
        for i, p in enumerate(points):
            cell = p.head.rates.get(dim)
            if cell is None or cell.rate is None:
                continue
            x = chart.x(i, n)
            s.points.append((x, chart.y(cell.rate)))
            s.dots.append((x, chart.y(cell.rate), f"{p.head.run_id} {dim} {cell.rate:.1%}"))
            if cell.low is not None and cell.high is not None:
                s.bars.append((x, chart.y(cell.low), chart.y(cell.high)))
        chart.series.append(s)
    for i, p in enumerate(points):
        if p.tested_change:
            chart.marks.append(Mark(chart.x(i, n) - 3, "tested", f"{p.head.run_id}: reviewer files changed"))
        if p.drift:
            chart.marks.append(Mark(chart.x(i, n) + 3, "drift", f"{p.head.run_id}: " + "; ".join(p.drift)))
    return chart


def flaky_chart(history) -> Chart:
    """A case's share of flaky runs over a sliding window, and its passing share per run."""
    chart, n = Chart("flaky-chart", "flakiness over time", height=200), len(history.rows)
    flaky, passing = Series("flaky share", COLORS["flaky"]), Series("passing trials", COLORS["verdict"])
    for i, ((run_id, share), row) in enumerate(zip(history.flaky_line, history.rows)):
        x = chart.x(i, n)
        flaky.points.append((x, chart.y(share)))
        flaky.dots.append((x, chart.y(share), f"{run_id}: flaky in {share:.0%} of the window"))
        if row.pass_share is not None:
            passing.points.append((x, chart.y(row.pass_share)))
            passing.dots.append((x, chart.y(row.pass_share), f"{run_id}: {row.pass_share:.0%} of trials passed"))
    chart.series = [flaky, passing]
    return chart
