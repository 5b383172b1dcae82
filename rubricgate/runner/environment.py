"""Minimal agent environment and secret scrubbing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

REDACTED = "[REDACTED]"


def build_env(allowlist: Iterable[str], secret_names: Iterable[str],
              source: Mapping[str, str] | None = None) -> dict[str, str]:
    """Only allowlisted variables (and named secrets) reach the agent; nothing else leaks in."""
    source = os.environ if source is None else source
    names = set(allowlist) | set(secret_names)
    return {k: v for k, v in source.items() if k in names}


def secret_values(env: Mapping[str, str], secret_names: Iterable[str]) -> list[str]:
    """Values to scrub from outputs; short values are skipped so we do not mangle text."""
    return sorted({env[n] for n in secret_names if len(env.get(n, "")) >= 6}, key=len, reverse=True)


def _written_forms(value: str) -> list[str]:
    """The value as it may appear in what we write: raw, and JSON-escaped (ASCII or UTF-8)."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    return sorted(forms, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret value in text with a marker, also inside JSON string escapes."""
    for value in secrets:
        for form in _written_forms(value):
            text = text.replace(form, REDACTED)
    return text


def isolated_env(base: Mapping[str, str], home: Path) -> dict[str, str]:
    """base plus a throwaway HOME, XDG dirs and TMPDIR under `home`, created on disk.

    Agent CLIs read and write config, caches and session history under these; pointing them
    at a per-run directory keeps the user's real config out and the run's state contained.
    """
    dirs = {"HOME": home, "XDG_CONFIG_HOME": home / ".config", "XDG_CACHE_HOME": home / ".cache",
            "XDG_DATA_HOME": home / ".local" / "share", "XDG_STATE_HOME": home / ".local" / "state",
            "TMPDIR": home / "tmp"}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    return {**base, **{k: str(v) for k, v in dirs.items()}}


def scrub_file(path: Path, secrets: Iterable[str]) -> None:
    """Rewrite a captured file with every secret value replaced (no-op when none occur)."""
    values = list(secrets)
    if not values or not path.is_file():
        return
    # surrogateescape round-trips any bytes, so a non-UTF-8 stream is scrubbed, not mangled.
    data = path.read_bytes().decode("utf-8", "surrogateescape")
    cleaned = scrub(data, values)
    if cleaned != data:
        path.write_bytes(cleaned.encode("utf-8", "surrogateescape"))


def scrub_model(model: M, secrets: Iterable[str]) -> M:
    """A copy of a pydantic model with secret values removed from every string in it."""
    values = list(secrets)
    if not values:
        return model
    return type(model).model_validate_json(scrub(model.model_dump_json(), values))
