"""Any agent CLI from a command template plus a transcript format.

rubricgate.yaml:
    agent:
      name: command
      command: [my-agent, run, --prompt-file, "{prompt_file}", --max-turns, "{max_steps}"]
      format: claude          # claude | cortex | opencode | codex | text

Placeholders: {prompt_file} {workspace} {last_message_file} {max_steps} {allowed_tools}
(comma-separated normalized names) {model} {changed_files} (the reviewed-files list, one path a
line: reviewer.changed_files in the workspace). An argument that is only a placeholder with no
value (no max_steps, no allowlist, no model) is dropped together with the flag before it.
When the template does not pass a limit to the CLI, the harness watches the stream: each
format's watch stops a run past `max_steps` (the text format has none); a tool call outside
the allowlist is stopped live only in the claude and cortex formats, and in the others recorded
and graded (tool_use fails).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.cli import _UNKNOWN, CliAgent, probe_version, spec_version
from rubricgate.agents.formats import format_names, parser_for, watch_for
from rubricgate.agents.normalize import Draft
from rubricgate.agents.registry import spec_for_binary
from rubricgate.errors import GateInputError
from rubricgate.isolation.process import ProcessResult, Watch
from rubricgate.isolation.untrusted import read_reviewer_text
from rubricgate.models.config import AgentConfig

PLACEHOLDERS = ("prompt_file", "workspace", "last_message_file", "max_steps", "allowed_tools", "model", "changed_files")
_FIELD = re.compile(r"\{([^{}]*)\}")
_CONFIG = "rubricgate.yaml"


class CommandAgent(CliAgent):
    """Runs `agent.command` with placeholders filled; parses stdout as `agent.format`."""

    name = "command"

    def __init__(self, config: AgentConfig) -> None:
        super().__init__(config)
        self.template, self.format = validate_template(config)
        self.binary = self.template[0]

    def version(self) -> str | None:
        """agent.version_command's first line; else a known CLI's version command (its spec's); else None."""
        if self._version is _UNKNOWN:
            if self.config.version_command:
                self._version = probe_version(list(self.config.version_command))
            elif (known := spec_for_binary(Path(self.binary).name)) is not None:
                found = shutil.which(self.binary)
                self._version = spec_version(known, self.executable()) if found else None
            else:
                self._version = None
        return self._version  # type: ignore[return-value]

    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """The template with placeholders filled in for this run."""
        argv = fill_template(self.template, placeholder_values(request, self.config))
        return [self.executable(request), *argv[1:]]

    def execute(self, request: AgentRequest, argv: list[str]) -> ProcessResult:
        """Run the command; a `codex` transcript's session rollout is the attempt's own. A retry
        runs in the same HOME: the failed attempt's rollout was read as one that wrote none, its
        calls and turns graded and its failure to start the reviewer's (as the codex adapter)."""
        if self.format == "codex":
            from rubricgate.agents.codex_rollout import clear_sessions

            clear_sessions(request)
        return super().execute(request, argv)

    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        draft = parser_for(self.format)(data, agent=self.name, allowed=request.allowed_tools,
                                        **_codex_rollout(self.format, request))
        last = _read(request.last_message_file)
        if last.strip() and "{last_message_file}" in " ".join(self.template):
            draft.final_text = last
        return draft

    def watch(self, request: AgentRequest) -> Watch | None:
        # Only the limits the template does not hand to the CLI are enforced here.
        joined = " ".join(self.template)
        steps = None if "{max_steps}" in joined else request.max_steps
        tools = None if "{allowed_tools}" in joined else request.allowed_tools
        return watch_for(self.format, steps, tools)


def validate_template(config: AgentConfig) -> tuple[list[str], str]:
    """(template, format) or a one-line GateInputError naming the field and the fix."""
    if not config.command:
        raise GateInputError(_CONFIG, "agent.command", "the command agent needs a command template",
                             'set agent.command, e.g. [my-agent, --prompt-file, "{prompt_file}"]')
    fmt = config.format or "text"
    if fmt not in format_names():
        raise GateInputError(_CONFIG, "agent.format", f"unknown transcript format {fmt!r}",
                             f"use one of {', '.join(format_names())}")
    check_placeholders(config.command, _CONFIG, "agent.command")
    return list(config.command), fmt


def check_placeholders(argv: list[str], where: str, field: str) -> None:
    """Every {name} in the command's words is a placeholder a trial fills (a misspelt one would
    reach the reviewer as it is); the first that is not: a one-line GateInputError."""
    for arg in argv:
        for name in _FIELD.findall(arg):
            if name not in PLACEHOLDERS:
                raise GateInputError(where, field, f"unknown placeholder {{{name}}} in {arg!r}",
                                     f"use only {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")


def placeholder_values(request: AgentRequest, config: AgentConfig) -> dict[str, str | None]:
    allowed = request.allowed_tools
    return {"prompt_file": str(request.prompt_file), "workspace": str(request.workspace),
            "last_message_file": str(request.agent_view(request.last_message_file)),
            "max_steps": str(request.max_steps) if request.max_steps is not None else None,
            "allowed_tools": ",".join(allowed) if allowed is not None else None,
            "model": request.model or config.model, "changed_files": str(request.changed_files_file)}


def fill_template(template: list[str], values: dict[str, str | None]) -> list[str]:
    """Substitute placeholders; drop a bare placeholder without a value and its flag."""
    out: list[str] = []
    for arg in template:
        names = _FIELD.findall(arg)
        if any(values.get(n) is None for n in names):
            if out and out[-1].startswith("-") and _FIELD.fullmatch(arg):
                out.pop()
            continue
        out.append(_FIELD.sub(lambda m: str(values[m.group(1)]), arg))
    return out


def _codex_rollout(fmt: str, request: AgentRequest) -> dict[str, bytes]:
    """A Codex run's session rollout under the throwaway HOME (or CODEX_HOME in the scratch):
    the only record of commands the sandbox refused."""
    if fmt != "codex":
        return {}
    from rubricgate.agents.codex_rollout import read_rollout

    rollout = read_rollout(request.home / ".codex")
    return {"rollout": rollout} if rollout is not None else {}


def _read(path: Path) -> str:
    # Written by the agent: never followed through a link it planted (isolation/untrusted.py).
    return read_reviewer_text(path)
