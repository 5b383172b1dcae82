"""Loading rubricgate.yaml into the Config model."""

from __future__ import annotations

from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.loading import load_model
from rubricgate.models.config import Config

CONFIG_NAME = "rubricgate.yaml"


def find_repo(start: Path) -> Path:
    """The nearest folder at or above `start` holding rubricgate.yaml (else `start`)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    return start


def load_config(repo: Path, path: Path | None = None) -> Config:
    """Load the config; a missing file is an error (the gate cannot judge without it)."""
    path = path or repo / CONFIG_NAME
    if not path.is_file():
        raise GateInputError(str(path), "", "config file not found", f"create {CONFIG_NAME} at the repository root")
    return load_model(Config, path, _display(repo, path))


def _display(repo: Path, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(repo.resolve()))
    except ValueError:
        return str(path)
