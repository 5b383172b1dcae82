"""Which agent CLI versions are tested, and a reported version against them.

Each CLI's `CliSpec.tested` (beside its adapter) is the one place the tested range lives: CI
installs its `oldest` and `newest` of every CLI side by side (from `tested_versions.json`, which
is generated from the specs) and runs the e2e suite once per version, and `rubricgate agents`,
the run summary and the reports compare the installed CLI against it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from rubricgate.agents.registry import cli_specs
from rubricgate.models.agent_support import AgentSupport, SupportStatus
from rubricgate.models.base import StrictModel

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


class CliVersions(StrictModel):
    """One CLI's entry in the versions file."""

    package: str
    binary: str
    oldest: str
    newest: str
    note: str = ""


class VersionsFile(StrictModel):
    """tested_versions.json, as the CI scripts read it."""

    format_version: int = 1
    about: str = ""
    agents: dict[str, CliVersions]


@dataclass(frozen=True)
class VersionRange:
    """The inclusive range of a CLI's versions CI runs the e2e suite against."""

    agent: str
    oldest: str
    newest: str

    @property
    def label(self) -> str:
        return self.oldest if self.oldest == self.newest else f"{self.oldest} - {self.newest}"


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """The first `X.Y.Z` in a `--version` line ("2.1.112 (Claude Code)", "codex-cli 0.171.0")."""
    m = _VERSION.search(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


@cache
def version_ranges() -> dict[str, VersionRange]:
    """Agent name -> tested range, from the CLIs' specs."""
    return {name: VersionRange(name, spec.tested.oldest, spec.tested.newest)
            for name, spec in cli_specs().items() if spec.tested is not None}


def support_of(agent: str, version: str | None) -> AgentSupport | None:
    """`version` (a `--version` line) against `agent`'s tested range; None for agents without one."""
    rng = version_ranges().get(agent)
    if rng is None:
        return None
    status = _status(parse_version(version), rng)
    warning = "" if status in ("tested", "in_range") else _warning(agent, version, rng, status)
    return AgentSupport(version=version, tested_oldest=rng.oldest, tested_newest=rng.newest,
                        status=status, warning=warning)


def support_for(versions: dict[str, str | None]) -> dict[str, AgentSupport]:
    """`support_of` for every agent a run used that has a tested range."""
    found = {name: support_of(name, version) for name, version in versions.items()}
    return {name: s for name, s in found.items() if s is not None}


def _status(parsed: tuple[int, int, int] | None, rng: VersionRange) -> SupportStatus:
    if parsed is None:
        return "unknown"
    low, high = parse_version(rng.oldest), parse_version(rng.newest)
    if parsed in (low, high):
        return "tested"
    return "in_range" if low is not None and high is not None and low < parsed < high else "untested"


def _warning(agent: str, version: str | None, rng: VersionRange, status: str) -> str:
    if status == "unknown":
        return (f"{agent}: version {version or 'unknown'} could not be checked against the tested "
                f"range {rng.label}")
    return (f"{agent} {version} is outside the tested range {rng.label} (rubricgate/agents/{agent}.py SPEC); "
            "its output format may have changed under the adapter")
