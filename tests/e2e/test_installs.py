"""CI ran the e2e suite on every tested version: the install manifest covers the versions file.

A green CI that never ran the newest CLI is the failure this guards against. Under
RUBRICGATE_REQUIRE_CLIS=1 (.ci/run and the weekly @latest workflow) the manifest must exist;
elsewhere a machine without side-by-side installs skips with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
