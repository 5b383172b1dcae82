"""rubricgate.agents.codex_rollout: the session rollout found in the tree the agent wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rubricgate.agents.codex_rollout import find_rollout
from tests.deep_trees import nest


def test_a_sessions_tree_nested_past_the_recursion_limit_is_searched(tmp_path: Path) -> None:
    # The agent owns CODEX_HOME: os.walk's recursion raised RecursionError on its deep tree.
    day = tmp_path / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    (day / "rollout-1.jsonl").write_text("{}\n")
    nest(tmp_path / "sessions", sys.getrecursionlimit() + 200, file=False)
    try:
        assert find_rollout(tmp_path) == day / "rollout-1.jsonl"
    finally:  # pytest's own removal of tmp_path recurses
        subprocess.run(["rm", "-rf", str(tmp_path / "sessions")], check=False)


def test_a_linked_folder_is_not_entered(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "rollout-9.jsonl").write_text("{}\n")
    (tmp_path / "home" / "sessions").mkdir(parents=True)
    (tmp_path / "home" / "sessions" / "link").symlink_to(elsewhere)
    (tmp_path / "home" / "sessions" / "rollout-2.jsonl").write_text("{}\n")
    assert find_rollout(tmp_path / "home") == tmp_path / "home" / "sessions" / "rollout-2.jsonl"
