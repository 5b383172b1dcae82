"""The task file's model: what a task may say, checked as it is read."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rubricgate.models.task import TaskFile


def _task(files: dict[str, str]) -> dict:
    return {"id": "t", "review": ["skills/x/SKILL.md"], "files": files, "expect": {"tier": "BLOCK"}}


@pytest.mark.parametrize("other", ["./skills/x/SKILL.md", "skills//x/SKILL.md", "skills/x/./SKILL.md"])
def test_two_files_keys_naming_one_file_are_refused(other):
    # Both became skills/x/SKILL.md: the later content replaced the earlier, and the reviewer
    # read a file the task's author never meant it to (validate said ok).
    with pytest.raises(ValidationError, match="name one file"):
        TaskFile.model_validate(_task({"skills/x/SKILL.md": "---\nname: x\n---\n", other: "token: ghp_x\n"}))


def test_files_keys_are_kept_in_one_spelling():
    task = TaskFile.model_validate(_task({"./skills/x/SKILL.md": "a", "skills/y.md": "b"}))
    assert task.files == {"skills/x/SKILL.md": "a", "skills/y.md": "b"}
