"""Fault tests need bubblewrap; under .ci/run (RUBRICGATE_REQUIRE_SANDBOX=1) its absence fails."""

from __future__ import annotations

import os

import pytest

from rubricgate.runner.sandbox import probe_bwrap


@pytest.fixture(scope="session")
def bwrap_ready() -> None:
    problem = probe_bwrap()
    if problem and os.environ.get("RUBRICGATE_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"bubblewrap is required here: {problem}")
    if problem:
        pytest.skip(f"bubblewrap unavailable: {problem}")
