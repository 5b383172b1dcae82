"""Progress listener: one line per finished case off a TTY; redrawn status line on a TTY."""

from __future__ import annotations

import io

from rubricgate.reports.progress import Progress, fmt_duration


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def bad(category: str = "wrong_tier") -> dict:
    return {"verdict": {"passed": False, "category": category}, "tool_use": {"passed": True}}


def good() -> dict:
    return {"verdict": {"passed": True}, "tool_use": {"passed": True}}


def feed(progress: Progress, clock: Clock) -> None:
    progress({"event": "run_started", "run_id": "r", "total_trials": 4, "agents": {"claude": "2.1.332"}, "jobs": 4,
              "cases": [{"id": "a", "trials": 2}, {"id": "b", "trials": 2}]})
    progress({"event": "case_started", "case_id": "a"})
    clock.t += 10
    progress({"event": "trial_result", "case_id": "a", "trial": 1, "outcome": "PASS", "grades": good()})
    clock.t += 10
    progress({"event": "trial_result", "case_id": "a", "trial": 2, "outcome": "PASS", "grades": bad()})
    progress({"event": "case_started", "case_id": "b"})
    clock.t += 10
    progress({"event": "trial_result", "case_id": "b", "trial": 1, "outcome": "PASS", "grades": good()})
    progress({"event": "trial_result", "case_id": "b", "trial": 2, "outcome": "PASS", "grades": good()})
    progress({"event": "run_completed", "decision": {"status": "regression"}})


def test_non_tty_prints_one_line_per_case_without_carriage_returns():
    out, clock = io.StringIO(), Clock()
    feed(Progress(out, tty=False, clock=clock), clock)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert lines == [
        "run r: 2 cases, 4 trials, agent claude, 4 at once",
        "case a: started",
        "case a: 1/2 trials passed (FAIL verdict:wrong_tier) [1/2 cases, 2/4 trials, 1 failed, 0:20 elapsed, ~0:20 left]",
        "case b: started",
        "case b: 2/2 trials passed (ok) [2/2 cases, 4/4 trials, 1 failed, 0:30 elapsed]",
        "run finished: 2/2 cases, 4/4 trials, 1 failed, 0:30 elapsed · decision regression",
    ]


def test_tty_redraws_in_place():
    out, clock = io.StringIO(), Clock()
    feed(Progress(out, tty=True, clock=clock), clock)
    text = out.getvalue()
    assert text.count("\r\x1b[K") >= 6 and text.count("\n") == 2  # the run's first line, its last
    assert text.split("\n")[0].endswith("run r: 2 cases, 4 trials, agent claude, 4 at once")
    assert "1/2 cases, 2/4 trials, 1 failed, 0:20 elapsed, ~0:20 left" in text


def test_case_without_known_trial_count_finishes_on_case_completed_or_run_end():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, tty=False, clock=clock)
    p({"event": "run_started", "total_trials": 2, "cases": 2})
    p({"event": "trial_result", "case_id": "x", "trial": 1, "grades": bad("timeout")})
    assert out.getvalue() == ""
    p({"event": "case_completed", "case_id": "x"})
    p({"event": "trial_result", "case_id": "y", "trial": 1, "grades": good()})
    p({"event": "run_completed", "decision": "pass"})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("case x: 0/1 trials passed (FAIL verdict:timeout) [1/2 cases")
    assert lines[1].startswith("case y: 1/1 trials passed (ok) [2/2 cases")


def test_unknown_events_are_ignored_and_missing_grades_count_as_no_failure():
    out = io.StringIO()
    p = Progress(out, tty=False)
    p({"event": "something_new"})
    p({"type": "trial_result", "case_id": "z", "trial": 1})
    assert p.failures == 0 and p.trials_done == 1


def test_fmt_duration():
    assert (fmt_duration(0), fmt_duration(75.4), fmt_duration(3725)) == ("0:00", "1:15", "1:02:05")


def test_trial_count_from_case_started_as_the_scheduler_sends_it():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, tty=False, clock=clock)
    p({"event": "run_started", "run_id": "r", "total_trials": 3, "cases": 2})
    p({"event": "case_started", "case_id": "a", "trials": 2, "agent": "builtin"})
    p({"event": "trial_result", "case_id": "a", "trial": 1, "grades": good()})
    assert out.getvalue().splitlines() == ["run r: 2 cases, 3 trials, agent ?", "case a: started"]
    p({"event": "trial_result", "case_id": "a", "trial": 2, "grades": good()})
    assert out.getvalue().splitlines()[2].startswith("case a: 2/2 trials passed (ok) [1/2 cases, 2/3 trials")


def test_planned_trials_from_run_started_beat_case_started_count():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, tty=False, clock=clock)
    p({"event": "run_started", "total_trials": 2, "cases": 1, "case_trials": {"a": 2}})
    p({"event": "case_started", "case_id": "a", "trials": 1})  # the task's own count; --trials said 2
    p({"event": "trial_result", "case_id": "a", "trial": 1, "grades": good()})
    assert out.getvalue() == "case a: started\n"
    p({"event": "trial_result", "case_id": "a", "trial": 2, "grades": good()})
    p({"event": "run_completed", "decision": "pass"})
    assert [line.split(":")[0] for line in out.getvalue().splitlines()] == ["case a", "case a", "run finished"]


def test_a_run_that_cannot_be_judged_says_why_on_its_last_line():
    out = io.StringIO()
    p = Progress(out, tty=False, clock=Clock())
    p({"event": "run_started", "run_id": "r", "total_trials": 0, "cases": []})
    p({"event": "run_completed", "decision": {"status": "error", "reasons": ["no baseline to compare against"]}})
    assert out.getvalue().splitlines()[-1].endswith("decision error (no baseline to compare against)")


def test_a_labelled_run_leaves_the_decision_to_the_comparison():
    import io
    out = io.StringIO()
    p = Progress(out, tty=False, label="reviewer at HEAD~1")
    p({"event": "run_started", "total_trials": 0, "cases": 0})
    p({"event": "run_completed", "decision": {"status": "error", "reasons": ["no baseline to compare against"]}})
    assert "reviewer at HEAD~1: run finished" in out.getvalue() and "no baseline" not in out.getvalue()


def test_an_adaptive_runs_plan_is_printed_and_its_total_is_the_designs_most() -> None:
    import io

    from rubricgate.reports.progress import Progress

    out = io.StringIO()
    progress = Progress(out, tty=False)
    progress({"event": "run_started", "total_trials": 3, "cases": 3, "case_trials": {"a": 1, "b": 1, "c": 1}})
    progress({"event": "plan", "lines": ["plan: 3 shared case(s)", "  verdict: ..."], "total_trials": 30})
    progress({"event": "look", "lines": ["look 1: 3 trials, inconclusive: undecided: more trials"]})
    text = out.getvalue()
    assert "plan: 3 shared case(s)" in text and "look 1: 3 trials" in text
    assert progress.total_trials == 30


def test_confirmation_trials_add_to_the_total_they_go_beyond() -> None:
    # A continued run's line read "202/200 trials": confirmations lie outside the design's most.
    out = io.StringIO()
    progress = Progress(out, tty=False)
    progress({"event": "run_started", "total_trials": 2, "cases": 2, "case_trials": {"a": 1, "b": 1}})
    progress({"event": "plan", "lines": [], "total_trials": 2})
    progress({"event": "confirming", "trials": 1})
    for case, trial in (("a", 1), ("b", 1), ("a", 2)):
        progress({"event": "trial_result", "case_id": case, "trial": trial, "outcome": "PASS", "grades": good()})
    assert progress.total_trials == 3 and "3/3 trials" in progress._counts()


def test_an_errored_trial_is_counted_as_errored_never_as_a_failure():
    # an errored trial (infrastructure, after every retry) was never judged: README's promise
    errored = {"verdict": {"passed": False, "category": "errored"}, "tool_use": {"passed": False, "category": "errored"}}
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, tty=False, clock=clock)
    progress({"event": "run_started", "run_id": "r", "total_trials": 2, "cases": [{"id": "a", "trials": 2}]})
    progress({"event": "trial_result", "case_id": "a", "trial": 1, "outcome": "ERROR", "grades": errored})
    progress({"event": "trial_result", "case_id": "a", "trial": 2, "outcome": "PASS", "grades": bad()})
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("case a: 0/1 trials passed (FAIL verdict:wrong_tier, 1 errored (not judged)) "
                                "[1/1 cases, 2/2 trials, 1 failed, 1 errored, "), lines


def test_a_second_run_through_the_same_listener_counts_from_zero() -> None:
    """`baseline update` measures in sessions, one listener for all: each run's counters are its own."""
    out, clock = io.StringIO(), Clock()
    p = Progress(out, tty=False, clock=clock)
    errored = {"verdict": {"passed": False, "category": "errored"}}
    p({"event": "run_started", "run_id": "r0", "total_trials": 1, "cases": [{"id": "a", "trials": 1}]})
    p({"event": "trial_result", "case_id": "a", "trial": 1, "outcome": "ERROR", "grades": errored})
    feed(p, clock)
    feed(p, clock)
    last = out.getvalue().splitlines()[-1]
    assert "errored" not in last, last
    assert "2/2 cases, 4/4 trials, 1 failed" in last, out.getvalue()


def test_a_case_none_of_whose_trials_was_judged_is_not_ok():
    """Every trial errored: the line read '0/0 trials passed (ok, 2 errored (not judged))'."""
    errored = {"verdict": {"passed": False, "category": "errored"}}
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, tty=False, clock=clock)
    progress({"event": "run_started", "run_id": "r", "total_trials": 2, "cases": [{"id": "a", "trials": 2}]})
    for n in (1, 2):
        progress({"event": "trial_result", "case_id": "a", "trial": n, "outcome": "ERROR", "grades": errored})
    line = out.getvalue().splitlines()[-1]
    assert line.startswith("case a: 0/0 trials passed (not judged, 2 errored (not judged))"), line


def test_the_last_line_of_a_run_that_decided_early_has_no_time_left():
    """An adaptive run planned more trials than it ran: its last line read 'run finished: ... ~0:06 left'."""
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, tty=False, clock=clock)
    progress({"event": "run_started", "run_id": "r", "total_trials": 10, "cases": [{"id": "a", "trials": 10}]})
    clock.t += 5
    progress({"event": "trial_result", "case_id": "a", "trial": 1, "outcome": "PASS", "grades": good()})
    progress({"event": "run_completed", "decision": {"status": "pass"}})
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("run finished: ") and "left" not in last, last


def test_a_continuations_last_line_says_its_own_trials_and_those_the_decision_counts() -> None:
    """A continued run's line read "80/80 trials" beside the 160 its report and summary.json count."""
    out = io.StringIO()
    progress = Progress(out, tty=False)
    progress({"event": "run_started", "run_id": "r", "total_trials": 1, "cases": 1, "case_trials": {"a": 1}})
    progress({"event": "plan", "lines": [], "total_trials": 2, "taken_up": 3})
    for n in (1, 2):
        progress({"event": "trial_result", "case_id": "a", "trial": 3 + n, "grades": {"verdict": {"passed": True}}})
    progress({"event": "run_completed", "decision": {"status": "inconclusive"}})
    assert "1/1 cases, 2/2 trials run here (5 counted with the 3 it continues), 0 failed" in out.getvalue()
