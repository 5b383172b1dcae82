"""The shared stylesheet's colours: every text on its background at WCAG AA (4.5:1), in the light
and the dark scheme, and a style of its own for every decision status. The browser tests measure
the same on the rendered pages (computed styles and axe-core's color-contrast rule)."""

from __future__ import annotations

import re
from importlib import resources
from typing import get_args

import pytest

from rubricgate.models.results import Decision

CSS = resources.files("rubricgate.reports").joinpath("templates", "theme.css").read_text(encoding="utf-8")
STATUSES = get_args(Decision.model_fields["status"].annotation)


def _scheme(dark: bool) -> dict[str, str]:
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


def test_the_contrast_formula_matches_wcags_reference_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near miss


def _badge(props: dict[str, str], status: str) -> tuple[str, str]:
    fg = props.get(f"--badge-{status}-fg", props["--badge-fg"])
    return fg, props[f"--badge-{status}"]


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("status", [*STATUSES, "running"])
def test_every_decision_badge_has_its_own_style_at_aa_contrast(status, dark):
    assert re.search(rf"\.decision\.{status} \{{ background: var\(--badge-{status}\);", CSS)
    props = _scheme(dark)
    assert contrast(*_badge(props, status)) >= 4.5, (status, _badge(props, status))


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_text_links_and_outcome_glyphs_are_at_aa_contrast(dark):
    p = _scheme(dark)
    pairs = [(fg, bg) for fg in ("--fg", "--muted", "--link", "--good", "--bad", "--warn", "--mark") for bg in ("--bg", "--bg-subtle")]
    pairs += [(f"--cell-{k}-fg", f"--cell-{k}") for k in ("ok", "fail", "errored", "none")]
    low = {(fg, bg): round(contrast(p[fg], p[bg]), 2) for fg, bg in pairs if contrast(p[fg], p[bg]) < 4.5}
    assert not low, low


def test_the_statuses_differ_from_each_other():
    for dark in (False, True):
        colours = [_badge(_scheme(dark), s) for s in STATUSES]
        assert len(set(colours)) == len(STATUSES)
