"""What every real-CLI end-to-end test needs: the installed CLI versions to run against (or a
stated skip), the agent PATH that selects one of them, and a leftover-process probe.

.ci/install-agents.sh installs every tested version of a CLI into its own prefix and lists them
in $RUBRICGATE_AGENTS_DIR/manifest.json; the e2e tests run once per listed version, with that
prefix's bin first on the agent's PATH (PATH is in agent.env_allowlist). Without a manifest they
run once against whatever is on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

from rubricgate.models.dimensions import DIMENSIONS

ROOT = Path(__file__).resolve().parents[2]
SKILL_OK = ("---\nname: {name}\ndescription: Summarise things; use when asked for a summary.\n---\n"
            "# {name}\n\n1. Read the input file.\n2. Summarise it in five bullets.\n3. Save nothing.\n")


AGENTS_DIR = Path(os.environ.get("RUBRICGATE_AGENTS_DIR", "/opt/rubricgate-agents"))
VERSIONS_FILE = ROOT / "rubricgate" / "agents" / "tested_versions.json"


def required() -> bool:
    """Under RUBRICGATE_REQUIRE_CLIS=1 (set by .ci/run) a missing CLI fails instead of skipping."""
    return os.environ.get("RUBRICGATE_REQUIRE_CLIS") == "1"


@dataclass(frozen=True)
class Install:
    """One installed version of a CLI; bin_dir None means "whatever is on PATH". `bwrap_dir`: a
    folder whose bubblewrap (>= 0.11) goes first on the PATH, so the run's overlays are mounted
    by bwrap itself rather than by `unshare` (`with_bwrap_overlay`)."""

    cli: str
    version: str
    bin_dir: str | None = None
    bwrap_dir: str | None = None

    @property
    def id(self) -> str:
        return f"{self.cli}-{self.version}" + ("-bwrap-overlay" if self.bwrap_dir else "")

    def path(self, base: str | None = None) -> str:
        """The agent's PATH: this install's bin first, then `base` (default: ours)."""
        base = os.environ.get("PATH", "/usr/bin:/bin") if base is None else base
        first = [d for d in (self.bin_dir, self.bwrap_dir) if d]
        return ":".join([*first, base])


def with_bwrap_overlay(found: list[Install]) -> list[Install]:
    """`found` and, when .ci/run built a bubblewrap >= 0.11 (RUBRICGATE_BWRAP_WITH_OVERLAY), the
    newest of them again with it first on the PATH: the real CLI in an overlay bwrap mounted."""
    folder = os.environ.get("RUBRICGATE_BWRAP_WITH_OVERLAY")
    return [*found, replace(found[-1], bwrap_dir=folder)] if folder and found else found


def manifest() -> dict | None:
    path = AGENTS_DIR / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


def installs(cli: str) -> list[Install]:
    """Every installed version of `cli` from the manifest, else one entry for the PATH's."""
    found = (manifest() or {}).get("agents", {}).get(cli, [])
    return [Install(cli, e["version"], e["bin"]) for e in found] or [Install(cli, "PATH")]


def require_install(install: Install) -> str:
    """The CLI's path in this install; skip (or fail under RUBRICGATE_REQUIRE_CLIS=1) when missing."""
    path = shutil.which(install.cli, path=install.path())
    if install.bin_dir and path != str(Path(install.bin_dir) / install.cli):
        path = None  # a manifest entry whose prefix lost its binary must not fall back to PATH
    if path is None:
        where = install.bin_dir or "PATH"
        reason = f"{install.cli} CLI not found in {where} (install: bash .ci/install-agents.sh)"
        if required():
            pytest.fail(f"RUBRICGATE_REQUIRE_CLIS=1 but {reason}")
        pytest.skip(reason)
    return path


def processes_in(directory: Path) -> list[int]:
    """PIDs whose working directory is inside `directory` (our agent and anything it spawned)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if proc.name.isdigit() and cwd.startswith(str(directory)):
            pids.append(int(proc.name))
    return pids


def write_baseline(repo: Path, expected: dict[str, tuple]) -> None:
    """A format 2 baseline.json of the scripted outcomes: per fixture folder the expected failure
    category of verdict, tool_use and trajectory (None: passes; "errored": in no rate)."""
    dims = DIMENSIONS
    cases = {f"fixture-{folder.split('/')[1]}": {d: {"passes": int(c is None), "trials": 1} for d, c in zip(dims, cats)}
             for folder, cats in expected.items() if "errored" not in cats}
    rates = {d: sum(c[d]["passes"] for c in cases.values()) / len(cases) for d in dims}
    (repo / "baseline.json").write_text(json.dumps({"format_version": 2, "rates": rates, "trials": 1, "history": [],
                                                    "cases": cases}))


def lay_out_suite(repo: Path, folders) -> dict:
    """The reviewer, one skill per fixture folder ("block/no-description" has no description),
    an empty evals/tasks; returns this repository's rubricgate.yaml as a dict to adapt."""
    shutil.copytree(ROOT / "reviewer", repo / "reviewer", ignore=shutil.ignore_patterns(".changed-skills.txt"))
    for rel in folders:
        path = repo / "fixtures" / rel / "SKILL.md"
        path.parent.mkdir(parents=True)
        name = rel.split("/")[1]
        text = SKILL_OK.format(name=name)
        path.write_text(text.replace("description: Summarise things; use when asked for a summary.\n", "")
                        if name == "no-description" else text)
    (repo / "evals" / "tasks").mkdir(parents=True)
    return yaml.safe_load((ROOT / "rubricgate.yaml").read_text())


def install_fixture(params: list[Install]):
    """A module-scoped fixture running each test once per installed CLI version (failing under
    RUBRICGATE_REQUIRE_CLIS when one is missing)."""
    @pytest.fixture(scope="module", params=params, ids=lambda i: i.id)
    def install(request) -> Install:
        require_install(request.param)
        return request.param
    return install


def overlay_used(run_dir: Path) -> str:
    """How the run's workspaces were made, from its first event (`overlay (mounted by ...)`)."""
    return json.loads((run_dir / "events.jsonl").read_text().splitlines()[0])["workspaces"]


def check_overlay(run_dir: Path, install: Install) -> None:
    """Trials ran in overlays; with the install's own bubblewrap first, bwrap mounted them."""
    used = overlay_used(run_dir)
    assert used.startswith("overlay"), used
    if install.bwrap_dir:
        assert used == "overlay (mounted by bwrap)", used


def sandbox_to(base_url: str):
    """A bubblewrap policy whose network lets the agent reach exactly `base_url`'s host:port
    (the scripted server), through the harness's proxy, as a run's default allowlist would."""
    from rubricgate.isolation.netaccess import endpoint_of, network_access
    from rubricgate.isolation.sandbox import SandboxPolicy

    endpoint = endpoint_of(base_url)
    assert endpoint is not None, base_url
    return SandboxPolicy("bwrap", network=network_access("allowlist", [endpoint], {}))


def timed_out_at_the_model(attempt, first_s: float, tries: int = 3):
    """`attempt(timeout_s)` -> (transcript, requests the hung model saw, hung replies answered),
    run again with three times the timeout while the timeout ended the CLI before its request
    reached the model (a loaded machine can take longer than `first_s` to start a Node CLI).
    Every attempt must end by the timeout; returns the last attempt's (seen, answered)."""
    timeout_s = first_s
    for _ in range(tries):
        transcript, seen, answered = attempt(timeout_s)
        assert transcript.termination == "timeout" and transcript.exit_code is None, transcript.termination
        if seen:
            break
        timeout_s *= 3
    return seen, answered
