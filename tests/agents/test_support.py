"""The versions file and a reported CLI version against its tested range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rubricgate.agents.registry import adapter_names, cli_specs
from rubricgate.agents.support import VersionsFile, parse_version, support_for, support_of, version_ranges

VERSIONS = Path(__file__).resolve().parents[2] / "rubricgate" / "agents" / "tested_versions.json"


def test_versions_file_is_valid_and_every_range_is_ordered() -> None:
    data = VersionsFile.model_validate(json.loads(VERSIONS.read_text()))
    assert set(data.agents) == {n for n, s in cli_specs().items() if s.tested} <= set(adapter_names())
    assert {"claude", "opencode", "codex"} <= set(data.agents)
    for cli in data.agents.values():
        assert parse_version(cli.oldest) <= parse_version(cli.newest), cli


def test_claude_range_spans_the_last_pure_js_and_the_native_release() -> None:
    assert (version_ranges()["claude"].oldest, version_ranges()["claude"].newest) == ("2.1.112", "2.1.337")


@pytest.mark.parametrize("text, parsed", [("2.1.112 (Claude Code)", (2, 1, 112)),
                                          ("codex-cli 0.171.0", (0, 171, 0)), ("1.18.33", (1, 18, 33)),
                                          ("dev build", None), (None, None)])
def test_parse_version_reads_the_first_triple(text, parsed) -> None:
    assert parse_version(text) == parsed


def test_outside_the_range_warns_naming_the_version_and_range() -> None:
    newer = support_of("claude", "2.1.999 (Claude Code)")
    older = support_of("claude", "2.0.1 (Claude Code)")
    assert newer.status == older.status == "untested"
    assert "claude 2.1.999 (Claude Code) is outside the tested range 2.1.112 - 2.1.337" in newer.warning


def test_endpoints_are_tested_and_between_is_in_range_without_warning() -> None:
    assert support_of("claude", "2.1.112 (Claude Code)").status == "tested"
    assert support_of("claude", "2.1.337 (Claude Code)").status == "tested"
    between = support_of("claude", "2.1.200 (Claude Code)")
    assert between.status == "in_range" and between.warning == ""


def test_unreadable_version_warns_and_agents_without_a_range_are_left_out() -> None:
    assert support_of("codex", None).status == "unknown" and support_of("codex", None).warning
    assert support_of("builtin", "x") is None
    assert set(support_for({"builtin": None, "codex": "codex-cli 0.171.0"})) == {"codex"}
