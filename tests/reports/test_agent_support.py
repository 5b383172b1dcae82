"""An agent CLI outside the tested range is called out in the summary, HTML, PR comment and terminal."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.agents.support import support_for  # noqa: E402
from rubricgate.reports.comment import render_body  # noqa: E402
from rubricgate.reports.html import render_html  # noqa: E402
from rubricgate.reports.terminal import render_terminal  # noqa: E402

UNTESTED = "claude 2.1.999 <b>(Claude Code)</b> is outside the tested range 2.1.112 - 2.1.337"


def untested_summary():
    return rf.summary(agent="claude", agent_version="2.1.999 <b>(Claude Code)</b>",
                      agent_support=support_for({"claude": "2.1.999 <b>(Claude Code)</b>"}))


def test_html_warns_about_an_untested_version_escaped(tmp_path: Path) -> None:
    page = render_html(untested_summary(), rf.write_run_dir(tmp_path / "run"), history=[])
    assert '<li>warning: claude 2.1.999 &lt;b&gt;(Claude Code)&lt;/b&gt; is outside' in page
    assert "<b>(Claude Code)</b>" not in page


def test_comment_and_terminal_warn_about_an_untested_version() -> None:
    body = render_body(untested_summary())
    assert "- warning: claude 2.1.999" in body and "is outside the tested range 2.1.112 - 2.1.337" in body
    assert f"warning: {UNTESTED}" in render_terminal(untested_summary(), "reports/x")


def test_tested_version_adds_no_warning(tmp_path: Path) -> None:
    tested = rf.summary(agent="claude", agent_support=support_for({"claude": "2.1.337 (Claude Code)"}))
    assert "tested range" not in render_html(tested, rf.write_run_dir(tmp_path / "run"), history=[])
    assert "tested range" not in render_body(tested) and "tested range" not in render_terminal(tested, "r")
