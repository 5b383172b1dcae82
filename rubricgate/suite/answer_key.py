"""What no workspace may hold: the answer key.

The suite (task files, fixtures with their expect.yaml), the baseline, the config file the run
reads, the reports, the cache folder inside the repository and `suite.workspace_exclude`. The
run's snapshot leaves them out, and any file that is a link into them (runner/workspace.py); a
fixture file linking into them is an input error (suite/checks.py); `compare --base` keeps them
out of REF's reviewer (flows/compare_trees.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from rubricgate.models.base import normal_path
from rubricgate.models.config import Config
from rubricgate.suite.closure import CACHE_DIR
from rubricgate.suite.config import CONFIG_NAME
from rubricgate.suite.paths import real_rel


def answer_key_paths(config: Config, config_rel: str | None = CONFIG_NAME, repo: Path | None = None) -> set[str]:
    """Repository paths no workspace may hold, for a config read from `config_rel` (None: a file
    outside the repository). Config paths come in one spelling (models/config.py `normal_path`);
    with `repo`, each also as its links resolve there (`evals/tasks -> real-tasks` left the real
    folder, every task file, in the snapshot)."""
    paths = {config.suite.tasks, config.suite.fixtures, config.baseline, config.reports, CACHE_DIR,
             *config.suite.workspace_exclude, normal_path(config_rel or "")}
    named = {p.strip("/") for p in paths if p.strip("/") not in ("", ".")}
    return named | {real for p in named if repo is not None and (real := real_rel(repo, p))}


def config_rel_of(repo: Path, config_path: Path | None) -> str | None:
    """Where the config file the run reads (default rubricgate.yaml) lies in the repository, its
    links followed (a link to it is then left out as a link into the answer key); None outside it."""
    root, file = os.path.realpath(repo), os.path.realpath(config_path or repo / CONFIG_NAME)
    return os.path.relpath(file, root).replace(os.sep, "/") if file.startswith(root + os.sep) else None
