"""bench/gate_targets.py judges issue 39's targets: a target whose rows are missing is listed as
NO DATA (never left out, never met), one judged on part of its rows says so, and a figure over
its limit is NOT met."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gate_targets import targets  # noqa: E402


def _row(exit0: int = 0, exit1: int = 0, runs: int = 400) -> dict:
    return {"exit0": exit0, "exit1": exit1, "exit2": runs - exit0 - exit1, "runs": runs, "trials": 90.0,
            "trials_se": 0.0, "continued": 0.0}


def test_every_target_without_rows_is_no_data():
    lines = targets({})
    assert len(lines) >= 11
    assert all("NO DATA" in line for line in lines)
    assert not any(": met" in line for line in lines)
    for what in ("within-run dependence", "under independence", "margin + 5", "continuations", "30 cases",
                 "300 cases", "1000 cases", "60% of the trials", "1.05x", "exact"):
        assert any(what in line for line in lines), what


def test_a_partial_part_says_how_many_rows_it_had():
    results = {("unchanged, within-run dependence 0.3", "stable", 100, "fixed 3"): _row(exit1=10)}
    line = next(x for x in targets(results) if "within-run dependence" in x)
    assert ": met" in line and "only 1 of its 24 rows" in line


def test_a_figure_over_the_limit_is_not_met():
    results = {("unchanged, within-run dependence 0.3", "stable", 100, "adaptive"): _row(exit1=38),
               ("one stable case collapses", "near-stable", 300, "adaptive"): _row(exit0=1, exit1=399)}
    lines = targets(results, {("perfect", 2): 0.0461, ("perfect", 3): 0.0567})
    assert "NOT met (worst 9.5% ± 1.5%" in next(x for x in lines if "within-run dependence" in x)
    assert "NOT met" in next(x for x in lines if "on 300 cases" in x)
    assert "NOT met (worst 5.67%: perfect, fixed 3" in next(x for x in lines if "(exact" in x)
    assert "NO DATA" in next(x for x in lines if "on 1000 cases" in x)


def test_independence_rows_are_not_judged_with_the_dependence_rows():
    results = {("unchanged", "mixed", 30, "adaptive"): _row(exit1=4),
               ("unchanged, within-run dependence 0.3", "stable", 100, "adaptive"): _row(exit1=38)}
    line = next(x for x in targets(results) if "under independence" in x)
    assert ": met (worst 1.0%" in line
