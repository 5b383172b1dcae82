"""Every bench/ script still imports: a benchmark that names a module since moved is found here,
not on the day its figure is needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")

# One fresh interpreter imports them all, each as `python bench/<name>.py` would (bench/ first on
# sys.path): per script, its docstring or the end of the error that stopped its import.
IMPORT_ALL = r"""
import importlib, json, sys, traceback
sys.path.insert(0, sys.argv[1])
seen = {}
for name in sys.argv[2:]:
    try:
        seen[name] = {"doc": bool((importlib.import_module(name).__doc__ or "").strip())}
    except BaseException:
        seen[name] = {"error": traceback.format_exc()[-2000:]}
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def imported() -> dict:
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL, str(BENCH), *SCRIPTS], capture_output=True, text=True,
                          cwd=BENCH.parent, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_there_are_scripts_to_check() -> None:
    assert len(SCRIPTS) >= 20, SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_script_imports_and_says_how_it_is_used(name: str, imported: dict) -> None:
    """Imported (its own sys.path, as `python bench/<name>.py` runs it); its docstring's first line
    is what --help prints."""
    assert "error" not in imported[name], imported[name].get("error")
    assert imported[name]["doc"], f"bench/{name}.py has no docstring"
