"""A case's `files:` never replace the reviewer inside its workspace.

A task's overlays are written over the copy of the tree the reviewer runs in. One that names a
file of the reviewer itself (its closure, suite/closure.py: the prompt, skill, rubric and what
they reference; a script the agent command runs from the workspace; the changed-files list the
harness writes) would make the case test that text instead of the reviewer: a canned answer that
passes whatever the PR does to the real one. Such a key is an input error naming the task; so is
a path under `removed:` naming one, which took it out of the workspace (a reviewer without its rubric).

`reviewer.changed_files` is written into every workspace the same way, once per trial: naming
a file of the reviewer (its prompt, a script agent.command runs) it overwrote the reviewer with
the list of reviewed files, and every trial errored. The same rule refuses it in rubricgate.yaml.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.case import CaseSpec
from rubricgate.models.config import Config
from rubricgate.suite.closure import Closure, command_scripts
from rubricgate.suite.trees import WorkTree

CHANGED_LIST = "the changed-files list rubricgate writes"
RUN_BY_COMMAND = "run by agent.command"


def reviewer_overlay_errors(repo: Path, config: Config, cases: Sequence[CaseSpec],
                            closure: Closure) -> list[GateInputError]:
    """An error for every overlay key, and every path a case removes, that is one of the
    reviewer's own files (`closure`: its closure in `repo`)."""
    if not any(case.files or case.removed for case in cases):  # the closure is read only when needed
        return []
    own = {_canonical(rel): why for rel, why in reviewer_files(config, closure).items()}
    return [GateInputError(case.origin, f"files.{key}", f"replaces the reviewer's own {key!r} "
                           f"({own[_canonical(key)]}) in the workspace: the case would test that text, not the "
                           "reviewer", "overlay another path; the reviewer runs as it is in the repository")
            for case in cases for key in case.files if _canonical(key) in own] + \
        [_removes_own(case, i, rel, own[_canonical(rel)])
         for case in cases for i, rel in enumerate(case.removed) if _canonical(rel) in own]


def reviewer_own(paths: Sequence[str], config: Config, closure: Closure) -> list[str]:
    """Those of `paths` that are one of the reviewer's own files (`closure`: its closure), as
    reviewer_overlay_errors reads a key: `record` leaves them out of a task's `removed:`."""
    own = {_canonical(rel) for rel in reviewer_files(config, closure)}
    return [rel for rel in paths if _canonical(rel) in own]


def _removes_own(case: CaseSpec, i: int, rel: str, why: str) -> GateInputError:
    """A case taking one of the reviewer's files out of its workspace tests a reviewer without
    it (`removed:` is for the reviewed change's deleted files, never the reviewer's)."""
    return GateInputError(case.origin, f"removed[{i}]", f"removes the reviewer's own {rel!r} ({why}) from the "
                          "workspace: the case would test the reviewer without it, not the reviewer",
                          "list a file the change deleted outside the reviewer's; the reviewer runs as it is "
                          "in the repository")


def changed_files_errors(repo: Path, config: Config, display: str, closure: Closure) -> list[GateInputError]:
    """An error when reviewer.changed_files names one of the reviewer's own files (by its name or,
    through a link, by the file it names; `closure`: the reviewer's closure in `repo`)."""
    changed = config.reviewer.changed_files
    own = {_canonical(rel): why for rel, why in reviewer_files(config, closure).items() if why != CHANGED_LIST}
    real = WorkTree(repo).real(changed)
    names = [_canonical(changed), *([_canonical(real[0])] if real else [])]
    why = next((own[name] for name in names if name in own), None)
    if why == RUN_BY_COMMAND and not set(names) & _programs(config):
        why = None  # a path the command passes on, not the one it runs: the list itself, named so
    if why is None:  # a folder holding a reviewer file, or a path under one: writing it breaks the reviewer
        why = next((f"{reason}: {rel}" for rel, reason in own.items() for name in names
                    if rel.startswith(name + "/") or name.startswith(rel + "/")), None)
    if why is None:
        return []
    return [GateInputError(display, "reviewer.changed_files", f"replaces the reviewer's own {changed!r} ({why}) in "
                           "the workspace: every trial would overwrite it with the list of reviewed files",
                           "name a file of its own for the list, e.g. reviewer/.changed-skills.txt")]


_IN_WORKSPACE = re.compile(r"\{workspace\}/([^\s'\"]+)")


def _programs(config: Config) -> set[str]:
    """The repository file agent.command starts, spelled canonically: its first word, or its first
    argument that is no flag (the script an interpreter runs: `sh {workspace}/reviewer/review.sh`),
    when that begins `{workspace}/`. A later `{workspace}/` argument may be what the program reads
    (`{workspace}/reviewer/.changed-skills.txt`: the changed-files list, named by its path)."""
    argv = config.agent.command or []
    started = argv[:1] + [next((arg for arg in argv[1:] if not arg.startswith("-")), "")]
    return {_canonical(m.group(1)) for word in started if (m := _IN_WORKSPACE.match(word))}


def _canonical(rel: str) -> str:
    """The file a key names, however it is spelled: `./`, `//` and case (on a file system that
    folds case, `Reviewer/` is the same folder) make no other file."""
    return posixpath.normpath(rel.strip()).lstrip("/").casefold()


def reviewer_files(config: Config, closure: Closure) -> dict[str, str]:
    """Repository-relative path -> why it is the reviewer's (its `closure`, and the files rubricgate
    writes or runs for it)."""
    own = dict(closure.reasons)
    for rel in command_scripts(config):  # in the closure when there; named here even when not
        own.setdefault(rel, RUN_BY_COMMAND)
    own.setdefault(config.reviewer.changed_files.strip("/"), CHANGED_LIST)
    return own
