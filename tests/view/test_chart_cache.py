"""view/charts.py: the trend chart is drawn once per content and kept in the render cache's
private folder, $XDG_CACHE_HOME/rubricgate/charts (docs/viewer.md)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import view_fixtures as vf  # noqa: E402

from rubricgate.reports import charts as drawing  # noqa: E402
from rubricgate.view import charts  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402


def _heads(tmp_path: Path):
    vf.write_runs(tmp_path / "reports", count=3)
    return list(reversed(site_for([tmp_path / "reports"]).catalog.heads()))


def test_a_drawn_chart_is_kept_in_the_private_charts_folder_and_read_back_by_another_process(
        tmp_path: Path, _private_cache_home: Path, monkeypatch) -> None:
    heads = _heads(tmp_path)
    monkeypatch.setattr(charts, "_drawn", {})
    old = os.umask(0)  # the folder is 0700 whatever the umask
    try:
        wide, narrow = charts.trend_svgs(heads)
    finally:
        os.umask(old)
    folder = _private_cache_home / "rubricgate" / "charts"
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700 and os.lstat(folder).st_uid == os.getuid()
    assert sorted(p.read_text() for p in folder.glob("*.svg")) == sorted([wide, narrow])
    assert all(len(p.stem) == 64 for p in folder.iterdir())  # named by content, no temp file left
    # A later process (nothing in memory) reads them instead of drawing.
    monkeypatch.setattr(charts, "_drawn", {})
    monkeypatch.setattr(drawing, "draw_trend", lambda *a: pytest.fail("drawn again"))
    assert charts.trend_svgs(heads) == (wide, narrow)
