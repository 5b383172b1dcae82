"""Each failure mode of the endpoint and the CLI ends in the class docs/agents.md documents for it,
for every CLI: the REAL CLIs through their adapters, inside bubblewrap, against tests/e2e's
scripted servers (tests/e2e/failure_modes.py plays the modes). The table in docs/agents.md is the
expectation, so a claim there that stops being true fails here. How long after its cause each
mode ends is measured by bench/failure_modes.py, not asserted here; what is asserted is how it
ends: stopped at the CLI's first retry notice or its second failed request, never after the
CLI's own retries ran out.

Claude Code, Codex and OpenCode run every mode at every installed version (both tested Claude
Code releases). Gemini CLI, Qwen Code and Copilot CLI run every mode at their newest tested
version and, at their oldest, the modes whose handling differs by version (how the CLI reports
an error the endpoint answered and the retries it makes): `.ci/run` stays short.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rubricgate.graders.failures import failure_kind
from rubricgate.models.failures import INFRA_FAILURES
from tests.e2e.failure_modes import MODES, RETRY_AFTER_S, Outcome, run_mode
from tests.e2e.support import Install, installs, require_install

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CLIS = ("claude", "codex", "opencode", "gemini", "qwen", "copilot")
EVERY_VERSION = ("claude", "codex", "opencode")
OLDEST_MODES = ("auth", "rate_limit", "overloaded", "truncated")  # the newer CLIs' oldest versions: what differs
# The endpoint's retry-after reaches the harness's retry (the CLI reports it or rubricgate reads its wait).
RETRY_AFTER_KNOWN = ("claude", "codex", "qwen", "copilot")


def documented() -> dict[tuple[str, str], str]:
    """(mode, cli) -> the class docs/agents.md's failure-mode table gives (`completed`: none)."""
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    head = text.index("| mode | what happens |")
    rows = [line for line in text[head:].splitlines()[:len(MODES) + 2] if line.startswith("|")]
    clis = [c.strip().strip("`") for c in rows[0].strip("|").split("|")][2:]
    table = {}
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        mode = cells[0].strip("`")
        for cli, cell in zip(clis, cells[2:]):
            table[mode, cli] = re.findall(r"`([a-z_]+)`", cell)[0]
    return table


def cases() -> list:
    """(install, mode) pairs: every mode at every version of the first three CLIs; every mode at
    the newest of the others, and OLDEST_MODES at their older versions."""
    found = []
    for cli in CLIS:
        versions = installs(cli)
        for install in versions:
            modes = MODES if cli in EVERY_VERSION or install == versions[-1] else OLDEST_MODES
            found += [pytest.param(install, mode, id=f"{install.id}-{mode}") for mode in modes]
    return found


DOCUMENTED = documented()


def test_the_documented_table_covers_every_mode_and_cli() -> None:
    assert {mode for mode, _ in DOCUMENTED} == set(MODES) and {cli for _, cli in DOCUMENTED} == set(CLIS)


@pytest.mark.parametrize(("install", "mode"), cases())
def test_each_mode_ends_in_its_documented_class(install: Install, mode: str) -> None:
    require_install(install)
    outcome = run_mode(install, mode)
    expected = DOCUMENTED[mode, install.cli]
    t = outcome.transcript
    got = outcome.failure or t.termination
    assert got == expected, f"{install.id} {mode}: {got} ({t.error} | {t.evidence})"
    _check_details(install, mode, outcome)


def test_a_silent_retry_is_stopped_at_its_notice_with_the_hosts_network() -> None:
    """Qwen Code retries a refused connection 7 times (about 100 s), printing nothing; without the
    sandbox's proxy (agent.sandbox_network: shared) its debug log is the only sign of it."""
    install = installs("qwen")[-1]
    require_install(install)
    t = run_mode(install, "down", network="shared").transcript
    assert t.failure == "unreachable" and t.error.startswith("stopped by rubricgate: model_unreachable: qwen"), t
    assert t.retry_after_s is not None and t.retry_after_s >= 5  # its backoff, kept for the harness's retry


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
    if mode in ("rate_limit", "overloaded"):
        # The CLI's own retries are cut short (Qwen Code would try 7 times, Copilot CLI 6, each after
        # the retry-after): the wait happens in the harness's retry.
        assert outcome.failures <= 2, f"{install.id} {mode}: the endpoint answered {outcome.failures} failures"
    if mode == "rate_limit" and install.cli in RETRY_AFTER_KNOWN:
        # The endpoint's retry-after, as the CLI reported it, is what the harness's retry waits.
        assert t.retry_after_s is not None and t.retry_after_s >= RETRY_AFTER_S - 0.5, t
    if mode == "down" and install.cli == "copilot":
        # Its requests through the sandbox's proxy get the proxy's 502: stopped at the second.
        assert len(t.network) <= 2, t.network
    if mode == "permission":
        assert any(c.status == "denied" for c in t.tool_calls), t.tool_calls
        assert "```json" in t.final_text  # it went on to its verdict
