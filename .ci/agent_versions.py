#!/usr/bin/env python3
"""Helper for .ci/install-agents.sh: read the versions file, write the install manifest.

    python3 .ci/agent_versions.py plan pinned|latest
        one line per install: "<cli> <package> <binary> <version>" — pinned: the oldest and
        newest of each CLI in rubricgate/agents/tested_versions.json (once when equal; generated
        from the adapters' CliSpecs by `python -m rubricgate.agents.registry tested-versions`);
        latest: the registry's current `latest` of each package (`npm view <pkg> version`).
    python3 .ci/agent_versions.py manifest DIR CHANNEL < lines
        lines "<cli> <version> <bin_dir> <reported --version>" -> DIR/manifest.json, which
        tests/e2e parametrize over (one e2e run per installed version).
    python3 .ci/agent_versions.py verdict DIR JUNIT_XML
        after the e2e suite ran on DIR's installs: one line per CLI version against the tested
        range, then either the first failing test naming the version it ran (exit 1) or the
        versions-file bump a person may now make (exit 0).

Standard library only: it runs before the package is installed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
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


def first_failure(junit: Path) -> tuple[str, str] | None:
    """(test id, first line of its message) of the first failed or errored test case, if any."""
    for case in ET.parse(junit).iter("testcase"):
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            path = case.get("classname", "").replace(".", "/") + ".py"
            message = (bad.get("message") or bad.text or "").strip().splitlines()
            return f"{path}::{case.get('name')}", (message[0] if message else "")[:300]
    return None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def verdict(directory: str, junit: str) -> tuple[int, list[str]]:
    """Exit code and lines: each installed version against the tested range, then the outcome."""
    installed = json.loads(Path(directory, "manifest.json").read_text())["agents"]
    tested = json.loads(VERSIONS.read_text())["agents"]
    lines, newer = [], []
    for cli, entries in installed.items():
        for e in entries:
            rng = tested[cli]
            beyond = _version_key(e["version"]) > _version_key(rng["newest"])
            newer += [f"{cli} {e['version']}"] if beyond else []
            lines.append(f"{cli} {e['version']} (tested {rng['oldest']} - {rng['newest']})"
                         + (" NEW" if beyond else ""))
    failed = first_failure(Path(junit))
    if failed is None:
        bump = ", ".join(newer) or "nothing newer than the versions file"
        return 0, lines + [f"e2e suite passed on every version; may bump newest in {VERSIONS.name}: {bump}"]
    test_id, message = failed
    ran = [f"{cli} {e['version']}" for cli, es in installed.items() for e in es if f"{cli}-{e['version']}" in test_id]
    who = ", ".join(ran) or "(version not in the test id)"
    return 1, lines + [f"FAILED on {who}: first failing test {test_id}: {message}"]


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "plan" and argv[1] in ("pinned", "latest"):
        print("\n".join(plan(argv[1])))
    elif len(argv) == 3 and argv[0] == "manifest":
        print(json.dumps(manifest(argv[1], argv[2], sys.stdin.read().splitlines()), indent=2))
    elif len(argv) == 3 and argv[0] == "verdict":
        code, lines = verdict(argv[1], argv[2])
        print("\n".join(lines))
        sys.exit(code)
    else:
        sys.exit("usage: agent_versions.py plan pinned|latest | manifest DIR CHANNEL < lines"
                 " | verdict DIR JUNIT_XML")


if __name__ == "__main__":
    main(sys.argv[1:])
