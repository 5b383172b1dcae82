"""rubricgate.gating.stats: exact values, edge cases and bad input first."""

from __future__ import annotations

import pytest

from rubricgate.gating import stats
from rubricgate.models.dimensions import DIMENSIONS

# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("passes,trials", [(-1, 3), (4, 3), (0, -1)])
def test_wilson_rejects_impossible_counts(passes: int, trials: int) -> None:
    with pytest.raises(ValueError, match="passes"):
        stats.wilson(passes, trials)


@pytest.mark.parametrize("n,c,k", [(3, 1, 0), (3, 1, 4), (3, 4, 1)])
def test_pass_k_rejects_bad_k_or_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        stats.pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        stats.pass_hat_k(n, c, k)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError):
        stats.mcnemar_exact(-1, 2)


# -- Wilson -----------------------------------------------------------------------------------

def test_wilson_no_trials_is_uninformative() -> None:
    assert stats.wilson(0, 0) == (0.0, 1.0)


def test_wilson_known_value() -> None:
    # 8/10 at 95%: the textbook Wilson interval is (0.4902, 0.9433).
    low, high = stats.wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


def test_wilson_all_pass_reaches_one_and_all_fail_reaches_zero() -> None:
    assert stats.wilson(30, 30)[1] == 1.0
    assert stats.wilson(30, 30)[0] < 1.0
    assert stats.wilson(0, 30)[0] == 0.0
    assert stats.wilson(0, 30)[1] > 0.0


def test_wilson_narrows_with_more_trials_and_widens_with_confidence() -> None:
    width = lambda lo_hi: lo_hi[1] - lo_hi[0]  # noqa: E731
    assert width(stats.wilson(80, 100)) < width(stats.wilson(8, 10))
    assert width(stats.wilson(8, 10, 0.99)) > width(stats.wilson(8, 10, 0.95))


# -- pass@k / pass^k --------------------------------------------------------------------------

def test_pass_k_single_trial_equals_rate() -> None:
    assert stats.pass_at_k(5, 3, 1) == pytest.approx(0.6)
    assert stats.pass_hat_k(5, 3, 1) == pytest.approx(0.6)


def test_pass_k_known_values() -> None:
    # n=5, c=3, k=2: pass^2 = C(3,2)/C(5,2) = 3/10; pass@2 = 1 - C(2,2)/C(5,2) = 9/10.
    assert stats.pass_hat_k(5, 3, 2) == pytest.approx(0.3)
    assert stats.pass_at_k(5, 3, 2) == pytest.approx(0.9)


def test_pass_k_at_all_trials_is_all_or_any() -> None:
    assert stats.pass_hat_k(3, 2, 3) == 0.0
    assert stats.pass_hat_k(3, 3, 3) == 1.0
    assert stats.pass_at_k(3, 1, 3) == 1.0
    assert stats.pass_at_k(3, 0, 3) == 0.0


def test_suite_pass_k_is_the_mean_over_cases() -> None:
    counts = [(3, 3), (3, 0), (3, 2)]
    assert stats.suite_pass_hat_k(counts, 2) == pytest.approx((1 + 0 + 1 / 3) / 3)
    assert stats.suite_pass_at_k(counts, 2) == pytest.approx((1 + 0 + 1) / 3)
    assert stats.suite_pass_at_k([], 1) is None


def test_flaky_means_mixed_outcomes() -> None:
    assert stats.is_flaky([True, False, True])
    assert not stats.is_flaky([True, True])
    assert not stats.is_flaky([False])
    assert not stats.is_flaky([])


# -- exact tests ------------------------------------------------------------------------------

def test_binom_cdf_known_values_and_edges() -> None:
    assert stats.binom_cdf(0, 3, 0.5) == pytest.approx(0.125)
    assert stats.binom_cdf(-1, 3, 0.5) == 0.0
    assert stats.binom_cdf(3, 3, 0.5) == 1.0
    assert stats.binom_cdf(0, 4, 0.0) == 1.0
    assert stats.binom_sf(4, 4, 1.0) == 1.0


def test_binom_cdf_large_n_does_not_overflow() -> None:
    assert stats.binom_cdf(1000, 2000, 0.5) == pytest.approx(0.5 + stats._binom_pmf(1000, 2000, 0.5) / 2)


def test_mcnemar_exact_values() -> None:
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(2, 0) == pytest.approx(0.25)
    assert stats.mcnemar_exact(5, 0) == pytest.approx(1 / 32)
    # 6 regressions vs 1 fix: P(X >= 6 | n=7) = 8/128.
    assert stats.mcnemar_exact(6, 1) == pytest.approx(8 / 128)
    assert stats.mcnemar_exact(0, 5) == 1.0


def test_fisher_less_known_value() -> None:
    # Tea-tasting table [[1,3],[3,1]]: one-sided p = 17/70.
    assert stats.fisher_less(1, 4, 3, 4) == pytest.approx(17 / 70)
    assert stats.fisher_less(4, 4, 0, 4) == pytest.approx(1.0)


def test_exact_tests_agree_with_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for x1, n1, x0, n0 in [(20, 30, 27, 30), (120, 150, 133, 150), (0, 5, 5, 5)]:
        table = [[x1, n1 - x1], [x0, n0 - x0]]
        expected = scipy_stats.fisher_exact(table, alternative="less").pvalue
        assert stats.fisher_less(x1, n1, x0, n0) == pytest.approx(expected, rel=1e-9)
    assert stats.binom_cdf(7, 40, 0.3) == pytest.approx(scipy_stats.binom.cdf(7, 40, 0.3), rel=1e-9)
    low, high = stats.wilson(13, 17)
    ci = scipy_stats.binomtest(13, 17).proportion_ci(method="wilson")
    assert (low, high) == pytest.approx((ci.low, ci.high), rel=1e-9)


# -- model helpers: intervals, consistency, the statistical method over rates ----------------

from rubricgate.models.results import Grade, RateRow, TrialResult  # noqa: E402


def _t(passed: bool, dim_fail: str = "verdict") -> TrialResult:
    grades = {d: Grade(passed=passed or d != dim_fail) for d in DIMENSIONS}
    return TrialResult(case_id="c", trial=1, outcome="PASS", grades=grades)


def test_add_intervals_fills_rows_with_trials_only() -> None:
    rates = {"verdict": RateRow(rate=0.8, passes=8, trials=10), "tool_use": RateRow(rate=None, passes=0, trials=0)}
    stats.add_intervals(rates, {f"c{i}": {"verdict": (x, 1)} for i, x in enumerate([1] * 8 + [0] * 2)})
    # One trial per case: Wilson at n (C-1)/C = 9, a little wider than plain Wilson's 0.4902.
    assert rates["verdict"].low == pytest.approx(stats.wilson_bounds(0.8, 9, 1.959964)[0], abs=1e-6)
    assert rates["verdict"].low < 0.4902
    assert rates["tool_use"].low is None and rates["tool_use"].high is None


def test_trial_passes_only_when_every_dimension_passes() -> None:
    assert stats.trial_passed(_t(True))
    assert not stats.trial_passed(_t(False, "trajectory"))
    assert not stats.trial_passed(TrialResult(case_id="c", trial=1, outcome="ERROR", grades={}))


def test_case_consistency() -> None:
    assert stats.case_consistency([]) == (None, None, False)
    assert stats.case_consistency([_t(True), _t(False), _t(True)]) == (1.0, 0.0, True)
    assert stats.case_consistency([_t(True)] * 3) == (1.0, 1.0, False)
    assert stats.case_consistency([_t(False, "tool_use")] * 2) == (0.0, 0.0, False)


def test_suite_consistency_averages_each_k_over_its_own_cases() -> None:
    per_case = [[_t(True), _t(False), _t(True)], [_t(True), _t(True)], [_t(False), _t(True)]]
    out = stats.suite_consistency(per_case)
    by_k = {g["k"]: g for g in out["by_k"]}
    # k=3: one case, 2 of 3 passed -> pass^3 = 0, pass@3 = 1 (its own trials, not k = the fewest).
    assert (by_k[3]["cases"], by_k[3]["pass_hat_k"], by_k[3]["pass_at_k"]) == (1, 0.0, 1.0)
    # k=2: two cases, 2/2 and 1/2 -> pass^2 = (1 + 0) / 2, pass@2 = 1.
    assert (by_k[2]["cases"], by_k[2]["pass_hat_k"], by_k[2]["pass_at_k"]) == (2, 0.5, 1.0)
    assert out["k"] == 2 and out["cases"] == 2  # the headline group is the k most cases ran
    assert out["all_pass"] == {"passes": 5, "trials": 7, "rate": 5 / 7}
    assert stats.suite_consistency([])["k"] is None


# -- the statistical method through `rubricgate run` (builtin reviewer, real repo) ------------

def _gate_repo(tmp_path, method: str, trials_in_baseline: int = 1):
    import json as _json

    import yaml

    from tests.conftest import make_repo, set_severity

    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary", "block/data-loader"])
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"] = {"method": method, "confidence": 0.95}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    base = _json.loads((repo / "baseline.json").read_text())
    base["trials"] = trials_in_baseline
    for dims in base["cases"].values():
        for d in dims:
            dims[d] = {"passes": trials_in_baseline, "trials": trials_in_baseline}
    (repo / "baseline.json").write_text(_json.dumps(base))
    set_severity(repo, "fm-description-required", "warning")  # the block fixture now fails
    return repo


def test_statistical_gate_warns_where_strict_fails_on_one_trial(tmp_path) -> None:
    from rubricgate.pipeline import RunOptions, run_suite

    strict = run_suite(RunOptions(repo=_gate_repo(tmp_path / "s", "strict")))
    assert strict.exit_code == 1
    outcome = run_suite(RunOptions(repo=_gate_repo(tmp_path / "t", "statistical")))
    assert outcome.exit_code == 2  # 1/2 vs 2/2 is no evidence (p = 0.5), and no pass either ...
    assert outcome.summary.rates["verdict"].status == "inconclusive"
    assert "the drop could be up to" in outcome.summary.rates["verdict"].label  # ... and it says so
    assert any("could not judge at this size" in r for r in outcome.summary.decision.reasons)
    assert outcome.summary.decision.method == "statistical"


def test_statistical_gate_fails_a_consistent_break_with_enough_trials(tmp_path) -> None:
    from rubricgate.pipeline import RunOptions, run_suite

    outcome = run_suite(RunOptions(repo=_gate_repo(tmp_path, "statistical", trials_in_baseline=5), trials=5))
    # 0/5 vs 5/5 on the block case: exact p = 1/252, Holm x3 = 0.012 < 0.04 (the dimensions' share).
    assert outcome.exit_code == 1
    assert outcome.summary.rates["verdict"].status == "regression"
    row = outcome.summary.rates["verdict"]
    assert row.low is not None and row.low < 0.5 < row.high
    block = next(c for c in outcome.summary.cases if c.id == "fixture-data-loader")
    assert (block.pass_at_k, block.pass_hat_k, block.flaky) == (0.0, 0.0, False)
    # Adaptive rounds from 5 trials a case: the first look already spends enough of alpha to establish it.
    assert outcome.summary.gate.looks[0]["status"] == "regression" and len(block.trials) == 5


def test_flaky_cases_are_listed_in_the_summary(tmp_path, monkeypatch) -> None:
    from rubricgate.agents.builtin import BuiltinAgent
    from rubricgate.pipeline import RunOptions, run_suite
    from tests.conftest import make_repo

    class EvenTrialsLoseTheVerdict(BuiltinAgent):
        def run(self, request):  # type: ignore[no-untyped-def]
            result = super().run(request)
            flaky = request.case_id == "fixture-data-loader" and request.trial % 2 == 0
            return result.model_copy(update={"final_text": "no verdict"}) if flaky else result

    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: EvenTrialsLoseTheVerdict(cfg))
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary", "block/data-loader"])
    summary = run_suite(RunOptions(repo=repo, trials=3)).summary
    assert summary.flaky_cases == ["fixture-data-loader"]
    block = next(c for c in summary.cases if c.id == "fixture-data-loader")
    assert (block.pass_at_k, block.pass_hat_k, block.flaky) == (1.0, 0.0, True)


@pytest.mark.parametrize("n", [300, 1000, 2000, 4000])
def test_wilson_all_pass_and_all_fail_reach_the_bounds_exactly_at_any_size(n: int) -> None:
    """300/300 used to give high 0.9999999999999998 (below the rate): the report chart then raised."""
    assert stats.wilson(n, n)[1] == 1.0 and stats.wilson(0, n)[0] == 0.0
    low, high = stats.wilson(n, n)
    assert low <= 1.0 <= high
