"""`rubricgate agents`: every adapter, whether its CLI is on PATH, and its version."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import click

from rubricgate.agents import ADAPTERS, get_agent
from rubricgate.cli.app import main
from rubricgate.models.config import AgentConfig

# Adapters that drive no external binary, and why.
_NO_BINARY = {"builtin": "embedded reviewer", "replay": "recorded transcripts (agent.replay_dir)",
              "command": "any command template (agent.command + agent.format)"}
_BINARIES = {"claude": "claude", "cortex": "cortex", "opencode": "opencode", "codex": "codex"}


@dataclass
class AgentRow:
    name: str
    binary: str
    path: str | None
    version: str | None
    note: str


def agent_rows() -> list[AgentRow]:
    """One row per registered adapter; versions come from `<cli> --version`."""
    rows = []
    for name in ADAPTERS:
        if name in _NO_BINARY:
            rows.append(AgentRow(name, "-", None, None, _NO_BINARY[name]))
            continue
        binary = _BINARIES.get(name, name)
        path = shutil.which(binary)
        version = _version(name) if path else None
        note = "ok" if path and version else ("found, but --version failed" if path else "not on PATH")
        rows.append(AgentRow(name, binary, path, version, note))
    return rows


def _version(name: str) -> str | None:
    # A broken adapter module must not hide the rest of the table.
    try:
        return get_agent(name, AgentConfig(name=name)).version()
    except ImportError as exc:
        return f"adapter failed to import: {exc}"


@main.command("agents")
def agents() -> None:
    """List agent adapters and whether each CLI is found on PATH, with its version."""
    rows = agent_rows()
    width = max(len(r.name) for r in rows)
    for r in rows:
        where = r.path or "-"
        version = r.version or "-"
        click.echo(f"{r.name:<{width}}  {r.binary:<9} {version:<28} {where}  ({r.note})")
