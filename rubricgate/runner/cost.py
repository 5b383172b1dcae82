"""Cost: the --max-cost budget the scheduler consults, and token/cost totals for the summary.

The budget fails closed. Once the spend reaches the limit no new trial starts; trials already
running finish (killing them would waste what they cost), so the overshoot is bounded by the
trials in flight. A trial whose agent reports no cost while a budget is set makes the budget
unenforceable, which also stops new trials: an unknown spend is never treated as zero. When
every trial had started before the first unpriced one ended, the run is whole, and its decision
warns that the budget did not hold (gating/summarize.py).
Cached trials cost nothing this run and are not charged.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rubricgate.boundary import is_amount
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.results import CaseSummary, Grade, TrialResult


class Budget:
    """Thread-safe spend tracker; `max_usd=None` means no limit."""

    def __init__(self, max_usd: float | None) -> None:
        if max_usd is not None and max_usd < 0:
            raise ValueError(f"--max-cost must be >= 0, got {max_usd}")
        self.max_usd = max_usd
        self.spent_usd = 0.0
        self.reason = ""
        self._lock = threading.Lock()

    def try_start(self) -> bool:
        """True when a new trial may start; False (for good) once the budget is spent."""
        with self._lock:
            if self.max_usd is None:
                return True
            if not self.reason and self.spent_usd >= self.max_usd:
                self.reason = f"cost budget ${self.max_usd:.2f} spent (${self.spent_usd:.4f})"
            return not self.reason

    def record(self, cost_usd: float | None, cached: bool = False) -> None:
        """Charge one finished trial; an unpriced trial under a budget stops new trials, and so
        does a cost that is not an amount (-1e9 would refund the budget; NaN compares false)."""
        if cached:
            return
        with self._lock:
            if cost_usd is None or not is_amount(cost_usd):
                if self.max_usd is not None and not self.reason:
                    self.reason = ("the agent reported no cost (or one that is not an amount), "
                                   "so --max-cost cannot be enforced")
                return
            self.spent_usd += cost_usd

    @property
    def exhausted(self) -> bool:
        """True once a trial was refused (or would be): the run is incomplete, exit 2."""
        with self._lock:
            return bool(self.reason) or (self.max_usd is not None and self.spent_usd >= self.max_usd)


def not_run_trial(case_id: str, trial: int, reason: str, dims: Sequence[str] = DIMENSIONS) -> TrialResult:
    """The record of a trial the budget refused: it fails every graded dimension, category not_run."""
    grades = {dim: Grade(passed=False, category="not_run", reason=reason) for dim in dims}
    return TrialResult(case_id=case_id, trial=trial, outcome="ERROR", grades=grades,
                       termination="crashed", exit_code=None)


def is_not_run(trial: TrialResult) -> bool:
    """True for a trial that never started (refused by the budget)."""
    return bool(trial.grades) and all(g.category == "not_run" for g in trial.grades.values())


@dataclass
class _Tally:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    trials: int = 0
    unpriced: int = 0
    untokened: int = 0  # spending trials whose agent reported no token counts
    cached: int = 0
    not_run: int = 0

    def add(self, trial: TrialResult) -> None:
        self.trials += 1
        if is_not_run(trial):
            self.not_run += 1
            return
        if trial.cached:
            self.cached += 1
            return
        if trial.input_tokens is None or trial.output_tokens is None:
            self.untokened += 1
        self.input_tokens += trial.input_tokens or 0
        self.output_tokens += trial.output_tokens or 0
        if trial.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost_usd += trial.cost_usd

    def as_dict(self) -> dict[str, Any]:
        # cost_usd is None when any spending trial was unpriced: a partial sum would understate.
        cost = None if self.unpriced else round(self.cost_usd, 6)
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost_usd": cost, "trials": self.trials, "unpriced_trials": self.unpriced,
                "untokened_trials": self.untokened,
                "cached_trials": self.cached, "not_run_trials": self.not_run}


def cost_summary(cases: Iterable[CaseSummary], budget: Budget | None = None) -> dict[str, Any]:
    """Totals for the run, per case and per tag; plus the budget state when one was set."""
    total = _Tally()
    by_case: defaultdict[str, _Tally] = defaultdict(_Tally)
    by_tag: defaultdict[str, _Tally] = defaultdict(_Tally)
    for case in cases:
        for trial in case.trials:
            total.add(trial)
            by_case[case.id].add(trial)
            for tag in case.tags:
                by_tag[tag].add(trial)
    out = {**total.as_dict(), "by_case": {k: v.as_dict() for k, v in by_case.items()},
           "by_tag": {k: v.as_dict() for k, v in sorted(by_tag.items())}}
    if budget is not None and budget.max_usd is not None:
        out["budget"] = {"max_cost_usd": budget.max_usd, "spent_usd": round(budget.spent_usd, 6),
                         "exhausted": budget.exhausted, "reason": budget.reason}
    return out
