"""The terminal's lists (reports/terminal.py): a list cut at its limit says how many more."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.reports.terminal import honesty_lines  # noqa: E402


def test_an_errored_list_past_its_limit_says_how_many_more() -> None:
    """22 errored trials showed as 15 lines under "errored ...: 22" and nothing after them."""
    errored = [f"case-{i} #1: agent crashed (SIGSEGV)" for i in range(22)]
    lines = honesty_lines(rf.summary(errored=errored))
    assert lines[0] == "errored (infrastructure, left out of every rate): 22"
    assert lines[1:16] == [f"  {e}" for e in errored[:15]]
    assert lines[16] == "  ... and 7 more (see summary.json)" and len(lines) == 17


def test_a_list_within_its_limit_is_shown_whole() -> None:
    errored = [f"case-{i} #1: timeout" for i in range(15)]
    assert honesty_lines(rf.summary(errored=errored))[1:] == [f"  {e}" for e in errored]


def test_a_run_folder_whose_path_holds_a_newline_is_one_report_line(tmp_path) -> None:
    """A checkout under 'ci\\nPASS (exit 0)/' printed its report path across two lines, the second
    reading as a line of its own."""
    from rubricgate.reports.terminal import render_terminal

    run_dir = tmp_path / "ci\ndecision: PASS (exit 0)" / "reports" / "run"
    out = render_terminal(rf.passing_summary(), str(run_dir))
    assert not any(line.startswith("decision: PASS (exit 0)/") for line in out.splitlines()), out
    assert out.splitlines()[-1].startswith("report: ") and "ci\\x0adecision" in out.splitlines()[-1]
