"""Fault tests need bubblewrap (`bwrap_ready`, tests/conftest.py); under .ci/run
(RUBRICGATE_REQUIRE_SANDBOX=1) its absence fails, and so does the absence of a bubblewrap that
mounts overlays itself (>= 0.11: the system's, or the one .ci/build-bwrap.sh builds, named by
RUBRICGATE_BWRAP_WITH_OVERLAY)."""

from __future__ import annotations

import os

import pytest

from rubricgate.isolation.overlay import probe_overlay
from rubricgate.isolation.sandbox import probe_layers


@pytest.fixture(params=["unshare", "bwrap"])
def overlay_mount(request, monkeypatch, bwrap_ready) -> str:
    """Each way a trial's overlay workspace is mounted: `unshare` + `mount` in front of bwrap
    (bubblewrap 0.8, Debian 12), or by bwrap itself (>= 0.11). Fails under .ci/run without both."""
    if request.param == "unshare":
        monkeypatch.setattr("rubricgate.runner.startup.probe_layers", lambda parent=None: ("unshare", probe_overlay(parent)))
        return "unshare"
    folder = os.environ.get("RUBRICGATE_BWRAP_WITH_OVERLAY")
    if folder:
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    if probe_layers()[0] != "bwrap":
        problem = ("no bubblewrap >= 0.11 (with --overlay) on PATH; set RUBRICGATE_BWRAP_WITH_OVERLAY to a folder "
                   "holding one (.ci/build-bwrap.sh builds it)")
        if os.environ.get("RUBRICGATE_REQUIRE_SANDBOX") == "1":
            pytest.fail(problem)
        pytest.skip(problem)
    return "bwrap"
