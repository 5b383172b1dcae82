"""The `long` marker (tests/conftest.py): the README's test command runs a long test's sample
(a parametrized one's first case, an unparametrized one not at all); .ci/run, with
RUBRICGATE_FULL_TESTS=1, runs every case."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.long
@pytest.mark.parametrize("size", [1, 2, 3])
def test_a_parametrized_long_test(size):
    assert size in (1, 2, 3)


@pytest.mark.long
def test_an_unparametrized_long_test():
    # the README's command must skip it: it runs only where every long test runs in full
    assert os.environ.get("RUBRICGATE_FULL_TESTS") == "1"


def _outcome(full: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "RUBRICGATE_FULL_TESTS"}
    if full:
        env["RUBRICGATE_FULL_TESTS"] = "1"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_long_marker.py", "-k", "long_test"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.long  # two pytest processes (~9 s of a 2-core machine): .ci/run checks the marker
def test_the_readme_command_runs_the_first_case_and_ci_runs_all():
    assert _outcome(full=False).startswith("1 passed, 3 skipped")
    assert _outcome(full=True).startswith("4 passed")
