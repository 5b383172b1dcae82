"""CI ran the e2e suite on every tested version: the install manifest covers the versions file.
And `rubricgate agents` lists every installed CLI with the version it is (issue 38).

A green CI that never ran the newest CLI is the failure this guards against. Under
RUBRICGATE_REQUIRE_CLIS=1 (.ci/run and the weekly @latest workflow) the manifest must exist;
elsewhere a machine without side-by-side installs skips with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rubricgate.agents.registry import cli_specs
from tests.e2e.support import AGENTS_DIR, VERSIONS_FILE, Install, installs, manifest, require_install, required

pytestmark = pytest.mark.e2e


def installed() -> dict:
    data = manifest()
    if data is None:
        reason = f"no {AGENTS_DIR}/manifest.json (install: bash .ci/install-agents.sh)"
        if required():
            pytest.fail(f"RUBRICGATE_REQUIRE_CLIS=1 but {reason}")
        pytest.skip(reason)
    return data


def test_every_cli_in_the_versions_file_is_installed_at_its_tested_or_latest_versions() -> None:
    data, tested = installed(), json.loads(VERSIONS_FILE.read_text())["agents"]
    got = {cli: [e["version"] for e in data["agents"].get(cli, [])] for cli in tested}
    if data["channel"] == "pinned":
        want = {cli: list(dict.fromkeys([e["oldest"], e["newest"]])) for cli, e in tested.items()}
        assert got == want, f"{AGENTS_DIR}/manifest.json is stale: re-run bash .ci/install-agents.sh"
    else:
        assert all(len(v) == 1 for v in got.values()), got


def test_every_manifest_entry_is_the_version_it_claims() -> None:
    for cli, entries in installed()["agents"].items():
        for entry in entries:
            install = Install(cli, entry["version"], entry["bin"])
            assert require_install(install) == str(Path(entry["bin"]) / cli)
            assert entry["version"] in entry["reported"], entry
            assert install in installs(cli)


CLIS = ("claude", "codex", "opencode", "gemini", "qwen", "copilot")


@pytest.mark.parametrize("which", [0, -1], ids=["oldest", "newest"])
def test_rubricgate_agents_lists_each_installed_cli_at_its_version(which: int) -> None:
    """The real installs first on PATH (each CLI's oldest, then its newest, installed version):
    every CLI's row names its binary there, the version it is (the version its spec reads from
    the line the install reported; Copilot CLI's "GitHub Copilot CLI 1.0.102." is 1.0.102) and
    that it is a tested version."""
    entries = {cli: installed()["agents"][cli][which] for cli in CLIS}
    path = ":".join([*(e["bin"] for e in entries.values()), os.environ.get("PATH", "/usr/bin:/bin")])
    proc = subprocess.run([sys.executable, "-m", "rubricgate", "agents"], env={**os.environ, "PATH": path},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stdout + proc.stderr
    rows = {cells[0]: cells for cells in (re.split(r" {2,}", line) for line in proc.stdout.splitlines())}
    for cli, entry in entries.items():
        _, binary, version, _, where, status = rows[cli]
        assert where == str(Path(entry["bin"]) / binary) and status == "ok, tested version", rows[cli]
        assert version == cli_specs()[cli].version_from(entry["reported"]) and entry["version"] in version, rows[cli]
    assert rows["copilot"][2] == entries["copilot"]["version"]  # the version alone, not the CLI's line
