"""mypy checks pydantic constructors (the plugin's init_typed): a value no model field allows is a
type error, not a string no grader ever writes (issue 42)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.long  # a mypy process with the pydantic plugin (~9 s); .ci/run runs mypy on the package too
def test_a_constructor_argument_outside_the_fields_type_is_a_mypy_error(tmp_path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the test extras (pip install -e '.[test]')")
    snippet = tmp_path / "snippet.py"
    snippet.write_text("from rubricgate.models.results import Grade\n"
                       "Grade(passed=False, category='vague_finding')\n"
                       "Grade(passed=False, category='wrong_tier')\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--follow-imports=silent", str(snippet)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "snippet.py:2:" in errors[0] and "vague_finding" in errors[0], done.stdout
