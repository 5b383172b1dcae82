"""Is rubricgate new since REF? The pull request adopting it has no base reviewer to compare.

`compare --base REF` puts REF's reviewer on the base side. Where REF holds no rubricgate config
and not the reviewer's files, there is none: the comparison can only say "could not judge" (exit
2), and the pull request that adds rubricgate failed its own gate. `changed` says so
(`new_at_base=true` for the PR workflow), and the workflow lets the run against the pull
request's baseline decide.

Read at REF's tip, as `compare` reads it (not the merge base), and only from what REF holds,
which a pull request cannot change: once REF has a config, a pull request that moves or deletes
the reviewer is compared (and refused) as ever.
"""

from __future__ import annotations

from pathlib import Path

from rubricgate.models.config import Config
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.trees import CommitTree


def new_at_base(repo: Path, commit: str, config: Config, config_rel: str | None = None) -> bool:
    """True when `commit` has neither rubricgate.yaml (nor `config_rel`, the --config file) nor
    every one of this config's reviewer files (prompt, skill, rubric): nothing there to compare."""
    reviewer = config.reviewer
    with CommitTree(repo, commit) as tree:
        if any(tree.real(path) is not None for path in {CONFIG_NAME, config_rel or CONFIG_NAME}):
            return False
        return any(_kind(tree, path) != "file" for path in (reviewer.prompt, reviewer.skill, reviewer.rubric))


def _kind(tree: CommitTree, path: str) -> str:
    found = tree.real(path.strip("/"))
    return found[1] if found else ""
