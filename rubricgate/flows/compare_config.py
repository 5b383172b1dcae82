"""The settings each side of `compare --base` runs with: REF's config as written, its gate
(deciding both sides), the reviewer it sets up (the base side's), and the lines naming what the
working tree changes in them."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.flows.compare_scope import changed_keys
from rubricgate.models.config import REVIEWER_SECTIONS, Config, GateConfig
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.validation import load_all_errors


def config_as_written(config_rel: str | None, tree: Path, ref: str | None = None) -> Config | None:
    """rubricgate.yaml as `tree` (a checkout of REF, or the repository) has it, its settings only
    (the folders it names need not exist in a checkout of REF: git keeps no empty one). None when
    the tree has no such file (a pull request adopting rubricgate) or the config lies outside the
    repository; one that is there but does not load is an input error for REF (never this
    checkout's settings instead: a PR that broke the base's file would choose its own gate)."""
    if config_rel is None or not (tree / config_rel).exists():
        return None
    try:
        at_ref, problems = load_all_errors(Config, tree / config_rel, config_rel)
    except GateInputErrors as exc:
        at_ref, problems = None, exc.errors
    except GateInputError as exc:
        at_ref, problems = None, [exc]
    if at_ref is None or problems:
        if ref is None:
            return None
        # What is wrong with it, as loading it says (`legacy_key: unknown key`): "does not load"
        # alone sent the user looking.
        why = f" ({_first_problem(problems)})" if problems else ""
        raise GateInputError("--base", config_rel, f"{ref}'s {config_rel} does not load{why}, so its gate and "
                             "reviewer settings are unknown", f"compare against a ref whose {config_rel} loads")
    return at_ref


def _first_problem(problems: list[GateInputError]) -> str:
    first = problems[0]
    where = f"{first.field}: " if first.field else ""
    more = f"; and {len(problems) - 1} more" if len(problems) > 1 else ""
    return f"{where}{first.problem}{more}"


def config_relpath(repo: Path, config_path: Path | None) -> str | None:
    """The config's path inside the repository as given, its links not followed (a PR that makes
    rubricgate.yaml a link to a new file must not make REF's rubricgate.yaml unknown); None outside it."""
    given = os.path.abspath(config_path or repo / CONFIG_NAME)
    rel = os.path.relpath(given, os.path.abspath(repo))
    return None if rel == ".." or rel.startswith("../") else Path(rel).as_posix()


def gate_at_base(at_ref: Config | None, ref: str, head: GateConfig) -> tuple[GateConfig, str]:
    """The gate settings that judge a pull request: the base's (the PR's own could loosen the gate
    that judges it: a margin of 0.3, `inconclusive: pass`, a dimension left out), and a line
    saying so when the two differ; the PR's, said, when the base has no config that loads."""
    if at_ref is None:
        return head, f"the gate settings are this checkout's: {ref} has no {CONFIG_NAME} that loads"
    return at_ref.gate, _differs({"gate": (at_ref.gate, head)}, f"the gate settings of {ref} decide",
                                 ", which takes effect once merged")


def reviewer_at_base(at_ref: Config | None, ref: str, head: Config) -> str:
    """A line naming what this checkout changes in the reviewer the base side runs, REF's (its
    files and agent: REVIEWER_SECTIONS), or ''. A PR that renames the prompt could otherwise never
    be compared (REF has no file of the new name), and one that points the config at a rubric REF
    already has, or adds a lenient instruction to `agent.extra_args`, would run that on both sides."""
    if at_ref is None:
        return ""
    pairs = {k: (getattr(at_ref, k), getattr(head, k)) for k in REVIEWER_SECTIONS}
    return _differs(pairs, f"the base side runs the reviewer {ref}'s config sets up",
                    " (this checkout's side runs its own)")


def _differs(sections: dict[str, tuple[BaseModel | None, BaseModel | None]], lead: str, tail: str) -> str:
    """'<lead>: this checkout changes <section>.<key>, ...<tail>', or '' when each pair is equal."""
    changed = changed_keys(sections)
    return f"{lead}: this checkout changes {', '.join(changed)}{tail}" if changed else ""
