"""Failure classes: why an agent run did not complete, decided by what the harness observed.

The adapters set a transcript's class with its evidence (agents/ending.py); the graders and
the retry policy read it (graders/failures.py). docs/agents.md has the table per CLI.

The infrastructure's (retried under agent.retries, then `errored`, judged by no grader):
- signal: the CLI died by a signal rubricgate did not send (exit -N, or 128 + N through the sandbox);
- unreachable: the endpoint could not be reached (refused, reset, DNS, the CLI's reconnect
  notices), or the agent printed nothing for agent.idle_timeout_s;
- endpoint: the endpoint answered with an error (5xx, 529 overloaded, a 4xx other than the next two);
- rate_limit: 429 (its retry-after is honoured by the next attempt);
- auth: 401/403, or a CLI that says it is not logged in;
- start: the CLI did not start, or ended before any model turn without saying why;
- malformed_event: a line of the CLI's event stream began as (or held) an event and did not parse (the event,
  a tool call say, is missing from what is graded), or the stream ended mid-event before its result
  while rubricgate neither stopped nor capped it, or Claude Code's ended after a model turn at exit 0
  without the result event it always writes;
- harness: rubricgate's own adapter failed, or the run was interrupted.
The reviewer's (graded):
- timeout: still working at agent.timeout_s; max_turns: the turn limit;
- sandbox_limit: a sandbox limit reached; stopped: a harness stop (a forbidden tool, the output cap);
- agent_error: an abnormal end after a model turn with no infrastructure evidence.
"""

import re
from typing import Literal, get_args

InfraFailure = Literal["signal", "unreachable", "endpoint", "rate_limit", "auth", "start", "malformed_event", "harness"]
ReviewerFailure = Literal["timeout", "max_turns", "sandbox_limit", "stopped", "agent_error"]
FailureClass = Literal[InfraFailure, ReviewerFailure]
INFRA_FAILURES: frozenset[str] = frozenset(get_args(InfraFailure))
FAILURE_CLASSES: tuple[str, ...] = (*get_args(InfraFailure), *get_args(ReviewerFailure))

# What a CLI's error says when the endpoint refused the key, limited the rate, or was not reached.
_AUTH_WORDS = re.compile(r"not logged in|unauthori[sz]ed|forbidden|authentication|invalid.{0,20}api[- _]?key|"
                         r"incorrect api key", re.I)
_RATE_WORDS = re.compile(r"rate.?limit|too many requests", re.I)
_UNREACHABLE_WORDS = re.compile(r"econnrefused|connection refused|unable to connect|cannot connect|could not connect|"
                                r"connection (?:reset|closed|error)|enotfound|getaddrinfo|error sending request|"
                                r"stream disconnected|fetch failed|network|dns|socket hang up|reconnecting", re.I)
_STATUS = re.compile(r"\b(?:API(?: error)?|status|statusCode)[ :=]*([1-5]\d\d)\b", re.I)


def endpoint_failure(status: int | None, error: str) -> FailureClass:
    """The class of an endpoint error a CLI reported: by its HTTP status when it gave one (401/403
    auth, 429 rate_limit, any other endpoint), else by its words."""
    if status is None:
        found = _STATUS.search(error)
        status = int(found.group(1)) if found else None
    if status in (401, 403) or (status is None and _AUTH_WORDS.search(error)):
        return "auth"
    if status == 429 or (status is None and _RATE_WORDS.search(error)):
        return "rate_limit"
    if status is None and _UNREACHABLE_WORDS.search(error):
        return "unreachable"
    return "endpoint"


def derived_failure(termination: str, steps: int, error: str, api_status: int | None = None) -> FailureClass:
    """The class of a run whose adapter recorded none (a transcript written before the classes,
    an adapter outside agents/): from its termination, turns and error line."""
    if termination == "api_error":
        return endpoint_failure(api_status, error)
    if termination in ("timeout", "max_turns"):
        return termination  # type: ignore[return-value]
    return "start" if steps == 0 else "agent_error"
