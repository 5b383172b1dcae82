"""Shared by the fault tests: a repository whose reviewer is tests/faults/fake_reviewer.py."""

from __future__ import annotations

import base64
import html
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from rubricgate.isolation.sandbox import probe_bwrap
from tests.conftest import git, make_repo

FAKE = Path(__file__).parent / "fake_reviewer.py"
SECRET_VAR = "FAULT_API_KEY"
# Two BLOCK fixtures whose right answers are compatible: one verdict carrying both rules passes
# both cases, so an answer copied from one case's slot into the other's would pass there.
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "block/forecast-notebook-runner"]
RIGHT_BLOCK = {"tier": "BLOCK", "rules": ["fm-description-required", "fm-frontmatter-present"]}
PASS = {"tier": "PASS", "rules": []}


def fake_repo(root: Path, plan: dict, sandbox: str = "none") -> Path:
    """A repository whose agent is the fake reviewer following `plan`, isolated by `sandbox`."""
    repo = make_repo(root / "repo", fixtures=FIXTURES)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"] = {"name": "command", "command": [sys.executable, str(FAKE), _encoded(plan)],
                       "format": "claude", "timeout_s": 60, "secret_env": [SECRET_VAR], "sandbox": sandbox}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "fake reviewer")
    return repo


ISOLATION = {"none": "copy-only", "bwrap": "bwrap"}  # agent.sandbox -> summary.isolation


def _encoded(plan: dict) -> str:
    return base64.b64encode(json.dumps(plan).encode()).decode()


def sandbox_modes() -> list:
    """Every isolation mode these faults must hold in: copy-only always; bubblewrap when it can
    start here (under .ci/run, RUBRICGATE_REQUIRE_SANDBOX=1 turns its absence into a failure)."""
    problem = probe_bwrap()
    required = os.environ.get("RUBRICGATE_REQUIRE_SANDBOX") == "1"
    skip = pytest.mark.skipif(bool(problem) and not required, reason=f"bubblewrap unavailable: {problem}")
    return ["none", pytest.param("bwrap", marks=skip)]


def tree_bytes(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes), for byte-identical comparisons."""
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part in skip for part in p.relative_to(root).parts)}


def secret_forms(secret: str) -> set[str]:
    """How a secret can be written: raw, JSON-escaped 1-3 times (ASCII or not), HTML-escaped,
    and its first and last 8 characters (what a cut or a tail would leave)."""
    forms, level = {secret}, {secret}
    for _ in range(3):
        level = {json.dumps(f, ensure_ascii=a)[1:-1] for f in level for a in (True, False)}
        forms |= level
    forms |= {html.escape(f) for f in forms}
    return forms | {f[:8] for f in forms} | {f[-8:] for f in forms}


def leaks(roots: list[Path], secret: str) -> list[str]:
    """'file: form' for every secret form found in any file under the roots."""
    forms = secret_forms(secret)
    found = []
    for root in roots:
        for path in (p for p in root.rglob("*") if p.is_file()):
            text = path.read_bytes().decode("utf-8", "surrogateescape")
            found += [f"{path}: {form!r}" for form in forms if form in text]
    return found
