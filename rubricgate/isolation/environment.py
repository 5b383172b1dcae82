"""Minimal agent environment. Scrubbing lives in rubricgate.secrets (re-exported here)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

# One mechanism for every writer; these names stay importable from here for existing callers.
from rubricgate.secret_env import secret_values
from rubricgate.secrets import REDACTED, scrub, scrub_data, scrub_file, scrub_model

__all__ = ["REDACTED", "build_env", "isolated_env", "scrub", "scrub_data", "scrub_file", "scrub_model",
           "secret_values"]


def build_env(allowlist: Iterable[str], secret_names: Iterable[str],
              source: Mapping[str, str] | None = None) -> dict[str, str]:
    """Only allowlisted variables (and named secrets) reach the agent; nothing else leaks in."""
    source = os.environ if source is None else source
    names = set(allowlist) | set(secret_names)
    return {k: v for k, v in source.items() if k in names}


XDG_DIRS = {"HOME": ".", "XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache",
            "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state", "TMPDIR": "tmp"}


def isolated_env(base: Mapping[str, str], home: Path, view: Path | None = None) -> dict[str, str]:
    """base plus a throwaway HOME, XDG dirs and TMPDIR under `home`, created on disk; the
    variables name them at `view` (where the agent's sandbox mounts `home`) when given.

    Agent CLIs read and write config, caches and session history under these; pointing them
    at a per-run directory keeps the user's real config out and the run's state contained.
    """
    from rubricgate.isolation.untrusted import make_folders

    # By descriptor from the folder HOME is in: a retry runs in the same HOME, where the failed
    # attempt may have left `.local -> /etc`, and mkdir(parents=True) made /etc/share through it.
    make_folders(home.parent, [os.path.normpath(os.path.join(home.name, rel)) for rel in XDG_DIRS.values()])
    seen = view or home
    return {**base, **{k: os.path.normpath(seen / rel) for k, rel in XDG_DIRS.items()}}
