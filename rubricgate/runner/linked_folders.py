"""Links to folders of the repository, as a workspace shows them.

git lists a symbolic link as one name, and the snapshot holds regular files (a linked file by
its content), so a link to a folder (`policy -> shared/policy`, `.claude/skills -> ../skills`)
was left out whole: a reviewer whose prompt says to read `policy/rules.md` found nothing there in
every trial, where a checkout shows it and the reviewer's closure (suite/closure.py), `changed`
and `compare --base` count it. A pull request that made the policy folder a link read as a
REGRESSION, and one loosening the linked folder's files passed: neither side ever saw them.
The snapshot holds such a folder's files at the link's path, by content, as it holds a linked
file; whether each is inside the repository and outside the answer key is checked as for any
listed file (runner/workspace.py `_Inside`). In a git repository the files are read from git's
listing at the folder's own place: walking it would bring back what `.gitignore` keeps out (a
`.env` beside the linked policy), which runner/git_listing.py exists to keep from the reviewer.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Sequence
from collections.abc import Set as AbstractSet


def linked_folder_files(repo: str, rel: str, skip: AbstractSet[str], listed: Sequence[str] | None = None) -> list[str]:
    """The files under the folder the link `rel` names, each at the link's path
    (`policy/rules.md` for `policy -> shared/policy`), sorted. With `listed` (git's names,
    sorted), the names it holds at the folder's own place (`shared/policy/rules.md`): none git
    ignores, and no second look at the disk. Without (no repository), a walk: not through the
    folders `skip` names, nor into a linked folder inside it (a link to an ancestor would never
    end: it is one name, kept only as the files it is found with here)."""
    real = os.path.realpath(os.path.join(repo, rel))
    own = os.path.relpath(real, os.path.realpath(repo)).replace(os.sep, "/") + "/"
    if listed is not None:
        found = []
        for name in listed[bisect_left(listed, own):]:
            if not name.startswith(own):
                break
            found.append(rel + "/" + name[len(own):])
        return found
    return sorted(_walked(rel, real, skip))


def _walked(rel: str, real: str, skip: AbstractSet[str]) -> list[str]:
    found = []
    for top, dirs, files in os.walk(real):  # os.walk enters no linked folder
        dirs[:] = sorted(d for d in dirs if d not in skip)
        sub = os.path.relpath(top, real)
        found += [f"{rel}/{name}" if sub == "." else f"{rel}/{sub.replace(os.sep, '/')}/{name}" for name in files]
    return found
