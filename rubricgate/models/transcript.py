"""The normalized transcript every agent adapter produces."""

from typing import Annotated, Any, Literal

from pydantic import Field

from rubricgate.models.base import StrictModel, known_format
from rubricgate.models.failures import FailureClass

Termination = Literal["completed", "max_turns", "api_error", "timeout", "crashed"]
ToolStatus = Literal["ok", "error", "denied"]


# How an error starts when the reviewer reached a sandbox limit (isolation/limits.py): the
# reviewer's failure, graded, never an infrastructure error (graders/failures.py).
LIMIT_REACHED = "the reviewer reached the sandbox's "

# Format 2 keeps what each tool returned (ToolCall.result); format 1 files read unchanged, their
# calls with no result.
TRANSCRIPT_FORMAT = 2
# A tool result is kept up to this many characters: enough to see what the reviewer read or
# what a command printed, while a run that reads large files keeps its transcripts small.
MAX_RESULT_CHARS = 4000


class ToolCall(StrictModel):
    raw_name: str
    name: str  # normalized: read, grep, glob, bash, write, edit, mcp__server__tool kept whole
    input: dict[str, Any] = {}
    status: ToolStatus = "ok"
    step: int = 0  # 1-based model turn that issued it (0 = unknown)
    result: str | None = None  # what the tool returned, as text (None: the stream does not show it)
    result_cut: int = 0  # characters of the result left out past MAX_RESULT_CHARS

    def keep_result(self, text: str) -> None:
        """Store what the tool returned, capped at MAX_RESULT_CHARS (the rest is counted)."""
        self.result = text[:MAX_RESULT_CHARS]
        self.result_cut = max(0, len(text) - MAX_RESULT_CHARS)


class Usage(StrictModel):
    # Amounts (finite, >= 0): adapters check what a CLI reports before it gets here
    # (agents/ending.py), so a stored transcript claiming -1e9 or NaN is refused on reading.
    # A token count is None when the CLI reported none (unknown, never a made-up 0).
    input_tokens: int | None = Field(default=0, ge=0)
    output_tokens: int | None = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class Attempt(StrictModel):
    """One try at running the agent for a trial; infrastructure failures are retried."""

    termination: Termination = "completed"
    error: str = ""
    exit_code: int | None = 0
    duration_s: float = 0.0
    waited_s: float = 0.0  # backoff slept before this attempt
    infra: bool = False  # failed for infrastructure reasons (API, auth, missing CLI, crash before a turn)
    failure: FailureClass | None = None  # its failure class (Transcript.failure)


class NetworkConnection(StrictModel):
    """One connection a sandboxed reviewer made through rubricgate's proxy (isolation/proxy.py):
    where to, what became of it, and what the endpoint answered where the harness sees it (a
    plain http response; a tunnel's traffic is encrypted). Never a header value, path or body."""

    host: str
    port: int
    kind: Literal["tunnel", "http"]  # CONNECT (https), or a plain http request forwarded
    # relayed: connected; refused: not in the allowlist (or a name resolving to loopback);
    # unreachable: the endpoint (or the user's upstream proxy) could not be reached; bad_request:
    # not a request the proxy relays.
    outcome: Literal["relayed", "refused", "unreachable", "bad_request"]
    detail: str = ""  # why it was refused or unreachable: "connection refused", "cannot resolve ..."
    status: int | None = None  # the endpoint's HTTP status (plain http only)
    retry_after: str | None = None  # the endpoint's Retry-After header (plain http only)
    sent: int = 0  # bytes from the reviewer to the endpoint
    received: int = 0  # bytes from the endpoint to the reviewer
    at_s: float = 0.0  # seconds after the trial's sandbox was set up
    duration_s: float = 0.0


class Transcript(StrictModel):
    format_version: Annotated[int, known_format(TRANSCRIPT_FORMAT)] = TRANSCRIPT_FORMAT
    agent: str
    agent_version: str | None = None
    model: str | None = None
    steps: int = 0
    tool_calls: list[ToolCall] = []
    final_text: str = ""
    usage: Usage = Field(default_factory=Usage)
    termination: Termination = "completed"
    exit_code: int | None = 0
    duration_s: float = 0.0
    skipped_lines: int = 0  # non-JSON lines in the native stream
    output_truncated: bool = False
    error: str = ""  # one line: why the run ended abnormally
    # The failure's class and what the harness observed that decided it ("exit 139 = 128 + SIGSEGV",
    # "the CLI's result event: api_error_status 529"); None on a run that completed, and on
    # transcripts written before the classes existed (graders/failures.py derives one).
    failure: FailureClass | None = None
    evidence: str = ""
    signal: str | None = None  # the signal that ended the CLI ("SIGSEGV"), when one did
    api_status: int | None = None  # the HTTP status of the endpoint's error answer, as the CLI reported it
    retry_after_s: float | None = None  # a retry delay the CLI itself reported (rate limit, overload)
    reported_turns: int | None = None  # the CLI's own turn count (Claude num_turns), a cross-check
    notes: list[str] = []  # e.g. a CLI count below the turns the stream shows
    attempts: list[Attempt] = []  # every attempt of this trial, last one included
    # The last attempt's connections through the sandbox's proxy (agent.sandbox_network:
    # allowlist), in order: the latest isolation/proxy.py's MAX_LOGGED, `network_omitted` the earlier ones.
    network: list[NetworkConnection] = []
    network_omitted: int = 0
