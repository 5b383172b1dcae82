"""`rubricgate agents`: every adapter, whether its CLI is on PATH, its version and the tested range."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import click

from rubricgate.agents import ADAPTERS, get_agent
from rubricgate.agents.support import support_of, version_ranges
from rubricgate.cli.app import main

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
    tested: str = "-"  # the tested range, "-" for adapters without one
    warning: str = ""


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
        rows.append(_with_support(AgentRow(name, binary, path, version, note)))
    return rows


def _with_support(row: AgentRow) -> AgentRow:
    """Add the tested range and, for an installed CLI outside it, the warning and an 'untested' note."""
    rng = version_ranges().get(row.name)
    if rng is None:
        return row
    row.tested = rng.label
    support = support_of(row.name, row.version) if row.path and row.version else None
    if support is not None:
        row.warning, row.note = support.warning, _SUPPORT_NOTE[support.status]
    return row


_SUPPORT_NOTE = {"tested": "ok, tested version", "in_range": "ok, within the tested range",
                 "untested": "UNTESTED version", "unknown": "UNRECOGNISED version (not checked)"}


def _version(name: str) -> str | None:
    from rubricgate.models.config import AgentConfig  # only when a CLI is found: the table needs no config

    # A broken adapter module must not hide the rest of the table.
    try:
        return get_agent(name, AgentConfig(name=name)).version()
    except ImportError as exc:
        return f"adapter failed to import: {exc}"


HEADER = ("AGENT", "BINARY", "VERSION", "TESTED", "PATH", "STATUS")


def table(rows: list[AgentRow]) -> list[str]:
    """Aligned lines: a header, then one line per adapter."""
    cells = [HEADER] + [(r.name, r.binary, r.version or "-", r.tested, r.path or "-", r.note) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER) - 1)]
    return ["  ".join([*(c[i].ljust(widths[i]) for i in range(len(widths))), c[-1]]).rstrip() for c in cells]


@main.command("agents")
def agents() -> None:
    """List agent adapters: CLI found on PATH, its version, the tested range; warn outside it."""
    rows = agent_rows()
    for line in table(rows):
        click.echo(line)
    for r in rows:
        if r.warning:
            click.echo(f"warning: {r.warning}", err=True)
