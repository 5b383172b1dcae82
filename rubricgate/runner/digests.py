"""Digests of what a run records of its reviewer and its cases: a SHA-256 per reviewer file (its
closure, suite/closure.py), one per section of rubricgate.yaml that runs or grades the reviewer,
and one per case (its spec and the files beside what it reviews). The trial cache keys on them
(runner/cache.py), baseline.json and every run record them (gating/changes.py compares them),
and a continued run's design takes them in (gating/continuation.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rubricgate.models.config import Config
from rubricgate.models.results import CaseSpec
from rubricgate.models.reviewer_digests import CONFIG_KEY
from rubricgate.runner.workspace import SKIP_DIRS, excluded
from rubricgate.suite.closure import closure_skip, reviewer_closure
from rubricgate.suite.trees import WorkTree

MISSING = "missing"


# The key of the trial cache's reviewer part when the closure reached its file limit.
WHOLE_TREE = ":the whole tree (the reviewer's closure reached its file limit)"


def reviewer_digest(repo: Path, config: Config, whole_past_cap: bool = False) -> dict[str, str]:
    """Digest per reviewer file: the reviewer's closure (suite/closure.py), which leaves out the
    changed-files list (written per case: part of the case, not the reviewer). `whole_past_cap`
    (the trial cache): when the closure reached its file limit, past which no one can say which
    file is the reviewer's, one more entry digests every file of the tree but what is never the
    reviewer's (a link 701 files deep replayed stale answers), as `changed` and `compare` count
    them all."""
    tree = WorkTree(repo)
    closure = reviewer_closure(tree, config)
    digests = files_digest(repo, closure.files)
    if whole_past_cap and closure.capped:
        skip = set(closure_skip(config))  # and .venv, node_modules: in no workspace
        rest = [rel for rel in tree.files_under("") if not excluded(rel, skip)]
        digests[WHOLE_TREE] = digest_json(files_digest(repo, rest))
    return digests


# rubricgate.yaml's sections that set up or grade the reviewer, recorded beside its files: a
# change there is a reviewer change the baseline can see (gating/changes.py).
CONFIG_SECTIONS = ("reviewer", "agent", "tiers", "rubric", "verdict", "gate")
# Settings of those sections that change no grade and no decision: left out (a stale-baseline
# note's age is no change to hold a run for).
NOT_JUDGING = {"gate": {"baseline_max_age_days"}}
# Settings added after baselines were measured with their sections: at this value (their default)
# they digest as the section did before they existed, so adding one is no reviewer change.
LATER_DEFAULTS = {"verdict": {"escalate": True}}
# Settings of those sections that change how trials are scheduled or retried, never an answer:
# digested at their default, so lowering agent.jobs after a rate limit is no reviewer change (a
# run is continued, not run afresh) and a section digests as before at any value of them.
NOT_ANSWERING = {"agent": ("jobs", "retries", "retry_backoff_s", "preflight", "preflight_timeout_s")}


def config_digests(config: Config, repo: Path) -> dict[str, str]:
    """One digest per section of CONFIG_SECTIONS, keyed 'rubricgate.yaml#<section>'; the paths
    loading made absolute (verdict.hook, agent.replay_dir) taken relative to the repository, so
    another checkout of the same config digests the same."""
    roots = sorted({json.dumps(f"{r}/")[1:-1] for r in (repo, repo.resolve())}, key=len, reverse=True)

    def digest(name: str) -> str:
        value = getattr(config, name)
        shown = value.model_dump(mode="json", exclude=NOT_JUDGING.get(name)) if value is not None else None
        dumped = json.dumps(as_before(name, at_defaults(name, value, shown)), sort_keys=True)
        for root in roots:
            dumped = dumped.replace(root, "")
        return hashlib.sha256(dumped.encode("utf-8")).hexdigest()
    out = {CONFIG_KEY + name: digest(name) for name in CONFIG_SECTIONS}
    if config.verdict is not None and config.verdict.hook:  # the hook's code and data grade too
        file = Path(config.verdict.hook.rpartition(":")[0])
        folder = file.parent.relative_to(repo.resolve()).as_posix() if file.is_absolute() else str(file.parent)
        out[CONFIG_KEY + "verdict"] = digest_json([out[CONFIG_KEY + "verdict"], files_digest(repo, [folder])])
    return out


def at_defaults(name: str, value: Any, shown: dict[str, Any] | None) -> dict[str, Any] | None:
    """Section `name` as dumped (`shown`) with its NOT_ANSWERING settings at their defaults."""
    if shown is None:
        return None
    fields = type(value).model_fields
    return {**shown, **{k: fields[k].get_default(call_default_factory=True) for k in NOT_ANSWERING.get(name, ())}}


def as_before(name: str, shown: dict[str, Any] | None) -> dict[str, Any] | None:
    """Section `name` as dumped (`shown`) without the LATER_DEFAULTS settings at their default:
    what a digest of it held before they existed (a baseline's, a run's design key)."""
    if shown is None:
        return None
    later = LATER_DEFAULTS.get(name, {})
    return {k: v for k, v in shown.items() if k not in later or later[k] != v}


def recorded_digests(repo: Path, config: Config) -> dict[str, str]:
    """What a run records of its reviewer and what baseline.json compares: a digest per reviewer
    file and one per judging section of rubricgate.yaml."""
    return {**reviewer_digest(repo, config), **config_digests(config, repo)}


def case_digest(repo: Path, case: CaseSpec, meaning_only: bool = False, grading: bool = True,
                seen: dict[tuple[str, bool], str] | None = None) -> str:
    """Digest of the case spec and of every file beside each reviewed file (e.g. references/).

    An overlaid file (case.files) is in the spec, but its folder may also hold repository files
    the agent reads beside it, so every reviewed file's folder is digested. `meaning_only` leaves
    out the case's wording, place and trials (`why:`, tags, origin, `trials:`, a fixture's
    expect.yaml, whose meaning is in the spec): what `compare --base` holds a case to
    (flows/compare_scope.py edited_cases).
    `grading=False` leaves out its grading rubric too (the config's `rubric:` merged with the
    case's): what the baseline keeps of a case (gating/case_edits.py), where a grading change is
    no edit of every case. `seen` keeps each folder's digest for the next case that reviews a file
    there (a suite's cases often share one folder: hashed once, not once a case).
    """
    # A file at the top of the repository is digested alone: its folder is the whole tree.
    folders = sorted({str(Path(rel).parent) for rel in case.review} - {"."})
    at_top = sorted(rel for rel in case.review if str(Path(rel).parent) == ".")
    # Its trials are how often it runs, not what it asks: `trials: 2` in the config edits no case.
    left_out = ({"why", "tags", "origin", "trials"} if meaning_only else set()) | (set() if grading else {"rubric"})
    spec = case.model_dump(mode="json", exclude=left_out or None)
    if not spec.get("removed"):  # a case removing nothing keeps the digest it had before the field existed
        spec.pop("removed", None)
    if meaning_only:  # expected and absent rules are sets: a reordered list asks the same
        spec["expect"] = {**spec["expect"], "rules": sorted(set(case.expect.rules)),
                          "absent_rules": sorted(set(case.expect.absent_rules))}
    seen = {} if seen is None else seen
    return digest_json({"spec": spec, "files": {rel: _path_digest(repo, rel, meaning_only, seen)
                                                 for rel in folders + at_top}})


def _path_digest(repo: Path, rel: str, meaning_only: bool, seen: dict[tuple[str, bool], str]) -> str:
    """One digest of the files under a reviewed file's folder (or of the file), kept in `seen`."""
    if (rel, meaning_only) not in seen:
        files = files_digest(repo, [rel])
        if meaning_only:  # a fixture's expect.yaml: its meaning is in the spec
            files = {r: sha for r, sha in files.items() if Path(r).name != "expect.yaml"}
        seen[rel, meaning_only] = digest_json(files)
    return seen[rel, meaning_only]


def files_digest(repo: Path, paths: list[str]) -> dict[str, str]:
    """SHA-256 per file under each path (a file or a folder, walked); absent paths say so."""
    out: dict[str, str] = {}
    for rel in paths:
        target = repo / rel
        if target.is_file():
            out[rel] = _file_sha(target)
        elif target.is_dir():
            out.update({p.relative_to(repo).as_posix(): _file_sha(p) for p in _walk_files(target)})
        else:
            out[rel] = MISSING
    return out


def _walk_files(folder: Path) -> list[Path]:
    """The files under `folder` a workspace holds of it: none under .git, node_modules and the
    other folders no workspace copies (runner/workspace.py SKIP_DIRS)."""
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(folder).parts))


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digest_json(value: object) -> str:
    """SHA-256 of the value as sorted JSON."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()
