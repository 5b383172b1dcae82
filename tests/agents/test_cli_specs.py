"""Every CLI-facing table derives from the adapters' CliSpecs (agents/spec.py, agents/registry.py):
the adapter list, the formats and their watches, the known binaries, the endpoints the preflight
and init name, the context files in the cache key, the workflows' installs, the versions file."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rubricgate.agents import get_agent
from rubricgate.agents.cli import CliAgent
from rubricgate.agents.formats import format_names, parser_for, watch_for
from rubricgate.agents.preflight import checked_endpoints
from rubricgate.agents.registry import (
    CLI_AGENTS,
    adapter_names,
    adapters,
    cli_specs,
    context_files,
    known_binaries,
    versions_document,
    versions_text,
)
from rubricgate.agents.spec import CliSpec
from rubricgate.agents.support import VersionsFile, parse_version, version_ranges
from rubricgate.models.config import AgentConfig, Config, ReviewerConfig

ROOT = Path(__file__).resolve().parents[2]
SPECS = list(cli_specs().values())


def _ids(spec: CliSpec) -> str:
    return spec.name


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_each_spec_sits_beside_its_adapter_class(spec: CliSpec) -> None:
    module = importlib.import_module(f"rubricgate.agents.{spec.name}")
    cls = getattr(module, spec.adapter)
    assert issubclass(cls, CliAgent) and cls.spec is module.SPEC is spec
    agent = get_agent(spec.name, AgentConfig(name=spec.name))
    assert (agent.name, agent.binary) == (spec.name, spec.binary)
    assert adapters()[spec.name] == f"rubricgate.agents.{spec.name}:{spec.adapter}"


def test_the_adapter_list_is_the_specs_plus_the_adapters_without_a_cli() -> None:
    assert list(adapters()) == adapter_names() == ["builtin", *CLI_AGENTS, "command", "replay"]
    with pytest.raises(KeyError):
        get_agent("no-such-agent", AgentConfig())


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_each_format_parses_and_watches_through_its_spec(spec: CliSpec) -> None:
    assert spec.format.name in format_names()
    draft = parser_for(spec.format.name)(b"", agent="command", allowed=None)
    assert draft.agent == "command" and draft.steps == 0
    if spec.format.watch:
        watch = watch_for(spec.format.name, 1, ["read"])
        assert callable(watch)


def test_formats_are_the_specs_plus_text() -> None:
    assert set(format_names()) == {s.format.name for s in SPECS} | {"text"}


def test_known_binaries_and_endpoints_come_from_the_specs() -> None:
    assert known_binaries() == {s.binary for s in SPECS}
    assert checked_endpoints() == {s.name: s.endpoint for s in SPECS if s.preflight}


def test_every_cli_key_is_a_secret_by_default() -> None:
    """models/ sits below agents/ and cannot derive its default; this keeps the two in step."""
    assert {s.endpoint.key for s in SPECS} <= set(AgentConfig().secret_env)


def test_init_and_the_workflows_install_what_the_specs_say() -> None:
    from rubricgate.adopt.workflows import AGENT_CLIS, INIT_AGENTS, tested_version

    npm = {s.name for s in SPECS if s.package and s.tested}
    assert set(AGENT_CLIS) == npm and set(AGENT_CLIS) <= set(INIT_AGENTS)
    for name, cli in AGENT_CLIS.items():
        spec = cli_specs()[name]
        assert (cli.npm, cli.command, cli.secret) == (spec.package, spec.binary, spec.endpoint.key)
        assert cli.endpoint_env[0] == spec.endpoint.base_url and set(spec.endpoint.extra) <= set(cli.endpoint_env)
        assert tested_version(name) == spec.tested.newest


def test_the_agents_command_shows_each_specs_binary(tmp_path: Path, monkeypatch) -> None:
    from rubricgate.cli.agents_cmd import agent_rows

    monkeypatch.setenv("PATH", str(tmp_path))
    rows = {r.name: r for r in agent_rows()}
    assert {name: rows[name].binary for name in CLI_AGENTS} == {s.name: s.binary for s in SPECS}


def test_the_versions_file_is_generated_from_the_specs() -> None:
    """The CI scripts read tested_versions.json (standard library only): it must be current."""
    path = ROOT / "rubricgate" / "agents" / "tested_versions.json"
    assert path.read_text(encoding="utf-8") == versions_text(), \
        "run: python -m rubricgate.agents.registry tested-versions"
    data = VersionsFile.model_validate(json.loads(path.read_text()))
    for name, entry in data.agents.items():
        spec = cli_specs()[name]
        assert (entry.package, entry.binary, entry.oldest, entry.newest) == \
            (spec.package, spec.binary, spec.tested.oldest, spec.tested.newest)
        assert parse_version(entry.oldest) <= parse_version(entry.newest)
    assert set(version_ranges()) == set(versions_document()["agents"])


def test_the_versions_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    script = ("import sys, pathlib; from rubricgate.agents import registry as r\n"
              "r.VERSIONS_FILE = pathlib.Path(sys.argv[1])\nsys.exit(r.main(['tested-versions', '--check']))")
    stale = tmp_path / "tested_versions.json"
    stale.write_text(versions_text().replace('"newest": "2.1.337"', '"newest": "2.1.300"'))
    got = subprocess.run([sys.executable, "-c", script, str(stale)], capture_output=True, text=True)
    assert got.returncode == 1 and "out of date" in got.stderr
    stale.write_text(versions_text())
    assert subprocess.run([sys.executable, "-c", script, str(stale)]).returncode == 0


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_an_edit_to_any_context_file_of_a_cli_changes_the_cache_key(spec: CliSpec, tmp_path: Path) -> None:
    """The cache key's context is every spec's context files: an edit to one is a miss."""
    from rubricgate.runner.cache import run_digests

    reviewer = ReviewerConfig(prompt="p.md", skill="s.md", rubric="r.md")
    for name in ("p.md", "s.md", "r.md"):
        (tmp_path / name).write_text("x\n")
    assert set(spec.context_files) <= set(context_files())
    for rel in spec.context_files:
        before = run_digests(tmp_path, Config(reviewer=reviewer)).context
        target = tmp_path / rel
        # A name without a suffix (".claude", ".github/instructions") is a folder a CLI reads files from.
        name = rel.rsplit("/", 1)[-1]
        if "." not in name.lstrip("."):
            target.mkdir(parents=True, exist_ok=True)
            target = target / "settings.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("{}\n")
        created = run_digests(tmp_path, Config(reviewer=reviewer)).context
        target.write_text('{"edited": true}\n')
        edited = run_digests(tmp_path, Config(reviewer=reviewer)).context
        assert before != created != edited, rel


def test_no_module_outside_the_spec_names_a_clis_package() -> None:
    """A fact about a CLI is written once: its npm package appears in its own module only."""
    for spec in SPECS:
        if not spec.package:
            continue
        holders = [p.relative_to(ROOT).as_posix() for p in (ROOT / "rubricgate").rglob("*.py")
                   if spec.package in p.read_text(encoding="utf-8")]
        assert holders == [f"rubricgate/agents/{spec.name}.py"], holders
