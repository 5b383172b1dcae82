"""Loading rubricgate.yaml into the Config model."""

from __future__ import annotations

import stat
from functools import partial
from pathlib import Path

from rubricgate.errors import GateInputError, GateInputErrors, collect
from rubricgate.models.config import Config
from rubricgate.suite.checks import reports_folder_errors
from rubricgate.suite.lfs import is_lfs_pointer, lfs_pointer_error
from rubricgate.suite.paths import real_rel, safe_relpath
from rubricgate.suite.submodules import ignored_by_git, ignored_error, nested_repository, submodule_error
from rubricgate.suite.validation import load_all_errors
from rubricgate.suite.yaml_json import utf8_text

CONFIG_NAME = "rubricgate.yaml"


def find_repo(start: Path) -> Path:
    """The nearest folder at or above `start` holding rubricgate.yaml (else `start`)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    return start


def load_config(repo: Path, path: Path | None = None, reviewer_from: Config | None = None) -> Config:
    """Load the config; a missing file is an error (the gate cannot judge without it).
    `reviewer_from`: a config whose reviewer (REVIEWER_SECTIONS: its files and agent) is checked
    and used in place of the file's (`compare --base`'s base side: the base's)."""
    path = path or repo / CONFIG_NAME
    if not path.is_file():
        raise GateInputError(str(path), "", "config file not found",
                             "run `rubricgate init` in the repository, or give --repo or --config")
    display = _display(repo, path)
    config, problems = load_all_errors(Config, path, display)
    if problems or config is None:
        raise GateInputErrors(problems)
    config = config.with_reviewer_of(reviewer_from)
    check_config_paths(repo, config, display)
    if config.agent.replay_dir and not Path(config.agent.replay_dir).is_absolute():
        # Like every other path in the file, relative to the repository, not to the shell's cwd.
        config.agent.replay_dir = str(repo / config.agent.replay_dir)
    if config.verdict is not None and config.verdict.hook is not None:
        config.verdict.hook = _hook_path(repo, config.verdict.hook, display)
    return config


def _hook_path(repo: Path, hook: str, display: str) -> str:
    """verdict.hook with its file checked (inside the repository, a regular file) and made absolute."""
    file, _, func = hook.rpartition(":")
    safe_relpath(repo, file, display, "verdict.hook")
    if not (repo / file).is_file() or (repo / file).is_symlink():
        raise GateInputError(display, "verdict.hook", f"{file!r} is not a file in the repository",
                             "give the path of the hook's .py file, relative to the repository")
    return f"{(repo / file).resolve()}:{func}"


def _paths(config: Config) -> dict[str, tuple[str, str]]:
    """field -> (path, what must be there: file | dir | any)."""
    r = config.reviewer
    return {"suite.tasks": (config.suite.tasks, "dir"), "suite.fixtures": (config.suite.fixtures, "dir"),
            "suite.review_root": (config.suite.review_root, "any"),
            "reviewer.prompt": (r.prompt, "file"), "reviewer.skill": (r.skill, "file"),
            "reviewer.rubric": (r.rubric, "file"), "reviewer.changed_files": (r.changed_files, "any"),
            "baseline": (config.baseline, "any"), "reports": (config.reports, "any")}


def _what_is_there(path: Path, kind: str) -> str:
    """Why `path` is not the file or folder it must be: missing, a link that leads nowhere or loops,
    or something else (a folder where a file must be, a FIFO): "does not exist" for all of them
    sent the user looking for a file that was there."""
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:
            return "is a symlink that loops"
        except OSError:
            return "is a symlink to nothing"
    if not path.exists():
        return "does not exist"
    wanted = "a file" if kind == "file" else "a folder"
    if path.is_dir() or path.is_file():
        return f"is {'a folder' if path.is_dir() else 'a file'}, not {wanted}"
    mode = path.stat().st_mode
    what = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return f"is {what}, not {wanted}"


def check_config_paths(repo: Path, config: Config, display: str = CONFIG_NAME) -> None:
    """Every configured path stays inside the repository, and what must exist does."""
    errors = []
    ignored = ignored_by_git(repo, [rel for rel, kind in _paths(config).values() if kind == "file"])
    for field, (rel, kind) in _paths(config).items():
        try:
            safe_relpath(repo, rel, display, field)
        except GateInputError as exc:
            errors.append(exc)
            continue
        path = repo / rel
        if (kind == "file" and not path.is_file()) or (kind == "dir" and not path.is_dir()):
            errors.append(GateInputError(display, field, f"{kind} {rel!r} {_what_is_there(path, kind)}",
                                         f"create it or correct {field} in {display}"))
        elif kind == "file" and real_rel(repo, rel).split("/")[0] == ".git":
            # No workspace holds .git: the reviewer's CLI failed to start on every attempt, retried.
            errors.append(GateInputError(display, field, f"{rel!r} links into .git ({real_rel(repo, rel)}), which "
                                         "no workspace holds", f"point {field} at a file of the repository's tree"))
        elif kind == "file" and (module := nested_repository(repo, rel)):
            errors.append(submodule_error(display, field, rel, module))
        elif kind == "file" and rel in ignored:  # validate said ok, then every trial failed "not found"
            errors.append(ignored_error(display, field, rel, ignored[rel]))
        elif kind == "file":  # the reviewer's prompt, skill and rubric: text every CLI reads
            try:
                data = path.read_bytes()
                if is_lfs_pointer(data):
                    raise lfs_pointer_error(display, field)
                utf8_text(data, rel)
            except GateInputError as exc:
                errors.append(exc)
    for i, pattern in enumerate(config.reviewer.files):  # globs: inside the repository too
        try:
            safe_relpath(repo, pattern, display, f"reviewer.files[{i}]")
        except GateInputError as exc:
            errors.append(exc)
    errors += _exclude_errors(repo, config, display) + reports_folder_errors(config, display)
    if errors:
        raise GateInputErrors(errors)


def _exclude_errors(repo: Path, config: Config, display: str) -> list[GateInputError]:
    """`suite.workspace_exclude` holds paths, compared as written: a pattern (`tests/*`) or a
    name with a space at an end (`README.md `) left out nothing, and `validate` said ok."""
    errors = []
    for i, rel in enumerate(config.suite.workspace_exclude):
        field = f"suite.workspace_exclude[{i}]"
        if rel != rel.strip() or any(c in rel for c in "*?["):
            errors.append(GateInputError(display, field, f"{rel!r} is no path of the repository "
                                         "(a pattern, or a space at an end)", "name the file or folder itself"))
        else:
            collect(errors, partial(safe_relpath, repo, rel, display, field))
    return errors


def _display(repo: Path, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(repo.resolve()))
    except ValueError:
        return str(path)
