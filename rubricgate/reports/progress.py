"""Live progress for `run`: an on_event listener the scheduler calls once per event.

It says what the run is doing from its first second: one line when the run starts (cases,
trials, agents, how many at once). On a terminal it then redraws one status line (cases done,
failures so far, elapsed, remaining). When stdout is not a TTY (CI logs) it prints a line when a
case starts and one when it finishes, and no carriage returns, so logs stay readable and
grep-able and a slow first trial is not silence.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO


def fmt_duration(seconds: float) -> str:
    """75.2 -> '1:15'; 3725 -> '1:02:05'."""
    s = max(0, int(round(seconds)))
    h, rem = divmod(s, 3600)
    return f"{h}:{rem // 60:02d}:{rem % 60:02d}" if h else f"{rem // 60}:{rem % 60:02d}"


@dataclass
class _CaseState:
    expected: int | None = None
    done: int = 0
    failed: int = 0
    errored: int = 0
    problems: list[str] = field(default_factory=list)
    finished: bool = False


def _grade_failures(grades: Mapping[str, Any]) -> list[str] | None:
    """'dimension:category' for each failed grade, or None for an errored trial (infrastructure,
    after every retry: never judged, so no failure); grades may be dicts or Grade models."""
    out = []
    for dim, g in (grades or {}).items():
        g = g if isinstance(g, Mapping) else getattr(g, "model_dump", lambda: {})()
        if g.get("category") == "errored":
            return None
        if not g.get("passed", False):
            out.append(f"{dim}:{g.get('category') or 'failed'}")
    return out


def _expected_trials(cases: Any) -> dict[str, int | None]:
    """cases may be a count, a list of ids, a list of {id, trials}, or a mapping id -> trials."""
    if isinstance(cases, Mapping):
        return {str(k): int(v) if isinstance(v, int) else None for k, v in cases.items()}
    if isinstance(cases, list):
        return {str(c.get("id")) if isinstance(c, Mapping) else str(c):
                c.get("trials") if isinstance(c, Mapping) else None for c in cases}
    return {}


class Progress:
    """Callable listener: `Progress()(event)` for each scheduler event."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, label: str | None = None) -> None:
        self.stream = stream or sys.stderr
        self.label = label  # one of several runs (compare): its own decision is not the verdict
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock = clock
        self.start = clock()
        self.total_trials = 0
        self.total_cases = 0
        self.trials_done = 0
        self.failures = 0
        self.errored = 0
        self.taken_up = 0  # trials of the run a continuation takes up: counted by the decision, not run here
        self.finished_cases = 0  # counted as they finish: a sum over every case per line is O(n^2)
        self.cases: dict[str, _CaseState] = {}
        self._lock = threading.Lock()

    def __call__(self, event: Mapping[str, Any]) -> None:
        """Dispatch one event; unknown event types are ignored (newer schedulers add some)."""
        handler = getattr(self, "_on_" + str(event.get("event") or event.get("type") or ""), None)
        if handler is not None:
            with self._lock:  # the scheduler's worker threads emit concurrently
                handler(event)

    def _on_run_started(self, ev: Mapping[str, Any]) -> None:
        self.start = self.clock()  # one listener may see several runs (baseline update's sessions): each counts anew
        self.trials_done = self.failures = self.errored = self.finished_cases = self.taken_up = 0
        self.total_trials = int(ev.get("total_trials") or 0)
        cases = ev.get("cases")
        # case_trials (id -> planned trials) is exact; case_started's count ignores --trials.
        planned = _expected_trials(ev.get("case_trials") or cases)
        self.cases = {k: _CaseState(expected=v) for k, v in planned.items()}
        self.total_cases = cases if isinstance(cases, int) else len(self.cases)
        if self.label is None and ev.get("run_id"):
            agents = ", ".join(ev.get("agents") or {}) or "?"
            jobs = f", {ev['jobs']} at once" if ev.get("jobs") else ""
            self._line(f"run {ev['run_id']}: {self.total_cases} cases, {self.total_trials} trials, "
                       f"agent {agents}{jobs}")

    def _on_plan(self, ev: Mapping[str, Any]) -> None:
        for line in ev.get("lines") or []:  # the statistical gate's plan, before the first trial
            self._line(str(line))
        if isinstance(ev.get("total_trials"), int):  # adaptive: the most the design may run
            self.total_trials = ev["total_trials"]
            for state in self.cases.values():
                state.expected = None  # a case is done when the run says so, not after round 1
        if isinstance(ev.get("taken_up"), int):
            self.taken_up = ev["taken_up"]

    def _on_confirming(self, ev: Mapping[str, Any]) -> None:
        if isinstance(ev.get("trials"), int):  # confirmation trials, outside the design's most: "202/200" was
            self.total_trials += ev["trials"]

    def _on_look(self, ev: Mapping[str, Any]) -> None:
        for line in ev.get("lines") or []:  # an adaptive run's look: trials so far, decided or not
            self._line(str(line))

    def _on_case_started(self, ev: Mapping[str, Any]) -> None:
        state = self.cases.setdefault(str(ev.get("case_id")), _CaseState())
        if state.expected is None and isinstance(ev.get("trials"), int):
            state.expected = ev["trials"]
        if not self.tty:
            self._line(f"case {ev.get('case_id')}: started")
        self._draw()

    def _on_trial_result(self, ev: Mapping[str, Any]) -> None:
        state = self.cases.setdefault(str(ev.get("case_id")), _CaseState())
        problems = _grade_failures(ev.get("grades") or {})
        state.done += 1
        self.trials_done += 1
        if problems is None:
            state.errored += 1
            self.errored += 1
        if problems:
            state.failed += 1
            self.failures += 1
            state.problems.extend(p for p in problems if p not in state.problems)
        if state.expected is not None and state.done >= state.expected and not state.finished:
            self._finish(str(ev.get("case_id")), state)
        self._draw()

    def _on_case_completed(self, ev: Mapping[str, Any]) -> None:
        state = self.cases.setdefault(str(ev.get("case_id")), _CaseState())
        if not state.finished:
            self._finish(str(ev.get("case_id")), state)
            self._draw()

    def _on_run_completed(self, ev: Mapping[str, Any]) -> None:
        for case_id, state in self.cases.items():
            if state.done and not state.finished:
                self._finish(case_id, state)
        decision = ev.get("decision")
        status = decision.get("status") if isinstance(decision, Mapping) else decision
        reasons = decision.get("reasons") if isinstance(decision, Mapping) else None
        why = f" ({reasons[0]})" if status == "error" and reasons else ""  # "error" alone says nothing
        if self.label:
            self._line(f"{self.label}: run finished: {self._counts(finished=True)} · the comparison decides")
            return
        self._line(f"run finished: {self._counts(finished=True)} · decision {status or 'unknown'}{why}")

    def _finish(self, case_id: str, state: _CaseState) -> None:
        state.finished = True
        self.finished_cases += 1
        if not self.tty:
            judged = state.done - state.errored
            # A case none of whose trials was judged is no "ok": nothing was seen of it.
            verdict = "not judged" if not judged else "ok" if not state.failed else "FAIL " + ", ".join(state.problems)
            if state.errored:
                verdict += f", {state.errored} errored (not judged)"
            self._line(f"case {case_id}: {judged - state.failed}/{judged} trials passed ({verdict}) "
                       f"[{self._counts()}]")

    def cases_done(self) -> int:
        return self.finished_cases

    def remaining_s(self) -> float | None:
        """Linear estimate from the trials finished so far; None before the first one."""
        if not self.trials_done or not self.total_trials:
            return None
        elapsed = self.clock() - self.start
        return elapsed / self.trials_done * max(0, self.total_trials - self.trials_done)

    def _counts(self, finished: bool = False) -> str:
        """Where the run stands; `finished`: no time left to estimate (an adaptive run that decided
        early planned more trials than it ran, and its last line read "~0:06 left")."""
        left = None if finished else self.remaining_s()
        eta = f", ~{fmt_duration(left)} left" if left is not None and self.trials_done < self.total_trials else ""
        errored = f", {self.errored} errored" if self.errored else ""
        return (f"{self.cases_done()}/{self.total_cases or '?'} cases, {self.trials_done}/{self.total_trials or '?'} "
                f"trials{self._taken_up(finished)}, {self.failures} failed{errored}, "
                f"{fmt_duration(self.clock() - self.start)} elapsed{eta}")

    def _taken_up(self, finished: bool) -> str:
        """A finished continuation's trials run here beside the ones the decision counts: "80/80
        trials" was read against the 160 its report and summary.json count."""
        if not (finished and self.taken_up):
            return ""
        return f" run here ({self.trials_done + self.taken_up} counted with the {self.taken_up} it continues)"

    def _draw(self) -> None:
        if self.tty:
            # \r + clear-to-end-of-line: redraw in place without leaving fragments of a longer line.
            self.stream.write(f"\r\x1b[K{self._counts()}")
            self.stream.flush()

    def _line(self, text: str) -> None:
        prefix = "\r\x1b[K" if self.tty else ""
        self.stream.write(f"{prefix}{text}\n")
        self.stream.flush()
