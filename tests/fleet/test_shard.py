"""run --shard K/N: a deterministic, balanced slice of the cases, all trials of a case together."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.errors import GateInputError
from rubricgate.fleet.shard import assign, parse_shard, spec_from_flags, trial_costs
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric
from tests.conftest import make_repo

RUBRIC = Rubric.model_validate({"tool_use": {"allowed": ["read"]}, "trajectory": {"max_steps": 5}})


def _case(case_id: str, trials: int = 1) -> CaseSpec:
    return CaseSpec(id=case_id, source="task", origin=f"evals/tasks/{case_id}.yaml", review=["a/SKILL.md"],
                    expect=Expect(tier="PASS"), rubric=RUBRIC, trials=trials)


@pytest.mark.parametrize("text", ["0/3", "4/3", "a/b", "3", "1/0", "-1/2", ""])
def test_bad_shard_text_is_a_one_line_error(text):
    with pytest.raises(GateInputError) as err:
        parse_shard(text)
    assert "K/N" in err.value.one_line()


def test_costs_without_a_shard_is_an_error(tmp_path):
    with pytest.raises(GateInputError, match="without --shard"):
        spec_from_flags(None, tmp_path)


def test_shard_with_no_case_exits_2_in_one_line(tmp_path):
    repo = make_repo(tmp_path / "r")  # two cases
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", "3/3"])
    assert result.exit_code == 2
    assert "error: --shard: shard 3/3 has no case: only 2 case(s) are selected (fix: use at most 2 shards)" in result.output


def test_every_case_lands_in_exactly_one_shard_and_counts_balance():
    cases = [_case(f"c{i:02}", trials=1 + i % 3) for i in range(20)]
    out = assign(cases, lambda c: c.trials, 3, {})
    assert sorted(out) == sorted(c.id for c in cases) and set(out.values()) == {1, 2, 3}
    loads = [sum(c.trials for c in cases if out[c.id] == k) for k in (1, 2, 3)]
    assert max(loads) - min(loads) <= 1, loads  # 40 trials over 3 shards


def test_assignment_is_deterministic_and_ignores_input_identity():
    cases = [_case(f"c{i}") for i in range(9)]
    first = assign(cases, lambda c: 1, 4, {"c1": 3.0, "c5": 0.5})
    again = assign([c.model_copy() for c in cases], lambda c: 1, 4, {"c5": 0.5, "c1": 3.0})
    assert first == again


def test_measured_costs_balance_time_not_case_counts():
    cases = [_case("slow"), *[_case(f"fast{i}") for i in range(4)]]
    out = assign(cases, lambda c: 1, 2, {"slow": 40.0, **{f"fast{i}": 10.0 for i in range(4)}})
    assert [c.id for c in cases if out[c.id] == out["slow"]] == ["slow"]  # 40 s vs 4 x 10 s


def test_an_unmeasured_case_costs_the_median_trial():
    cases = [_case("a"), _case("b"), _case("new")]
    out = assign(cases, lambda c: 1, 2, {"a": 10.0, "b": 1.0})
    assert out["a"] == 1 and out["b"] == 2 and out["new"] == 2  # median 5.5: onto the lighter shard


def test_shard_runs_its_slice_and_records_it(tmp_path):
    repo = make_repo(tmp_path / "r", fixtures=["pass/weekly-revenue-summary", "block/data-loader",
                                                "pass/ab-test-readout"])
    runs = []
    for k in (1, 2):
        result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", f"{k}/2", "--trials", "2"])
        assert result.exit_code == 0, result.output
        runs.append(max((repo / "reports").iterdir(), key=lambda p: p.stat().st_mtime_ns))
    records = [json.loads((r / "shard.json").read_text()) for r in runs]
    assert records[0]["assignment"] == records[1]["assignment"] and len(records[0]["assignment"]) == 3
    ran = [{j[0] for j in rec["jobs"]} for rec in records]
    assert ran[0].isdisjoint(ran[1]) and len(ran[0] | ran[1]) == 3
    assert all(sum(1 for j in rec["jobs"] if j[0] == cid) == 2 for rec in records for cid in {j[0] for j in rec["jobs"]})
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert {c["id"] for c in summary["cases"]} == ran[0]


def test_trial_costs_are_mean_seconds_per_trial_that_ran(tmp_path):
    from rubricgate.models.results import CaseSummary, Decision, Grade, Summary, TrialResult
    grades = {d: Grade(passed=True) for d in DIMENSIONS}
    skipped = {d: Grade(passed=False, category="not_run") for d in grades}
    trials = [TrialResult(case_id="a", trial=1, outcome="PASS", grades=grades, duration_s=2.0),
              TrialResult(case_id="a", trial=2, outcome="PASS", grades=grades, duration_s=4.0),
              TrialResult(case_id="a", trial=3, outcome="ERROR", grades=skipped, duration_s=0.0)]
    summary = Summary(run_id="r", started_at="t", agent="builtin", decision=Decision(status="pass", exit_code=0),
                      rates={}, cases=[CaseSummary(id="a", source="task", trials=trials),
                                       CaseSummary(id="b", source="task")])
    assert trial_costs(summary) == {"a": 3.0}


def _summary_deciding(status: str, exit_code: int):
    from rubricgate.models.results import Decision, Summary
    return Summary(run_id="r", started_at="t", agent="builtin", rates={}, cases=[],
                   decision=Decision(status=status, exit_code=exit_code))  # type: ignore[arg-type]


@pytest.mark.parametrize(("status", "code", "expected"), [
    ("error", 2, 2),  # interrupted, budget spent, errored trials over gate.max_errored: the slice did not run
    ("inconclusive", 2, 0),  # the slice too small to decide alone: the merge decides on every shard
    ("regression", 1, 0),
    ("pass", 0, 0),
])
def test_a_shard_exits_2_only_when_its_slice_could_not_run(status, code, expected):
    from rubricgate.fleet.shard import shard_exit_code
    assert shard_exit_code(_summary_deciding(status, code)) == expected


def test_a_healthy_shard_under_the_statistical_gate_exits_0(tmp_path):
    repo = make_repo(tmp_path / "r", fixtures=["pass/weekly-revenue-summary", "block/data-loader",
                                                "pass/ab-test-readout"])
    cfg = repo / "rubricgate.yaml"
    cfg.write_text(cfg.read_text().replace("method: strict", "method: statistical"))
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", "1/2", "--trials", "2"])
    assert "INCONCLUSIVE" in result.output  # its slice alone cannot show the drop is within the margin
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("text", ["1/99999999999999999999", "1/100001"])
def test_a_shard_count_past_its_bound_is_a_one_line_error(text):
    with pytest.raises(GateInputError) as err:
        parse_shard(text)
    assert "at most" in err.value.one_line()


def test_a_shard_that_found_a_regression_says_so_without_an_exit_it_does_not_take(tmp_path):
    """It printed 'decision: REGRESSION (exit 1)' and exited 0 (a shard does not gate)."""
    from tests.conftest import set_severity

    repo = make_repo(tmp_path / "repo")
    set_severity(repo, "fm-description-required", "warning")  # the BLOCK fixture fails now
    got = CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", "1/1"])
    assert got.exit_code == 0, got.output
    line = next(ln for ln in got.output.splitlines() if ln.startswith("decision: "))
    assert line.startswith("decision: REGRESSION in shard 1/1's slice (a shard does not gate: exit 0; "), line
    assert "(exit 1)" not in got.output


def test_continuing_with_a_shard_names_the_shard_not_the_gate_method(tmp_path):
    """'set gate.method: statistical' was the fix offered where the gate was statistical already."""
    import yaml

    repo = make_repo(tmp_path / "repo")
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    got = CliRunner().invoke(main, ["run", "--repo", str(repo), "--shard", "1/2", "--continue", str(tmp_path / "r")])
    assert got.exit_code == 2 and "a shard runs no adaptive rounds to continue" in got.output, got.output
    assert "set gate.method" not in got.output
