"""rubricgate.gating.compare and `rubricgate compare`: flips, the stratified test, decisions, the paired run."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.gating.compare import case_flips, compare_summaries, unjudged_comparison
from rubricgate.models.config import GateConfig
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import CaseSummary, Decision, Grade, Summary, TrialResult
from rubricgate.runner.cost import not_run_trial
from tests.conftest import git, make_repo

RUBRIC = "reviewer/evaluator/references/rubric.md"
STRICT, STATISTICAL = GateConfig(), GateConfig(method="statistical")


def _trial(case: str, i: int, passed: bool, dim: str = "verdict", reason: str = "expected BLOCK, got WARN") -> TrialResult:
    grades = {d: Grade(passed=True) for d in DIMENSIONS}
    if not passed:
        grades[dim] = Grade(passed=False, category="wrong_tier", reason=reason)
    return TrialResult(case_id=case, trial=i, outcome="PASS", grades=grades)


_RUN_IDS = itertools.count(1)


def _summary(outcomes: dict[str, list[bool]], run_id: str = "", complete: bool = True) -> Summary:
    """A run of `outcomes`, under an id of its own unless given: two summaries of one id are one
    run, whose trials the comparison will not take for two samples."""
    run_id = run_id or f"r{next(_RUN_IDS)}"
    cases = [CaseSummary(id=cid, source="fixture", trials=[_trial(cid, i + 1, ok) for i, ok in enumerate(oks)])
             for cid, oks in outcomes.items()]
    return Summary(run_id=run_id, started_at="t", agent="builtin", decision=Decision(status="pass", exit_code=0),
                   rates={}, cases=cases, complete=complete)


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["compare", *args])
    return result.exit_code, result.stdout, result.stderr


# -- bad input: one line, exit 2 --------------------------------------------------------------

def test_one_run_dir_is_an_input_error(tmp_path: Path) -> None:
    code, _, err = cli(str(tmp_path))
    assert code == 2 and "expected two run dirs, got 1" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_run_dirs_and_base_together_are_an_input_error(tmp_path: Path) -> None:
    code, _, err = cli("a", "b", "--base", "HEAD", "--repo", str(tmp_path))
    assert code == 2 and "not both" in err


def test_run_dir_without_summary_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code, _, err = cli(str(tmp_path / "a"), str(tmp_path / "b"), "--repo", str(tmp_path))
    assert code == 2 and "no summary.json" in err and "Traceback" not in err


def test_unknown_base_ref_exits_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    code, _, err = cli("--base", "no-such-branch", "--repo", str(repo))
    assert code == 2
    assert err.strip() == ("error: --base: unknown git ref 'no-such-branch' "
                           "(fix: use a branch, tag or commit that exists here (git fetch it first))")


def test_base_outside_git_exits_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", commit=False)
    code, _, err = cli("--base", "HEAD", "--repo", str(repo))
    assert code == 2 and "not a git repository" in err


def test_base_ref_without_reviewer_exits_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "rm", "-q", "-r", "reviewer/prompts")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "drop prompt")
    git(repo, "checkout", "-q", "HEAD~1", "--", "reviewer/prompts")
    code, _, err = cli("--base", "HEAD", "--repo", str(repo))
    assert code == 2 and "HEAD has no reviewer/prompts/evaluate.md" in err
    assert git(repo, "worktree", "list").count("\n") == 1  # the throwaway worktree is gone


def test_incomplete_run_cannot_be_judged() -> None:
    head = _summary({"a": [True]}, "r")
    head.cases[0].trials.append(not_run_trial("a", 2, "cost budget spent"))
    comparison = compare_summaries(_summary({"a": [True, True]}), head, STRICT)
    assert comparison.decision.exit_code == 2
    assert "head run r is incomplete (1 trials did not run)" in comparison.decision.reasons[0]


def test_runs_with_nothing_in_common_cannot_be_judged() -> None:
    comparison = compare_summaries(_summary({"a": [True]}), _summary({"b": [True]}), STRICT)
    assert comparison.decision.exit_code == 2
    assert [f.kind for f in comparison.flips] == ["added", "removed"]


def _errored(summary: Summary, case: str) -> Summary:
    """Every trial of `case` errored (an outage): recorded, never judged."""
    found = next(c for c in summary.cases if c.id == case)
    found.trials = [t.model_copy(update={"errored": True}) for t in found.trials]
    summary.errored = [f"{case} #{t.trial}: exit 1" for t in found.trials]
    return summary


def test_an_interrupted_stored_run_says_why_it_is_incomplete() -> None:
    """An interrupted run has no record of the trials it never ran: its own reason is given."""
    base = _summary({"a": [True]}, "r", complete=False)
    base.decision = Decision(status="error", exit_code=2,
                             reasons=["run interrupted after 1 of 3 trials; the report is partial"])
    comparison = compare_summaries(base, _summary({"a": [True]}), STRICT)
    assert comparison.decision.reasons[0] == ("base run r is incomplete "
                                              "(run interrupted after 1 of 3 trials; the report is partial)")


def test_a_side_that_never_ran_leaves_every_case_unjudged() -> None:
    comparison = unjudged_comparison(_summary({"a": [True], "b": [False]}), None, ["interrupted"], STRICT)
    assert [(f.kind, f.base, f.head) for f in comparison.flips] == [("unjudged", "1/1", "-"), ("unjudged", "0/1", "-")]
    assert comparison.decision.exit_code == 2 and comparison.tests == []
    assert comparison.counts()["unchanged"] == 0 and comparison.counts()["unjudged"] == 2


# -- flips ------------------------------------------------------------------------------------

def test_flip_kinds_and_reasons() -> None:
    base = _summary({"reg": [True, True], "fix": [False, False], "same": [True, False], "flaky-same": [False, True]})
    head = _summary({"reg": [True, False], "fix": [True, False], "same": [True, False], "flaky-same": [True, False]})
    flips = {f.case_id: f for f in case_flips(base, head)}
    assert flips["reg"].kind == "regressed" and (flips["reg"].base, flips["reg"].head) == ("2/2", "1/2")
    assert flips["reg"].reasons == ["verdict: wrong_tier: expected BLOCK, got WARN (trial 2)"]
    assert flips["fix"].kind == "fixed" and flips["fix"].reasons[0].startswith("was: verdict: wrong_tier")
    assert flips["same"].kind == "unchanged" and flips["same"].reasons[0].startswith("still failing:")
    assert flips["flaky-same"].kind == "unchanged"


def test_a_case_with_no_judged_trial_on_a_side_is_unjudged_not_unchanged() -> None:
    base = _errored(_summary({"a": [True, True], "b": [True]}), "a")
    flips = {f.case_id: f for f in case_flips(base, _summary({"a": [True, True], "b": [True]}))}
    assert flips["a"].kind == "unjudged" and flips["a"].reasons == ["base: no judged trial (2 errored)"]
    assert (flips["a"].base, flips["a"].head) == ("0/0", "2/2") and flips["b"].kind == "unchanged"


def test_per_case_counts_make_the_test_blind_to_trial_order() -> None:
    # Pairing by trial index would count 2 regressed vs 1 fixed here, and 0 vs 0 after a
    # reshuffle of the same trials; per-case counts give one answer for both.
    base = _summary({"a": [True, True, False], "b": [True, False, True]})
    orders = ({"a": [False, True, True], "b": [False, False, True]}, {"a": [True, True, False], "b": [True, False, False]})
    tests = [compare_summaries(base, _summary(head), STATISTICAL).tests[0] for head in orders]
    assert tests[0].p_value == tests[1].p_value
    verdict = tests[0]
    assert (verdict.cases, verdict.base_passes, verdict.base_trials, verdict.head_passes, verdict.head_trials) == (2, 4, 6, 3, 6)


def test_unchanged_flips_are_not_called_credible() -> None:
    base = _summary({"a": [True, True, False], "b": [True] * 3})
    flips = {f.case_id: f for f in case_flips(base, _summary({"a": [True, False, False], "b": [True] * 3}))}
    assert flips["a"].kind == "regressed" and not flips["a"].credible and flips["a"].p_value is not None
    assert flips["b"].p_value is None



# -- decisions --------------------------------------------------------------------------------

def test_strict_fails_on_any_dip_and_states_its_false_alarm_rate() -> None:
    worse = compare_summaries(_summary({"a": [True], "b": [True]}), _summary({"a": [False], "b": [True]}), STRICT)
    assert worse.decision.exit_code == 1 and worse.decision.reasons[0].startswith("verdict: 2/2 -> 1/2 on 2 shared")
    assert any("strict fails on any dip" in w for w in worse.decision.warnings)
    swap = compare_summaries(_summary({"a": [True], "b": [False]}), _summary({"a": [False], "b": [True]}), STRICT)
    # No dip, but case a passed every base trial and fails every head trial: a certain collapse.
    assert swap.decision.exit_code == 1 and swap.counts()["regressed"] == 1 and swap.counts()["fixed"] == 1
    assert swap.decision.reasons[0].startswith("a: verdict 0/1 vs base 1/1 (collapse: every trial fails now")


def test_strict_false_alarm_rate_is_zero_for_a_deterministic_reviewer() -> None:
    same = compare_summaries(_summary({"a": [True] * 3, "b": [False] * 3}), _summary({"a": [True] * 3, "b": [False] * 3}), STRICT)
    assert same.decision.exit_code == 0
    assert "with probability at most 0.0%" in same.decision.warnings[0]
    noisy = compare_summaries(_summary({"a": [True, False] * 3}), _summary({"a": [False, True] * 3}), STRICT)
    assert "use --method statistical" in noisy.decision.warnings[0]


def test_statistical_fails_only_on_significant_regressions() -> None:
    base = _summary({"a": [True] * 5, "b": [True] * 5})
    head = _summary({"a": [False] * 5, "b": [True] * 5})
    comparison = compare_summaries(base, head, STATISTICAL)
    assert comparison.decision.exit_code == 1
    # 0/5 vs 5/5 given 5 passes in 10: P(X = 0) = 1/252 (one case: Fisher's exact p).
    assert comparison.tests[0].p_value == pytest.approx(1 / 252)
    # Holm across the dimensions with Tarone's count: tool_use and trajectory passed every trial on
    # both sides, so their tests cannot reject and cost the verdict's nothing
    assert [t.dimension for t in comparison.tests] == ["verdict", "tool_use", "trajectory"]
    assert comparison.tests[0].p_holm == pytest.approx(1 / 252)
    flip = next(f for f in comparison.flips if f.case_id == "a")
    assert flip.credible


def test_statistical_says_inconclusive_when_too_few_trials() -> None:
    comparison = compare_summaries(_summary({"a": [True], "b": [True]}), _summary({"a": [False], "b": [True]}), STATISTICAL)
    assert comparison.decision.exit_code == 2 and comparison.decision.status == "inconclusive"
    assert comparison.tests[0].status == "inconclusive"
    assert "could not judge at this size: the drop could be up to" in comparison.decision.reasons[0]
    assert "add cases or raise the budget" in comparison.decision.reasons[0]


def test_statistical_no_change_needs_a_tight_bound() -> None:
    many = {f"c{i}": [True] * 10 for i in range(40)}
    comparison = compare_summaries(_summary(many), _summary(many), STATISTICAL)
    assert comparison.decision.exit_code == 0 and comparison.tests[0].label.startswith("no change")
    assert not comparison.decision.warnings


# -- the paired run with real git and the builtin reviewer -----------------------------------

FIXTURES = ["block/data-loader", "block/forecast-notebook-runner", "pass/weekly-revenue-summary"]


def _lower_description_rule(repo: Path) -> None:
    path = repo / RUBRIC
    text = path.read_text(encoding="utf-8")
    lowered = text.replace("| fm-description-required | critical |", "| fm-description-required | warning |")
    assert lowered != text
    path.write_text(lowered, encoding="utf-8")


def test_lowering_a_critical_rule_regresses_and_exits_1(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _lower_description_rule(repo)
    before = git(repo, "status", "--porcelain")
    out_json = tmp_path / "cmp.json"
    code, out, err = cli("--base", "HEAD", "--repo", str(repo), "--json", str(out_json))
    assert code == 1, out + err
    assert "REGRESSED  fixture-data-loader  1/1 -> 0/1" in out
    assert "verdict: wrong_tier" in out
    data = json.loads(out_json.read_text())
    assert data["counts"]["regressed"] == 1 and data["counts"]["unchanged"] == 2
    assert data["decision"]["exit_code"] == 1
    assert git(repo, "status", "--porcelain") == before  # the working tree was not touched
    assert git(repo, "worktree", "list").count("\n") == 1


def test_unchanged_reviewer_exits_0_with_no_flips(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    code, out, err = cli("--base", "HEAD", "--repo", str(repo))
    assert code == 0, out + err
    assert "0 regressed, 0 fixed, 3 unchanged" in out


def test_restoring_the_rule_is_a_fix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _lower_description_rule(repo)
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "lower rule")
    git(repo, "checkout", "-q", "HEAD~1", "--", RUBRIC)  # working tree: the rule is critical again
    code, out, _ = cli("--base", "HEAD", "--repo", str(repo))
    assert code == 0
    assert "FIXED      fixture-data-loader  0/1 -> 1/1" in out


def test_stored_runs_give_the_same_flips(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _lower_description_rule(repo)
    cli("--base", "HEAD", "--repo", str(repo))
    compare_dir = next((repo / "reports").glob("compare-*"))
    base_run, head_run = next((compare_dir / "base").iterdir()), next((compare_dir / "head").iterdir())
    code, out, _ = cli(str(base_run), str(head_run), "--repo", str(repo))
    assert code == 1
    assert "REGRESSED  fixture-data-loader  1/1 -> 0/1" in out
    code, _, _ = cli(str(head_run), str(base_run), "--repo", str(repo))
    assert code == 0  # the other direction is a fix


def test_working_tree_reviewer_files_only_are_swapped(tmp_path: Path) -> None:
    # A fixture edited (uncommitted) in the working tree is used on both sides: only the reviewer
    # comes from REF, so the case set and its content are the same for both runs.
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    skill = repo / "fixtures/pass/weekly-revenue-summary/SKILL.md"
    skill.write_text(skill.read_text().replace("description:", "descriptionx:", 1))
    code, out, _ = cli("--base", "HEAD", "--repo", str(repo))
    assert "0 regressed, 0 fixed, 3 unchanged" in out
    assert "still failing" in out  # both sides see the edited fixture
    # The edit is a suite change the reviewer then fails every trial of: held until recorded.
    assert code == 2 and "changes what 1 case(s) expect or review (fixture-weekly-revenue-summary)" in out


def test_paired_run_with_cache_never_mixes_the_two_reviewers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rubricgate.agents.builtin import BuiltinAgent

    calls = []

    class Counting(BuiltinAgent):
        def run(self, request):  # type: ignore[no-untyped-def]
            calls.append(request.case_id)
            return super().run(request)

    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: Counting(cfg))
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _lower_description_rule(repo)
    for expected_calls in (6, 6):  # the second compare is served from the cache
        code, out, _ = cli("--base", "HEAD", "--repo", str(repo), "--cache")
        assert code == 1 and "REGRESSED  fixture-data-loader" in out
        assert len(calls) == expected_calls


def test_paired_run_with_cache_interleaves_and_each_round_has_its_own_cached_answer(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from rubricgate.agents.builtin import BuiltinAgent

    calls = []

    class Counting(BuiltinAgent):
        def run(self, request):  # type: ignore[no-untyped-def]
            calls.append(request.case_id)
            return super().run(request)

    monkeypatch.setattr("rubricgate.pipeline.get_agent", lambda name, cfg: Counting(cfg))
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _lower_description_rule(repo)
    for _ in range(2):  # 2 sides x 3 cases x 3 rounds the first time; all cached the second
        code, out, _ = cli("--base", "HEAD", "--repo", str(repo), "--cache", "--trials", "3", "--seed", "5")
        assert code == 1 and "interleaved in 3 rounds" in out
        assert len(calls) == 18


# -- interleaving base and head trials ---------------------------------------------------------

def test_interleaving_is_seeded_and_uses_both_orders() -> None:
    from rubricgate.flows.compare_run import interleaving

    rounds = interleaving(7, 40)
    assert rounds == interleaving(7, 40) and rounds != interleaving(8, 40)
    assert all(sorted(r) == ["base", "head"] for r in rounds)
    assert {tuple(r) for r in rounds} == {("base", "head"), ("head", "base")}
    assert interleaving(7, 1) == [["base", "head"]] and interleaving(7, 5, interleave=False) == [["base", "head"]]


def test_merged_rounds_renumber_trials_per_case() -> None:
    from rubricgate.flows.compare_run import merge_rounds

    merged = merge_rounds([_summary({"a": [True], "b": [False]}, "r1"), _summary({"a": [False], "b": [True]}, "r2")])
    a = next(c for c in merged.cases if c.id == "a")
    assert [t.trial for t in a.trials] == [1, 2] and merged.run_id == "r1+r2"
    assert not merge_rounds([_summary({"a": [True]}), _summary({"a": [True]}, complete=False)]).complete


def test_merged_rounds_keep_every_rounds_errored_trials_and_the_incomplete_rounds_reason() -> None:
    from rubricgate.flows.compare_run import merge_rounds

    rounds = [_errored(_summary({"a": [True]}, f"r{i}"), "a") for i in (1, 2, 3)]
    rounds[2].complete, rounds[2].decision = False, Decision(status="error", exit_code=2, reasons=["interrupted"])
    merged = merge_rounds(rounds)
    assert len(merged.errored) == 3 and merged.decision.reasons == ["interrupted"]


def test_paired_run_interleaves_rounds_and_records_the_seed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _lower_description_rule(repo)
    out_json = tmp_path / "cmp.json"
    code, out, err = cli("--base", "HEAD", "--repo", str(repo), "--trials", "2", "--seed", "7", "--json", str(out_json))
    assert code == 1, out + err
    assert "REGRESSED  fixture-data-loader  2/2 -> 0/2" in out
    assert "order: interleaved in 2 rounds, seed 7" in out
    order = json.loads(out_json.read_text())["order"]
    assert order["seed"] == 7 and order["interleaved"] and len(order["rounds"]) == 2
    compare_dir = next((repo / "reports").glob("compare-*"))
    assert len(list((compare_dir / "base").iterdir())) == 2 and len(list((compare_dir / "head").iterdir())) == 2


# -- compare --base under the statistical gate: the same adaptive rounds as run ---------------

def _statistical(repo: Path, **gate: object) -> None:
    import yaml

    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"].update({"method": "statistical", **gate})
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "statistical gate")


def test_compare_base_looks_after_every_round_and_stops_when_a_regression_is_established(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo)
    _lower_description_rule(repo)
    out_json = tmp_path / "cmp.json"
    code, out, err = cli("--base", "HEAD", "--repo", str(repo), "--json", str(out_json))
    assert code == 1, out + err
    order = json.loads(out_json.read_text())["order"]
    assert order["adaptive"] and order["looks"] == list(range(1, 11))
    assert 1 < len(order["rounds"]) < 10  # stopped at the first round that established it
    assert "REGRESSED  fixture-data-loader" in out
    compare_dir = next((repo / "reports").glob("compare-*"))
    assert len(list((compare_dir / "head").iterdir())) == len(order["rounds"])  # no round ran past the stop


def test_compare_base_with_nothing_changed_spends_the_rounds_and_says_inconclusive_on_three_cases(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo, max_trials_per_case=4)
    out_json = tmp_path / "cmp.json"
    code, out, err = cli("--base", "HEAD", "--repo", str(repo), "--trials", "2", "--json", str(out_json))
    order = json.loads(out_json.read_text())["order"]
    # 3 cases cannot bound the drop under 5 points: every round runs; --trials is the first look's rounds.
    assert code == 2 and len(order["rounds"]) == 4 and order["looks"] == [2, 3, 4], out + err
    assert "INCONCLUSIVE" in out


def test_compare_base_at_trials_of_the_budget_or_under_strict_looks_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    _statistical(repo, max_trials_per_case=2)
    out_json = tmp_path / "cmp.json"
    code, out, err = cli("--base", "HEAD", "--repo", str(repo), "--trials", "2", "--json", str(out_json))
    order = json.loads(out_json.read_text())["order"]
    assert not order["adaptive"] and order["looks"] == [2] and len(order["rounds"]) == 2, out + err


def test_the_paired_design_spends_each_error_within_alpha() -> None:
    from rubricgate.gating.paired import PASS_LAST, paired_design
    from rubricgate.gating.passbound import calibrate

    design = paired_design(30, 1, 10, STATISTICAL, 3)
    assert design.looks == tuple(range(1, 11))
    assert sum(design.pass_share) == pytest.approx(1.0) and design.pass_share[-1] == PASS_LAST
    assert sum(design.increments) == pytest.approx(1.0)
    assert all(a <= b + 1e-12 for a, b in zip(design.increments, design.spend))  # nominal at least the increment
    for k in (0, 4, 9):  # each look's PASS error, exact as a design that looks once, within its share
        n = 30 * design.looks[k]
        error = calibrate(n, [n], [1.0], 0.05 * design.pass_share[k], 0.05).error[0]
        assert error <= 0.05 * design.pass_share[k]
    later = paired_design(30, 3, 10, STATISTICAL, 3)
    assert later.looks == tuple(range(3, 11)) and later.index(2) is None and later.index(3) == 0
    assert paired_design(30, 10, 10, STATISTICAL, 3).looks == (10,)


def test_a_dimension_the_run_does_not_grade_leaves_the_tests_their_alpha() -> None:
    from rubricgate.gating.paired import paired_design

    one, three = paired_design(30, 1, 10, STATISTICAL, 1), paired_design(30, 1, 10, STATISTICAL, 3)
    assert one.increments == three.increments
    assert all(a >= b - 1e-12 for a, b in zip(one.spend, three.spend)) and one.spend[-1] > three.spend[-1]


def test_dimensions_that_cannot_vary_cost_the_verdict_nothing_and_ungraded_ones_are_never_judged() -> None:
    # Issue 40's code-diff reviewer: 11 cases, tool_use and trajectory 33/33 on both sides. Holm
    # used to triple the verdict's p (0.028 -> 0.083) and call each constant dimension INCONCLUSIVE.
    from rubricgate.gating.compare import dimension_tests

    base = {f"c{i}": {"verdict": (3, 3), "tool_use": (3, 3), "trajectory": (3, 3)} for i in range(11)}
    head = {f"c{i}": {"verdict": (1 if i < 4 else 3, 3), "tool_use": (3, 3), "trajectory": (3, 3)} for i in range(11)}
    tests = {t.dimension: t for t in dimension_tests(base, head, STATISTICAL)}
    assert tests["verdict"].p_holm == pytest.approx(tests["verdict"].p_value)  # Tarone: the constant ones cannot reject
    graded = [t.dimension for t in dimension_tests({c: {"verdict": v["verdict"]} for c, v in base.items()},
                                                   {c: {"verdict": v["verdict"]} for c, v in head.items()}, STATISTICAL)]
    assert graded == ["verdict"]  # a reviewer graded on the verdict alone (format: text) is judged on it alone


def test_one_case_collapsing_is_a_regression_of_the_comparison_though_the_suite_rate_passes() -> None:
    """The run's per-case family, head against base: one case of 40 failing every trial moves the
    sum by 2.5 points, under the margin, and the comparison deciding the PR workflow PASSed it."""
    cases = {f"c{i}": [True] * 10 for i in range(40)}
    comparison = compare_summaries(_summary(cases), _summary({**cases, "c7": [False] * 10}), STATISTICAL)
    assert comparison.tests[0].status == "ok", comparison.tests[0]  # the suite's rate alone: no change
    assert comparison.decision.exit_code == 1, comparison.decision
    assert comparison.decision.reasons[0].startswith("c7: verdict 0/10 vs base 10/10 (collapse; per-case exact p")


def test_a_case_failing_every_trial_too_few_to_show_it_is_suspected_never_passed() -> None:
    cases = {f"c{i}": [True] * 3 for i in range(40)}
    for gate in (STATISTICAL, GateConfig(method="statistical", inconclusive="pass")):
        comparison = compare_summaries(_summary(cases), _summary({**cases, "c7": [False] * 3}), gate)
        assert comparison.decision.exit_code == 2, comparison.decision
        assert any(r.startswith("c7: verdict 0/3 vs base 3/3 (collapse suspected") for r in comparison.decision.reasons)


def test_a_cases_credibility_is_weighed_over_every_case_not_the_ones_that_moved() -> None:
    """Holm over the cases that moved (a family the data chose) read one 4/4 -> 0/4 case among
    twelve "credible" beside a decision that could not establish it."""
    base = _summary({f"c{i}": [True] * 4 for i in range(12)})
    head = _summary({**{f"c{i}": [True] * 4 for i in range(1, 12)}, "c0": [False] * 4})
    [moved] = [f for f in case_flips(base, head) if f.kind == "regressed"]
    [alone] = case_flips(_summary({"c0": [True] * 4}), _summary({"c0": [False] * 4}))
    assert alone.credible and moved.p_value == pytest.approx(min(1.0, 12 * alone.p_value))
    assert not moved.credible


def test_strict_fails_a_case_collapse_that_another_case_s_gain_hides_from_the_rate() -> None:
    from rubricgate.gating.compare import case_collapses, decide_comparison, dimension_tests

    base = {"a": {"verdict": (3, 3)}, "b": {"verdict": (0, 3)}, "c": {"verdict": (3, 3)}}
    head = {"a": {"verdict": (0, 3)}, "b": {"verdict": (3, 3)}, "c": {"verdict": (3, 3)}}
    strict = GateConfig()
    tests = dimension_tests(base, head, strict)
    assert [t.status for t in tests] != ["regression"]  # 6/9 -> 6/9: the rate alone cannot see it
    decision = decide_comparison(tests, strict, case_collapses(base, head, strict))
    assert decision.exit_code == 1 and decision.reasons == [
        "a: verdict 0/3 vs base 3/3 (collapse: every trial fails now, hidden in the rate by other cases' gains; "
        "strict gate)"], decision
    dipped = {**head, "c": {"verdict": (2, 3)}}  # the rate falls too: one reason, the dip's
    both = decide_comparison(dimension_tests(base, dipped, strict), strict, case_collapses(base, dipped, strict))
    assert both.exit_code == 1 and len(both.reasons) == 1 and both.reasons[0].startswith("verdict: 6/9 -> 5/9"), both


# -- a dimension one side grades alone --------------------------------------------------------

def _verdict_only(summary: Summary) -> Summary:
    """The run of a reviewer whose transcript shows its answer alone (`agent.format: text`)."""
    for case in summary.cases:
        case.trials = [t.model_copy(update={"grades": {"verdict": t.grades["verdict"]}}) for t in case.trials]
    return summary


def test_a_dimension_one_side_grades_alone_is_named_for_that_side() -> None:
    from rubricgate.gating.compare import one_sided, summary_counts

    base, head = (summary_counts(s) for s in (_verdict_only(_summary({"a": [True]})), _summary({"a": [True]})))
    assert one_sided(base, head) == [
        "the head side grades tool_use, trajectory and the base side does not (their agents or gate.dimensions "
        "differ): nothing compares it; change what is graded in a change of its own"]
    assert one_sided(head, base)[0].startswith("the base side grades tool_use, trajectory and the head side")
    assert one_sided(head, head) == []


def test_a_head_failing_a_dimension_its_base_never_graded_is_not_passed(tmp_path: Path) -> None:
    """The head's agent now shows tool calls and fails tool_use every trial; the verdict's test alone
    passed it (exit 0 beside every case REGRESSED)."""
    outcomes = {f"c{i}": [False] * 3 for i in range(6)}
    runs = {"base": _verdict_only(_summary({c: [True] * 3 for c in outcomes})), "head": _summary(outcomes)}
    for case in runs["head"].cases:
        case.trials = [t.model_copy(update={"grades": {**t.grades, "verdict": Grade(passed=True)}}) for t in case.trials]
        case.trials = [t.model_copy(update={"grades": {**t.grades, "tool_use": Grade(
            passed=False, category="forbidden_tool", reason="Bash")}}) for t in case.trials]
    for side, summary in runs.items():
        (tmp_path / side).mkdir()
        (tmp_path / side / "summary.json").write_text(summary.model_dump_json())
    code, out, err = cli(str(tmp_path / "base"), str(tmp_path / "head"), "--repo", str(tmp_path))
    assert code == 2, out + err
    assert "INCONCLUSIVE (exit 2) - the head side grades tool_use" in out
    # gate.inconclusive: pass let it through (exit 0): a dimension compared with nothing is held whatever it says
    repo = make_repo(tmp_path / "repo")
    config = repo / "rubricgate.yaml"
    config.write_text(config.read_text().replace("  method: strict\n", "  method: strict\n  inconclusive: pass\n"))
    code, out, err = cli(str(tmp_path / "base"), str(tmp_path / "head"), "--repo", str(repo))
    assert code == 2 and not err, out + err
    assert "INCONCLUSIVE (exit 2) - gate.inconclusive: pass cannot let this run exit 0: the head side grades" in out
