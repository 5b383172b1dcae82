"""Infrastructure failures are retried with jittered exponential backoff; every attempt recorded."""

from __future__ import annotations

import random

from rubricgate.graders.failures import failure_kind, is_infra_failure, outcome_fields, retry_after
from rubricgate.models.transcript import Transcript
from rubricgate.runner.retry import RetryPolicy, backoff_delay, run_with_retries

VERDICT = 'x\n```json\n{"tier": "PASS", "summary": "s", "files_reviewed": [], "findings": []}\n```'


def _t(termination="completed", steps=1, final="", error="", **kw) -> Transcript:
    return Transcript(agent="t", termination=termination, steps=steps, final_text=final, error=error, **kw)


def _script(*transcripts):
    queue = list(transcripts)
    calls = []

    def run():
        calls.append(1)
        return queue.pop(0)
    return run, calls


def test_api_error_without_verdict_is_infra_and_retried_until_spent() -> None:
    run, calls = _script(*[_t("api_error", error="API 500: overloaded")] * 3)
    waits = []
    out = run_with_retries(run, RetryPolicy(retries=2, backoff_s=1.0), sleep=waits.append, rng=random.Random(1))
    assert len(calls) == 3 and len(out.attempts) == 3 and all(a.infra for a in out.attempts)
    assert len(waits) == 2 and 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0
    assert [a.waited_s for a in out.attempts] == [0.0, round(waits[0], 3), round(waits[1], 3)]


def test_success_after_an_outage_keeps_the_failed_attempt() -> None:
    run, calls = _script(_t("crashed", steps=0, error="cannot start"), _t(final=VERDICT, steps=2))
    out = run_with_retries(run, RetryPolicy(retries=2, backoff_s=0), sleep=lambda s: None)
    assert len(calls) == 2 and out.final_text == VERDICT
    assert [a.infra for a in out.attempts] == [True, False] and out.attempts[0].error == "cannot start"


def test_reviewer_behaviour_is_never_retried() -> None:
    for t in (_t("timeout", steps=3), _t("max_turns", steps=5), _t("crashed", steps=2), _t(final="no verdict")):
        run, calls = _script(t, t)
        run_with_retries(run, RetryPolicy(retries=2, backoff_s=0), sleep=lambda s: None)
        assert len(calls) == 1, t.termination


def test_a_verdict_drafted_before_an_api_error_is_no_answer_and_is_retried() -> None:
    """The CLI never delivered it: a model turn that drafts a verdict and then asks for a tool is not
    done, and the request that failed was its next one (design.md: a dead endpoint is infrastructure)."""
    run, calls = _script(_t("api_error", final=VERDICT, error="API 529"), _t(final=VERDICT))
    out = run_with_retries(run, RetryPolicy(retries=2, backoff_s=0), sleep=lambda s: None)
    assert len(calls) == 2 and out.termination == "completed" and out.attempts[0].infra


def test_a_verdict_drafted_before_a_crash_by_signal_is_errored_never_graded() -> None:
    """`Preliminary: PASS ... let me double-check`, then SIGSEGV before the CLI's result: the run passed."""
    crashed = _t("crashed", steps=2, final=VERDICT, error="killed by SIGSEGV (exit 139 = 128 + 11)",
                 failure="signal", signal="SIGSEGV")
    run, calls = _script(crashed, crashed, crashed)
    out = run_with_retries(run, RetryPolicy(retries=2, backoff_s=0), sleep=lambda s: None)
    assert len(calls) == 3 and is_infra_failure(out)
    fields = outcome_fields(out, verdict_ok=True)
    assert fields["errored"] is True and fields["failure"] == "signal"


def test_retry_after_reported_by_the_cli_is_honoured_and_capped() -> None:
    policy = RetryPolicy(retries=1, backoff_s=1.0, max_wait_s=60)
    assert backoff_delay(1, policy, random.Random(0), asked=30.0) == 30.0
    assert backoff_delay(1, policy, random.Random(0), asked=1e9) == 60
    assert retry_after(_t("api_error", error="429 rate limited; retry-after: 12")) == 12.0
    assert retry_after(_t("api_error", retry_after_s=7.5)) == 7.5
    assert retry_after(_t("api_error", error="API 500")) is None
    run, _ = _script(_t("api_error", error="429 Retry-After 20"), _t(final=VERDICT))
    waits = []
    run_with_retries(run, RetryPolicy(retries=1, backoff_s=0.1), sleep=waits.append)
    assert waits == [20.0]


def test_jitter_spreads_parallel_retries() -> None:
    policy = RetryPolicy(retries=3, backoff_s=4.0)
    delays = {round(backoff_delay(2, policy, random.Random(seed)), 6) for seed in range(20)}
    assert len(delays) > 10 and all(4.0 <= d <= 8.0 for d in delays)


def test_classification() -> None:
    assert failure_kind(_t()) is None
    assert failure_kind(_t("api_error", steps=4)) == "infra"
    assert failure_kind(_t("crashed", steps=0, error="x")) == "infra"
    assert failure_kind(_t("crashed", steps=3, error="x")) == "reviewer"
    assert failure_kind(_t("timeout", steps=0)) == "reviewer"
    assert is_infra_failure(_t("api_error", final=VERDICT))  # a draft the CLI never delivered


def test_zero_retries_runs_once() -> None:
    run, calls = _script(_t("api_error"), _t())
    out = run_with_retries(run, RetryPolicy(retries=0), sleep=lambda s: None)
    assert len(calls) == 1 and out.termination == "api_error" and len(out.attempts) == 1


def test_a_stop_request_ends_the_retries() -> None:
    run, calls = _script(*[_t("api_error")] * 3)
    stopped = []
    out = run_with_retries(run, RetryPolicy(retries=2, backoff_s=0), sleep=lambda s: stopped.append(1),
                           stop=lambda: bool(stopped))
    assert len(calls) == 1 and len(out.attempts) == 1
