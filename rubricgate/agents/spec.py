"""What rubricgate knows about one agent CLI: a `CliSpec`, declared beside its adapter class.

Every CLI-facing table derives from the specs (agents/registry.py collects them): the adapter
names, the transcript formats and their limit watches, the binaries the `command` adapter asks
for `--version`, the endpoint and key variables the preflight and `init` name (and the public
hosts the CLI talks to by default, for the sandbox's network allowlist), the files a CLI reads on
its own from the working tree (part of the cache key), the npm package, and the tested versions
(`tested_versions.json` is generated from them for the CI scripts). Adding a CLI is one adapter
module with its `SPEC`, its name in registry.CLI_AGENTS, and its recordings.

Standard library only: `rubricgate agents` and `validate` read the specs on their start-up path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    """The variables that point a CLI at its model and authenticate it."""

    key: str  # the API key's variable (init lists it in agent.secret_env)
    base_url: str  # the variable naming the model server (init lists it in agent.env_allowlist)
    default: str  # where the CLI goes without `base_url`, as an error message names it
    # Public hosts the CLI reaches without `base_url` (its model API): the network allowlist's default.
    default_hosts: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # further endpoint variables (a CA certificate, say)
    # The endpoint variables the workflows `init` writes pass from the repository's variables
    # (`vars.NAME`); empty: every one (`variables`). Copilot CLI's: its provider's URL and model.
    workflow_vars: tuple[str, ...] = ()

    @property
    def variables(self) -> tuple[str, ...]:
        """Every endpoint variable: the base URL first."""
        return (self.base_url, *self.extra)


@dataclass(frozen=True)
class StreamFormat:
    """A transcript format: `agent.format` names it for the `command` and `replay` adapters.

    `parser` is "module:function", called `(data, *, agent, allowed) -> Draft`; `watch`, when the
    stream shows turns and tool calls as they happen, is "module:function" called
    `(max_steps, allowed) -> Watch | None` (limits a CLI of unknown behaviour may not enforce)."""

    name: str
    parser: str
    watch: str = ""


@dataclass(frozen=True)
class Tested:
    """The versions CI runs the e2e suite against: the oldest supported and the newest passed."""

    oldest: str
    newest: str
    note: str = ""


@dataclass(frozen=True)
class CliSpec:
    """One agent CLI. `name` is the agent's name (agent.name, `--agent`) and its module's name."""

    name: str
    adapter: str  # the adapter class in rubricgate/agents/<name>.py
    title: str  # how people call it ("Claude Code")
    binary: str
    endpoint: Endpoint
    format: StreamFormat
    # Files and folders (relative to the repository) the CLI reads on its own from the working
    # tree: instructions, settings, agents. A change to one can change any answer (cache key).
    context_files: tuple[str, ...] = ()
    package: str = ""  # its npm package; "" when it is not installed from npm
    version_args: tuple[str, ...] = ("--version",)
    # Where the version is in the version command's first line: a regular expression whose first
    # group is it ("" : the line as it is, e.g. "2.1.332 (Claude Code)").
    version_pattern: str = ""
    preflight: bool = True  # one minimal request before the suite (agents/preflight.py)
    tested: Tested | None = None  # None: CI does not install it

    def version_from(self, line: str | None) -> str | None:
        """The version in `line` (the version command's first line) as `version_pattern` finds
        it; the line as it is when there is no pattern or it does not match (then `rubricgate
        agents` shows what the CLI said, and the support check calls it unrecognised if need be)."""
        match = re.search(self.version_pattern, line) if self.version_pattern and line else None
        return match.group(1) if match else line
