"""matplotlib charts for the HTML report, returned as PNG data URIs (the report works offline).

Agg backend: no display is needed on CI. Labels pass through `_plain` because matplotlib
treats `$...$` as mathtext and would choke on (or reinterpret) such text.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from rubricgate.models.results import Summary, TrialResult

# Grid cell values: 0 passed every dimension, 1 failed a dimension, 2 no verdict, 3 no such trial.
_GRID_COLOURS = ["#2e7d32", "#c62828", "#6d6d6d", "#ffffff"]
GRID_LEGEND = {"passed": _GRID_COLOURS[0], "failed a dimension": _GRID_COLOURS[1], "ERROR": _GRID_COLOURS[2]}


def _plain(text: str) -> str:
    return str(text).replace("$", r"\$")


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, imported on first use: importing it costs ~0.5 s and
    ~50 MB, which every command that draws no chart (`--help`, `validate`, ...) must not pay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _data_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight", metadata={"Software": None})
    _pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def y_range(values: list[float | None], pad: float = 0.05) -> tuple[float, float]:
    """A y-axis that shows the change: from just below the lowest value (in 5-point steps) to 100%.

    A 0-100% axis makes a 5-point drop a few pixels tall; zooming to the data keeps it visible.
    """
    seen = [v for v in values if v is not None]
    low = min(seen, default=0.0)
    bottom = max(0.0, (int((low - pad) * 20 + 1e-9) / 20) if low - pad > 0 else 0.0)
    return min(bottom, 0.9), 1.02


def _percent_axis(ax, values: list[float | None], label: str) -> None:
    bottom, top = y_range(values)
    ax.set_ylim(bottom, top)
    ax.yaxis.set_major_formatter(_percent())
    ax.set_ylabel(label if bottom == 0 else f"{label} (axis from {bottom:.0%})")


def rates_chart(summary: Summary) -> str:
    """Bars: each dimension's rate with its Wilson interval; a black tick: its baseline."""
    dims = list(summary.rates)
    fig, ax = _pyplot().subplots(figsize=(6, 3))
    rates = [summary.rates[d].rate or 0.0 for d in dims]
    colours = ["#c62828" if summary.rates[d].status == "regression" else "#1565c0" for d in dims]
    ax.bar(range(len(dims)), rates, color=colours, width=0.6, label="rate")
    _interval_bars(ax, summary, dims)
    for i, d in enumerate(dims):
        if summary.rates[d].baseline is not None:
            ax.hlines(summary.rates[d].baseline, i - 0.35, i + 0.35, colors="black", linewidth=2.5,
                      label="baseline" if i == 0 else None)
    ax.set_xticks(range(len(dims)), [_plain(d) for d in dims])
    rows = [summary.rates[d] for d in dims]
    _percent_axis(ax, [v for r in rows for v in (r.rate, r.baseline, r.low)], "pass rate")
    ax.set_title("Pass rate per dimension against baseline")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # outside: never hides a bar
    return _data_uri(fig)


def _interval_bars(ax, summary: Summary, dims: list[str]) -> None:
    """Grey error bars from each rate down to its interval's low and up to its high."""
    shown = [i for i, d in enumerate(dims) if summary.rates[d].low is not None and summary.rates[d].rate is not None]
    if not shown:
        return
    rows = [summary.rates[dims[i]] for i in shown]
    # max(0, ...): a bound equal to the rate may differ from it by float dust, and matplotlib
    # refuses a negative error bar ('yerr' must not contain negative values).
    err = [[max(0.0, r.rate - r.low) for r in rows], [max(0.0, r.high - r.rate) for r in rows]]
    ax.errorbar(shown, [r.rate for r in rows], yerr=err, fmt="none", ecolor="#555555", capsize=4,
                label="interval")


def _cell(t: TrialResult | None) -> int:
    if t is None:
        return 3
    if t.outcome == "ERROR":
        return 2
    return 1 if any(not g.passed for g in t.grades.values()) else 0


def _percent() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)


def _colormap() -> Any:
    from matplotlib.colors import ListedColormap

    return ListedColormap(_GRID_COLOURS)


GRID_MAX_CASES = 50  # past this a picture stops being readable and costs seconds and hundreds of MB


def grid_chart(summary: Summary) -> str:
    """A case-by-trial grid of outcomes, failing cases on top; at most GRID_MAX_CASES rows (the
    case table below it lists every case)."""
    ranked = sorted(summary.cases or [], key=lambda c: not any(_cell(t) in (1, 2) for t in c.trials))
    cases = ranked[:GRID_MAX_CASES]
    width = max([max((t.trial for t in c.trials), default=0) for c in cases] + [1])
    grid = [[_cell(next((t for t in c.trials if t.trial == n), None)) for n in range(1, width + 1)] for c in cases]
    fig, ax = _pyplot().subplots(figsize=(2 + 0.5 * width, 1 + 0.3 * max(len(cases), 1)))
    ax.pcolormesh(grid or [[3]], cmap=_colormap(), vmin=0, vmax=3,
                  edgecolors="white", linewidth=2)
    ax.invert_yaxis()  # first case on top, as in the case table
    ax.set_yticks([i + 0.5 for i in range(len(cases))], [_plain(c.id) for c in cases], fontsize=8)
    ax.set_xticks([n + 0.5 for n in range(width)], [str(n) for n in range(1, width + 1)])
    ax.set_xlabel("trial")
    shown = "" if len(ranked) <= GRID_MAX_CASES else f", first {GRID_MAX_CASES} of {len(ranked)} cases"
    ax.set_title(f"Outcome per case and trial (failing cases first{shown})")
    return _data_uri(fig)


def trend_chart(summaries: list[Summary]) -> str:
    """One line per dimension across runs, oldest first; dashed lines for the baselines."""
    fig, ax = _pyplot().subplots(figsize=(7, 3))
    dims = sorted({d for s in summaries for d in s.rates})
    xs = range(len(summaries))
    # Dimensions often share a rate (all 100%): distinct markers and sizes keep each one visible.
    styles = [("o", "-", 9), ("s", "--", 7), ("^", ":", 5), ("D", "-.", 4)]
    for i, d in enumerate(dims):
        marker, line, size = styles[i % len(styles)]
        ax.plot(xs, [s.rates[d].rate if d in s.rates else None for s in summaries], marker=marker,
                linestyle=line, markersize=size, label=_plain(d))
    ax.set_xticks(list(xs), [_plain(s.started_at[:16].replace('T', ' ') or s.run_id) for s in summaries], rotation=45, fontsize=7)
    _percent_axis(ax, [s.rates[d].rate for s in summaries for d in dims if d in s.rates], "pass rate")
    ax.set_title("Pass rate per dimension over runs")
    ax.legend(loc="lower left", fontsize=8)
    return _data_uri(fig)
