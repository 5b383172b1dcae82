"""Minimal agent environment and secret scrubbing."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

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


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret value in text with a marker."""
    for value in secrets:
        text = text.replace(value, REDACTED)
    return text


def scrub_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    vals = [re.escape(v) for v in values]
    return re.compile("|".join(vals)) if vals else None
