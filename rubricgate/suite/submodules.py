"""Reviewer files no workspace holds: inside a git submodule (or any repository of its own
inside the tree), or ignored by git.

Workspaces hold the tree as git lists it (docs/isolation.md): a submodule as one name, never its
files, and no file `.gitignore` keeps out. A rubric there passed `validate` and then every trial
failed with "rubric not found in workspace". In `compare --base` a policy the prompt links to in
a submodule was in neither side's workspaces, so both sides ran the same reviewer and a pull
request moving the module passed. Either is an input error (exit 2) naming the file and the fix.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from rubricgate.errors import GateInputError
from rubricgate.suite.lfs import FIX as LFS_FIX
from rubricgate.suite.lfs import is_pointer_file
from rubricgate.suite.trees import in_git_repository

FIX = "copy the file into the repository"
# How a file is un-ignored: a `!` line cannot re-include a file whose folder is ignored; `add -f` can.
# Where: the rule may be in any .gitignore, .git/info/exclude or the global excludes file, and
# "in .gitignore" sent the user to a file that holds no such line.
IGNORED_FIX = "un-ignore it in {source} (line {line}), or track it as it is: git add -f {rel}"


class IgnoreRule(NamedTuple):
    """The rule by which git ignores a file, as `git check-ignore -v` names it."""

    source: str  # `.gitignore`, `policy/.gitignore`, `.git/info/exclude`, the global excludes file
    line: str
    pattern: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line} {self.pattern!r}"


def nested_repository(root: Path, rel: str) -> str:
    """The folder on `rel`'s way down from `root` that is a git repository of its own (a
    submodule's checkout, a clone inside the tree: it holds `.git`), '' when none. Outside git
    '' always: a tree that is no repository is copied by walking it, nested ones included."""
    parts = rel.split("/")[:-1]
    folders = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    if not folders or not in_git_repository(root):
        return ""
    return next((f for f in folders if os.path.lexists(os.path.join(root, f, ".git"))), "")


def submodule_error(file: str, field: str, rel: str, module: str, why: str = "") -> GateInputError:
    """The one line for a reviewer file no workspace holds: it lies in the submodule `module`
    (`why`: how the reviewer reaches it, `linked from reviewer/prompt.md`)."""
    named = f"{rel!r} ({why})" if why else repr(rel)
    return GateInputError(file, field, f"{named} is inside {module!r}, a git submodule (or a repository of its "
                          "own), whose files git never lists and no workspace holds", FIX)


def refuse_submodule_files(root: Path, files: Iterable[str], side: str) -> None:
    """`compare --base`: raise for the first of `files` (relative to `root`) inside a submodule;
    `side` names the tree in the error (`this checkout's reviewer`)."""
    for rel in files:
        if module := nested_repository(root, rel):
            raise submodule_error("--base", side, rel, module)


def ignored_by_git(root: Path, rels: list[str]) -> dict[str, IgnoreRule]:
    """Of `rels` (named from `root`), those git ignores and does not track -> the rule ignoring it
    (`.gitignore:3 'policy/'`); none outside git, where a tree is copied by walking it."""
    if not rels or not in_git_repository(root):
        return {}
    try:
        got = subprocess.run(["git", "-C", str(root), "check-ignore", "-v", "-z", "--stdin"], capture_output=True,
                             input="\0".join(rels).encode("utf-8", "surrogateescape"), check=False)
    except OSError:  # no git: the run's git listing says so in its own line (runner/git_listing.py)
        return {}
    if got.returncode != 0:  # 1: none ignored; 128: git cannot say, and its listing then stops the run
        return {}
    fields = got.stdout.decode("utf-8", "surrogateescape").split("\0")
    matched = [fields[i:i + 4] for i in range(0, len(fields) - 3, 4)]
    # -v names a `!pattern` that matched too: that file is kept, not ignored.
    return {path: IgnoreRule(source, line, pattern) for source, line, pattern, path in matched
            if not pattern.startswith("!")}


def ignored_error(file: str, field: str, rel: str, rule: IgnoreRule, why: str = "") -> GateInputError:
    """The one line for a reviewer file no workspace holds: git ignores it (by `rule`; `why`: how
    the reviewer reaches it), and the fix names the file and line the rule is in."""
    how = f"{rule}; {why}" if why else str(rule)
    return GateInputError(file, field, f"{rel!r} is ignored by git ({how}), and a workspace holds only the files "
                          "git lists", IGNORED_FIX.format(source=rule.source, line=rule.line, rel=rel))


def unheld_link_errors(root: Path, linked: dict[str, str], display: str) -> list[GateInputError]:
    """An error for each file the reviewer's closure links to (suite/closure.py `linked`, each with
    why it is in: `linked from reviewer/prompt.md`) that no workspace holds, inside a submodule or
    ignored by git, or holds as a git LFS pointer. The reviewer is told to read it, and would read
    nothing (a PR moving the submodule passed `run`, exit 0) or a hash."""
    modules = {rel: module for rel in sorted(linked) if (module := nested_repository(root, rel))}
    errors = [submodule_error(display, "reviewer", rel, module, linked[rel]) for rel, module in modules.items()]
    rest = sorted(rel for rel in linked if rel not in modules)
    # Held, but as a git LFS pointer (a checkout without LFS content): the reviewer would read a
    # hash where the policy it is told to read should be.
    errors += [GateInputError(display, "reviewer", f"{rel!r} ({linked[rel]}) is a git LFS pointer, not the file's "
                              "content: the reviewer would read a hash instead of it", LFS_FIX)
               for rel in rest if is_pointer_file(root / rel)]
    return errors + [ignored_error(display, "reviewer", rel, rule, linked[rel])
                     for rel, rule in sorted(ignored_by_git(root, rest).items())]
