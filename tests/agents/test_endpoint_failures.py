"""A failing endpoint, as each CLI reports it: a retry it announces with a long wait is stopped at
once with the endpoint's class and the wait kept for the harness's retry; a short one is left to
the CLI. The notice lines are the real CLIs' (claude 2.1.332 and 2.1.112, codex-cli 0.171.0,
opencode 1.18.33 against tests/e2e's scripted servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubricgate.agents.claude import ClaudeAgent, api_retry_stop, parse_claude_stream
from rubricgate.agents.codex import CodexAgent, retry_notice, retry_notice_stop
from rubricgate.agents.codex_rollout import output_status
from rubricgate.agents.ending import finish
from rubricgate.agents.normalize import Draft
from rubricgate.agents.opencode import OpenCodeAgent, stream_error_watch
from rubricgate.graders.failures import failure_kind
from rubricgate.isolation.process import ProcessResult
from rubricgate.models.config import AgentConfig
from tests.agent_recordings import agent_request

DATA = Path(__file__).parents[1] / "data" / "transcripts"


def _retry(status, delay_ms, error="rate_limit") -> bytes:
    return json.dumps({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 1,
                       "retry_delay_ms": delay_ms, "error_status": status, "error": error}).encode()


def _stopped(reason: str, steps: int = 1):
    proc = ProcessResult(exit_code=None, timed_out=False, stdout_truncated=False, stderr_tail="", duration_s=1.0,
                         stopped=reason)
    return finish(Draft(agent="x", steps=steps), proc, version=None)


# --- Claude Code: system/api_retry, emitted before it sleeps ------------------------------------

def test_a_long_claude_retry_is_stopped_with_the_endpoints_status_and_wait() -> None:
    """Its own retries were off (CLAUDE_CODE_MAX_RETRIES=0), so the endpoint's retry-after never
    reached rubricgate and the harness retried after its own 1-4 s."""
    reason = api_retry_stop(_retry(429, 20503))
    assert reason is not None and "API 429" in reason and "retry after 20.5 s" in reason
    t = _stopped(reason)
    assert (t.failure, t.api_status, t.retry_after_s, failure_kind(t)) == ("rate_limit", 429, 20.5, "infra")


def test_an_overload_is_an_endpoint_error_and_a_dead_endpoint_unreachable() -> None:
    assert _stopped(api_retry_stop(_retry(529, 20775, "overloaded"))).failure == "endpoint"
    assert _stopped(api_retry_stop(_retry(None, 6000, "unknown"))).failure == "unreachable"


def test_a_short_claude_retry_is_left_to_the_cli() -> None:
    assert api_retry_stop(_retry(500, 591, "server_error")) is None
    assert api_retry_stop(_retry(None, 580, "unknown")) is None
    assert api_retry_stop(b'{"type":"assistant","message":{"content":"api_retry"}}') is None


def test_claude_gets_one_retry_of_its_own_unless_the_team_chose_its_retries(tmp_path: Path) -> None:
    agent = ClaudeAgent(AgentConfig(name="claude"))
    req = agent_request(tmp_path, env={"PATH": "/usr/bin"})
    assert agent.agent_env(req)["CLAUDE_CODE_MAX_RETRIES"] == "1" and agent.watch(req) is api_retry_stop
    chosen = agent_request(tmp_path, env={"PATH": "/usr/bin", "CLAUDE_CODE_MAX_RETRIES": "5"})
    assert agent.agent_env(chosen)["CLAUDE_CODE_MAX_RETRIES"] == "5" and agent.watch(chosen) is None


def test_a_claude_run_without_its_result_keeps_the_tokens_its_messages_reported() -> None:
    """A crash after the first turn reported 0 tokens although the endpoint had answered."""
    lines = [line for line in (DATA / "claude" / "review_ok.ndjson").read_text().splitlines()
             if '"type":"result"' not in line]
    d = parse_claude_stream("\n".join(lines))
    assert not d.saw_result and d.input_tokens > 0 and d.output_tokens > 0
    ids = {json.loads(x)["message"]["id"] for x in lines if '"type":"assistant"' in x}
    assert d.output_tokens == 30 * len(ids)  # each message once, whatever its number of content lines


# --- Codex: its log target codex_core::responses_retry on stderr --------------------------------

CODEX_429 = ("2026-12-03T18:41:10.367580Z  WARN codex_core::responses_retry: stream disconnected - retrying sampling "
             "request (1/1 in 19.998095107s)... turn_id=01a2 retries=1 max_retries=1 sampling_error=exceeded retry "
             "limit, last status: 429 Too Many Requests")
CODEX_DOWN = ("2026-12-03T18:41:32.890910Z  WARN codex_core::responses_retry: stream connection failed; waiting to "
              "retry turn_id=01a2 error=Connection failed: error sending request retry_delay=5s")
CODEX_500 = ("2026-12-03T18:41:40.520242Z  WARN codex_core::responses_retry: stream disconnected - retrying sampling "
             "request (1/1 in 0ns)... turn_id=01a2 retries=1 max_retries=1 sampling_error=We're currently "
             "experiencing high demand, which may cause temporary errors.")


def test_codex_retry_notices_are_read_from_its_log() -> None:
    assert retry_notice(CODEX_429) == (429, "exceeded retry limit, last status: 429 Too Many Requests",
                                       pytest.approx(19.998095107), True)
    assert retry_notice(CODEX_DOWN) == (None, "Connection failed: error sending request", 5.0, False)
    assert retry_notice(CODEX_500)[2] == 0.0 and retry_notice("INFO something else") is None


def test_a_long_codex_retry_is_stopped_and_a_short_one_left_to_it() -> None:
    t = _stopped(retry_notice_stop(CODEX_429.encode()))
    assert (t.failure, t.api_status, t.retry_after_s) == ("rate_limit", 429, 20.0)
    assert _stopped(retry_notice_stop(CODEX_DOWN.encode()), steps=0).failure == "unreachable"
    assert retry_notice_stop(CODEX_500.encode()) is None


def test_codex_logs_only_its_retries_and_the_last_wait_reaches_the_harness(tmp_path: Path) -> None:
    agent = CodexAgent(AgentConfig(name="codex"))
    req = agent_request(tmp_path, env={"PATH": "/usr/bin"})
    assert agent.agent_env(req)["RUST_LOG"] == "codex_core::responses_retry=warn"
    draft = Draft(agent="codex")
    agent.read_stderr(draft, "Reading additional input from stdin...\n" + CODEX_429 + "\n")
    assert draft.retry_after_s == pytest.approx(19.998095107)


def test_a_codex_refusal_under_approval_policy_never_is_denied() -> None:
    """It was recorded with status ok (no exit code in the output, no known marker)."""
    said = "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never"
    assert output_status("bash", said) == "denied"


def test_a_failed_codex_run_keeps_the_tokens_of_its_rollout() -> None:
    from rubricgate.agents.codex import parse_codex_stream

    stream = (DATA / "codex" / "api_error.ndjson").read_bytes()
    rollout = (DATA / "codex" / "api_error.rollout.jsonl").read_bytes()
    assert parse_codex_stream(stream).input_tokens == 0  # no turn.completed: the stream has no usage
    d = parse_codex_stream(stream, rollout=rollout)
    assert d.input_tokens > 0 and d.output_tokens > 0


# --- OpenCode: --print-logs --log-level ERROR, its "stream error" lines --------------------------

def _oc(stamp: str, error: str, small: bool = False) -> bytes:
    return (f'timestamp={stamp} level=ERROR run=c827 message="stream error" providerID=rubricgate modelID=scripted '
            f'session.id=ses_1 small={"true" if small else "false"} agent={"title" if small else "build"} '
            f'mode=primary error.error="{error}"').encode()


def test_opencode_is_stopped_at_its_second_failed_request_with_the_wait_between() -> None:
    """It retried silently for about 70 s, five times, against a dead endpoint."""
    watch = stream_error_watch()
    assert watch(_oc("2026-12-03T18:42:30.119Z", "AI_APICallError: slow down")) is None
    assert watch(_oc("2026-12-03T18:42:31.000Z", "AI_RetryError: Failed after 3 attempts", small=True)) is None
    reason = watch(_oc("2026-12-03T18:42:50.175Z", "AI_APICallError: slow down"))
    t = _stopped(reason)
    assert t.failure == "endpoint" and t.retry_after_s == 20.1


def test_opencode_retrying_a_stream_that_broke_mid_answer_is_stopped_as_the_endpoints_fault() -> None:
    # Logged as the error event's fields: never matched, so each retry was a step of the reviewer's
    # until the step limit graded it max_turns / too_many_steps (exit 1).
    def line(stamp: str) -> bytes:
        return (f'timestamp={stamp} level=ERROR run=3bb1 message="stream error" providerID=rubricgate '
                'modelID=scripted session.id=ses_1 small=false agent=build mode=primary '
                'error.error.message="overloaded mid-stream" error.error.type=server_error error.error.code=500').encode()
    watch = stream_error_watch()
    assert watch(line("2026-12-06T18:03:50.386Z")) is None
    t = _stopped(watch(line("2026-12-06T18:03:52.704Z")))
    assert t.failure == "endpoint" and "500" in t.error and "overloaded mid-stream" in t.error


def test_opencode_that_cannot_connect_is_unreachable() -> None:
    watch = stream_error_watch()
    down = "AI_APICallError: Cannot connect to API: Unable to connect. Is the computer able to access the url?"
    watch(_oc("2026-12-03T18:14:06.736Z", down))
    assert _stopped(watch(_oc("2026-12-03T18:14:09.402Z", down)), steps=0).failure == "unreachable"


def test_opencode_sends_no_title_request_and_its_custom_provider_has_no_cost(tmp_path: Path) -> None:
    """A cost of 0.0 made --max-cost treat every run as free; 13 title requests a run were in no
    transcript."""
    agent = OpenCodeAgent(AgentConfig(name="opencode", model="scripted"))
    req = agent_request(tmp_path, env={"PATH": "/usr/bin", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert agent.opencode_config(req)["agent"]["title"] == {"disable": True}
    draft = agent.parse((DATA / "opencode" / "review_ok.ndjson").read_bytes(), req)
    assert draft.cost_usd is None and draft.input_tokens > 0
    assert "--print-logs" in agent.argv(req, "p") and "ERROR" in agent.argv(req, "p")


# --- what the sandbox's proxy saw ---------------------------------------------------------------

def _claimed(status: int, network: list, failure: str = "endpoint"):
    from rubricgate.models.transcript import NetworkConnection, Transcript

    return Transcript(agent="command", termination="api_error", error=f"API {status}: Overloaded", failure=failure,
                      evidence="the CLI's result event: is_error with api_error_status 529", api_status=status,
                      network=[NetworkConnection(**c) for c in network])


def test_an_api_answer_claimed_without_any_request_is_the_reviewers_own_doing() -> None:
    """A reviewer program that prints a result claiming API 529, having sent nothing anywhere:
    under the allowlist sandbox every connection goes through rubricgate's proxy, so the claim
    has no request behind it."""
    from rubricgate.agents.ending import with_proxy_evidence

    t = with_proxy_evidence(_claimed(529, []), proxied=True)
    assert t.failure == "agent_error" and "relayed none" in t.evidence and failure_kind(t) == "reviewer"
    assert with_proxy_evidence(_claimed(529, []), proxied=False).failure == "endpoint"  # no proxy: no evidence


def test_the_proxys_status_and_retry_after_back_the_cli_up() -> None:
    from rubricgate.agents.ending import with_proxy_evidence

    seen = [{"host": "127.0.0.1", "port": 9, "kind": "http", "outcome": "relayed", "status": 200},
            {"host": "127.0.0.1", "port": 9, "kind": "http", "outcome": "relayed", "status": 429, "retry_after": "12"}]
    t = with_proxy_evidence(_claimed(429, seen, "rate_limit").model_copy(update={"retry_after_s": None}), proxied=True)
    assert t.failure == "rate_limit" and t.retry_after_s == 12.0
    assert "the sandbox's proxy saw 127.0.0.1:9 answer 429 with Retry-After 12" in t.evidence


def test_the_endpoints_retry_after_beats_a_shorter_gap_the_cli_reported() -> None:
    # Copilot CLI may log one failed request twice, 1.2 s apart: that gap is no wait the endpoint asked for.
    from rubricgate.agents.ending import with_proxy_evidence

    seen = [{"host": "127.0.0.1", "port": 9, "kind": "http", "outcome": "relayed", "status": 429, "retry_after": "10"}]
    short = _claimed(429, seen, "rate_limit").model_copy(update={"retry_after_s": 1.2})
    assert with_proxy_evidence(short, proxied=True).retry_after_s == 10.0
    longer = _claimed(429, seen, "rate_limit").model_copy(update={"retry_after_s": 30.0})
    assert with_proxy_evidence(longer, proxied=True).retry_after_s == 30.0  # the CLI's own longer backoff stays


def test_the_proxys_own_answer_for_an_endpoint_it_could_not_reach_is_unreachable() -> None:
    """Claude Code reports the proxy's 502 for a refused connection as the endpoint's API 502."""
    from rubricgate.agents.ending import with_proxy_evidence

    down = [{"host": "127.0.0.1", "port": 9, "kind": "http", "outcome": "unreachable", "detail": "connection refused"}]
    t = with_proxy_evidence(_claimed(502, down), proxied=True)
    assert t.failure == "unreachable" and "127.0.0.1:9 unreachable (connection refused)" in t.evidence


def _timed_out(*network):
    from rubricgate.isolation.process import ProcessResult as _Proc

    proc = _Proc(exit_code=-9, timed_out=True, stdout_truncated=False, stderr_tail="", duration_s=60.0,
                 network=list(network))
    return finish(Draft(agent="codex", steps=2), proc, version=None)


def test_a_timeout_while_a_relayed_model_request_had_no_answer_is_the_endpoint_s() -> None:
    """timeout_s <= idle_timeout_s and a hung endpoint: the run reached the wall clock first and the
    trial was graded as the reviewer's timeout (a REGRESSION)."""
    from rubricgate.graders.failures import is_infra_failure
    from rubricgate.isolation.proxy import Connection

    hung = Connection("127.0.0.1", 8080, "http", "relayed", sent=900, at_s=12.0, duration_s=47.5)
    t = _timed_out(Connection("127.0.0.1", 8080, "http", "relayed", status=200, at_s=1.0, duration_s=3.0), hung)
    assert t.failure == "unreachable" and is_infra_failure(t)
    assert "had no answer" in t.error and "127.0.0.1:8080" in t.evidence
    tunnel = Connection("api.example.com", 443, "tunnel", "relayed", sent=1200, received=0, at_s=20.0, duration_s=39.0)
    assert _timed_out(tunnel).failure == "unreachable"


def test_a_timeout_after_an_answer_or_with_no_request_open_is_the_reviewer_s() -> None:
    from rubricgate.isolation.proxy import Connection

    answered = Connection("127.0.0.1", 8080, "http", "relayed", status=200, at_s=12.0, duration_s=47.5)
    closed = Connection("127.0.0.1", 8080, "http", "relayed", at_s=1.0, duration_s=2.0)  # ended long before
    reused = Connection("api.example.com", 443, "tunnel", "relayed", sent=5000, received=4000, at_s=1.0,
                        duration_s=58.5)  # a tunnel that carried answers: no telling
    refused = Connection("10.0.0.1", 80, "http", "refused", at_s=50.0, duration_s=9.0)
    for network in ((answered,), (closed,), (reused,), (refused,), ()):
        t = _timed_out(*network)
        assert t.failure == "timeout" and t.termination == "timeout", network
