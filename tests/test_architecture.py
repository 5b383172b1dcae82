"""The folder tree is the architecture: import-linter's contracts in pyproject.toml hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(config: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return subprocess.run([exe, "--config", str(config), "--no-cache"], cwd=ROOT, capture_output=True, text=True)


def test_contracts_are_kept():
    got = _lint_imports(ROOT / "pyproject.toml")
    assert got.returncode == 0, got.stdout[-3000:]
    assert "broken" in got.stdout and "0 broken" in got.stdout


def test_a_lower_layer_importing_upward_is_caught(tmp_path):
    """The contract can fail: a models module importing the pipeline breaks it."""
    pkg = tmp_path / "rubricgate"
    shutil.copytree(ROOT / "rubricgate", pkg, ignore=shutil.ignore_patterns("__pycache__", "templates"))
    (pkg / "models" / "upward.py").write_text("import rubricgate.pipeline\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed")
    got = subprocess.run([exe, "--no-cache"], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin:" + str(Path(sys.executable).parent)})
    assert got.returncode == 1, got.stdout[-2000:]
    assert "rubricgate.models.upward -> rubricgate.pipeline" in got.stdout


def test_every_test_module_has_a_name_of_its_own():
    # The test folders are not packages: pytest imports each module by its base name, so a second
    # tests/*/test_x.py stops the whole suite at collection ("import file mismatch").
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert not [n for n, k in names.items() if k > 1]


def test_every_module_compiles_with_warnings_as_errors():
    """An invalid escape in a docstring (`\\/` in a non-raw string) is a warning at compile
    time and an error under `-W error`: the import of that module fails there."""
    import warnings

    bad = []
    for path in sorted((ROOT / "rubricgate").rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                compile(path.read_text(encoding="utf-8"), str(path), "exec")
            except (SyntaxError, SyntaxWarning, DeprecationWarning) as exc:
                bad.append(f"{path.relative_to(ROOT)}: {exc}")
    assert not bad, bad
