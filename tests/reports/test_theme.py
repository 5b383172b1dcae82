"""The shared stylesheet's colours: every text on its background at WCAG AA (4.5:1), in the light
and the dark scheme, and a style of its own for every decision status. The browser tests measure
the same on the rendered pages (computed styles and axe-core's color-contrast rule)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import get_args

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from contrast import CSS, badge_colours, contrast, scheme  # noqa: E402

from rubricgate.models.results import Decision  # noqa: E402

STATUSES = get_args(Decision.model_fields["status"].annotation)


def test_the_contrast_formula_matches_wcags_reference_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near miss


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("status", [*STATUSES, "running"])
def test_every_decision_badge_has_its_own_style_at_aa_contrast(status, dark):
    assert re.search(rf"\.decision\.{status} \{{ background: var\(--badge-{status}\);", CSS)
    props = scheme(dark)
    assert contrast(*badge_colours(props, status)) >= 4.5, (status, badge_colours(props, status))


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_text_links_and_outcome_glyphs_are_at_aa_contrast(dark):
    p = scheme(dark)
    pairs = [(fg, bg) for fg in ("--fg", "--muted", "--link", "--good", "--bad", "--warn", "--mark") for bg in ("--bg", "--bg-subtle")]
    pairs += [(f"--cell-{k}-fg", f"--cell-{k}") for k in ("ok", "fail", "errored", "none")]
    low = {(fg, bg): round(contrast(p[fg], p[bg]), 2) for fg, bg in pairs if contrast(p[fg], p[bg]) < 4.5}
    assert not low, low


def test_the_statuses_differ_from_each_other():
    for dark in (False, True):
        colours = [badge_colours(scheme(dark), s) for s in STATUSES]
        assert len(set(colours)) == len(STATUSES)
