"""Each failure mode of the endpoint and the CLI ends in the class docs/agents.md documents for it,
for every CLI and every installed version (both tested Claude Code releases included): the REAL
CLIs through their adapters, inside bubblewrap, against tests/e2e's scripted servers
(tests/e2e/failure_modes.py plays the modes). The table in docs/agents.md is the expectation, so
a claim there that stops being true fails here. How long after its cause each mode ends is
measured by bench/failure_modes.py, not asserted here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rubricgate.graders.failures import failure_kind
from rubricgate.models.failures import INFRA_FAILURES
from tests.e2e.failure_modes import MODES, RETRY_AFTER_S, Outcome, run_mode
from tests.e2e.support import Install, install_fixture, installs

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CLIS = ("claude", "codex", "opencode")


def documented() -> dict[tuple[str, str], str]:
    """(mode, cli) -> the class docs/agents.md's failure-mode table gives (`completed`: none)."""
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    head = text.index("| mode | what happens |")
    rows = [line for line in text[head:].splitlines() if line.startswith("|")]
    clis = [c.strip().strip("`") for c in rows[0].strip("|").split("|")][2:]
    table = {}
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        mode = cells[0].strip("`")
        for cli, cell in zip(clis, cells[2:]):
            table[mode, cli] = re.findall(r"`([a-z_]+)`", cell)[0]
    return table


DOCUMENTED = documented()
install = install_fixture([i for cli in CLIS for i in installs(cli)])


def test_the_documented_table_covers_every_mode_and_cli() -> None:
    assert {mode for mode, _ in DOCUMENTED} == set(MODES) and {cli for _, cli in DOCUMENTED} == set(CLIS)


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_ends_in_its_documented_class(install: Install, mode: str) -> None:
    outcome = run_mode(install, mode)
    expected = DOCUMENTED[mode, install.cli]
    t = outcome.transcript
    got = outcome.failure or t.termination
    assert got == expected, f"{install.id} {mode}: {got} ({t.error} | {t.evidence})"
    _check_details(install, mode, outcome)


def _check_details(install: Install, mode: str, outcome: Outcome) -> None:
    t = outcome.transcript
    if outcome.failure in INFRA_FAILURES:
        assert failure_kind(t) == "infra" and t.evidence, t
    if mode == "crash":
        # OpenCode's runtime (Bun) turns a SIGSEGV into SIGILL as it dies (exit 132): the signal
        # named is the one the process died of.
        assert outcome.killed and t.signal in ("SIGSEGV", "SIGILL"), t.error
        assert t.error.startswith(f"killed by {t.signal} (exit "), t.error
        assert t.steps >= 1  # the crash came after the first model turn
    if mode == "rate_limit" and install.cli in ("claude", "codex"):
        # The endpoint's retry-after, as the CLI reported it, is what the harness's retry waits.
        assert t.retry_after_s is not None and t.retry_after_s >= RETRY_AFTER_S - 0.5, t
    if mode == "permission":
        assert any(c.status == "denied" for c in t.tool_calls), t.tool_calls
        assert "```json" in t.final_text  # it went on to its verdict
