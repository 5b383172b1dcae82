"""Snowflake Cortex Code (`cortex exec`) adapter.

The invocation follows the seed's verified recipe: `--file` for the prompt, `--allowed` as the
hard tool allowlist (lowercase names), `--no-mcp --no-history --bypass`, `--max-turns`, and
`--output-last-message` for the final answer. Its `--format json` stream has the Claude Code
event shape with lowercase tool names and `thinking` blocks, mixed with human-readable status
lines on stdout, so it goes through the Claude parser with non-JSON lines skipped and counted.
"""

from __future__ import annotations

from pathlib import Path

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.claude import parse_claude_stream
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.normalize import Draft
from rubricgate.agents.spec import CliSpec, Endpoint, StreamFormat
from rubricgate.isolation.untrusted import read_reviewer_text
from rubricgate.suite.agent_context import CONTEXT_FILES

SPEC = CliSpec(
    name="cortex", adapter="CortexAgent", title="Cortex Code", binary="cortex",
    endpoint=Endpoint("SNOWFLAKE_PAT", "SNOWFLAKE_ACCOUNT", "the Snowflake account in the connection"),
    format=StreamFormat("cortex", "rubricgate.agents.cortex:parse_cortex",
                        "rubricgate.agents.formats:claude_shape_watch"),
    context_files=CONTEXT_FILES["cortex"],
)


class CortexAgent(CliAgent):
    """Drives the real `cortex` CLI; the connection comes from `agent.extra_args`."""

    spec = SPEC
    name = SPEC.name
    binary = SPEC.binary

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """cortex exec --file PROMPT ... --format json (the prompt is passed by path)."""
        args = [self.executable(request), "exec", "--file", str(request.prompt_file),
                "--no-mcp", "--no-history", "--bypass", "--format", "json",
                "--output-last-message", str(request.agent_view(request.last_message_file))]
        if request.allowed_tools is not None:
            args += ["--allowed", ",".join(request.allowed_tools)]
        if request.max_steps is not None:
            args += ["--max-turns", str(request.max_steps)]
        return args + self.model_args(request, "--model") + list(request.extra_args)

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        draft = parse_cortex_stream(data, allowed=request.allowed_tools)
        last = _read_optional(request.last_message_file)
        # The last-message file is the CLI's own statement of the answer; the stream is the
        # fallback when a version does not write it.
        if last.strip():
            draft.final_text = last
        return draft


def parse_cortex(data: bytes | str, *, agent: str = "cortex", allowed: list[str] | None = None) -> Draft:
    """The `cortex` transcript format (for `command` and `replay`): a Cortex stream under `agent`'s name."""
    draft = parse_cortex_stream(data, allowed=allowed)
    draft.agent = agent
    return draft


def parse_cortex_stream(data: bytes | str, *, allowed: list[str] | None = None) -> Draft:
    """Cortex stream -> Draft; without any JSON event the last status line explains the failure."""
    draft = parse_claude_stream(data, agent="cortex", allowed=allowed)
    if not draft.saw_result and not draft.steps:
        noise = _last_text_line(data)
        if noise:
            draft.fail("crashed", f"no JSON events; the CLI said: {noise}")
    return draft


def _last_text_line(data: bytes | str) -> str:
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("{")]
    return lines[-1] if lines else ""


def _read_optional(path: Path) -> str:
    # Written by the agent: never followed through a link it planted (isolation/untrusted.py).
    return read_reviewer_text(path)
