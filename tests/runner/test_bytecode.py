"""A fresh checkout of rubricgate gating its own embedded reviewer, bytecode writing on (as a
user's shell has it): the modules the run imports late must not read as a change to the
repository (they wrote __pycache__ into it mid-run: decision error on the README's command)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_fresh_checkout_gates_itself_with_bytecode_writing_on(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (ROOT / rel).is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, repo / rel)
    assert not list(repo.rglob("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPATH"] = str(repo)
    proc = subprocess.run([sys.executable, "-m", "rubricgate", "run"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "decision: PASS" in proc.stdout + proc.stderr
    assert list((repo / "rubricgate").rglob("__pycache__/*.pyc")), "bytecode was written, as a user's run does"
