"""evals/ + fixtures/ -> cases. Every load error names its file and field.

Problems are collected, not raised one by one, so `validate` can report all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path, PurePosixPath

from rubricgate.errors import GateInputError, GateInputErrors, collect
from rubricgate.models import dimensions
from rubricgate.models.base import TIER_ORDER, Tier
from rubricgate.models.bounds import MAX_ID_CHARS
from rubricgate.models.case import CaseSpec
from rubricgate.models.config import Config
from rubricgate.models.dimensions import DIMENSIONS
from rubricgate.models.task import Expect, FixtureExpect, Rubric, TaskFile
from rubricgate.suite.checks import fixture_layout_errors, task_errors, task_layout_errors
from rubricgate.suite.closure import reviewer_closure
from rubricgate.suite.overlays import changed_files_errors, reviewer_overlay_errors
from rubricgate.suite.paths import safe_relpath
from rubricgate.suite.reviewed_lfs import reviewed_pointer_errors
from rubricgate.suite.rubric import RubricSpec
from rubricgate.suite.submodules import unheld_link_errors
from rubricgate.suite.trees import WorkTree
from rubricgate.suite.validation import load_all_errors

TIERS: dict[str, Tier] = {"pass": "PASS", "warn": "WARN", "block": "BLOCK"}
SKILL_FILE = "SKILL.md"
TASK_SUFFIXES = (".yaml", ".yml", ".json")


def load_suite(repo: Path, config: Config, rubric: RubricSpec | None = None,
               config_rel: str | None = "rubricgate.yaml", only: Sequence[str] = ()) -> list[CaseSpec]:
    """All cases (tasks then fixtures), or GateInputErrors listing every problem; `config_rel`:
    where the config file lies in the repository (suite/answer_key.py); `only`: the case-id
    substrings a run selects (`--only`), whose cases alone are checked for LFS pointers."""
    errors: list[GateInputError] = (task_layout_errors(repo, config)
                                    + fixture_layout_errors(repo, config, config_rel))
    from rubricgate.suite.answer_key import answer_key_paths  # it imports suite.config, which imports this module

    hidden = answer_key_paths(config, config_rel, repo)
    cases = _load_tasks(repo, config, errors, rubric, hidden) + _load_fixtures(repo, config, errors)
    _check_duplicates(cases, errors)
    if cases and not (root_errors := review_root_errors(repo, config, config_rel or "rubricgate.yaml")):
        for case in cases:
            _check_review_root(repo, config, case, errors)
    errors += root_errors if cases else []
    display = config_rel or "rubricgate.yaml"
    tree = WorkTree(repo)  # one tree: its resolved names serve the closure and the reviewed files
    closure = reviewer_closure(tree, config)  # walked once for the three checks
    errors += changed_files_errors(repo, config, display, closure)
    errors += reviewer_overlay_errors(repo, config, cases, closure)
    errors += unheld_link_errors(repo, closure.linked_reasons(), display)
    # What a case hands the reviewer is read only for the cases that run: a case left out is never
    # reviewed, and the check was 0.26 ms a case of every `--only` run's start.
    errors += reviewed_pointer_errors(tree, selected(cases, only), hidden)
    if rubric is not None:
        for case in cases:
            if case.source != "task":  # a task's rule ids were checked with the rest of its file
                _check_rule_ids(case, rubric, errors)
    if not cases and not errors:
        fixture = f"{config.suite.fixtures}/<tier>/<name>/" + ("SKILL.md" if config.suite.layout == "skills"
                                                                else "<the files to review>")
        errors.append(GateInputError(config.suite.tasks, "", "no cases: no task files and no fixtures",
                                     f"add {config.suite.tasks}/<id>.yaml or {fixture}"))
    if errors:
        raise GateInputErrors(_one_per_problem(errors))
    return cases


class ExactIds(tuple[str, ...]):
    """Case ids selected whole, not as substrings: a regrade's, the cases its run holds (a case
    added since whose id holds one of theirs is none of the run's); none selects no case."""


def selected(cases: list[CaseSpec], only: Sequence[str]) -> list[CaseSpec]:
    """The cases whose id contains one of `only` (`--only`); every case when it is empty. ExactIds
    select their own cases alone."""
    if isinstance(only, ExactIds):
        return [c for c in cases if c.id in only]
    return [c for c in cases if not only or any(s in c.id for s in only)]


def _one_per_problem(errors: list[GateInputError]) -> list[GateInputError]:
    """The first error of each (file, problem): a linked file was named by its folder's check and
    again by its case's."""
    first: dict[tuple[str, str], GateInputError] = {}
    for error in errors:
        first.setdefault((error.file, error.problem), error)
    return list(first.values())


def _load_tasks(repo: Path, config: Config, errors: list[GateInputError],
                rubric: RubricSpec | None = None, hidden: AbstractSet[str] = frozenset()) -> list[CaseSpec]:
    """`hidden`: repository paths no workspace holds, which a task cannot review (suite/answer_key.py)."""
    folder = repo / config.suite.tasks
    if not folder.is_dir():
        return []
    # A linked task file is refused by its one line (suite/checks.py) and never read: it may name
    # a host file (/etc/passwd), whose parse error would quote it into the log.
    paths = sorted(p for p in folder.iterdir() if p.suffix in TASK_SUFFIXES and p.is_file() and not p.is_symlink())
    return _each(errors, [lambda p=p: _task_case(repo, config, p, f"{config.suite.tasks}/{p.name}", rubric, hidden)
                          for p in paths])


def _each(errors: list[GateInputError], loaders) -> list[CaseSpec]:
    """Run every loader; a bad file adds its error and the rest still load."""
    cases = []
    for load in loaders:
        try:
            cases.append(load())
        except GateInputErrors as exc:
            errors.extend(exc.errors)
        except GateInputError as exc:
            errors.append(exc)
    return cases


def _task_case(repo: Path, config: Config, path: Path, display: str, rubric: RubricSpec | None = None,
               hidden: AbstractSet[str] = frozenset()) -> CaseSpec:
    """One task file -> a case, or GateInputErrors with every problem in the file."""
    task, errors = load_all_errors(TaskFile, path, display)
    if task is None:
        raise GateInputErrors(errors)
    errors += task_errors(repo, task, path, display, hidden, config.suite.fixtures)
    merged = collect(errors, lambda: merge_rubric(task.rubric, config.rubric, display, config.graded_dimensions()))
    layout = collect(errors, lambda: neutral_layout(repo, config, task.review, task.files, display))
    errors += _twice_in_workspace(layout["workspace_review"] if layout else [], task.review, display)
    case = CaseSpec(id=task.id, source="task", origin=display, why=task.why, review=task.review,
                    expect=task.expect, rubric=merged or Rubric(), trials=task.trials or config.trials,
                    tags=task.tags, agent=task.agent, removed=task.removed, **(layout or {"files": task.files}))
    if rubric is not None:
        _check_rule_ids(case, rubric, errors)
    if errors:
        raise GateInputErrors(errors)
    return case


def merge_rubric(own: Rubric | None, default: Rubric, display: str, dims: Sequence[str] = DIMENSIONS) -> Rubric:
    """Task rubric keys override the config defaults; what a graded dimension reads must end up set
    (a run that grades the verdict alone needs neither)."""
    tool_use = (own.tool_use if own else None) or default.tool_use
    trajectory = (own.trajectory if own else None) or default.trajectory
    needed = {dimensions.spec(d).rubric for d in dims}
    if tool_use is None and "tool_use" in needed:
        raise GateInputError(display, "rubric.tool_use", "no tool-use rubric for this case",
                             "set rubric.tool_use here or a default in rubricgate.yaml")
    if trajectory is None and "trajectory" in needed:
        raise GateInputError(display, "rubric.trajectory", "no trajectory rubric for this case",
                             "set rubric.trajectory.max_steps here or a default in rubricgate.yaml")
    # Most cases keep the config's rubric whole: one object for all of them (a 2,000-case suite
    # held 2,000 equal copies), as a task's own whole rubric is kept as it is.
    for whole in (default, own):
        if whole is not None and (whole.tool_use, whole.trajectory) == (tool_use, trajectory):
            return whole
    return Rubric(tool_use=tool_use, trajectory=trajectory)


def _load_fixtures(repo: Path, config: Config, errors: list[GateInputError]) -> list[CaseSpec]:
    root = repo / config.suite.fixtures
    if config.suite.layout == "skills":
        folders = [(skill.parent, tier) for folder, tier in TIERS.items()
                   for skill in sorted((root / folder).glob(f"*/{SKILL_FILE}"))]
    else:  # files: every folder under a tier folder (the layout checks report the empty ones)
        folders = [(f, tier) for folder, tier in TIERS.items() if (root / folder).is_dir()
                   for f in sorted((root / folder).iterdir()) if f.is_dir() and not f.name.startswith(".")]
    return _each(errors, [lambda f=f, t=t: _fixture_case(repo, config, f, t) for f, t in folders])


def _fixture_case(repo: Path, config: Config, folder: Path, tier: Tier) -> CaseSpec:
    top = folder.relative_to(repo).as_posix()
    if folder.is_symlink():  # its files are not in the tree a workspace copies: the trial would lack them
        raise GateInputError(top, "", "the fixture folder is a symbolic link",
                             "copy the folder it points to, or make it a task whose review: names its files")
    extra, origin = FixtureExpect(), f"{top}/{SKILL_FILE}" if config.suite.layout == "skills" else top
    expect_file = folder / "expect.yaml"
    if expect_file.is_file():
        origin = expect_file.relative_to(repo).as_posix()
        loaded, problems = load_all_errors(FixtureExpect, expect_file, origin)
        if problems:
            raise GateInputErrors(problems)
        extra = loaded or extra
    review = [f"{top}/{sub}" for sub in _reviewed(repo, config, folder, extra.review, origin)]
    for rel in review:
        safe_relpath(repo, rel, rel, "path")
    expect = Expect(tier=tier, rules=extra.rules, absent_rules=extra.absent_rules)
    name = folder.name
    if len(f"fixture-{name}") > MAX_ID_CHARS:  # the id names its transcript files; the OS bounds their names
        raise GateInputError(top, "folder name",
                             f"the case id fixture-<folder> is {len(name) + 8} characters, over {MAX_ID_CHARS}",
                             f"rename the folder to at most {MAX_ID_CHARS - 8} characters")
    layout = neutral_layout(repo, config, review, {}, origin)
    tags = list(dict.fromkeys(["fixture", tier.lower(), *extra.tags]))
    # The id carries no tier: it is not shown to the reviewer, and it must not need to hide.
    return CaseSpec(id=f"fixture-{name}", source="fixture", origin=origin, why=extra.why,
                    review=review, expect=expect,
                    rubric=merge_rubric(extra.rubric, config.rubric, origin, config.graded_dimensions()),
                    trials=extra.trials or config.trials, tags=tags, **layout)


def _reviewed(repo: Path, config: Config, folder: Path, declared: list[str], origin: str) -> list[str]:
    """The fixture's reviewed files, relative to its folder: those expect.yaml declares, else its
    SKILL.md (skills layout) or every file but expect.yaml (files layout), sorted."""
    if not declared:
        if config.suite.layout == "skills":
            return [SKILL_FILE]
        declared = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                          if p.is_file() and p.relative_to(folder).as_posix() != "expect.yaml")
    for i, sub in enumerate(declared):
        pure = PurePosixPath(sub)
        if pure.is_absolute() or ".." in pure.parts or sub == "expect.yaml" or not (folder / sub).is_file():
            raise GateInputError(origin, f"review[{i}]", f"{sub!r} is not a file of this fixture folder",
                                 "name files inside the fixture's folder, relative to it (not expect.yaml)")
        if sub in declared[:i]:  # reviewed twice, its findings counted twice
            raise GateInputError(origin, f"review[{i}]", f"{sub!r} is listed twice", "list it once")
        if sub != sub.strip():  # the changed-files list is read a stripped line at a time
            raise GateInputError(origin, "review", f"{sub!r} begins or ends with a space", "rename the file")
    return list(declared)


def neutral_layout(repo: Path, config: Config, review: list[str], files: dict[str, str],
                   display: str) -> dict:
    """Where the case's files appear in the workspace: suite paths mapped to neutral ones.

    A fixture folder `fixtures/<tier>/<name>/` (with its references, without its expect.yaml)
    lands at `<review_root>/<name>/`; review entries and overlay keys inside it are mapped the
    same way. Reviewing a task file itself would hand the reviewer its answer key: an error.
    """
    mapped = {rel: _neutral(rel, config, display) for rel in [*review, *files]}
    copies: dict[str, str] = {}
    for rel in review:
        if mapped[rel] != rel and rel not in files:
            copies.update(_fixture_folder(repo, config, rel))
    return {"workspace_review": [mapped[r] for r in review],
            "files": {mapped[k]: v for k, v in files.items()},
            "workspace_paths": {**copies, **{mapped[k]: k for k in files if mapped[k] != k}}}


def _neutral(rel: str, config: Config, display: str) -> str:
    tasks, fixtures = config.suite.tasks.rstrip("/"), config.suite.fixtures.rstrip("/")
    if rel == tasks or rel.startswith(tasks + "/"):
        raise GateInputError(display, "review", f"{rel!r} lies in the task folder, which the reviewer never sees",
                             "put the content under files: or in a fixture")
    if not rel.startswith(fixtures + "/"):
        return rel
    parts = rel[len(fixtures) + 1:].split("/")
    if len(parts) < 3 or parts[0] not in TIERS:
        raise GateInputError(display, "review", f"{rel!r} is not inside a fixture folder {fixtures}/<tier>/<name>/",
                             "review a file of a fixture, or put the content under files:")
    return "/".join([config.suite.review_root.rstrip("/"), *parts[1:]])


def _fixture_folder(repo: Path, config: Config, rel: str) -> dict[str, str]:
    """{neutral: source} for every file of the fixture folder holding rel, but expect.yaml."""
    fixtures = config.suite.fixtures.rstrip("/")
    tier, name = rel[len(fixtures) + 1:].split("/")[:2]
    folder = repo / fixtures / tier / name
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sub = path.relative_to(folder).as_posix()
        if sub != "expect.yaml":
            out[f"{config.suite.review_root.rstrip('/')}/{name}/{sub}"] = f"{fixtures}/{tier}/{name}/{sub}"
    return out


def _check_review_root(repo: Path, config: Config, case: CaseSpec, errors: list[GateInputError]) -> None:
    """A case folder mapped onto an existing folder under review_root would mix two skills."""
    depth = len(config.suite.review_root.rstrip("/").split("/")) + 1
    for folder in sorted({"/".join(p.split("/")[:depth]) for p in case.workspace_paths}):
        if (repo / folder).exists():
            errors.append(GateInputError(
                case.origin, "review", f"the case's folder is reviewed at {folder}/, which already exists "
                "in the repository", "rename the fixture folder or set suite.review_root to a free folder"))


def review_root_errors(repo: Path, config: Config, display: str) -> list[GateInputError]:
    """Once for the suite: suite.review_root must be a place for folders, in a workspace too. A
    file there (or the changed-files list: the harness writes it in every workspace) left no
    workspace able to hold a case (NotADirectoryError, or every trial unread)."""
    root, changed = config.suite.review_root.rstrip("/"), config.reviewer.changed_files
    parts = root.split("/")
    blocked = next(("/".join(parts[:i]) for i in range(1, len(parts) + 1)
                    if "/".join(parts[:i]) == changed or ((repo / "/".join(parts[:i])).exists()
                                                          and not (repo / "/".join(parts[:i])).is_dir())), None)
    if blocked is None and changed.startswith(root + "/"):  # written in every workspace, over a case's file
        return [GateInputError(display, "reviewer.changed_files", f"{changed} lies under suite.review_root, where "
                               "the cases' folders go", "put the changed-files list outside suite.review_root")]
    if blocked is None:
        return []
    what = "the changed-files list (reviewer.changed_files)" if blocked == changed else "a file in the repository"
    return [GateInputError(display, "suite.review_root", f"{blocked} is {what}, where the cases' folders go",
                           "set suite.review_root to a free folder, or move the file")]


def _twice_in_workspace(shown: list[str], review: list[str], display: str) -> list[GateInputError]:
    """Two review entries the workspace shows as one file (a fixture's file and its neutral path):
    reviewed twice, its findings counted twice."""
    seen: dict[str, str] = {}
    for entry, path in zip(review, shown, strict=False):
        if path in seen and seen[path] != entry:
            return [GateInputError(display, "review", f"{entry!r} and {seen[path]!r} are one file in the workspace "
                                   f"({path})", "list it once")]
        seen.setdefault(path, entry)
    return []


def _check_duplicates(cases: list[CaseSpec], errors: list[GateInputError]) -> None:
    seen: dict[str, str] = {}
    for case in cases:
        if case.id in seen:
            errors.append(GateInputError(case.origin, "id", f"duplicate case id {case.id!r} (also in {seen[case.id]})",
                                         "give every task a unique id"))
        seen.setdefault(case.id, case.origin)


def _check_rule_ids(case: CaseSpec, rubric: RubricSpec, errors: list[GateInputError]) -> None:
    for key in ("rules", "absent_rules"):
        for rid in getattr(case.expect, key):
            if rid not in rubric.rules:
                errors.append(GateInputError(case.origin, f"expect.{key}", f"unknown rule id {rid!r}",
                                             f"use an id from {rubric.ids_from}"))
    both = sorted(set(case.expect.rules) & set(case.expect.absent_rules))
    if both:
        errors.append(GateInputError(case.origin, "expect.absent_rules", f"{', '.join(both)} also in expect.rules: "
                                     "no review can both cite and not cite a rule", "keep each rule in one list"))


def unpassable_errors(cases: list[CaseSpec], rubric: RubricSpec) -> list[GateInputError]:
    """`validate`'s check of expected rules whose severities make the tier higher than the one
    expected (the tier is derived from the findings and never lowered): no review can pass such
    a case. Not a load error: a run of another rubric (compare's base side, a mutant that raises
    a severity) must judge the suite, and there such a case simply fails. Only for the default
    derivation, which only rises as findings are added; a `tiers:` table's first-match rules need not."""
    if rubric.vocabulary.rules is not None:
        return []
    errors = []
    for case in cases:
        known = [rubric.rules[r].severity for r in case.expect.rules if r in rubric.rules]
        least = rubric.derive_tier(known) if known and case.expect.tier is not None else None
        if least is not None and case.expect.tier is not None and TIER_ORDER[least] > TIER_ORDER[case.expect.tier]:
            errors.append(GateInputError(case.origin, "expect.rules", f"these rules make the tier at least {least} "
                                         f"(it is derived from the findings and never lowered), not "
                                         f"{case.expect.tier}: no review can pass this case",
                                         f"drop the rule, or expect {least}"))
    return errors
