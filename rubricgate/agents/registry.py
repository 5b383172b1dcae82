"""Every agent adapter, and the CLI-facing tables, derived from the adapters' `CliSpec`s.

    python -m rubricgate.agents.registry tested-versions [--check]

writes rubricgate/agents/tested_versions.json from the specs (`--check`: exit 1 when the file
differs). The CI scripts read that file with the standard library alone, before rubricgate is
installed; everything in the package reads the specs.
"""

from __future__ import annotations

import importlib
import json
import sys
from functools import cache
from pathlib import Path

from rubricgate.agents.spec import CliSpec, StreamFormat

# Adapters that drive an agent CLI: each is rubricgate/agents/<name>.py with a module-level SPEC.
CLI_AGENTS = ("claude", "cortex", "opencode", "codex", "gemini", "qwen", "copilot")
# Adapters without a CLI of their own (listed first and last, as `rubricgate agents` shows them).
EMBEDDED = {"builtin": "rubricgate.agents.builtin:BuiltinAgent"}
GENERIC = {"command": "rubricgate.agents.command:CommandAgent", "replay": "rubricgate.agents.replay:ReplayAgent"}
TEXT_FORMAT = StreamFormat("text", "rubricgate.agents.formats:parse_text")
VERSIONS_FILE = Path(__file__).with_name("tested_versions.json")
VERSIONS_ABOUT = ("The agent CLI versions CI runs the e2e suite against: the oldest supported and the newest that "
                  "passed. Generated from each adapter's CliSpec (python -m rubricgate.agents.registry "
                  "tested-versions); read by .ci/install-agents.sh, .ci/agent_versions.py and tests/e2e. Bump "
                  "`newest` in the spec only after the weekly @latest workflow (or a local run of "
                  ".ci/latest-agents.sh) passed on it.")


@cache
def cli_specs() -> dict[str, CliSpec]:
    """Agent name -> its CliSpec, in CLI_AGENTS order (each adapter module is imported once)."""
    specs: dict[str, CliSpec] = {}
    for name in CLI_AGENTS:
        spec = importlib.import_module(f"rubricgate.agents.{name}").SPEC
        if not isinstance(spec, CliSpec) or spec.name != name:
            raise RuntimeError(f"rubricgate/agents/{name}.py: SPEC must be a CliSpec named {name!r}")
        specs[name] = spec
    return specs


def adapters() -> dict[str, str]:
    """Agent name -> "module:Class", every adapter (CLI modules are imported only on use)."""
    clis = {name: f"rubricgate.agents.{name}:{spec.adapter}" for name, spec in cli_specs().items()}
    return {**EMBEDDED, **clis, **GENERIC}


def adapter_path(name: str) -> str:
    """"module:Class" of one adapter without importing the other CLI modules (KeyError: unknown)."""
    if name in EMBEDDED or name in GENERIC:
        return {**EMBEDDED, **GENERIC}[name]
    if name in CLI_AGENTS:
        spec = importlib.import_module(f"rubricgate.agents.{name}").SPEC
        return f"rubricgate.agents.{name}:{spec.adapter}"
    raise KeyError(name)


def adapter_names() -> list[str]:
    """Every adapter's name, as `rubricgate agents` lists them and errors name them."""
    return [*EMBEDDED, *CLI_AGENTS, *GENERIC]


def formats() -> dict[str, StreamFormat]:
    """Format name -> StreamFormat: every CLI's format, and plain text."""
    found: dict[str, StreamFormat] = {}
    for spec in cli_specs().values():
        known = found.setdefault(spec.format.name, spec.format)
        if known != spec.format:
            raise RuntimeError(f"two different transcript formats are named {spec.format.name!r}")
    return {**found, TEXT_FORMAT.name: TEXT_FORMAT}


def context_files() -> list[str]:
    """Every file or folder any CLI reads on its own from the working tree (the cache key's
    context): all of them, since `command` may run any CLI."""
    return sorted({path for spec in cli_specs().values() for path in spec.context_files})


def known_binaries() -> set[str]:
    """Program names a `command` template may start that are known CLIs (asked `--version`)."""
    return {spec.binary for spec in cli_specs().values()}


def spec_for_binary(binary: str) -> CliSpec | None:
    """The CLI whose program is called `binary`, if any."""
    return next((s for s in cli_specs().values() if s.binary == binary), None)


def versions_document() -> dict:
    """tested_versions.json's content: every CLI CI installs, with its package and binary."""
    agents = {name: {"package": s.package, "binary": s.binary, "oldest": s.tested.oldest,
                     "newest": s.tested.newest, "note": s.tested.note}
              for name, s in cli_specs().items() if s.tested is not None}
    return {"format_version": 1, "about": VERSIONS_ABOUT, "agents": agents}


def versions_text() -> str:
    return json.dumps(versions_document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """`tested-versions [--check]`: write the versions file, or check that it is current."""
    if argv not in (["tested-versions"], ["tested-versions", "--check"]):
        print("usage: python -m rubricgate.agents.registry tested-versions [--check]", file=sys.stderr)
        return 2
    current = VERSIONS_FILE.read_text(encoding="utf-8") if VERSIONS_FILE.is_file() else ""
    if argv[-1] == "--check":
        if current != versions_text():
            print(f"{VERSIONS_FILE} is out of date: run python -m rubricgate.agents.registry tested-versions",
                  file=sys.stderr)
            return 1
        return 0
    VERSIONS_FILE.write_text(versions_text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
