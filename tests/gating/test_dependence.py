"""rubricgate.gating.dependence: a baseline whose sessions vary more than chance is "found", the
statistic's unit changes, and the user is told why (summary.json and the console)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.gating import dependence
from rubricgate.gating.dependence import LEVEL, RHO_FLOOR, RHO_STEP, check
from rubricgate.gating.evidence import TRIAL
from rubricgate.models.dimensions import DIMENSIONS

# Each case passes its whole first session and fails most of its second: independent trials
# would spread the passes over both sessions.
CLUSTERED = {f"c{i}": {"verdict": [(5, 5), (1, 5)]} for i in range(6)}
# The same totals spread over the sessions as independent trials would.
SPREAD = {f"c{i}": {"verdict": [(3, 5), (3, 5)]} for i in range(6)}


def test_sessions_that_vary_more_than_chance_are_found_and_change_the_unit() -> None:
    dep = check(CLUSTERED)
    assert dep.status == "found", dep
    assert dep.p_value is not None and dep.p_value <= LEVEL
    assert dep.sessions == 2 and dep.cases == 6
    assert dep.estimate is not None and 0 < dep.estimate <= dep.rho  # the estimate, rounded up
    assert dep.rho >= RHO_FLOOR and dep.rho == pytest.approx(round(dep.rho / RHO_STEP) * RHO_STEP)
    unit = dep.unit()
    assert unit != TRIAL and unit.rho == dep.rho
    assert unit.effective(5) == pytest.approx(5 / (1 + 4 * dep.rho)) and unit.effective(5) < 5
    line = dep.line()
    assert line.startswith("within-run dependence found: the baseline's sessions vary more than independent "
                           "trials do (dispersion p ")
    assert f"over 6 case(s); intra-run correlation about {dep.estimate:.2f})" in line
    assert f"counts as k / (1 + (k - 1) x {dep.rho:.2f}) trials" in line
    assert dep.as_json()["status"] == "found" and dep.as_json()["rho"] == dep.rho


def test_the_same_totals_spread_as_independent_trials_are_not_found() -> None:
    """The contrast that makes the test above mean something: same cases, same totals."""
    dep = check(SPREAD)
    assert dep.status == "independent" and dep.rho == 0.0 and dep.unit() == TRIAL and dep.line() == ""
    assert dep.p_value is not None and dep.p_value > LEVEL


def test_one_or_two_varied_cases_find_dependence_but_do_not_set_its_size() -> None:
    """One flaky case whose two sessions split 5/0 (a 6% event under independence) estimates a
    correlation of 1.0 from one degree of freedom: used, it made every later run count each case's
    trials as one. Below MIN_CASES varied cases the least correlation is assumed, and the line says so."""
    stable = {f"s{i}": {"verdict": [(5, 5), (5, 5)]} for i in range(30)}
    for varied in range(1, dependence.MIN_CASES):
        dep = check({**stable, **{f"f{i}": {"verdict": [(5, 5), (0, 5)]} for i in range(varied)}})
        assert dep.status == "found" and dep.cases == varied, dep
        assert dep.estimate is not None and dep.estimate > 0.8  # what the sessions show, kept in summary.json
        assert dep.rho == RHO_FLOOR and dep.unit().rho == RHO_FLOOR
        assert f"over {varied} case(s); too few cases varied to estimate the intra-run correlation, 0.10 assumed" \
            in dep.line()
    many = check({**stable, **{f"f{i}": {"verdict": [(5, 5), (0, 5)]} for i in range(dependence.MIN_CASES)}})
    assert many.status == "found" and many.rho == 1.0  # enough cases: the estimate, rounded up


def _clustered_baseline(repo) -> None:
    """Every case's verdict passed all of one session and none of the other; the rest never varied."""
    stored = json.loads((repo / "baseline.json").read_text())
    for case in stored["cases"]:
        stored["cases"][case] = {d: {"passes": 5, "trials": 10, "sessions": [[5, 5], [0, 5]]} if d == "verdict"
                                 else {"passes": 10, "trials": 10, "sessions": [[5, 5], [5, 5]]} for d in DIMENSIONS}
    stored["rates"] = {d: 0.5 if d == "verdict" else 1.0 for d in DIMENSIONS}
    (repo / "baseline.json").write_text(json.dumps(stored))
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def test_a_run_against_a_clustered_baseline_warns_why_its_trials_count_less(repo) -> None:
    _clustered_baseline(repo)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert "Traceback" not in result.output, result.output
    run = sorted(p for p in (repo / "reports").iterdir() if p.is_dir())[-1]
    summary = json.loads((run / "summary.json").read_text())
    dep = summary["gate"]["dependence"]
    # Two varied cases: found, at the least correlation (too few to estimate it from).
    assert dep["status"] == "found" and dep["rho"] == RHO_FLOOR and dep["cases"] == 2, dep
    warning = next((w for w in summary["decision"]["warnings"] if w.startswith("within-run dependence found")), None)
    assert warning is not None, summary["decision"]["warnings"]
    assert "a run of k trials of a case counts as k / (1 + (k - 1) x 0.10) trials" in warning
    assert "too few cases varied to estimate the intra-run correlation, 0.10 assumed" in warning
    assert f"warning: {warning}" in result.output.splitlines()  # the console shows the same line
