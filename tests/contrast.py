"""The shared stylesheet's colours as the tests read them: its custom properties per scheme, and
WCAG's contrast ratio (tests/reports/test_theme.py, test_decision_states.py)."""

from __future__ import annotations

import re
from importlib import resources

CSS = resources.files("rubricgate.reports").joinpath("templates", "theme.css").read_text(encoding="utf-8")


def scheme(dark: bool) -> dict[str, str]:
    """The custom properties of :root, the dark block's over the light ones when `dark`."""
    light = re.search(r":root \{(.*?)\n\}", CSS, re.S).group(1)
    props = dict(re.findall(r"(--[a-z-]+): (#[0-9a-f]{6})", light))
    if dark:
        block = re.search(r"prefers-color-scheme: dark\) \{\s*:root \{(.*?)\}", CSS, re.S).group(1)
        props |= dict(re.findall(r"(--[a-z-]+): (#[0-9a-f]{6})", block))
    return props


def luminance(colour: str) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def badge_colours(props: dict[str, str], status: str) -> tuple[str, str]:
    fg = props.get(f"--badge-{status}-fg", props["--badge-fg"])
    return fg, props[f"--badge-{status}"]
