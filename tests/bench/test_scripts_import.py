"""Every bench/ script still imports: a benchmark that names a module since moved is found here,
not on the day its figure is needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")


def test_there_are_scripts_to_check() -> None:
    assert len(SCRIPTS) >= 20, SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_script_imports_and_says_how_it_is_used(name: str) -> None:
    """Imported in a fresh interpreter (its own sys.path, as `python bench/<name>.py` runs it); its
    docstring's first line is what --help prints."""
    code = f"import sys; sys.path.insert(0, {str(BENCH)!r}); import {name} as m; print(bool((m.__doc__ or '').strip()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=BENCH.parent, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True", f"bench/{name}.py has no docstring"
