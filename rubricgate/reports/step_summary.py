"""The markdown summary GitHub Actions shows on the run page ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.results import Summary
from rubricgate.reports.comment import DEFAULT_ARTIFACT, render_body


def append_step_summary(summary: Summary, env: Mapping[str, str] | None = None,
                        artifact: str = DEFAULT_ARTIFACT, body: str | None = None) -> Path | None:
    """Append the report (`body`, else the run's) to $GITHUB_STEP_SUMMARY when set; return the
    file, or None when unset."""
    env = os.environ if env is None else env
    target = env.get("GITHUB_STEP_SUMMARY", "")
    if not target:
        return None
    path = Path(target)
    try:
        # Append, never overwrite: other steps of the same job write to this file too.
        with path.open("a", encoding="utf-8") as fh:
            fh.write((render_body(summary, artifact) if body is None else body) + "\n")
    except OSError as exc:
        raise GateInputError(str(path), "GITHUB_STEP_SUMMARY", f"cannot append: {exc.strerror}",
                             "point it at a writable file or unset it") from exc
    return path
