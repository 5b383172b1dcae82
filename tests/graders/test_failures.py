"""Failure classes decided by what the harness observed (models/failures.py): a signal is the
infrastructure's, retried, then errored and judged by no grader, with "killed by SIG..." as its
reason; the reviewer's own failures stay graded."""

from __future__ import annotations

import pytest

from rubricgate.agents.claude import parse_claude_stream
from rubricgate.agents.ending import finish, signal_of
from rubricgate.agents.normalize import Draft
from rubricgate.graders import grade_trial
from rubricgate.graders.failures import errored_reason, failure_class, failure_kind, is_infra_failure, outcome_fields
from rubricgate.isolation.process import ProcessResult
from rubricgate.models.failures import FAILURE_CLASSES, INFRA_FAILURES, derived_failure, endpoint_failure
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict import ParsedVerdict
from rubricgate.runner.retry import RetryPolicy, run_with_retries
from tests.graders.test_graders import case


def _proc(**kw: object) -> ProcessResult:
    base = dict(exit_code=0, timed_out=False, stdout_truncated=False, stderr_tail="", duration_s=0.5)
    return ProcessResult(**{**base, **kw})  # type: ignore[arg-type]


def _after_one_turn() -> Draft:
    return Draft(agent="claude", steps=1, final_text="Reading the skill.")


@pytest.mark.parametrize("code, name", [(139, "SIGSEGV"), (134, "SIGABRT"), (132, "SIGILL"), (-11, "SIGSEGV"),
                                        (-6, "SIGABRT"), (137, "SIGKILL")])
def test_a_signal_after_the_first_turn_is_the_infrastructures(code: int, name: str) -> None:
    """Crashed after a model turn used to be graded as the reviewer's error (agent_error,
    missing_tool) with the CLI's last stderr line as the reason."""
    t = finish(_after_one_turn(), _proc(exit_code=code, stderr_tail="Reading additional input from stdin...\n"),
               version=None)
    assert t.failure == "signal" and t.signal == name and failure_kind(t) == "infra" and is_infra_failure(t)
    assert t.error.startswith(f"killed by {name} (") and "stdin" not in t.error
    assert "rubricgate sent no signal" in t.evidence


@pytest.mark.parametrize("code", [0, 1, 2, 127, 128, 255, None])
def test_ordinary_exit_codes_are_no_signal(code) -> None:
    assert signal_of(code) is None


def test_a_persistent_signal_is_retried_then_errored_and_never_graded() -> None:
    crash = finish(_after_one_turn(), _proc(exit_code=134), version=None)
    calls = []

    def run() -> Transcript:
        calls.append(1)
        return crash

    out = run_with_retries(run, RetryPolicy(retries=2, backoff_s=0), sleep=lambda s: None)
    assert len(calls) == 3 and [a.failure for a in out.attempts] == ["signal"] * 3
    fields = outcome_fields(out, verdict_ok=False)
    assert fields["errored"] and fields["failure"] == "signal"
    assert "the same class on 3 of 3 attempts" in fields["evidence"]
    assert "killed by SIGABRT" in errored_reason(out) and "(signal) after 3 attempt(s)" in errored_reason(out)
    grades = grade_trial(case(), out, ParsedVerdict(status="missing"))
    assert {g.category for g in grades.values()} == {"errored"}


def test_a_signal_after_the_result_keeps_the_run() -> None:
    d = Draft(agent="claude", steps=2, final_text="done", saw_result=True)
    t = finish(d, _proc(exit_code=139), version=None)
    assert t.termination == "completed" and t.failure is None and failure_kind(t) is None


def test_a_sandbox_limit_stays_the_reviewers_even_by_signal() -> None:
    t = finish(_after_one_turn(), _proc(exit_code=153, limit="the reviewer reached the sandbox's disk limit"),
               version=None)
    assert t.failure == "sandbox_limit" and failure_kind(t) == "reviewer" and t.signal is None


@pytest.mark.parametrize("kw, failure", [
    (dict(timed_out=True, exit_code=None), "timeout"),
    (dict(stopped="max_turns: turn 7 exceeds max_steps 6", exit_code=None), "max_turns"),
    (dict(stopped="tool_denied: bash is not in the allowlist", exit_code=None), "stopped"),
    (dict(stopped="idle_timeout: the agent printed nothing", exit_code=None), "unreachable"),
    (dict(stopped="model_unreachable: codex kept reconnecting", exit_code=None), "unreachable"),
    (dict(stopped="interrupted: the run was stopped", exit_code=None), "harness"),
    (dict(start_error="no such file"), "start"),
    (dict(exit_code=1), "agent_error"),
])
def test_each_end_the_harness_sees_has_its_class(kw, failure) -> None:
    t = finish(_after_one_turn(), _proc(**kw), version=None)
    assert t.failure == failure and failure_kind(t) == ("infra" if failure in INFRA_FAILURES else "reviewer")


def test_exit_1_before_any_turn_is_a_start_failure() -> None:
    t = finish(Draft(agent="claude"), _proc(exit_code=1, stderr_tail="boom\n"), version=None)
    assert t.failure == "start" and failure_kind(t) == "infra"


@pytest.mark.parametrize("status, failure", [(401, "auth"), (403, "auth"), (429, "rate_limit"), (529, "endpoint"),
                                             (500, "endpoint"), (400, "endpoint")])
def test_an_api_error_the_cli_reports_is_classed_by_its_status(status: int, failure: str) -> None:
    stream = ('{"type":"result","subtype":"success","is_error":true,"num_turns":1,'
              f'"api_error_status":{status},"result":"API Error"}}\n')
    t = finish(parse_claude_stream(stream), _proc(exit_code=1), version=None)
    assert (t.failure, t.api_status, t.termination) == (failure, status, "api_error")
    assert f"api_error_status {status}" in t.evidence


@pytest.mark.parametrize("error, failure", [("Not logged in · Please run /login", "auth"),
                                            ("unexpected status 429 Too Many Requests: slow down", "rate_limit"),
                                            ("Cannot connect to API: Unable to connect", "unreachable"),
                                            ("exceeded retry limit, last status: 500", "endpoint"),
                                            ("something odd", "endpoint")])
def test_an_api_error_without_a_status_is_classed_by_its_words(error: str, failure: str) -> None:
    assert endpoint_failure(None, error) == failure


def test_an_old_transcript_without_a_class_gets_one_derived() -> None:
    assert failure_class(Transcript(agent="x", termination="crashed", steps=0, error="exit 1")) == "start"
    assert failure_class(Transcript(agent="x", termination="crashed", steps=3, error="exit 1")) == "agent_error"
    assert failure_class(Transcript(agent="x", termination="api_error", error="API 401: no")) == "auth"
    assert derived_failure("timeout", 2, "") == "timeout"
    assert set(FAILURE_CLASSES) > INFRA_FAILURES
