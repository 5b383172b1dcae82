"""How a CLI's process ended, and what class of failure that is: the step every adapter shares.

`finish` folds what the process runner observed (a start failure, the timeout, a sandbox limit,
the output cap, a stop of rubricgate's, a signal, an exit status) into the adapter's `Draft` and
builds the `Transcript`. What rubricgate did to the process comes first and explains everything
after it; then what happened to it by itself. "Exit status is not a verdict": an error exit with a
final answer keeps its answer, a clean exit with no answer is still an error, and a crash, a
signal or an endpoint that failed is classed as such (models/failures.py), never as the
reviewer's wrong verdict. `with_proxy_evidence` adds what the sandbox's proxy saw of the endpoint.
"""

from __future__ import annotations

import re
import signal
from typing import TYPE_CHECKING, Any

from rubricgate import boundary
from rubricgate.agents.normalize import ENDPOINT_STOP, INFRA_STOPS, Draft, one_line
from rubricgate.models.failures import INFRA_FAILURES, FailureClass, derived_failure, endpoint_failure

if TYPE_CHECKING:
    from rubricgate.isolation.process import ProcessResult
    from rubricgate.isolation.proxy import Connection
    from rubricgate.models.transcript import Transcript

_RETRY_AFTER_IN_STOP = re.compile(r"retry after (\d+(?:\.\d+)?) s")
_API_STATUS_IN_STOP = re.compile(r"API ([1-5]\d\d)\b")


def signal_of(exit_code: int | None) -> tuple[str, str] | None:
    """(signal name, how the status shows it) when an exit status says a signal ended the process:
    -N from the process itself, 128 + N relayed by bubblewrap, a shell or a wrapper that re-raises."""
    if exit_code is None or exit_code == 0:
        return None
    number = -exit_code if exit_code < 0 else exit_code - 128
    if not 0 < number < 65 or 0 < exit_code <= 128:
        return None
    try:
        name = signal.Signals(number).name
    except ValueError:
        return None
    return name, (f"exit {exit_code} = 128 + {number}" if exit_code > 0 else f"exit status {exit_code}")


def finish(draft: Draft, proc: ProcessResult, *, version: str | None) -> Transcript:
    """Fold the process outcome into the draft and build the normalized Transcript."""
    from rubricgate.models.transcript import NetworkConnection, Transcript, Usage

    _apply_process(draft, proc)
    _check_amounts(draft)
    return Transcript(
        agent=draft.agent, agent_version=version, model=draft.model, steps=draft.steps,
        tool_calls=draft.tool_calls, final_text=draft.final_text,
        usage=Usage(input_tokens=draft.input_tokens if draft.tokens_known else None,
                    output_tokens=draft.output_tokens if draft.tokens_known else None, cost_usd=draft.cost_usd),
        termination=draft.termination, exit_code=proc.exit_code,
        duration_s=round(proc.duration_s, 3), skipped_lines=draft.skipped_lines,
        output_truncated=proc.stdout_truncated, error=draft.error, failure=draft.failure, evidence=draft.evidence,
        signal=draft.signal, api_status=draft.api_status, retry_after_s=draft.retry_after_s,
        reported_turns=draft.reported_turns, notes=draft.notes,
        network=[NetworkConnection(**vars(c)) for c in proc.network], network_omitted=proc.network_omitted,
    )


def _check_amounts(draft: Draft) -> None:
    """A cost or token count the CLI reported that is not a finite amount >= 0 (-1e9, NaN) is
    unknown, never charged or summed: the check `merge` applies to a shard's (boundary.is_amount)."""
    if draft.cost_usd is not None and not boundary.is_amount(draft.cost_usd):
        draft.notes.append(f"the CLI reported a cost of {draft.cost_usd!r}, not an amount: the cost is unknown")
        draft.cost_usd = None
    for name in ("input_tokens", "output_tokens"):
        value = getattr(draft, name)
        if not boundary.is_count(value):
            draft.notes.append(f"the CLI reported {name} {str(value)[:40]}, not a count: 0 kept")
            setattr(draft, name, 0)
    if draft.retry_after_s is not None and not boundary.is_amount(draft.retry_after_s):
        draft.retry_after_s = None  # a delay of -1 or NaN seconds: none asked for


def _apply_process(draft: Draft, proc: ProcessResult) -> None:
    """The process's end, with its failure class: what rubricgate did to it first (a start failure,
    a timeout, a stop explains everything after it), then what happened to it."""
    if not _ended_by_harness(draft, proc):
        _ended_by_itself(draft, proc)
        _malformed_events(draft, proc.exit_code)
    if draft.termination != "completed" and draft.failure is None:
        draft.failure = derived_failure(draft.termination, draft.steps, draft.error, draft.api_status)


def _ended_by_harness(draft: Draft, proc: ProcessResult) -> bool:
    """A start failure, the wall-clock timeout, a sandbox limit, the output cap or a stop."""
    if proc.start_error:
        draft.fail("crashed", proc.start_error, "start", "the program could not be started")
    elif proc.timed_out and (hung := unanswered_request(proc)) is not None:
        draft.termination = "timeout"
        draft.error = (f"killed after the wall-clock timeout ({proc.duration_s:.0f}s) while its model request to "
                       f"{hung.host}:{hung.port} had no answer")
        draft.failure = "unreachable"
        draft.evidence = (f"the sandbox's proxy relayed a request to {hung.host}:{hung.port} at {hung.at_s:.0f}s that "
                          "was still unanswered at agent.timeout_s (raise it above agent.idle_timeout_s)")
    elif proc.timed_out:
        draft.termination, draft.error = "timeout", f"killed after the wall-clock timeout ({proc.duration_s:.0f}s)"
        draft.failure, draft.evidence = "timeout", "still running at agent.timeout_s"
    elif proc.limit:  # the reviewer's own doing: a failure, never an infrastructure error
        draft.fail("crashed", f"{proc.limit}: {_last_line(proc.stderr_tail) or 'no output'}", "sandbox_limit",
                   f"exit {proc.exit_code} and its last stderr lines")
    elif proc.stdout_truncated and (proc.stopped.startswith("output_cap") or not proc.stopped):
        draft.fail("crashed", f"output exceeded the cap: stopped after {proc.stdout_bytes} bytes of stdout "
                              "(raise agent.output_cap_bytes if this output is expected)", "stopped",
                   f"{proc.stdout_bytes} bytes of stdout")
    elif proc.stopped.startswith(INFRA_STOPS):
        _infra_stop(draft, proc.stopped)
    elif proc.stopped:
        _mark_stopped_tool(draft, proc.stopped)
        interrupted = proc.stopped.startswith("interrupted")
        draft.fail("max_turns" if proc.stopped.startswith("max_turns") else "crashed",
                   f"stopped by rubricgate: {proc.stopped}",
                   "harness" if interrupted else "max_turns" if proc.stopped.startswith("max_turns") else "stopped",
                   f"rubricgate's stop: {proc.stopped}")
    else:
        return False
    return True


# How near the trial's end a connection's own end must be to count as still open when it was killed.
OPEN_AT_END_S = 2.0


def unanswered_request(proc: ProcessResult) -> Connection | None:
    """The model request a timed-out run was waiting on, when the sandbox's proxy shows one: its
    last relayed connection, still open at the end, with no answer (a plain http request with no
    response status; a tunnel that never received a byte). A hung endpoint outlasting the
    timeout is the endpoint's failure, not the reviewer's slowness (timeout_s <= idle_timeout_s
    made it a REGRESSION). A tunnel reused for an earlier answer cannot show it: a timeout then."""
    relayed = [c for c in proc.network if c.outcome == "relayed"]
    if not relayed:
        return None
    last = relayed[-1]
    still_open = last.at_s + last.duration_s >= proc.duration_s - OPEN_AT_END_S
    no_answer = last.status is None and (last.kind == "http" or last.received == 0)
    return last if still_open and no_answer else None


def _malformed_events(draft: Draft, exit_code: int | None) -> None:
    """A line of the event stream that began as an event and did not parse: what is graded may lack
    that event (a forbidden tool call cut by three characters read as two allowed reads and passed),
    so the run is the stream's failure, never graded. A signal before the result says more."""
    if draft.failure in INFRA_FAILURES:
        return
    if draft.malformed_lines:
        draft.termination, draft.failure = "crashed", "malformed_event"
        draft.error = (f"{draft.malformed_lines} line(s) of the CLI's event stream began as an event and did not "
                       "parse: an event (a tool call) may be missing from what would be graded")
        draft.evidence = f"{draft.malformed_lines} malformed event line(s) before the stream's last line"
    elif draft.cut_mid_event and not draft.saw_result:
        # rubricgate neither stopped nor capped it: the CLI's output was cut, by a crash its exit
        # status does not show (a wrapper's pipeline reports its last command's), never the reviewer.
        draft.termination, draft.failure = "crashed", "malformed_event"
        draft.error = ("the CLI's event stream ended in the middle of an event (truncated output) before its "
                       "result, while rubricgate neither stopped nor capped it: the CLI's output was cut")
        draft.evidence = f"the stream's last line began as an event and did not parse; exit {exit_code}"


def _infra_stop(draft: Draft, stopped: str) -> None:
    """rubricgate stopped a CLI that went silent, could not reach its endpoint, or would retry an
    error answer: the endpoint's class, its retry-after kept for the harness's retry."""
    # The reason quotes the CLI's log line (a carriage return, an escape): shown on one line.
    draft.termination, draft.error = "api_error", one_line(f"stopped by rubricgate: {stopped}")
    wait = _RETRY_AFTER_IN_STOP.search(stopped)
    if wait and draft.retry_after_s is None:
        draft.retry_after_s = float(wait.group(1))
    status = _API_STATUS_IN_STOP.search(stopped)
    draft.api_status = draft.api_status or (int(status.group(1)) if status else None)
    cls = endpoint_failure(draft.api_status, stopped) if stopped.startswith(ENDPOINT_STOP) else "unreachable"
    draft.failure, draft.evidence = cls, one_line(f"rubricgate's stop: {stopped}")


def _ended_by_itself(draft: Draft, proc: ProcessResult) -> None:
    """A signal rubricgate did not send, a stream that ended early, an error exit, no result."""
    killed = signal_of(proc.exit_code)
    if killed is not None and not draft.saw_result:
        name, how = killed
        draft.termination, draft.error, draft.signal = "crashed", f"killed by {name} ({how})", name
        draft.failure, draft.evidence = "signal", f"{how} after {draft.steps} model turn(s); rubricgate sent no signal"
    elif draft.ending is not None:
        # A stream that ended at the CLI's turn limit is the limit's; any other early end is a start
        # failure before the first turn and the reviewer's own after it.
        cls: FailureClass = "max_turns" if draft.ending[0] == "max_turns" else \
            "start" if draft.steps == 0 else "agent_error"
        draft.fail(*draft.ending, failure=cls,
                   evidence=f"the stream ended early after {draft.steps} model turn(s), exit {proc.exit_code}")
    elif proc.exit_code not in (0, None) and not draft.saw_result:
        draft.fail("crashed", f"exit {proc.exit_code}: {_last_line(proc.stderr_tail) or 'no output'}",
                   "start" if draft.steps == 0 else "agent_error",
                   f"exit {proc.exit_code} after {draft.steps} model turn(s) with no error record")
    elif _cut_between_events(draft, proc.exit_code):
        # A clean exit after model turns with no result, a record this CLI always writes: its output
        # was cut (a wrapper's pipeline exits 0), not its answer; neither "did not start" nor the reviewer's.
        draft.fail("crashed", f"the CLI's event stream stopped after {draft.steps} model turn(s) without its result "
                              "event, at exit 0: its output was cut", "malformed_event",
                   f"no result event after {draft.steps} model turn(s); exit 0")
    elif not draft.saw_result and not draft.final_text:
        draft.fail("crashed", "the agent produced no result", "start" if draft.steps == 0 else "agent_error",
                   f"exit {proc.exit_code} after {draft.steps} model turn(s) with no result")


def _cut_between_events(draft: Draft, exit_code: int | None) -> bool:
    """Events of a CLI that always ends with its result stopped, between two events, after a model
    turn at exit 0 (a line cut mid-event, or malformed, is said more exactly by _malformed_events)."""
    whole_lines = not draft.cut_mid_event and not draft.malformed_lines
    return draft.result_always and not draft.saw_result and draft.steps > 0 and exit_code == 0 and whole_lines


def with_proxy_evidence(transcript: Transcript, proxied: bool) -> Transcript:
    """What the sandbox's proxy saw (Transcript.network; `proxied`: every connection of the run
    went through it) added to the endpoint failure the CLI reported: the endpoint's status and
    Retry-After where the harness sees them (plain http), and a claimed answer no request ever
    asked for - an API status reported while nothing reached any endpoint - is the reviewer's own
    doing (agent_error), not an outage's."""
    if transcript.failure not in ("endpoint", "rate_limit", "auth", "unreachable") or not proxied:
        return transcript
    relayed = [c for c in transcript.network if c.outcome == "relayed"]
    if not relayed and transcript.network:
        # The proxy answered for an endpoint it could not reach or may not reach (the CLI reports
        # the proxy's 502 or 403 as the endpoint's).
        failed = transcript.network[-1]
        said = (f"{transcript.evidence}; the sandbox's proxy relayed no request: {failed.host}:{failed.port} "
                f"{failed.outcome} ({failed.detail})")
        return transcript.model_copy(update={"failure": "unreachable", "evidence": one_line(said)})
    if transcript.api_status is not None and not transcript.network and not transcript.network_omitted:
        said = (f"the CLI reported the endpoint's answer API {transcript.api_status}, but no request of this run "
                "reached an endpoint (the sandbox's proxy relayed none)")
        return transcript.model_copy(update={"failure": "agent_error", "evidence": said})
    answered = [c for c in relayed if c.status is not None and c.status >= 400]
    if not answered:
        return transcript
    last = answered[-1]
    wait = _seconds(last.retry_after)
    update: dict[str, Any] = {"evidence": one_line(f"{transcript.evidence}; the sandbox's proxy saw {last.host}:"
                                                    f"{last.port} answer {last.status}"
                                                    + (f" with Retry-After {last.retry_after}"
                                                       if last.retry_after else ""))}
    if transcript.api_status is None:
        update["api_status"] = last.status
    # The endpoint's own Retry-After, as the proxy saw it, is the least the harness's retry waits:
    # a CLI may report one failed request twice, a second apart (Copilot CLI), and its gap is no wait.
    if wait is not None and (transcript.retry_after_s is None or wait > transcript.retry_after_s):
        update["retry_after_s"] = wait
    return transcript.model_copy(update=update)


def _seconds(retry_after: str | None) -> float | None:
    """A Retry-After in seconds (its HTTP-date form is not used by model APIs: None)."""
    try:
        return max(0.0, float(retry_after)) if retry_after is not None else None
    except ValueError:
        return None


def _mark_stopped_tool(draft: Draft, reason: str) -> None:
    """A watch stop "tool_denied: NAME ..." denies the last call to NAME: the harness refused it."""
    if not reason.startswith("tool_denied:"):
        return
    words = reason.split()
    name = words[1] if len(words) > 1 else ""
    for call in reversed(draft.tool_calls):
        if call.name == name:
            call.status = "denied"
            return


_SAYS_ERROR = re.compile(r"\berror\b|not supported|failed|denied|invalid|cannot|unable", re.IGNORECASE)


def _last_line(text: str) -> str:
    """What a failed CLI said last; led by its last line naming an error when advice follows it
    (Copilot: "Error: Classic Personal Access Tokens (ghp_) are not supported ..." then "• Unset
    GITHUB_TOKEN and ...": the advice alone hid the cause)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    cause = next((ln for ln in reversed(lines) if _SAYS_ERROR.search(ln)), lines[-1])
    return one_line(cause if cause is lines[-1] else f"{cause.strip()} {lines[-1].strip()}")
