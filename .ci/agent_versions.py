#!/usr/bin/env python3
"""Helper for .ci/install-agents.sh: read the versions file, write the install manifest.

    python3 .ci/agent_versions.py plan pinned|latest
        one line per install: "<cli> <package> <binary> <version>" — pinned: the oldest and
        newest of each CLI in rubricgate/agents/tested_versions.json (once when equal);
        latest: the registry's current `latest` of each package (`npm view <pkg> version`).
    python3 .ci/agent_versions.py manifest DIR CHANNEL < lines
        lines "<cli> <version> <bin_dir> <reported --version>" -> DIR/manifest.json, which
        tests/e2e parametrize over (one e2e run per installed version).

Standard library only: it runs before the package is installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

VERSIONS = Path(__file__).resolve().parents[1] / "rubricgate" / "agents" / "tested_versions.json"


def plan(channel: str) -> list[str]:
    """The installs for a channel, one "cli package binary version" line each."""
    agents = json.loads(VERSIONS.read_text())["agents"]
    lines = []
    for cli, entry in agents.items():
        if channel == "latest":
            versions = [latest(entry["package"])]
        else:
            versions = list(dict.fromkeys([entry["oldest"], entry["newest"]]))
        lines += [f"{cli} {entry['package']} {entry['binary']} {v}" for v in versions]
    return lines


def latest(package: str) -> str:
    """The version the registry's `latest` tag points at."""
    out = subprocess.run(["npm", "view", f"{package}@latest", "version"], check=True,
                         capture_output=True, text=True).stdout.strip()
    if not out:
        sys.exit(f"error: npm view {package}@latest version printed nothing")
    return out.splitlines()[-1].strip().strip("'")


def manifest(directory: str, channel: str, lines: list[str]) -> dict:
    """The manifest tests/e2e read: per CLI, every installed version and its bin folder."""
    agents: dict[str, list[dict[str, str]]] = {}
    for line in filter(None, (ln.strip() for ln in lines)):
        cli, version, bin_dir, reported = line.split(" ", 3)
        agents.setdefault(cli, []).append({"version": version, "bin": bin_dir, "reported": reported})
    data = {"format_version": 1, "channel": channel, "agents": agents}
    Path(directory, "manifest.json").write_text(json.dumps(data, indent=2) + "\n")
    return data


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "plan" and argv[1] in ("pinned", "latest"):
        print("\n".join(plan(argv[1])))
    elif len(argv) == 3 and argv[0] == "manifest":
        print(json.dumps(manifest(argv[1], argv[2], sys.stdin.read().splitlines()), indent=2))
    else:
        sys.exit("usage: agent_versions.py plan pinned|latest | manifest DIR CHANNEL < lines")


if __name__ == "__main__":
    main(sys.argv[1:])
