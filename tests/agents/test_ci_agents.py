"""The CI side of the tested versions: the install plan, the manifest, the weekly @latest verdict."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("agent_versions", ROOT / ".ci" / "agent_versions.py")
av = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(av)

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.e2e.test_installs" name="test_every_manifest_entry_is_the_version_it_claims"/>
{cases}</testsuite></testsuites>"""
FAILED = """<testcase classname="tests.e2e.test_claude_e2e" name="test_each_case_fails_exactly_as_scripted[claude-2.1.400-pass/bad-json]">
<failure message="AssertionError: assert ('no_verdict', None, None) == ('malformed_verdict', None, None)&#10;more">trace</failure></testcase>
<testcase classname="tests.e2e.test_openai_clis_e2e" name="test_x[codex-0.180.0]"><error message="later"/></testcase>"""


def write_manifest(directory: Path) -> None:
    lines = ["claude 2.1.400 /x/claude-2.1.400/bin 2.1.400 (Claude Code)", "codex 0.180.0 /x/codex/bin codex-cli 0.180.0"]
    av.manifest(str(directory), "latest", lines)


def test_pinned_plan_installs_oldest_and_newest_once_each() -> None:
    tested = json.loads((ROOT / "rubricgate/agents/tested_versions.json").read_text())["agents"]
    plan = [line.split() for line in av.plan("pinned")]
    want = [[cli, e["package"], e["binary"], v] for cli, e in tested.items() for v in dict.fromkeys([e["oldest"], e["newest"]])]
    assert plan == want
    assert ["claude", "@anthropic-ai/claude-code", "claude", "2.1.337"] in plan


def test_manifest_keeps_the_reported_version_with_its_spaces(tmp_path: Path) -> None:
    write_manifest(tmp_path)
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["channel"] == "latest"
    assert data["agents"]["claude"] == [{"version": "2.1.400", "bin": "/x/claude-2.1.400/bin",
                                         "reported": "2.1.400 (Claude Code)"}]


def test_verdict_names_the_version_and_the_first_failing_test(tmp_path: Path) -> None:
    write_manifest(tmp_path)
    (tmp_path / "e2e.xml").write_text(JUNIT.format(cases=FAILED))
    code, lines = av.verdict(str(tmp_path), str(tmp_path / "e2e.xml"))
    assert code == 1
    assert lines[-1] == ("FAILED on claude 2.1.400: first failing test tests/e2e/test_claude_e2e.py::"
                         "test_each_case_fails_exactly_as_scripted[claude-2.1.400-pass/bad-json]: AssertionError: "
                         "assert ('no_verdict', None, None) == ('malformed_verdict', None, None)")
    assert "claude 2.1.400 (tested 2.1.112 - 2.1.337) NEW" in lines


def test_verdict_on_a_pass_says_which_newer_versions_may_be_recorded(tmp_path: Path) -> None:
    write_manifest(tmp_path)
    (tmp_path / "e2e.xml").write_text(JUNIT.format(cases=""))
    code, lines = av.verdict(str(tmp_path), str(tmp_path / "e2e.xml"))
    assert code == 0 and lines[-1].endswith("may bump newest in tested_versions.json: claude 2.1.400, codex 0.180.0")


def test_weekly_workflow_is_scheduled_keyless_and_runs_the_latest_check() -> None:
    text = (ROOT / ".github/workflows/agents-latest.yml").read_text()
    data = yaml.safe_load(text)
    assert data[True]["schedule"][0]["cron"]  # YAML 1.1 reads the key `on` as True
    job = data["jobs"]["latest"]
    assert job["timeout-minutes"] <= 30 and "secrets." not in text
    assert any(s.get("run") == "bash .ci/latest-agents.sh" for s in job["steps"])
    script = (ROOT / ".ci/latest-agents.sh").read_text()
    assert "install-agents.sh --latest" in script and "agent_versions.py verdict" in script


def test_installing_the_agents_installs_nothing_system_wide() -> None:
    """.ci/install-agents.sh installed ripgrep with apt-get on a developer's machine; the system
    packages come from .ci/ scripts that .ci/run calls on CI's fresh machine."""
    agents = (ROOT / ".ci/install-agents.sh").read_text()
    assert "apt-get" not in agents and "sudo" not in agents
    run = (ROOT / ".ci/run").read_text()
    assert run.index("bash .ci/install-tools.sh") < run.index("bash .ci/install-agents.sh")
    assert "ripgrep" in (ROOT / ".ci/install-tools.sh").read_text()
