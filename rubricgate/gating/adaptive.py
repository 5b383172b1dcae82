"""The adaptive run as a state machine: which trials to run next, and when to stop.

Plain data in, plain data out, so the pipeline's run step and bench/gate_power.py drive the very
same code: `next_batch()` says how many more trials each case runs (the fixed design of
rubricgate/gating/sequential.py up to the next look, plus confirmations of reliable cases that
failed), `record()` takes the graded outcomes, `look()` judges at that look's spending fraction
with the gate itself (rubricgate/gating/gate.py) and says whether the run may stop.

The dimension-level test and the PASS bound see the design trials only; a confirmation batch
is seen only by its case's per-case test (gate.Look.confirmed), so selecting a case because it
failed never biases a count that a test at a fixed design relies on. An errored trial (the
agent failed for infrastructure reasons) is missing data: the tests leave it out, and the PASS
bound and the per-case family count it as a failure (the worst case), so hiding failures as
errors can never make a run PASS.

A run that ended INCONCLUSIVE with its budget spent can be continued (`extend`): the design's
pre-planned continuation rounds (rubricgate/gating/sequential.py) then run, with the errors
still controlled over everything the run did.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rubricgate.gating.changes import HELD
from rubricgate.gating.collapse import reliable, stable
from rubricgate.gating.dependence import baseline_sessions
from rubricgate.gating.dependence import check as check_dependence
from rubricgate.gating.design_mark import DesignMark
from rubricgate.gating.gate import Look, decide
from rubricgate.gating.outcome import ALPHA_SHARES
from rubricgate.gating.planning import CONFIRM_FACTOR
from rubricgate.gating.power import design
from rubricgate.gating.sequential import Schedule, confirmation_size
from rubricgate.models.baseline import Baseline
from rubricgate.models.config import GateConfig
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import Decision, GateDetail, RateRow

Outcome = Mapping[str, bool]  # dimension -> passed, for one graded trial
# Confirmation trials run one, then two, then four, ... at a time (each batch as large as all
# before it) and stop at the first pass of the failing dimensions: the per-case test rejects
# only when every confirmation trial fails, so stopping at a pass changes no rejection. A
# one-off failure then costs one trial, and a batch of 7 runs in 3 rounds instead of 4.
# A confirmation may run past gate.max_trials_per_case, up to CONFIRM_FACTOR times it (planning.py):
# a case that fails every trial is never let through because the budget was too small to show it.


@dataclass
class Tally:
    """Per case and dimension, passes and trials."""

    counts: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def add(self, case: str, outcome: Outcome) -> None:
        dims = self.counts.setdefault(case, {})
        for d, passed in outcome.items():
            tally = dims.setdefault(d, [0, 0])
            tally[0] += bool(passed)
            tally[1] += 1

    def frozen(self) -> dict[str, dict[str, tuple[int, int]]]:
        return {c: {d: (x, n) for d, (x, n) in dims.items()} for c, dims in self.counts.items()}


@dataclass
class LookResult:
    """What the gate said at one look, and whether the run stops there."""

    index: int
    trials: int  # every trial run so far (design, new cases and confirmations)
    decision: Decision
    detail: GateDetail
    rates: dict[str, RateRow]
    stop: bool
    why: str

    def lines(self) -> list[str]:
        """One progress line: the look, the trials so far, the decision and why it goes on or stops."""
        return [f"look {self.index + 1}: {self.trials} trials, {self.decision.status}: {self.why}"]


class AdaptiveRun:
    """Rounds of trials for the cases in `order` (suite order; changed cases first)."""

    def __init__(self, baseline: Baseline, gate: GateConfig, order: Sequence[str], first: int = 1,
                 dims: Sequence[str] = DIMENSIONS):
        self.baseline, self.gate, self.first = baseline, gate, max(1, first)
        # The graded dimensions, and of those the ones the baseline measured: the design's (a
        # dimension new to the baseline is reported as such, never planned on).
        self.graded = list(dims)
        self.dims, shared = shared_design(baseline, order, dims)
        counts = {c: {d: (baseline.cases[c][d].passes, baseline.cases[c][d].trials) for d in self.dims} for c in shared}
        # Within-run dependence, checked on the baseline's sessions before the first trial: the
        # design (its information and PASS calibration) counts a case's trials at their design effect.
        self.dependence = check_dependence(baseline_sessions(baseline, shared, self.dims))
        sessions = {c: max(len(baseline.cases[c][d].runs()) for d in self.dims) for c in shared}
        self.schedule: Schedule = design(counts, self.dims, gate.confidence, gate.margin, self.first,
                                         max(gate.max_trials_per_case, self.first), self.dependence.unit(), sessions)
        self.order, self.shared = list(order), shared
        self.new = [c for c in order if c not in counts]
        self.design, self.confirm = Tally(), Tally()
        self.lost: dict[str, int] = {}  # case -> errored design trials
        self.lost_confirm: dict[str, int] = {}  # case -> errored confirmation trials
        self.done_rounds, self.ran = 0, 0
        self.limit = self.schedule.budget_looks  # looks this run may take (a continuation raises it)
        self.looks: list[LookResult] = []
        self.pending: dict[str, int] = {}  # case -> confirmation trials still to run
        self.confirm_sent: dict[str, int] = {}  # case -> confirmation trials handed out so far
        self.failing: dict[str, list[str]] = {}  # case -> the reliable dimensions it failed
        self.confirmed_cases: set[str] = set()
        self.trial_index: dict[str, int] = {c: 0 for c in order}
        self.confirmation_trials: set[tuple[str, int]] = set()
        self.prior: list[dict] = []  # the looks of the runs this one continues (summary.json gate.looks)
        self.continued = None  # the run this one continues (gating/continuation.py's Continued)
        self.passed_over = ""  # a fresh run: the INCONCLUSIVE run of its design it did not take up, and why
        self.design_key = ""  # what identifies the design (gating/design.py)
        self.design_mark: DesignMark | None = None  # its hold on its design while it runs (gating/design_mark.py)
        self._plan = None  # the power plan (plan()), made when first asked for
        # The command that continues a run folder (RunOptions.continue_command: the flags of this design)
        self.continue_command: Callable[[str], str] = lambda path: f"rubricgate run --continue {shlex.quote(path)}"
        self.trials_from: str | None = None  # the run folder these trials came from, when not this run's (a regrade)
        self.trials_refused = ""  # why `run --continue` of trials_from would be refused now ('' : it would not)

    def next_batch(self) -> list[tuple[str, int, bool]]:
        """(case, trial number, is_confirmation) of every trial up to the next look; [] when the
        design is spent (up to this run's limit) and no confirmation is pending."""
        k = self._design_looks() + 1 if self.looks or self.done_rounds else 0
        # Confirmations pending: only those run, the design waits (its next look may not be needed:
        # a confirmed collapse stops the run). A look after them repeats the design's last one.
        waiting = any(self.pending.values())
        target = self.done_rounds if waiting or k >= self.limit else self.schedule.looks[k]
        batch = []
        for case in self.order:
            if case in self.schedule.caps:
                have = self.schedule.trials_after(case, self.done_rounds)
                batch += [(case, False)] * (self.schedule.trials_after(case, target) - have)
            elif k == 0:
                batch += [(case, False)] * self.first  # new cases: reported apart, run once
            batch += [(case, True)] * self._confirm_now(case)
        self.done_rounds = target
        out = [(case, self._number(case), confirm) for case, confirm in batch]
        self.confirmation_trials.update((case, n) for case, n, confirm in out if confirm)
        return out

    def _confirm_now(self, case: str) -> int:
        """Confirmation trials of `case` to run in this batch: as many as it has run so far, plus
        one (1, 2, 4, ...), at most what is still pending. Most re-tried cases pass their first
        confirmation trial, so a small first batch spares the trials a pass would make useless."""
        size = min(self.pending.get(case, 0), self.confirm_sent.get(case, 0) + 1)
        self.confirm_sent[case] = self.confirm_sent.get(case, 0) + size
        return size

    def _number(self, case: str) -> int:
        self.trial_index[case] += 1
        return self.trial_index[case]

    def record(self, case: str, outcome: Outcome | None, confirmation: bool, errored: bool = False) -> None:
        """One trial's grades (None: it did not count: errored, or not run)."""
        if confirmation:
            passed = outcome is not None and any(outcome.get(d) for d in self.failing.get(case, ()))
            self.pending[case] = 0 if passed else max(0, self.pending.get(case, 0) - 1)
            if not self.pending[case]:
                self.confirmed_cases.add(case)
        if errored:
            lost = self.lost_confirm if confirmation else self.lost
            lost[case] = lost.get(case, 0) + 1
        if outcome is None:
            return
        self.ran += 1
        (self.confirm if confirmation else self.design).add(case, outcome)

    def look(self) -> LookResult:
        """Judge at this look's spending fraction; stop when decided, spent, or regressed."""
        per_case, look = self.gate_inputs()
        rates = _rates(per_case, self.graded)
        decision, detail = decide(rates, self.baseline, self.gate, per_case, look=look, errored=self.lost)
        self._schedule_confirmations(per_case)
        last = self._design_looks() + 1 >= self.limit
        stop, why = self._stop(decision, detail, last)
        result = LookResult(len(self.looks), self.ran + sum(self.lost.values()) + sum(self.lost_confirm.values()),
                            decision, detail, rates, stop, why)
        self.looks.append(result)
        return result

    def resume(self, trials: Sequence, looks: Sequence[dict], continuations: int) -> None:
        """Take up where a run that ended undecided stopped: its trials (TrialResult: design ones
        and confirmations, errored ones as missing data), its looks and the continuations it took.
        The next `extend` then opens the design's next pre-planned budget of rounds."""
        for t in sorted(trials, key=lambda t: t.trial):
            outcome = None if t.errored or any(g.category == "not_run" for g in t.grades.values()) else \
                {d: g.passed for d, g in t.grades.items()}
            if t.confirmation:
                self.confirmation_trials.add((t.case_id, t.trial))
                self.confirmed_cases.add(t.case_id)
                self.confirm_sent[t.case_id] = self.confirm_sent.get(t.case_id, 0) + 1
            self.record(t.case_id, outcome, t.confirmation, t.errored)
            self.trial_index[t.case_id] = max(self.trial_index.get(t.case_id, 0), t.trial)
        self.pending = {}
        design = self.design.frozen()
        self.done_rounds = max((n + self.lost.get(c, 0) for c in self.shared
                                for n in [max((n for _, n in design.get(c, {}).values()), default=0)]), default=0)
        self.limit = self.schedule.looks_after(continuations)
        self.prior = list(looks)

    def take_up(self, continued) -> None:
        """Continue `continued` (None: a fresh run): its trials, then the next budget of rounds;
        an error when the design has no continuation left."""
        self.continued = continued
        if continued is None:
            return
        gate = continued.summary.gate
        self.resume(continued.trials, gate.looks, gate.continuations)
        if not self.extend():
            from rubricgate.errors import GateInputError

            # A plain rerun took it up by itself: no flag of the user's to blame, and running afresh
            # the same design would spend the error again.
            how = "the newest INCONCLUSIVE run of this design" if continued.recognized else "--continue"
            raise GateInputError(how, str(continued.run_dir), "the design has no continuation left "
                                 f"(it was planned for {self.schedule.planned_continuations()}, "
                                 f"and {self.continuations()} were taken)",
                                 "add cases, raise gate.max_trials_per_case or re-measure the baseline "
                                 "(another design), then run")

    def extend(self) -> bool:
        """Continue a run that ended undecided: allow the next budget of pre-planned rounds
        (False when the design has no continuation left)."""
        taken = self.continuations()
        if taken >= self.schedule.planned_continuations():
            return False
        self.limit = self.schedule.looks_after(taken + 1)
        return True

    def continuations(self) -> int:
        """How many continuations this run has taken."""
        return (self.limit - self.schedule.budget_looks) // max(self.schedule.budget_round(), 1)

    def _design_looks(self) -> int:
        """Looks taken at a new design round so far (a confirmation-only look repeats the last)."""
        rounds = [r for r in self.schedule.looks if r <= self.done_rounds]
        return max(0, len(rounds) - 1)

    def _stop(self, decision: Decision, detail: GateDetail, last: bool) -> tuple[bool, str]:
        if decision.status == "regression":
            return True, "a regression is established"
        if any(n and self._failed(case) for case, n in self.pending.items()):  # a collapse may yet show
            return False, "confirming reliable cases that failed"
        errored, most = sum(self.lost.values()) + sum(self.lost_confirm.values()), self.gate.max_errored
        if errored > most:
            # Past the allowance no trial can make the run judge but by a regression, which no look
            # showed: a reviewer crashing (or hanging to its timeout) on every trial ran the whole
            # budget, and a continuation's on top of it (gating/errored.py decides the same).
            return True, f"{errored} trials errored, more than gate.max_errored {most}: it cannot judge"
        if any(self.pending.values()):
            return False, "confirming reliable cases that failed"
        if decision.status != "inconclusive":
            return True, "every dimension is decided"
        if detail.suspected and not any(r for r in decision.reasons
                                        if r not in detail.suspected and not r.startswith(HELD)):
            return True, "a collapse is suspected and cannot be tested at this size"
        return (True, "the trial budget is spent") if last else (False, "undecided: more trials")

    def _failed(self, case: str) -> bool:
        """Did a judged design trial of `case` fail (not merely error)?"""
        return any(x < n for x, n in self.design.counts.get(case, {}).values())

    def _schedule_confirmations(self, per_case: Mapping[str, Mapping[str, tuple[int, int]]]) -> None:
        """Cases reliable in the baseline, or never failing there, that failed a design trial of
        such a dimension (or had one errored) get one confirmation batch each, run 1, 2, 4, ... at a time
        (_confirm_now). Its size is what failing it all needs to be significant at the per-case
        family's first Holm-Tarone level (the pairs that can reject, counted now), at most
        CONFIRM_FACTOR x the budget; when even that cannot show it, the budget's worth: a pass
        among them still tells a one-off failure from a case that fails every time."""
        alpha = (1 - self.gate.confidence) * ALPHA_SHARES["cases"]
        level = alpha / (2 * (self._open_pairs(per_case) + 1))  # room for pairs that open later
        room = self.confirm_room()
        if self.dependence.rho:  # confirmations in the same run would repeat its answer: nothing to gain
            return
        for case in self.shared:
            if case in self.confirmed_cases or self.pending.get(case):
                continue
            base = self.baseline.cases[case]
            failed = [d for d in self.dims if _retry(base[d].passes, base[d].trials)
                      and (self.lost.get(case) or (case in per_case and per_case[case][d][0] < per_case[case][d][1]))]
            if failed:
                sizes = [confirmation_size((base[d].passes, base[d].trials), level, room) for d in failed]
                need = max(sizes) if all(sizes) else 0
                self.pending[case] = need or self.gate.max_trials_per_case
                self.failing[case] = failed

    def _open_pairs(self, per_case: Mapping[str, Mapping[str, tuple[int, int]]]) -> int:
        """Shared (case, dimension) pairs whose trials did not all agree on both sides: the
        pairs that can reject (Tarone's count of the per-case family)."""
        count = 0
        for case in self.shared:
            for d in self.dims:
                x1, n1 = per_case.get(case, {}).get(d, (0, 0))
                x0, n0 = self.baseline.cases[case][d].passes, self.baseline.cases[case][d].trials
                count += not (x1 + x0 in (0, n1 + n0))
        return count

    def confirm_room(self) -> int:
        """The most confirmation trials one case may get."""
        return CONFIRM_FACTOR * self.gate.max_trials_per_case

    def most_trials(self) -> int:
        """Trials the design runs if no look stops it (confirmations aside): the progress total."""
        return self.schedule.total_after(self.schedule.looks[self.limit - 1]) + self.first * len(self.new)

    def trials_taken_up(self) -> int:
        """The design trials of the run this one continues (in most_trials, run by that run)."""
        return sum(1 for t in self.continued.trials if not t.confirmation) if self.continued is not None else 0

    def trials_continued(self) -> int:
        """Every trial of the run this one continues, confirmations too: what its decision counts
        besides the trials run here (the progress line says both)."""
        return len(self.continued.trials) if self.continued is not None else 0

    def plan_lines(self) -> list[str]:
        """The plan, printed before the first trial (gating/power.py); a continued run says first
        what it takes up and what it may add."""
        lines = self.plan().lines() if self.shared else ["plan: no case of this run is in the baseline"]
        if self.continued is None:
            return lines
        taken = len(self.continued.trials)
        return [f"continues {self.continued.run_dir}: its {taken} trial(s) count here, this run adds up to "
                f"{self.most_trials() - self.trials_taken_up()} (continuation {self.continuations()} of "
                f"{self.schedule.planned_continuations()})", *lines]

    def plan(self):
        """The power plan of this run's shared cases (gating/power.py's Plan), made once."""
        if self._plan is None:
            self._plan = self._make_plan()
        return self._plan

    def _make_plan(self):
        from rubricgate.gating.planning import collapse_need
        from rubricgate.gating.power import make_plan

        counts = {c: {d: (self.baseline.cases[c][d].passes, self.baseline.cases[c][d].trials) for d in self.dims}
                  for c in self.shared}
        sessions = {c: max(len(self.baseline.cases[c][d].runs()) for d in self.dims) for c in self.shared}
        return make_plan(counts, self.dims, self.gate.confidence, self.gate.margin, self.first,
                         max(self.gate.max_trials_per_case, self.first), unit=self.dependence.unit(), sessions=sessions,
                         collapse_need=collapse_need(len(self.order), len(self.dims), self.gate),
                         dependence=self.dependence.line())

    def gate_inputs(self) -> tuple[dict[str, dict[str, tuple[int, int]]], Look]:
        """What the final decision is made on: the design counts and the last look's spending,
        PASS score and confirmations (the summary's gate uses these, not every trial pooled)."""
        confirmed = {c: v for c, v in self.confirm.frozen().items() if c in self.confirmed_cases}
        k = self._design_looks()
        if not self.shared:
            return self.design.frozen(), Look(confirmed=confirmed, lost_confirm=dict(self.lost_confirm),
                                              dependence=self.dependence)
        return self.design.frozen(), Look(self.schedule.spend[k], confirmed, self.schedule.pass_score(k),
                                          self.schedule.case_spend[k], self.confirm_room(),
                                          lost_confirm=dict(self.lost_confirm), dependence=self.dependence)

    def history(self) -> list[dict]:
        """Per look: trials so far, the decision and why the run stopped or went on (summary.json),
        the continued runs' looks first."""
        return [*self.prior, *({"look": len(self.prior) + r.index + 1, "trials": r.trials, "status": r.decision.status,
                                "stop": r.stop, "why": r.why} for r in self.looks)]


def _retry(passes: int, trials: int) -> bool:
    """A case worth re-trying when it fails: reliable in the baseline, or it never failed there."""
    return reliable((passes, trials)) or stable((passes, trials))


def _rates(per_case: Mapping[str, Mapping[str, tuple[int, int]]], dims: Sequence[str]) -> dict[str, RateRow]:
    out = {}
    for d in dims:
        x = sum(c[d][0] for c in per_case.values() if d in c)
        n = sum(c[d][1] for c in per_case.values() if d in c)
        out[d] = RateRow(rate=x / n if n else None, passes=x, trials=n)
    return out


def shared_design(baseline: Baseline, order: Sequence[str], dims: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the graded dimensions the baseline measured, the planned cases it measured them on)."""
    measured = [d for d in dims if any(d in baseline.cases.get(c, {}) for c in order)]
    shared = [c for c in order if measured and c in baseline.cases
              and all(d in baseline.cases[c] and baseline.cases[c][d].trials for d in measured)]
    return measured, shared


def rounds_for(baseline: Baseline | None, gate: GateConfig, order: Sequence[str], first: int,
               kind: str = "run", dims: Sequence[str] = DIMENSIONS) -> AdaptiveRun | None:
    """The adaptive policy for a statistical run against a baseline; None for a fixed design
    (strict gate, a baseline run, no baseline, or nothing shared with it: `run --only` of cases
    new to the baseline runs them once and reports them as new)."""
    if gate.method != "statistical" or baseline is None or kind != "run" or not baseline.cases:
        return None
    if not shared_design(baseline, order, dims)[1]:
        return None
    return AdaptiveRun(baseline, gate, order, first, dims)
