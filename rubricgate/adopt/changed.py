"""`changed --base REF`: did any gated file change since REF?

Gated: the reviewer, which is its whole closure (suite/closure.py: the prompt, skill and rubric,
their folders, every file they reference, transitively, and `reviewer.files`), taken both in the
working tree and at the merge base; the suite's tasks and fixtures, and the folders of the files
the tasks review (the case is them too); the baseline, the config and the verdict hook (it
grades every answer: a hook made to pass everything is a PR to gate); and every `.gitattributes`
(it decides the bytes a checkout writes, which git's diff never shows).

The seed's lesson: on a shallow clone a diff against a missing base silently returns nothing,
which would wave through a PR that changed every gated file. So a base that is not present, or
that shares no history with HEAD, is a loud input error (exit 2), never "nothing changed".
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from rubricgate.adopt.new_at_base import new_at_base
from rubricgate.errors import GateInputError
from rubricgate.models.config import Config
from rubricgate.suite.answer_key import config_rel_of
from rubricgate.suite.checks import TASK_SUFFIXES
from rubricgate.suite.closure import MAX_FILES, closure_skip, reviewer_closure
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.trees import FULL_HISTORY, CommitTree, WorkTree, git_prefix, in_folder, merge_base, shallow_clone
from rubricgate.suite.yaml_json import loads_json, safe_load_yaml


@dataclass(frozen=True)
class ChangedResult:
    """The gated files that differ between the merge base and the working tree, and why each
    is gated."""

    base: str
    merge_base: str
    gated: list[str]
    files: list[str]
    reasons: dict[str, str] = field(default_factory=dict)
    capped: bool = False  # the reviewer's closure reached its file limit (suite/closure.py)
    new_at_base: bool = False  # REF has no rubricgate config nor reviewer: nothing to compare (adopt/new_at_base.py)

    @property
    def changed(self) -> bool:
        return bool(self.files)


def reviewer_paths(config: Config) -> list[str]:
    """The reviewer's configured files, each on its own: the prompt, the evaluator skill's
    folder, the rubric (what the reviewer is beyond them: its closure, suite/closure.py)."""
    r = config.reviewer
    skill_folder = str(PurePosixPath(r.skill).parent)
    return [p for p in (r.prompt, skill_folder, r.rubric) if p.strip("/") not in ("", ".")]


SUITE_ROLES = {"suite.tasks": "a task (suite.tasks)", "suite.fixtures": "a fixture (suite.fixtures)",
               "baseline": "the baseline", "config": "the config"}


def suite_roles(config: Config, repo: Path | None = None, config_rel: str | None = CONFIG_NAME) -> dict[str, str]:
    """The gated paths besides the reviewer: the suite, the baseline, the config and the verdict
    hook that grades the answers (`verdict.hook`) -> what each is. `config_rel`: the config file
    read (`--config`), repository-relative; rubricgate.yaml is gated as well."""
    paths = {config.suite.tasks: SUITE_ROLES["suite.tasks"], config.suite.fixtures: SUITE_ROLES["suite.fixtures"],
             config.baseline: SUITE_ROLES["baseline"], CONFIG_NAME: SUITE_ROLES["config"]}
    if config_rel:  # `--config ci/gate.yaml`: an edit to it changes the gate as much as one to rubricgate.yaml
        paths[config_rel] = SUITE_ROLES["config"]
    hook = verdict_hook_file(config, repo)
    if hook:
        paths[hook] = "the verdict hook (verdict.hook)"
    return {p.strip("/"): role for p, role in paths.items() if p and p.strip("/") not in ("", ".")}


def verdict_hook_file(config: Config, repo: Path | None = None) -> str | None:
    """The hook's file relative to the repository (load_config makes it absolute), or None."""
    if config.verdict is None or config.verdict.hook is None:
        return None
    file = PurePosixPath(config.verdict.hook.rpartition(":")[0])
    if not file.is_absolute():
        return file.as_posix()
    root = PurePosixPath((repo or Path.cwd()).resolve().as_posix())
    return file.relative_to(root).as_posix() if file.is_relative_to(root) else None


def gated_paths(config: Config, repo: Path | None = None, config_rel: str | None = CONFIG_NAME) -> list[str]:
    """The suite, the baseline and the config (the reviewer is its closure, read from the tree).

    With `repo`, a path reached through a symlinked folder is gated at its real place too (git
    reports changes there), and so is the link itself.
    """
    listed = set(suite_roles(config, repo, config_rel))
    if repo is not None:
        listed |= {real for p in listed if (real := _real_relpath(repo, p))}
    return sorted(_outermost(listed))


def _real_relpath(repo: Path, rel: str) -> str | None:
    """`rel` with every symlink resolved, relative to the repository; None outside it or unchanged."""
    root = repo.resolve()
    real = (root / rel).resolve()
    if not real.is_relative_to(root) or real == root:
        return None
    out = real.relative_to(root).as_posix()
    return out if out != rel else None


def _outermost(paths: set[str]) -> set[str]:
    """Drop paths that lie under another listed path (the rubric inside the skill's folder)."""
    return {p for p in paths if not any(p != q and p.startswith(q + "/") for q in paths)}


def is_gated(path: str, gated: list[str]) -> bool:
    """A file is gated when it is a gated path or lies under one."""
    return any(path == g or path.startswith(g + "/") for g in gated)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    try:
        # A name need not be UTF-8 (a Latin-1 'café.md'): kept as the file system's str spells it.
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              encoding="utf-8", errors="surrogateescape", env=env, stdin=subprocess.DEVNULL,
                              check=False)
    except FileNotFoundError:
        raise GateInputError("git", "", "git is not installed", "install git") from None


def _resolve(repo: Path, ref: str) -> str:
    """The commit REF names, or a loud error saying why it cannot be used."""
    if not ref or ref.startswith("-"):
        raise GateInputError("--base", "REF", f"not a revision: {ref!r}", "give a branch, tag or commit")
    if _git(repo, "rev-parse", "--is-inside-work-tree").returncode != 0:
        raise GateInputError(str(repo), "", "not inside a git work tree", "run from a clone of the repository")
    got = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if got.returncode != 0:
        shallow = " (this is a shallow clone)" if shallow_clone(repo) else ""
        raise GateInputError("--base", "REF", f"{ref!r} is not present in this clone{shallow}", FULL_HISTORY)
    return got.stdout.strip()


def _diff_names(repo: Path, merge_base: str) -> list[str]:
    """Tracked changes since the merge base (committed or not) plus untracked files, named from
    `repo`'s folder as the config names its files (git's diff names them from the top)."""
    diff = _git(repo, "diff", "--name-only", "--no-renames", "--no-relative", "-z", merge_base, "--")
    untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "-z")  # named from the folder already
    for got in (diff, untracked):
        if got.returncode != 0:
            last = (got.stderr.strip().splitlines() or ["failed"])[-1]
            raise GateInputError("git", " ".join(got.args[3:5]), last, "check the clone")
    tracked = in_folder([n for n in diff.stdout.split("\0") if n], git_prefix(repo))
    return sorted({*tracked, *(n for n in untracked.stdout.split("\0") if n)})


# git diffs the clean form of a file: an attributes file that makes a checkout write other bytes
# (`* text eol=crlf`, `working-tree-encoding=UTF-16LE`) changes what the reviewer reads while the
# diff shows it alone.
ATTRIBUTES_REASON = "git's attributes: what a checkout writes for every file under its folder"
CAPPED_REASON = (f"may be the reviewer's: what it references passed the closure's {MAX_FILES} files, so every "
                 "changed file counts (name what it reads in reviewer.files)")


def changed_files(repo: Path, base: str, config: Config, config_path: Path | None = None) -> ChangedResult:
    """Compare the working tree with the merge base of REF and HEAD: a changed file is gated
    when it is in the reviewer's closure, in the working tree or at the merge base (a reference
    removed, a file deleted), or in the suite, baseline or config (`config_path`, the file the
    config was read from: rubricgate.yaml by default)."""
    commit = _resolve(repo, base)
    mb = merge_base(repo, base, commit)
    config_rel = config_rel_of(repo, config_path)
    gated = gated_paths(config, repo, config_rel)
    names = _diff_names(repo, mb)
    if not names:
        return ChangedResult(base=base, merge_base=mb, gated=gated, files=[])
    now = reviewer_closure(WorkTree(repo), config)
    with CommitTree(repo, mb) as then_tree:
        then = reviewer_closure(then_tree, config)
    roles, reasons, skip = suite_roles(config, repo, config_rel), {}, closure_skip(config)
    reviewed = task_reviewed(repo, config)
    for name in names:
        if name in now:
            reasons[name] = now.reasons[name]
        elif name in then:
            reasons[name] = f"{then.reasons[name]}, at the merge base"
        elif is_gated(name, gated):
            reasons[name] = next((r for p, r in roles.items() if is_gated(name, [p])), "a gated path")
        elif case_file := next((why for p, why in reviewed.items() if is_gated(name, [p])), None):
            reasons[name] = case_file
        elif PurePosixPath(name).name == ".gitattributes":
            reasons[name] = ATTRIBUTES_REASON
        elif inside := next((f for f in (*now.files, *then.files) if f.startswith(name + "/")), None):
            # A submodule moved to another commit: git names the module, never its files.
            reasons[name] = f"a submodule holding {inside} ({now.reasons.get(inside) or then.reasons[inside]})"
        elif (now.capped or then.capped) and not is_gated(name, skip):  # `skip`: never the reviewer
            reasons[name] = CAPPED_REASON  # past the cap the closure cannot say: "unchanged" is never a guess
    return ChangedResult(base=base, merge_base=mb, gated=gated, files=sorted(reasons), reasons=reasons,
                         capped=now.capped or then.capped,
                         new_at_base=bool(reasons) and new_at_base(repo, commit, config, config_rel))


def task_reviewed(repo: Path, config: Config) -> dict[str, str]:
    """What the tasks review, outside the suite's folders: the folder of each file a task's
    `review:` names (or the file, at the top of the repository), as a case's digest takes it
    (runner/digests.py case_digest) -> why it is gated. A PR that edits `skills/x/SKILL.md`, which
    a task reviews, changes that case as much as an edit to the task does. A task file that does
    not parse names nothing here: `run` refuses it with its own error."""
    folder = repo / config.suite.tasks
    found: dict[str, str] = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.suffix not in TASK_SUFFIXES or not path.is_file():
            continue
        for rel in _review_list(path):
            clean = posixpath.normpath(rel.strip().lstrip("/"))
            if clean.startswith("../") or clean in ("..", "."):
                continue  # outside the repository: refused when the suite loads
            key = posixpath.dirname(clean) or clean
            why = f"beside what the task {config.suite.tasks}/{path.name} reviews ({rel})"
            found.setdefault(key, why)
            if real := _real_relpath(repo, key):  # a linked folder: git reports the edit at its real place
                found.setdefault(real, why)
    return found


def _review_list(task: Path) -> list[str]:
    """The `review:` list of a task file, or [] when it does not read as one."""
    try:
        text = task.read_text(encoding="utf-8")
        data = loads_json(text) if task.suffix == ".json" else safe_load_yaml(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return []  # the suite's loader says what is wrong with it, with the fix
    review = data.get("review") if isinstance(data, dict) else None
    return [r for r in review if isinstance(r, str)] if isinstance(review, list) else []
