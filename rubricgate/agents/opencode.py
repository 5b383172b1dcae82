"""OpenCode (`opencode run --format json`) adapter and its event-stream parser.

Facts verified against opencode 1.18.33 driven by tests/e2e/openai_server.py:
- One JSON object a line: `step_start`, `tool_use`, `text`, `step_finish`, `error`, each with a
  `part`. A model turn is one `step_start`; `step_finish.part` carries `reason` ("tool-calls"
  or "stop"), `tokens` and `cost`. There is no end-of-run event: a last `step_finish` whose
  reason is not "tool-calls" is the end of a finished run.
- A tool call appears once, finished: `part.tool`, `part.state.{status,input,output|error}`.
  Under a config that offers OpenCode's `invalid` tool, a call to an unavailable tool is
  reported as tool "invalid", status completed, with the real name in `state.input.tool`.
- A run that ends with a last `step_finish` reason "tool-calls" did not finish (a permission
  set to "ask" ends a non-interactive run that way, exit 0).
  A tool removed by the permission config is not offered to the model; a call to it anyway
  comes back as status "error", "Model tried to call unavailable tool".
- The agent `steps` limit is soft (it asks the model to wrap up), so the harness counts
  `step_start` lines itself and kills the run on the first step past max_steps.
- Model API errors: 5xx and rate limits are retried 5 times (honouring retry-after-ms), then
  an `error` event `{name: "APIError", data: {message, statusCode}}` and exit 1; a broken SSE
  stream ends with `{name: "UnknownError"}` and exit 1.
- A permission set to "ask" would end a non-interactive run, so every permission is an
  explicit allow or deny.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.normalize import (
    Draft,
    count_or_zero,
    fail_if_truncated,
    feed_stream,
    field_dict,
    line_event,
    mark_not_allowed,
    retry_stop,
)
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat, Tested
from rubricgate.suite.agent_context import CONTEXT_FILES

if TYPE_CHECKING:
    from rubricgate.isolation.process import ProcessResult, Watch
    from rubricgate.models.transcript import ToolStatus

SPEC = CliSpec(
    name="opencode", adapter="OpenCodeAgent", title="OpenCode", binary="opencode", package="opencode-ai",
    # Without OPENAI_BASE_URL it talks to whichever provider its own configuration names.
    endpoint=Endpoint("OPENAI_API_KEY", "OPENAI_BASE_URL", "the provider in opencode's configuration"),
    format=StreamFormat("opencode", "rubricgate.agents.opencode:parse_opencode_stream",
                        "rubricgate.agents.opencode:step_limit_watch"),
    context_files=CONTEXT_FILES["opencode"],
    tested=Tested("1.18.33", "1.18.33", "native binary in an optional dependency; its grep tool needs ripgrep on PATH"),
)

# Normalized name -> OpenCode permission key (write and patch are governed by "edit").
OPENCODE_PERMISSIONS = {"read": "read", "grep": "grep", "glob": "glob", "list": "list",
                        "bash": "bash", "write": "edit", "edit": "edit", "webfetch": "webfetch",
                        "websearch": "websearch", "task": "task", "todowrite": "todowrite"}
PROVIDER_ID = "rubricgate"  # the custom provider used when OPENAI_BASE_URL is set
_DENIAL_MARKERS = ("unavailable tool", "prevents you from using", "permission", "rejected", "denied")
_API_ERRORS = {"APIError", "ProviderAuthError", "UnknownError"}
_STREAM_ERROR = re.compile(r'timestamp=(\S+) .*message="stream error"')
# What the endpoint said: a request that failed is logged `error.error="AI_APICallError: ..."`; an
# error event inside a stream that began 200 OK, as its fields (`error.error.message="..."
# error.error.type=server_error error.error.code=500`).
_ERROR_SAID = (re.compile(r'error\.error\.message="((?:[^"\\]|\\.)*)"'), re.compile(r'error\.error="(.*?)"?\s*$'))
_ERROR_CODE = re.compile(r"error\.error\.(?:code|status)=(\d{3})\b")
# A step_finish reason OpenCode gives a model stream that ended without a finish reason (the
# stream stopped short, or the provider sent a reason the AI SDK does not know).
BROKEN_STEP = "unknown"
BROKEN_SAID = "the model's stream ended without a finish reason"
_UNREACHABLE = re.compile(r"cannot connect|unable to connect|econnrefused|connection refused|fetch failed", re.I)

# No update checks, model catalogue downloads, sharing, LSP downloads, or reading the user's
# Claude Code files: a run talks only to the configured model.
QUIET_ENV = {name: "1" for name in (
    "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS", "OPENCODE_DISABLE_PROJECT_CONFIG", "OPENCODE_DISABLE_PRUNE")}


class OpenCodeAgent(CliAgent):
    """Drives the real `opencode` CLI in `run` mode with a generated opencode.json."""

    spec = SPEC
    name = SPEC.name
    binary = SPEC.binary

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """opencode run --format json [-m provider/model] -- PROMPT, its errors logged to stderr
        (where stderr_watch sees a failing endpoint at once: OpenCode retries it silently)."""
        args = [self.executable(), "run", "--format", "json", "--pure", "--print-logs", "--log-level", "ERROR"]
        model = self.model_ref(request)
        if model:
            args += ["-m", model]
        # `--` keeps a prompt that starts with "-" (frontmatter) from being read as options.
        return args + list(request.extra_args) + ["--", prompt]

    def agent_env(self, request: AgentRequest) -> dict[str, str]:
        return {**QUIET_ENV, "OPENCODE_CONFIG": str(request.agent_view(config_path(request)))}

    def execute(self, request: AgentRequest, argv: list[str]) -> ProcessResult:
        """Write the run's opencode.json (allowlist, steps, provider), then run."""
        request.write_scratch(config_path(request), json.dumps(self.opencode_config(request), indent=2))
        return super().execute(request, argv)

    def model_ref(self, request: AgentRequest) -> str | None:
        """provider/model: our custom provider's id when a base URL is given."""
        model = request.model or self.config.model
        if request.env.get("OPENAI_BASE_URL"):
            return f"{PROVIDER_ID}/{(model or 'default').split('/')[-1]}"
        return model

    def opencode_config(self, request: AgentRequest) -> dict[str, Any]:
        """The opencode.json for one run."""
        # The title agent asks the model for a session title on every run (a request of some
        # 2,000 tokens that no stream event shows): nobody reads a throwaway session's title.
        cfg: dict[str, Any] = {"$schema": "https://opencode.ai/config.json", "autoupdate": False,
                               "share": "disabled", "permission": permissions(request.allowed_tools),
                               "agent": {"title": {"disable": True}}}
        if request.max_steps is not None:
            # OpenCode's own (soft) form of the limit; watch() is the hard one.
            cfg["agent"]["build"] = {"steps": request.max_steps}
        base_url = request.env.get("OPENAI_BASE_URL")
        model = self.model_ref(request)
        if base_url and model:
            cfg["provider"] = {PROVIDER_ID: custom_provider(base_url, model.split("/", 1)[1])}
        if model:
            cfg["model"] = cfg["small_model"] = model
        return cfg

    def watch(self, request: AgentRequest) -> Watch | None:
        return step_limit_watch(request.max_steps)

    def stderr_watch(self, request: AgentRequest) -> Watch | None:
        return stream_error_watch()

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        draft = parse_opencode_stream(data, agent=self.name, allowed=request.allowed_tools)
        draft.model = draft.model or self.model_ref(request)
        if request.env.get("OPENAI_BASE_URL") and draft.cost_usd is not None:
            # Our custom provider has no prices: OpenCode reports a cost of 0 for every step, which
            # is no price at all, not a free run (--max-cost must not count it as one).
            draft.cost_usd = None
        return draft


def config_path(request: AgentRequest) -> Path:
    return request.scratch / "opencode" / "opencode.json"


def permissions(allowed: list[str] | None) -> dict[str, str]:
    """Deny everything, then allow the allowlist; no allowlist allows all (never "ask")."""
    if allowed is None:
        return {"*": "allow"}
    perms = {"*": "deny", "external_directory": "deny"}
    for name in allowed:
        perms[OPENCODE_PERMISSIONS.get(name, name)] = "allow"
    return perms


def custom_provider(base_url: str, model_id: str) -> dict[str, Any]:
    """An OpenAI-compatible provider; the key comes from OPENAI_API_KEY when one is set."""
    return {"npm": "@ai-sdk/openai-compatible", "name": PROVIDER_ID,
            "options": {"baseURL": base_url, "apiKey": "{env:OPENAI_API_KEY}"},
            "models": {model_id: {"name": model_id}}}


def step_limit_watch(max_steps: int | None, allowed: list[str] | None = None) -> Watch:
    """Stop the run at the first step past max_steps (OpenCode's own limit is soft), or at its
    second step whose stream ended without a finish reason: OpenCode records such a step (reason
    "unknown", no tokens) and asks the model again at once, for ever, so a model server that cuts
    its streams short would run the reviewer into its step limit. Such a step is the endpoint's,
    not the reviewer's: it is not counted, and a second one is an endpoint failure. Tools outside
    `allowed` are removed by the permission config, not watched."""
    seen = {"step_start": 0, "broken": 0}

    def watch(line: bytes) -> str | None:
        ev = (line_event(line) if b'"step_' in line else None) or {}
        kind = ev.get("type")
        if kind == "step_finish" and field_dict(ev, "part").get("reason") == BROKEN_STEP:
            seen["broken"] += 1
            return broken_stream_stop() if seen["broken"] >= 2 else None
        if kind == "step_start":
            seen["step_start"] += 1
            steps = seen["step_start"] - seen["broken"]
            if max_steps is not None and steps > max_steps:
                return f"max_turns: step {steps} exceeds max_steps {max_steps}"
        return None

    return watch


def broken_stream_stop() -> str:
    """The stop reason for OpenCode asking the model again after a second stream cut short."""
    return retry_stop("opencode", None, BROKEN_SAID, None, answered=True, leave_short=False) or ""


def stream_error_watch() -> Watch:
    """Stop at OpenCode's second "stream error" log line of the main agent in a run.

    With its endpoint failing, opencode 1.18.33 retries five times, 2 to 30 s apart (a retry-after
    sets the wait), printing nothing on stdout: about 70 s before its error event against a dead
    server. Each failed request logs `level=ERROR ... message="stream error" ... small=false ...
    error.error="AI_APICallError: <what the endpoint said>"`, and a stream that began 200 OK and
    then carried an error event, the event's fields (`error.error.message=...`, a step of its own
    on stdout each time it is retried). One may be a blip its first retry
    recovers from; a second is an outage. The wait between the two (its backoff, or the
    endpoint's retry-after) is the least the harness's retry waits."""
    seen: list[datetime] = []

    def watch(line: bytes) -> str | None:
        if b'"stream error"' not in line or b"small=true" in line:
            return None
        text = line.decode("utf-8", errors="replace")
        found = _STREAM_ERROR.search(text)
        if found is None:
            return None
        seen.append(_log_time(found.group(1)))
        if len(seen) < 2:
            return None
        said = next((m.group(1) for m in (r.search(text) for r in _ERROR_SAID) if m), "stream error")
        code = _ERROR_CODE.search(text)
        return retry_stop("opencode", int(code.group(1)) if code else None, said[:200],
                          (seen[-1] - seen[-2]).total_seconds(), answered=not _UNREACHABLE.search(said),
                          leave_short=False)

    return watch


def _log_time(stamp: str) -> datetime:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(UTC)


def parse_opencode_stream(data: bytes | str, *, agent: str = "opencode",
                          allowed: list[str] | None = None) -> Draft:
    """OpenCode `run --format json` events -> Draft."""
    state = feed_stream(data, agent, _OpenCodeState)
    fail_if_truncated(state.draft, data)
    mark_not_allowed(state.draft, allowed)
    return state.draft


class _OpenCodeState:
    """Walks the events once, tracking the current step and the last thing the model said."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.last_text = ""
        self.last_reason = ""
        self.step_tools = 0  # tool calls of the current step
        self.broken = 0  # steps whose stream ended without a finish reason

    def feed(self, ev: dict[str, Any]) -> None:
        part = field_dict(ev, "part")
        kind = ev.get("type")
        if kind == "step_start":
            self.draft.steps += 1
            self.step_tools = 0
            self.last_reason = ""
            self.last_text = ""  # only the final step's text is the answer
        elif kind == "tool_use":
            self._tool(part)
        elif kind == "text" and str(part.get("text", "")).strip():
            self.last_text = str(part["text"])
        elif kind == "step_finish":
            self._finish_step(part)
        elif kind == "error":
            self._error(ev.get("error"))

    def _tool(self, part: dict[str, Any]) -> None:
        self.step_tools += 1
        state = field_dict(part, "state")
        name, status, args = str(part.get("tool", "")), tool_status(state), state.get("input") or {}
        if name == "invalid" and isinstance(args, dict) and isinstance(args.get("tool"), str) and args["tool"]:
            # OpenCode rewrites a call to a tool it does not offer into its `invalid` tool, which
            # "completes" with an error text. The reviewer still tried to call the real tool.
            name, status = args["tool"], "denied"
        call = self.draft.add_tool(name, args, max(self.draft.steps, 1), status)
        output = state.get("output") if state.get("output") is not None else state.get("error")
        if output is not None:
            call.keep_result(output if isinstance(output, str) else json.dumps(output, ensure_ascii=False))

    def _finish_step(self, part: dict[str, Any]) -> None:
        self.last_reason = str(part.get("reason") or "")
        if self.last_reason == BROKEN_STEP and not self.step_tools:
            # The endpoint's broken stream, asked again by OpenCode: not a step of the reviewer's.
            self.draft.steps -= 1
            self.broken += 1
        tokens = field_dict(part, "tokens")
        cache = field_dict(tokens, "cache")
        self.draft.input_tokens += (count_or_zero(tokens.get("input")) + count_or_zero(cache.get("read"))
                                    + count_or_zero(cache.get("write")))
        self.draft.output_tokens += count_or_zero(tokens.get("output")) + count_or_zero(tokens.get("reasoning"))
        cost = part.get("cost")
        if isinstance(cost, (int, float)):
            self.draft.cost_usd = (self.draft.cost_usd or 0.0) + float(cost)

    def _error(self, err: Any) -> None:
        err = err if isinstance(err, dict) else {}
        name = str(err.get("name") or "error")
        data = field_dict(err, "data")
        status = data.get("statusCode")
        message = str(data.get("message") or name)
        text = f"{name} {status}: {message}" if status else f"{name}: {message}"
        if name in _API_ERRORS:
            code = status if isinstance(status, int) and not isinstance(status, bool) else None
            self.draft.endpoint_error(text, code,
                                      f"the CLI's error event {name}" + (f" statusCode {status}" if status else ""))
        else:
            self.draft.fail("crashed", text, "agent_error", f"the CLI's error event {name}")
        self.draft.retry_after_s = retry_after_header(data.get("responseHeaders"))

    def close(self) -> None:
        """A run is finished when its last step ended for a reason other than more tool calls."""
        d = self.draft
        d.final_text = self.last_text
        if self.broken:
            d.notes.append(f"{self.broken} model stream(s) ended without a finish reason (OpenCode's step reason "
                           f"\"{BROKEN_STEP}\"): the endpoint's, not counted as steps")
        if self.last_reason == BROKEN_STEP:
            # Its last answer was cut short: no answer of the reviewer's, whatever text came first.
            d.endpoint_error(f"opencode: {BROKEN_SAID}", None, f"the CLI's last step_finish has reason {BROKEN_STEP}")
        d.saw_result = d.termination == "completed" and self.last_reason not in ("", "tool-calls")
        if self.last_reason == "tool-calls":
            # The model asked for tools and the CLI stopped (a permission set to "ask" ends a
            # non-interactive run): the run did not complete, whatever text came before.
            d.ended_early("crashed", "the run ended after a step that asked for tool calls (finish reason tool-calls); "
                              "a permission set to \"ask\" ends a non-interactive run")


def retry_after_header(headers: Any) -> float | None:
    """The model API's own retry delay (retry-after-ms, else retry-after seconds), if it sent one."""
    headers = {str(k).lower(): v for k, v in headers.items()} if isinstance(headers, dict) else {}
    for key, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return float(headers[key]) / scale
        except (KeyError, TypeError, ValueError):
            continue
    return None


def tool_status(state: dict[str, Any]) -> ToolStatus:
    """completed -> ok; an error that says the tool was withheld or refused -> denied."""
    status = str(state.get("status") or "")
    if status == "completed":
        return "ok"
    message = str(state.get("error") or "").lower()
    return "denied" if any(m in message for m in _DENIAL_MARKERS) else "error"

