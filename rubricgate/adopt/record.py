"""`record`: turn a real review the reviewer got wrong (or right) into a regression task.

The reviewed files are snapshotted into the task's `files:` overlay under the suite's review
root (`skills/<name>/...` by default), so the task keeps testing the same content after the
originals change. The task is written, validated with the rest of the suite, and run once.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml
from pydantic import ValidationError

from rubricgate.adopt.record_sources import Reviewed
from rubricgate.credentials import find_credentials, redact_credentials
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.models.task import Expect, TaskFile

DEFAULT_REVIEW_ROOT = "skills"


@dataclass
class RecordRequest:
    """What the maintainer says the correct outcome is."""

    expect: str  # PASS | WARN | BLOCK
    rules: list[str] = field(default_factory=list)
    absent_rules: list[str] = field(default_factory=list)
    why: str = ""
    task_id: str | None = None
    tags: list[str] = field(default_factory=list)


def review_root(config) -> str:
    """Where reviewed files sit in a workspace (`suite.review_root`, default `skills`)."""
    return str(getattr(config.suite, "review_root", None) or DEFAULT_REVIEW_ROOT).strip("/")


def overlay_paths(reviewed: Reviewed, root: str) -> dict[str, str]:
    """Source path -> overlay path: <root>/<skill folder name>/<path inside the folder>; names made unique."""
    mapping: dict[str, str] = {}
    used: set[str] = set()
    for skill in reviewed.skills:
        folder = PurePosixPath(skill).parent
        name, n = folder.name or "skill", 2
        while name in used:
            name, n = f"{folder.name}-{n}", n + 1
        used.add(name)
        for path in reviewed.files:
            if path == skill or PurePosixPath(path).is_relative_to(folder) and path not in mapping:
                mapping[path] = f"{root}/{name}/{PurePosixPath(path).relative_to(folder).as_posix()}"
    return mapping


def guard_credentials(reviewed: Reviewed, redact: bool) -> list[str]:
    """A credential in what would be snapshotted stops the recording (GateInputError naming the
    file and line), or with `redact` is replaced by a placeholder of the same shape marked REDACTED
    (rubricgate/secrets.py). Returns the places redacted."""
    found = [(path, no, kind) for path in sorted(reviewed.files) for no, kind in find_credentials(reviewed.files[path])]
    if found and not redact:
        path, no, kind = found[0]
        more = f" and {len(found) - 1} more line(s)" if len(found) > 1 else ""
        raise GateInputError(f"{path}:{no}", "", f"credential in clear ({kind}){more}; a task would commit it",
                             "remove and rotate it, or pass --redact to record a marked placeholder in its place")
    for path in {p for p, _, _ in found}:
        reviewed.files[path] = redact_credentials(reviewed.files[path])
    return [f"{p}:{n}" for p, n, _ in found]


def as_change(reviewed: Reviewed, root: str) -> Reviewed:
    """A patch source as reviewed files: the patch at <root>/<patch name> first, then the changed
    files at their own paths, and the files it deleted or renamed away to remove (the workspace
    then reads as the head of the change)."""
    if not reviewed.patch:
        return reviewed
    at = f"{root}/{reviewed.patch_name}"
    return Reviewed(reviewed.origin, [at, *sorted(reviewed.files)], {at: reviewed.patch, **reviewed.files},
                    reviewed.patch, reviewed.patch_name, removed=reviewed.removed)


def leave_reviewer_out(reviewed: Reviewed, repo: Path, config) -> list[str]:
    """Take the reviewer's own files (its closure in `repo`) out of what the change removes, and
    return them: a change that deletes a file the prompt links to would have the task remove it
    from every workspace, a case testing the reviewer without it, which the suite refuses; the
    workspace holds the reviewer as it is in the repository (suite/overlays.py)."""
    if not reviewed.removed:
        return []
    from rubricgate.suite.closure import reviewer_closure
    from rubricgate.suite.overlays import reviewer_own
    from rubricgate.suite.trees import WorkTree

    own = reviewer_own(reviewed.removed, config, reviewer_closure(WorkTree(repo), config))
    reviewed.removed = [rel for rel in reviewed.removed if rel not in own]
    return sorted(own)


def build_task(reviewed: Reviewed, request: RecordRequest, root: str, default_id: str) -> TaskFile:
    """The task model; raises GateInputError when there is nothing to review."""
    if not reviewed.skills:
        raise GateInputError(reviewed.origin, "SKILL.md", "no changed skill found",
                             "pick a source that changes a SKILL.md (or a file in its folder), or set "
                             "suite.layout: files in rubricgate.yaml to record a change to any files")
    own = reviewed.patch or reviewed.at_own_paths
    mapping = {p: p for p in reviewed.files} if own else overlay_paths(reviewed, root)
    why = request.why.strip() or f"recorded from {reviewed.origin}"
    try:
        expect = Expect.model_validate({"tier": request.expect.upper(), "rules": request.rules,
                                        "absent_rules": request.absent_rules})
        return TaskFile(id=request.task_id or default_id, why=why, review=[mapping[s] for s in reviewed.skills],
                        files={mapping[p]: reviewed.files[p] for p in sorted(mapping, key=lambda p: mapping[p])},
                        removed=sorted(reviewed.removed), expect=expect,
                        tags=list(dict.fromkeys(["recorded", *request.tags])))
    except ValidationError as exc:
        raise _option_error(exc) from None


# Which option sets each task field `record` builds (the rest come from the source).
_OPTION_OF = {"id": "--id", "expect": "--expect/--rule/--absent-rule", "tier": "--expect", "rules": "--rule",
              "absent_rules": "--absent-rule", "why": "--why", "tags": "--tag"}


def _option_error(exc: ValidationError) -> GateInputError:
    """The first problem, as one line naming the option that set the field."""
    first = exc.errors()[0]
    loc = [str(part) for part in first.get("loc", ())]
    if loc and loc[0] in ("files", "review", "removed"):  # what the source holds, not an option: a file over the bounds
        return GateInputError("record", ".".join(loc), first["msg"],
                              "review that file apart, or record the change without it")
    option = next((_OPTION_OF[part] for part in loc if part in _OPTION_OF), "--expect/--rule/--id")
    return GateInputError("record", option, f"{'.'.join(loc) or 'value'}: {first['msg']}",
                          f"change {option}; `rubricgate record --help` lists the options")


def slug(text: str) -> str:
    """A task-id-safe slug: lowercase letters, digits and hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "task"


class _Literal(str):
    """A string dumped as a YAML block scalar (`|`), so a snapshotted file stays readable."""


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


class _TaskDumper(yaml.SafeDumper):
    """Keeps `|` for text PyYAML would quote only out of caution: trailing spaces (markdown's hard
    line break) and tabs, both of which a literal block holds exactly."""

    def choose_scalar_style(self) -> str:
        event = self.event
        if (getattr(event, "style", None) == "|" and not self.flow_level and not self.simple_key_context
                and _block_holds(event.value)):
            return "|"  # process_scalar has analysed the value already; write_literal needs no more
        return super().choose_scalar_style()


_TaskDumper.add_representer(_Literal, _literal)
_NOT_IN_BLOCK = re.compile(r"[^\t\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


def _block_holds(text: str) -> bool:
    """Line breaks other than \\n, control characters and a BOM have no literal form in a block."""
    return "\n" in text and not _NOT_IN_BLOCK.search(text)


def task_yaml(task: TaskFile) -> str:
    """The task file's text: the snapshotted files as block scalars, keys in the documented order."""
    data = task.model_dump(mode="json", exclude_defaults=True)
    data["expect"] = task.expect.model_dump(mode="json", exclude_defaults=True)
    data["files"] = {p: _Literal(t) if _block_holds(t) and _reads_back(t) else t for p, t in task.files.items()}
    return yaml.dump(data, Dumper=_TaskDumper, sort_keys=False, allow_unicode=True, width=100)


def _reads_back(text: str) -> bool:
    """Whether `text` as a block scalar loads back unchanged (checked, not assumed, per file)."""
    return yaml.safe_load(yaml.dump({"f": _Literal(text)}, Dumper=_TaskDumper, allow_unicode=True)) == {"f": text}


def write_task(repo: Path, tasks_dir: str, task: TaskFile) -> Path:
    """Write evals/tasks/<id>.yaml; an existing file is an error (record never overwrites)."""
    path = repo / tasks_dir / f"{task.id}.yaml"
    if path.exists():
        raise GateInputError(f"{tasks_dir}/{task.id}.yaml", "id", "a task with this id exists", "pass --id NEW-ID")
    text = task_yaml(task)
    if yaml.safe_load(text) != yaml.safe_load(yaml.safe_dump(task.model_dump(mode="json", exclude_defaults=True))):
        raise GateInputError(str(path), "files", "the snapshot would not read back unchanged", "report this as a bug")
    path.parent.mkdir(parents=True, exist_ok=True)
    _create_whole(path, text, f"{tasks_dir}/{task.id}.yaml")
    return path


def _create_whole(path: Path, text: str, display: str) -> None:
    """`path` holding `text`, or an error when it exists: written beside it, then linked into place
    (a link never replaces a file: two records of one id at once cannot overwrite each other, and
    a record killed mid-write leaves no half task)."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            os.link(temp, path)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: created exclusively in place
            with open(path, "x", encoding="utf-8") as fh:
                fh.write(text)
    except FileExistsError:
        raise GateInputError(display, "id", "a task with this id exists", "pass --id NEW-ID") from None
    finally:
        os.unlink(temp)


def validate_new_task(repo: Path, path: Path, config_path: Path | None = None) -> None:
    """Load the whole suite; a problem in the new task removes it again (nothing half-written stays)."""
    from rubricgate.suite.load import load_all

    display = path.relative_to(repo).as_posix()
    try:
        load_all(repo, config_path, require_baseline=False)
    except (GateInputError, GateInputErrors) as exc:
        errors = exc.errors if isinstance(exc, GateInputErrors) else [exc]
        if any(e.file == display for e in errors):
            path.unlink()
            raise GateInputErrors([e for e in errors if e.file == display]) from None
        raise


@dataclass
class TodayResult:
    """How the current reviewer does on the new task."""

    correct: bool
    failures: list[str]
    run_dir: Path
    also_ran: list[str] = field(default_factory=list)  # case ids containing the task id (--only matches text)


def run_once(repo: Path, task_id: str, config_path: Path | None = None) -> TodayResult:
    """Run the new task once against the configured reviewer (no baseline needed)."""
    from rubricgate.pipeline import RunOptions, run_suite

    outcome = run_suite(RunOptions(repo=repo, config_path=config_path, only=[task_id], trials=1, require_baseline=False,
                                   kind="record"))
    case = next(c for c in outcome.summary.cases if c.id == task_id)
    failures = [f"{d}: {g.category or 'failed'}: {g.reason}" for t in case.trials for d, g in t.grades.items()
                if not g.passed]
    return TodayResult(correct=bool(case.trials) and not failures, failures=failures, run_dir=outcome.run_dir,
                       also_ran=[c.id for c in outcome.summary.cases if c.id != task_id])
