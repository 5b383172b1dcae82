"""Every interval, and the trend chart drawn from them, for all-pass, all-fail and mixed suites at
every size from 1 to 2,000 trials: no error, bounds in order, exact 0 and 1 at the ends.

The crash this guards against: Wilson's upper bound at x = n came out as 0.9999999999999999 for
about a quarter of all n, below the rate (a chart's error bar would be negative).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET


from rubricgate.gating.stats import cluster_interval, wilson
from rubricgate.models.results import Decision, RateRow, Summary
from rubricgate.reports.charts import trend_chart
from tests.conftest import FULL

N_MAX = 2000
SVG = "{http://www.w3.org/2000/svg}"


def _suites(n: int) -> dict[str, list[tuple[int, int]]]:
    """Per-case (passes, trials) of three suites of n trials in all: all-pass and all-fail at one
    trial per case, and mixed at 3 trials per case with cases passing 0-3 (design effect > 1)."""
    mixed = [(min(i % 4, min(3, n - 3 * i)), min(3, n - 3 * i)) for i in range((n + 2) // 3)]
    return {"all-pass": [(1, 1)] * n, "all-fail": [(0, 1)] * n, "mixed": mixed}


def _rows(n: int) -> dict[str, RateRow]:
    rows = {}
    for kind, counts in _suites(n).items():
        passes, trials = sum(x for x, _ in counts), sum(t for _, t in counts)
        low, high, _ = cluster_interval(counts)
        rows[f"{kind}-{n}"] = RateRow(rate=passes / trials, passes=passes, trials=trials, low=low, high=high)
    return rows


def _check(row: RateRow) -> None:
    assert 0.0 <= row.low <= row.rate <= row.high <= 1.0, row
    if row.passes == row.trials:
        assert row.high == 1.0
    if row.passes == 0:
        assert row.low == 0.0


def test_every_interval_is_ordered_with_exact_ends() -> None:
    # Wilson's bounds at every size; the suites' cluster intervals (each over all n trials) at every
    # size under .ci/run, and in the README's command at every size to 300 and every 7th above.
    for n in range(1, N_MAX + 1):
        for x in {0, 1, n // 2, n - 1, n} & set(range(n + 1)):
            low, high = wilson(x, n)
            assert 0.0 <= low <= x / n <= high <= 1.0, (x, n, low, high)
            assert (low == 0.0) == (x == 0) and (high == 1.0) == (x == n), (x, n, low, high)
        if FULL or n <= 300 or n % 7 == 0:
            for row in _rows(n).values():
                _check(row)


def _summary(rates: dict[str, RateRow], run_id: str = "r") -> Summary:
    return Summary(run_id=run_id, started_at=f"2026-12-01T00:00:{run_id[-2:]}", agent="builtin",
                   decision=Decision(status="pass", exit_code=0), rates=rates, cases=[])


def test_trend_chart_renders_all_pass_all_fail_and_mixed_runs() -> None:
    summaries = [_summary({"verdict": row}, f"r{i:02d}") for i, row in enumerate(_rows(1).values())]
    summaries += [_summary({"verdict": row}, f"r{i + 10:02d}") for i, row in enumerate(_rows(N_MAX).values())]
    root = ET.fromstring(trend_chart(summaries))
    assert [g.get("data-dimension") for g in root.iter(SVG + "g") if g.get("class") == "series"] == ["verdict"]
