"""`rubricgate agents`: every adapter, whether its CLI is on PATH, its version and the tested range."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import click

from rubricgate.agents.registry import adapter_names, cli_specs
from rubricgate.agents.spec import CliSpec
from rubricgate.agents.support import support_of, version_ranges
from rubricgate.cli.app import main

# Adapters that drive no external binary, and why.
_NO_BINARY = {"builtin": "embedded reviewer", "replay": "recorded transcripts (agent.replay_dir)",
              "command": "any command template (agent.command + agent.format)"}


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
    specs = cli_specs()
    for name in adapter_names():
        if name not in specs:
            rows.append(AgentRow(name, "-", None, None, _NO_BINARY[name]))
            continue
        spec = specs[name]
        path = shutil.which(spec.binary)
        version = _version(spec, path) if path else None
        failed = f"found, but {' '.join(spec.version_args)} failed"
        note = "ok" if path and version else (failed if path else "not on PATH")
        rows.append(_with_support(AgentRow(name, spec.binary, path, version, note)))
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


def _version(spec: CliSpec, path: str) -> str | None:
    """The CLI's version as its spec reads it from its version command, run as every adapter runs it."""
    from rubricgate.agents.cli import spec_version

    return spec_version(spec, path)


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
