"""Checks that make `validate` tell everything about the suite folders and task files.

Kept apart from suite.py (which turns files into cases) so each part stays small: here every
file under the suite folders is either a case or an error naming the file and the fix, task
and fixture files may not be symlinks out of the repository, and a task's `files:` must be
writable in a copy of the tree.
"""

from __future__ import annotations

import os
from collections.abc import Set as AbstractSet
from functools import partial
from pathlib import Path, PurePosixPath

from rubricgate.boundary import printable
from rubricgate.errors import GateInputError, collect
from rubricgate.models.config import Config
from rubricgate.models.task import TaskFile
from rubricgate.suite.paths import real_rel, safe_relpath
from rubricgate.suite.skeletons import VIOLATION_MARKER
from rubricgate.suite.validation import did_you_mean

TIER_FOLDERS = ("pass", "warn", "block")
TASK_SUFFIXES = (".yaml", ".yml", ".json")
FIXTURE_FILE = "SKILL.md"


def _visible(folder: Path) -> list[Path]:
    # Hidden entries (.gitkeep, .DS_Store) are the file system's or git's, not the suite's.
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def _rel(repo: Path, path: Path) -> str:
    return path.relative_to(repo).as_posix()


# --- evals/tasks/ ---------------------------------------------------------------------------
def task_layout_errors(repo: Path, config: Config) -> list[GateInputError]:
    """Every entry of the tasks folder is a task file, else an error naming it and the fix."""
    folder = repo / config.suite.tasks
    if not folder.is_dir():
        return []
    errors = []
    for path in _visible(folder):
        rel = _rel(repo, path)
        if path.is_symlink():
            errors.append(_answer_key_is_a_link(rel, "a task file"))
        elif path.is_dir():
            nested = [p for p in path.rglob("*") if p.suffix in TASK_SUFFIXES]
            what = f"holds {len(nested)} task file(s) that are not loaded" if nested else "is not a task"
            errors.append(GateInputError(rel, "", f"folder inside {config.suite.tasks}/ {what}",
                                         f"move task files directly into {config.suite.tasks}/ (no sub-folders)"))
        elif path.suffix not in TASK_SUFFIXES:
            errors.append(GateInputError(rel, "", "not a task file (tasks are .yaml, .yml or .json)",
                                         f"rename it to .yaml or move it out of {config.suite.tasks}/"))
    return errors


def task_errors(repo: Path, task: TaskFile, path: Path, display: str,
                hidden: AbstractSet[str] = frozenset(), fixtures: str = "") -> list[GateInputError]:
    """Everything about a parsed task beyond its schema, all problems at once; `hidden`: what no
    workspace holds (suite/answer_key.py), which the task cannot review but as a fixture's file
    named under `fixtures` (copied in as the case's)."""
    errors: list[GateInputError] = []
    collect(errors, lambda: safe_relpath(repo, display, display, "(file)"))
    if task.id != path.stem:
        errors.append(GateInputError(display, "id", f"id {task.id!r} differs from the file stem {path.stem!r}",
                                     f"rename the file or set id: {path.stem}"))
    for i, rel in enumerate(task.review):
        if rel in task.review[:i]:  # reviewed twice, its findings counted twice (three warnings: BLOCK)
            errors.append(GateInputError(display, f"review[{i}]", f"{rel!r} is listed twice", "list it once"))
        elif rel != rel.strip():  # the changed-files list is read a stripped line at a time
            errors.append(GateInputError(display, f"review[{i}]", f"{rel!r} begins or ends with a space",
                                         "rename the file"))
        elif problem := _name_problem(rel):
            errors.append(GateInputError(display, f"review[{i}]", problem, "rename the file"))
        elif collect(errors, partial(safe_relpath, repo, rel, display, f"review[{i}]")) is not None:
            if rel not in task.files and not (repo / rel).is_file():
                errors.append(GateInputError(display, f"review[{i}]", f"{rel!r} does not exist",
                                             "point at an existing file or add it under files:"))
            elif rel not in task.files and _under(rel, fixtures) and PurePosixPath(rel).name == "expect.yaml":
                errors.append(GateInputError(display, f"review[{i}]", f"{rel!r} is a fixture's expect.yaml, which "
                                             "no workspace holds (the answer key)", "review the fixture's files"))
            elif rel not in task.files and not _under(rel, fixtures) and (kept := _hidden_by(repo, rel, hidden)):
                errors.append(GateInputError(display, f"review[{i}]", f"{rel!r} is in {kept}, which no workspace "
                                             "holds (the answer key or suite.workspace_exclude)",
                                             "review a file the workspace shows, or put the content under files:"))
    for rel in task.files:
        if problem := _name_problem(rel):
            errors.append(GateInputError(display, f"files.{printable(rel)}", problem, "rename the file"))
        elif collect(errors, partial(safe_relpath, repo, rel, display, f"files.{rel}")) is not None:
            errors.extend(files_key_errors(repo, rel, task.files, display))
    return errors + [e for i, rel in enumerate(task.removed) if (e := _removed_error(repo, task, i, rel, display))]


def _removed_error(repo: Path, task: TaskFile, i: int, rel: str, display: str) -> GateInputError | None:
    """A path the task removes from the workspace must be a repository file's path, and one it
    neither reviews nor writes (which would the reviewer see?)."""
    where = f"removed[{i}]"
    if problem := _name_problem(rel):
        return GateInputError(display, where, problem, "rename the file")
    if rel in task.review or rel in task.files:
        return GateInputError(display, where, f"{rel!r} is also reviewed or written under files:",
                              "list a file the change deleted, and review or write it nowhere else")
    errors: list[GateInputError] = []
    if collect(errors, partial(safe_relpath, repo, rel, display, where)) is None:
        return errors[0]
    if (repo / rel).is_dir():
        return GateInputError(display, where, f"{rel!r} is a folder in the repository", "list each deleted file")
    return None


def _name_problem(rel: str) -> str:
    """Why a task's path cannot be a workspace file listed a line at a time ("" when it can): a
    line break split it into two paths in the changed-files list, neither of them a file, and the
    reviewer never saw the file (a recorded change's `app/new\\nline.py`), as a fixture's name.
    A NUL is left to safe_relpath, whose line names it (no file can hold one)."""
    if "\x00" in rel:
        return ""
    if printable(rel) != rel or any(0xDC80 <= ord(c) <= 0xDCFF for c in rel):
        return f"{printable(rel)!r} is no printable UTF-8 name (a line break or another control character)"
    return ""


def _under(rel: str, folder: str) -> bool:
    return bool(folder) and (rel == folder or rel.startswith(folder + "/"))


def _hidden_by(repo: Path, rel: str, hidden: AbstractSet[str]) -> str:
    """The `hidden` path that keeps the file `rel` (or, a link, the file it names) out of every
    workspace; '' when none does."""
    return next((h for name in (rel, real_rel(repo, rel)) for h in sorted(hidden) if _under(name, h)), "")


def files_key_errors(repo: Path, rel: str, files: dict[str, str], display: str) -> list[GateInputError]:
    """A `files:` key must be writable in a copy of the tree: no parent may be a file."""
    parts = PurePosixPath(rel).parts
    for i in range(1, len(parts)):
        parent = "/".join(parts[:i])
        if (repo / parent).is_file() or parent in files:
            return [GateInputError(display, f"files.{rel}", f"cannot be written: its parent {parent!r} is a file",
                                   "choose a path whose folders are not files")]
    if (repo / rel).is_dir():
        return [GateInputError(display, f"files.{rel}", f"cannot be written: {rel!r} is a folder in the repository",
                               "name a file, not a folder")]
    return []


# --- fixtures/ ------------------------------------------------------------------------------
def fixture_layout_errors(repo: Path, config: Config,
                          config_rel: str | None = "rubricgate.yaml") -> list[GateInputError]:
    """fixtures/<pass|warn|block>/<name>/SKILL.md only; anything else is an error with its fix.
    `config_rel`: where the config file lies (suite/answer_key.py)."""
    root = repo / config.suite.fixtures
    if not root.is_dir():
        return []
    from rubricgate.suite.answer_key import answer_key_paths  # it imports suite.config, which imports this module

    errors = []
    hidden = sorted(answer_key_paths(config, config_rel, repo))  # what a link may not show the reviewer
    for entry in _visible(root):
        rel = _rel(repo, entry)
        if entry.is_symlink() and entry.name in TIER_FOLDERS:
            errors.append(_answer_key_is_a_link(rel, "a tier folder"))
        elif entry.is_dir() and entry.name in TIER_FOLDERS:
            for item in _visible(entry):
                errors.extend(_unprintable_name_errors(repo, item))
                errors.extend(_fixture_folder_errors(repo, item, hidden) if config.suite.layout == "skills"
                              else _files_folder_errors(repo, item, hidden))
        elif entry.is_dir():
            errors.append(GateInputError(rel, "",
                                         f"unknown tier folder {entry.name!r}{did_you_mean(entry.name, TIER_FOLDERS)}",
                                         f"fixtures live in {config.suite.fixtures}/<pass|warn|block>/<name>/; "
                                         "rename or move it"))
        else:
            errors.append(GateInputError(rel, "", "a file directly under the fixtures folder is not a case",
                                         f"move it into {config.suite.fixtures}/<tier>/<name>/ or out of the suite"))
    return errors


def _unprintable_name_errors(repo: Path, item: Path) -> list[GateInputError]:
    """A fixture's case id (fixture-<folder>) is printed on lines of its own (progress, the
    decision's reasons, compare's cases): a folder name holding a line break or another control
    character could print lines that are not rubricgate's (the error line itself shows it escaped)."""
    if printable(item.name) == item.name:
        return []
    return [GateInputError(_rel(repo, item), "folder name", "holds a line break or another control character",
                           "rename the folder to printable characters: its case id is fixture-<folder>")]


def _fixture_folder_errors(repo: Path, folder: Path, hidden: list[str]) -> list[GateInputError]:
    rel = _rel(repo, folder)
    if not folder.is_dir():
        return [GateInputError(rel, "", "a file directly under a tier folder is not a case",
                               f"put it in its own folder as {folder.parent.name}/<name>/{FIXTURE_FILE}")]
    errors = _symlink_errors(repo, folder, hidden)
    if folder.is_symlink():  # what it links to is not the suite's: that one line says it all
        return errors
    errors += _case_file_errors(repo, folder)
    if (folder / FIXTURE_FILE).is_file():
        return errors + _odd_fixture_files(repo, folder) + _unwritten_skeleton(repo, folder / FIXTURE_FILE)
    names = {p.name for p in folder.iterdir()}
    wrong_case = next((n for n in names if n.lower() == FIXTURE_FILE.lower()), None)
    nested = sorted(_rel(repo, p.parent) for p in folder.glob(f"*/**/{FIXTURE_FILE}"))
    if wrong_case:
        problem, fix = f"{wrong_case!r} is not recognised (the name is case-sensitive)", f"rename it to {FIXTURE_FILE}"
    elif nested:
        problem, fix = (f"fixture nested too deep ({nested[0]})",
                        f"move it up to {folder.parent.name}/<name>/{FIXTURE_FILE}")
    else:
        problem, fix = f"no {FIXTURE_FILE} in this fixture folder", f"add {FIXTURE_FILE} or remove the folder"
    return errors + [GateInputError(rel, "", problem, fix)]


def _files_folder_errors(repo: Path, folder: Path, hidden: list[str]) -> list[GateInputError]:
    """suite.layout files: a folder holding the reviewed files (any names), expect.yaml beside them."""
    rel = _rel(repo, folder)
    if not folder.is_dir():
        return [GateInputError(rel, "", "a file directly under a tier folder is not a case",
                               f"put it in its own folder: {folder.parent.name}/<name>/{folder.name}")]
    errors = _symlink_errors(repo, folder, hidden)
    if folder.is_symlink():
        return errors
    errors += _case_file_errors(repo, folder)
    errors += _odd_fixture_files(repo, folder)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "expect.yaml" and not p.is_symlink()):
        errors += _unwritten_skeleton(repo, path)
    if not any(p.is_file() and p.name != "expect.yaml" for p in folder.rglob("*")):
        errors.append(GateInputError(rel, "", "no file to review in this fixture folder",
                                     "add the files the reviewer reviews (a .diff, code, documents) "
                                     "or remove the folder"))
    return errors


def _answer_key_is_a_link(rel: str, what: str) -> GateInputError:
    """The answer key is kept out of workspaces by its paths: as a link, its content lies under
    another name (`expect.yaml -> ../../../notes/answers.yaml` showed it in every workspace)."""
    return GateInputError(rel, "", f"{what} that is a symbolic link: what it names would reach the reviewer "
                          "under that name", "replace the link with the file or folder itself")


# A path the run copies into its folders (/dev/shm/rg-<random>/sources/...) must fit PATH_MAX
# (4096) with them in front: a 4,067-byte one failed in `cp` as an internal error.
WORKSPACE_PATH_BYTES = 3840


def _case_file_errors(repo: Path, folder: Path) -> list[GateInputError]:
    """Its files' names, and its expect.yaml a file: no link, no folder. A folder named
    expect.yaml was read as no expectations, and its files were copied into the workspace."""
    errors = _file_name_errors(repo, folder)
    expect = folder / "expect.yaml"
    if expect.is_symlink():
        errors.append(_answer_key_is_a_link(_rel(repo, expect), "an expect.yaml"))
    elif os.path.lexists(expect) and not expect.is_file():
        what = "a folder" if expect.is_dir() else "not a regular file"
        errors.append(GateInputError(_rel(repo, expect), "", f"{what}: the fixture's expect.yaml must be a file "
                                     "(its expectations would be ignored and its contents shown to the reviewer)",
                                     "replace it with an expect.yaml file, or remove it"))
    return errors


def _file_name_errors(repo: Path, folder: Path) -> list[GateInputError]:
    """Each file of a fixture is written into a workspace under its name and listed a line at a
    time: a name that is no UTF-8 text, holds a line break or another control character, or is
    longer than a file system takes ended the run in an internal error, or failed every trial."""
    errors: list[GateInputError] = []
    for path in sorted(folder.rglob("*")):
        rel = os.fsdecode(os.fsencode(path.relative_to(folder)))
        if printable(rel) != rel or any(0xDC80 <= ord(c) <= 0xDCFF for c in rel):
            errors.append(GateInputError(printable(_rel(repo, folder)), "file name",
                                         f"{printable(rel)!r} is no printable UTF-8 name", "rename the file"))
        elif len(os.fsencode(_rel(repo, path))) > WORKSPACE_PATH_BYTES:
            errors.append(GateInputError(_rel(repo, folder), "file name", f"a path of {len(os.fsencode(rel))} bytes "
                                         f"inside the fixture: with the run's folders in front, over a file system's "
                                         f"limit", f"shorten it to under {WORKSPACE_PATH_BYTES} bytes from the "
                                         "repository's root"))
    return errors[:1]


_EXPECT_LOOKALIKES = ("expect.yaml", "expect.yml", "expect.json")


def _odd_fixture_files(repo: Path, folder: Path) -> list[GateInputError]:
    """An expectations file under another name (`expect.yml`, `Expect.yaml`), file or folder, is
    not the answer key: its expectations would be lost and its contents reviewed as the fixture's."""
    for entry in sorted(folder.iterdir()):
        if entry.name != "expect.yaml" and entry.name.lower() in _EXPECT_LOOKALIKES:
            return [GateInputError(_rel(repo, entry), "",
                                   "not read: the fixture's expectations file is expect.yaml",
                                   "rename it to expect.yaml")]
    return []


def _unwritten_skeleton(repo: Path, skill: Path) -> list[GateInputError]:
    """A `coverage --suggest` skeleton moved in before its violation was written: it would
    expect a tier that its clean text cannot produce."""
    for number, line in enumerate(skill.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if VIOLATION_MARKER in line:
            return [GateInputError(f"{_rel(repo, skill)}:{number}", "",
                                   "a fixture skeleton whose violation is not written yet",
                                   "write the violation the comment asks for and remove the comment")]
    return []


def _symlink_errors(repo: Path, folder: Path, hidden: list[str]) -> list[GateInputError]:
    """No file of a fixture may be a symlink out of the repository, nor into what the reviewer
    must not see (`hidden`: the suite, baseline, config; the fixture's own files but its
    expect.yaml excepted): the link's target is copied into the workspace. One error per link,
    a linked folder never walked (a fixture linked to /etc gave an error for each of its 757 files)."""
    errors: list[GateInputError] = []
    links = [folder] if folder.is_symlink() else [
        Path(top, name) for top, dirs, files in os.walk(folder) for name in (*dirs, *files)
        if Path(top, name).is_symlink()]  # os.walk does not descend into a linked folder
    for path in sorted(links):
        rel = _rel(repo, path)
        if collect(errors, partial(safe_relpath, repo, rel, rel, "(file)")) is None:
            continue
        if answer := _answer_key_link(repo, folder, path, hidden):
            errors += answer
        elif path != folder and path.is_dir():  # a workspace copies a fixture's files, never through a link
            errors.append(GateInputError(rel, "(file)", "a link to a folder: its files would not reach the reviewer",
                                         "copy the folder into the fixture, or link its files one by one"))
    return errors


def _answer_key_link(repo: Path, folder: Path, link: Path, hidden: list[str]) -> list[GateInputError]:
    """An error when `link` shows the reviewer a file of the answer key (a link `references/key.json
    -> ../../../../baseline.json` put the baseline into the case's workspace)."""
    if link == folder:
        return []  # a linked fixture folder has its own error (suite/cases.py)
    own, shown = real_rel(repo, _rel(repo, folder)), real_rel(repo, _rel(repo, link)) or "."
    if _under(shown, own) and shown != own and shown != f"{own}/expect.yaml":
        return []  # a file of the case itself
    # Into the answer key, or a folder holding some of it (the repository root, evals/).
    if not any(_under(shown, h) or shown == "." or _under(h, shown) for h in hidden):
        return []  # a file of the repository any workspace shows
    return [GateInputError(_rel(repo, link), "(file)", f"links to {shown}, which the reviewer must not see "
                           "(the suite's answers, the baseline, the config or suite.workspace_exclude)",
                           "replace the link with a copy of the file the case should show")]


# --- rubricgate.yaml: reports -----------------------------------------------------------------
def reports_folder_errors(config: Config, display: str) -> list[GateInputError]:
    """`reports:` must be a folder of its own: not the repository, nor one holding or inside
    any other configured path (run folders are created and pruned there)."""
    rel = PurePosixPath(config.reports)
    if str(rel) in ("", "."):
        return [GateInputError(display, "reports", "the repository root cannot be the reports folder",
                               "use a dedicated folder, e.g. reports")]
    r = config.reviewer
    others = {"suite.tasks": config.suite.tasks, "suite.fixtures": config.suite.fixtures, "reviewer.prompt": r.prompt,
              "reviewer.skill": r.skill, "reviewer.rubric": r.rubric, "reviewer.changed_files": r.changed_files,
              "baseline": config.baseline}
    for field, other in others.items():
        o = PurePosixPath(other)
        if o == rel or rel in o.parents or o in rel.parents:
            return [GateInputError(display, "reports", f"{config.reports!r} overlaps {field} ({other!r})",
                                   "use a dedicated folder that holds nothing else, e.g. reports")]
    return []
