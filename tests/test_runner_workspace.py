"""runner/workspace.py: trial folders are removed whole, even what overlayfs leaves unreadable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rubricgate.runner.workspace import remove_tree

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import sys
import tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rubricgate.runner.workspace import remove_tree
target = Path(sys.argv[2])
remove_tree(target)
print("left" if target.exists() else "gone")
"""


def _as_unprivileged(argv: list[str]) -> list[str]:
    # Root ignores permissions, so the case only shows for another user: run it as nobody.
    if os.geteuid() != 0:
        return argv
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is needed to run this check as an unprivileged user")
    return ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", *argv]


@pytest.fixture
def open_tmp():
    # pytest's own tmp_path sits under a 0700 folder the unprivileged user cannot enter.
    folder = Path(tempfile.mkdtemp(prefix="rg-rm-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_unreadable_subfolder_like_overlayfs_work_is_removed(open_tmp: Path) -> None:
    tmp_path = open_tmp
    shared = tmp_path / "shared"
    shutil.copytree(ROOT / "rubricgate", shared / "rubricgate", ignore=shutil.ignore_patterns("__pycache__"))
    trial = tmp_path / "trial"
    (trial / "work" / "work").mkdir(parents=True)
    (trial / "work" / "work" / "left-over").write_text("x")
    (trial / "upper").mkdir()
    (trial / "upper" / "written").write_text("y")
    for path in [tmp_path, *tmp_path.rglob("*")]:
        os.chown(path, 65534, 65534) if os.geteuid() == 0 else None
    (trial / "work" / "work").chmod(0)  # as overlayfs leaves it
    python = "/usr/bin/python3" if os.geteuid() == 0 and Path("/usr/bin/python3").exists() else sys.executable
    out = subprocess.run(_as_unprivileged([python, "-c", SCRIPT, str(shared), str(trial)]),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "gone", out.stderr


def test_a_missing_folder_is_not_an_error(tmp_path: Path) -> None:
    remove_tree(tmp_path / "never-made")
