"""rubricgate.gating.adaptive: rounds up to each look, stopping when decided, confirmations apart."""

from __future__ import annotations

from rubricgate.gating.adaptive import AdaptiveRun
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.baseline import Baseline, CaseCount
from rubricgate.models.config import GateConfig

GATE = GateConfig(method="statistical")


def _baseline(spec: dict[str, tuple[int, int]]) -> Baseline:
    return Baseline(rates={d: 1.0 for d in DIMENSIONS},
                    cases={c: {d: CaseCount(passes=x, trials=n) for d in DIMENSIONS} for c, (x, n) in spec.items()})


def _drive(run: AdaptiveRun, outcome) -> list:
    """Run batches until the state machine stops; outcome(case, n, confirm) -> passed."""
    looks = []
    while True:
        for case, n, confirm in run.next_batch():
            ok = outcome(case, n, confirm)
            run.record(case, {d: ok for d in DIMENSIONS}, confirm)
        looks.append(run.look())
        if looks[-1].stop:
            return looks


def test_a_stable_suite_that_keeps_passing_stops_at_the_planned_look_with_a_pass() -> None:
    run = AdaptiveRun(_baseline({f"c{i}": (10, 10) for i in range(30)}), GATE, [f"c{i}" for i in range(30)])
    looks = _drive(run, lambda *_: True)
    assert looks[-1].decision.status == "pass" and looks[-1].decision.exit_code == 0
    assert looks[-1].trials == 60 and len(looks) == 2  # 3/margin trials in all, one each round
    assert [h["stop"] for h in run.history()] == [False, True]


def test_a_large_stable_suite_passes_on_one_trial_each() -> None:
    ids = [f"c{i}" for i in range(300)]
    looks = _drive(AdaptiveRun(_baseline({c: (10, 10) for c in ids}), GATE, ids), lambda *_: True)
    assert looks[-1].trials == 300 and looks[-1].decision.status == "pass"


def test_a_collapsing_stable_case_is_re_tried_and_is_a_regression() -> None:
    ids = [f"c{i}" for i in range(300)]
    run = AdaptiveRun(_baseline({c: (10, 10) for c in ids}), GATE, ids)
    looks = _drive(run, lambda case, n, confirm: case != "c5")
    assert looks[-1].decision.exit_code == 1
    assert any(r.startswith("c5: verdict 0/") and "vs baseline 10/10 (collapse" in r for r in looks[-1].decision.reasons)
    assert 0 < run.confirm.frozen()["c5"]["verdict"][1] <= GATE.max_trials_per_case


def test_a_collapse_on_a_3_trial_baseline_is_confirmed_past_the_per_case_budget() -> None:
    """The old 3-trial baseline `init` gave: failing 10 trials is not significant against 3/3 among
    90 pairs, so the confirmation runs past gate.max_trials_per_case instead of letting it pass."""
    ids = [f"c{i}" for i in range(30)]
    run = AdaptiveRun(_baseline({c: (3, 3) for c in ids}), GATE, ids)
    looks = _drive(run, lambda case, n, confirm: case != "c5")
    assert looks[-1].decision.exit_code == 1, looks[-1].decision
    used = run.confirm.frozen()["c5"]["verdict"][1]
    assert GATE.max_trials_per_case < used <= run.confirm_room()


def test_a_collapse_the_budget_cannot_show_is_inconclusive_naming_the_case_never_a_pass() -> None:
    ids = [f"c{i}" for i in range(30)]
    run = AdaptiveRun(_baseline({c: (1, 1) for c in ids}), GATE, ids)  # one baseline trial a case
    looks = _drive(run, lambda case, n, confirm: case != "c5")
    last = looks[-1]
    assert last.decision.exit_code == 2 and last.decision.status == "inconclusive"
    assert any(r.startswith("c5: verdict 0/") and "collapse suspected, not testable at this size" in r
               for r in last.decision.reasons), last.decision.reasons
    assert last.why == "a collapse is suspected and cannot be tested at this size" or "budget" in last.why


def test_a_case_whose_trials_all_errored_can_never_pass_whatever_the_suite_size() -> None:
    """A reviewer that hides its failures on one case as infrastructure errors: the worst case
    (every errored trial a failure) is a suspected collapse, so the run never exits 0."""
    ids = [f"c{i}" for i in range(300)]
    run = AdaptiveRun(_baseline({c: (10, 10) for c in ids}), GATE, ids)
    while True:
        for case, _, confirm in run.next_batch():
            if case == "c9":
                run.record(case, None, confirm, errored=True)
            else:
                run.record(case, {d: True for d in DIMENSIONS}, confirm)
        look = run.look()
        if look.stop:
            break
    assert look.decision.exit_code != 0 and look.decision.status == "inconclusive"
    assert any(r.startswith("c9: verdict 0/0 + ") and "errored" in r for r in look.decision.reasons)


def test_a_one_off_failure_is_re_tried_and_shown_as_flaky_not_a_regression() -> None:
    ids = [f"c{i}" for i in range(30)]
    run = AdaptiveRun(_baseline({c: (10, 10) for c in ids}), GATE, ids)
    looks = _drive(run, lambda case, n, confirm: not (case == "c3" and n == 1))
    assert looks[-1].decision.exit_code != 1 and any(f.startswith("c3: verdict") for f in looks[-1].detail.flaky)
    assert "c3" in run.confirm.frozen()


def _sessions(spec: dict[str, list[tuple[int, int]]]) -> Baseline:
    """A baseline measured in sessions (what `baseline update` writes)."""
    return Baseline(rates={d: 1.0 for d in DIMENSIONS},
                    cases={c: {d: CaseCount(passes=sum(x for x, _ in runs), trials=sum(n for _, n in runs), sessions=runs)
                               for d in DIMENSIONS} for c, runs in spec.items()})


def test_a_flaky_baseline_of_one_session_counts_each_case_run_once_and_says_why() -> None:
    """Within-run dependence cannot be ruled out from one session: more rounds of the same run
    would add nothing, so the design is its first round, and the warning names the fix."""
    ids = [f"c{i}" for i in range(4)]
    run = AdaptiveRun(_baseline({c: (5, 10) for c in ids}), GATE, ids)
    looks = _drive(run, lambda case, n, confirm: n % 2 == 0)
    assert run.dependence.status == "unknown" and run.dependence.rho == 1.0
    assert looks[-1].trials == 4 and looks[-1].decision.exit_code == 2
    assert any("within-run dependence cannot be ruled out" in w and "rubricgate baseline update" in w
               for w in looks[-1].decision.warnings)
    assert looks[-1].detail.dependence["status"] == "unknown"
    # Every line names the test it ran: under dependence the score statistic at the design effect.
    lines = [*looks[-1].decision.reasons, *looks[-1].decision.warnings]
    assert any(w.startswith("verdict 0/4 vs baseline 20/40") and "stratified score p at intra-run correlation 1.00 "
               "(Holm)" in w for w in lines), lines
    assert any("per-case score p at intra-run correlation 1.00, Holm over cases" in w for w in lines), lines
    assert not any("exact p" in w for w in lines), lines


def test_an_undecidable_suite_spends_its_budget_and_ends_inconclusive() -> None:
    ids = [f"c{i}" for i in range(4)]
    run = AdaptiveRun(_sessions({c: [(2, 5), (3, 5)] for c in ids}), GATE, ids)
    assert run.dependence.status == "independent"
    looks = _drive(run, lambda case, n, confirm: n % 2 == 0)  # exactly as often as before
    assert looks[-1].decision.status == "inconclusive" and looks[-1].decision.exit_code == 2
    assert looks[-1].why == "the trial budget is spent"
    assert looks[-1].trials == 4 * GATE.max_trials_per_case
    assert "could not judge at this size" in looks[-1].decision.reasons[0]


def test_new_cases_run_once_in_the_first_round_and_are_not_gated() -> None:
    ids = [f"c{i}" for i in range(30)] + ["brand-new"]
    run = AdaptiveRun(_baseline({f"c{i}": (10, 10) for i in range(30)}), GATE, ids)
    _drive(run, lambda case, n, confirm: case != "brand-new")
    assert run.design.frozen()["brand-new"]["verdict"] == (0, 1)


def test_confirmations_run_before_the_design_goes_on_so_a_collapse_stops_the_run_early() -> None:
    ids = [f"c{i}" for i in range(30)]
    run = AdaptiveRun(_baseline({c: (10, 10) for c in ids}), GATE, ids)
    looks = _drive(run, lambda case, n, confirm: case != "c5")
    assert looks[-1].decision.exit_code == 1 and looks[-1].why == "a regression is established"
    confirmations = run.confirm.frozen()["c5"]["verdict"][1]
    assert looks[-1].trials == 30 + confirmations  # the first round, then the confirmation batch alone
    trials = [look.trials for look in looks]
    # one confirmation trial, then two, then the rest (at most as many as all before): 4 in all,
    # what failing them all needs at the family's first Holm-Tarone level (only this pair can reject)
    assert [b - a for a, b in zip(trials, trials[1:])] == [1, 2, 1] and confirmations == 4


def test_a_one_off_failure_costs_one_confirmation_trial_when_it_passes() -> None:
    ids = [f"c{i}" for i in range(30)]
    run = AdaptiveRun(_baseline({c: (10, 10) for c in ids}), GATE, ids)
    looks = _drive(run, lambda case, n, confirm: not (case == "c3" and n == 1))
    assert run.confirm.frozen()["c3"]["verdict"] == (1, 1)  # the batch stops at the first pass
    assert looks[1].trials == 31 and looks[-1].decision.exit_code != 1


def test_a_runs_rate_and_its_delta_count_the_same_design_trials_and_confirmations_are_marked(repo) -> None:
    # The builtin reviewer with a critical rule lowered: the BLOCK fixture fails every trial, is re-tried,
    # and its confirmation trials are kept apart from the rate the delta is computed on.
    import json

    from tests.conftest import lowered_rule_run

    run_dir = lowered_rule_run(repo)
    summary = json.loads((run_dir / "summary.json").read_text())
    trials = [t for c in summary["cases"] for t in c["trials"]]
    confirmations = [t for t in trials if t["confirmation"]]
    assert confirmations and all(t["case_id"] == "fixture-data-loader" for t in confirmations)
    design = [t for t in trials if not t["confirmation"]]
    row = summary["rates"]["verdict"]
    assert row["trials"] == len(design) and row["passes"] == sum(t["grades"]["verdict"]["passed"] for t in design)
    assert abs(row["rate"] - row["passes"] / row["trials"]) < 1e-9
    assert abs(row["delta"] - (row["rate"] - row["baseline"])) < 1e-6  # the delta of that very rate
    kept = summary["gate"]["confirmations"]["fixture-data-loader"]["verdict"]
    assert kept == [sum(t["grades"]["verdict"]["passed"] for t in confirmations), len(confirmations)]


def test_a_look_past_gate_max_errored_stops_the_run_unless_it_shows_a_regression() -> None:
    """A reviewer crashing on every trial ran every round of the budget (a continuation's after
    it): past gate.max_errored nothing but a regression can decide the run."""
    ids = [f"c{i}" for i in range(30)]
    gate = GateConfig(method="statistical", max_errored=40)
    run = AdaptiveRun(_baseline({c: (10, 10) for c in ids}), gate, ids)
    looks = []
    while not looks or not looks[-1].stop:
        for case, _, confirm in run.next_batch():
            run.record(case, None, confirm, errored=True)
        looks.append(run.look())
    assert looks[-1].why == "60 trials errored, more than gate.max_errored 40: it cannot judge", looks[-1].why
    assert [look.stop for look in looks] == [False, True]
    # c5 collapses and c7 errored once: the confirmation that shows the collapse still runs.
    collapsing = AdaptiveRun(_baseline({c: (10, 10) for c in ids}), GateConfig(method="statistical"), ids)
    looks = []
    while not looks or not looks[-1].stop:
        for case, n, confirm in collapsing.next_batch():
            errored = case == "c7" and n == 1
            collapsing.record(case, None if errored else {d: case != "c5" for d in DIMENSIONS}, confirm, errored)
        looks.append(collapsing.look())
    assert looks[-1].decision.status == "regression" and looks[-1].why == "a regression is established"
    assert "c5" in collapsing.confirm.frozen()
