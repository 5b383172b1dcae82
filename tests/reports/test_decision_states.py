"""Every Decision.status in every place a decision is shown: report.html, the viewer's run page and
runs page, the PR comment. Each has its badge text there and a style of its own whose text is at
4.5:1 or more on it in both schemes (the browser tests measure the rendered badges too)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import get_args

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
from contrast import CSS, badge_colours, contrast, scheme  # noqa: E402

from rubricgate.models.results import Decision  # noqa: E402
from rubricgate.reports.comment import render_comment  # noqa: E402
from rubricgate.reports.html import render_html  # noqa: E402
from rubricgate.reports.story import BADGES, EMOJI  # noqa: E402
from rubricgate.view import urls  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402

STATUSES = get_args(Decision.model_fields["status"].annotation)


def _summary(status: str):
    return rf.summary(decision=Decision(status=status, exit_code=0 if status in ("pass", "baseline") else 2))


@pytest.mark.parametrize("status", STATUSES)
def test_each_decision_has_its_badge_in_the_report_the_viewer_and_the_comment(status, tmp_path):
    text = BADGES[status]
    s = _summary(status)
    page = render_html(s)
    assert re.search(rf'<span id="decision" class="decision {status}"><span aria-hidden="true">.</span> {text}</span>', page)
    rf.write_run_dir(tmp_path / "reports" / s.run_id, s)
    site = site_for([tmp_path / "reports"])
    for path in (urls.run(s.run_id), urls.runs()):
        html = site.page(path).body.decode()
        assert re.search(rf'<span class="decision {status}"><span aria-hidden="true">.</span> {text}</span>', html), path
    assert render_comment(s).splitlines()[1].startswith(f"### {EMOJI[status]} rubricgate **{text}**")
    for dark in (False, True):
        fg, bg = badge_colours(scheme(dark), status)
        assert contrast(fg, bg) >= 4.5 and f".decision.{status} {{" in CSS
