"""rubricgate.yaml's repository paths come in one spelling: every comparison of paths is by string."""

from __future__ import annotations

import pytest

from rubricgate.models.base import normal_path
from rubricgate.models.config import Config
from rubricgate.suite.answer_key import answer_key_paths


@pytest.mark.parametrize("written", ["./evals/tasks", "evals//tasks", "evals/tasks/.", "evals/./tasks", "evals/tasks/"])
def test_a_path_written_another_way_is_the_same_path(written: str) -> None:
    config = Config.model_validate({"suite": {"tasks": written, "workspace_exclude": [f"./{written}"]},
                                    "baseline": "./baseline.json", "reviewer": {"files": ["./tools/**"]}})
    assert config.suite.tasks == "evals/tasks" and config.suite.workspace_exclude == ["evals/tasks"]
    assert config.baseline == "baseline.json" and config.reviewer.files == ["tools/**"]
    assert answer_key_paths(config) == answer_key_paths(Config())


def test_nothing_else_is_changed_by_the_one_spelling() -> None:
    assert [normal_path(p) for p in ("", "a", "a/b.md", "../x", "/abs")] == ["", "a", "a/b.md", "../x", "/abs"]
