"""The render cache: used only in a private folder of this user's; compiled templates reused;
charts stored and read back by content."""

from __future__ import annotations

import os

from rubricgate.reports import render_cache
from tests import reports_fixtures as rf


def test_a_folder_others_can_write_is_never_used(_private_cache_home):
    folder = _private_cache_home / "rubricgate" / render_cache.CHARTS
    folder.mkdir(parents=True)
    os.chmod(folder, 0o777)
    assert render_cache.private_folder(render_cache.CHARTS) is None
    render_cache.write_chart("k" * 64, "<svg/>")
    assert not list(folder.iterdir()) and render_cache.read_chart("k" * 64) is None


def test_a_linked_folder_or_chart_is_never_read(_private_cache_home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (_private_cache_home / "rubricgate").mkdir()
    (_private_cache_home / "rubricgate" / render_cache.CHARTS).symlink_to(elsewhere)
    assert render_cache.private_folder(render_cache.CHARTS) is None
    (_private_cache_home / "rubricgate" / render_cache.CHARTS).unlink()
    folder = render_cache.private_folder(render_cache.CHARTS)
    (elsewhere / "planted.svg").write_text("<svg><script/></svg>")
    (folder / f"{'a' * 64}.svg").symlink_to(elsewhere / "planted.svg")
    assert render_cache.read_chart("a" * 64) is None


def test_a_chart_is_read_back_by_its_content_key(_private_cache_home):
    key = render_cache.content_key("trend", "v1", '{"runs": []}')
    assert key != render_cache.content_key("trend", "v1", '{"runs": [1]}') and len(key) == 64
    assert render_cache.read_chart(key) is None
    render_cache.write_chart(key, "<svg>x</svg>")
    assert render_cache.read_chart(key) == "<svg>x</svg>"
    folder = render_cache.private_folder(render_cache.CHARTS)
    assert oct(folder.stat().st_mode & 0o777) == "0o700" and not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_templates_are_compiled_once_into_the_private_folder(_private_cache_home):
    from rubricgate.reports import html

    html._environment.cache_clear()
    try:
        html.render_html(rf.summary())
        stored = sorted((_private_cache_home / "rubricgate" / render_cache.TEMPLATES).iterdir())
        assert len(stored) >= 2  # report.html.j2 and the parts it imports
        html._environment.cache_clear()
        assert html.render_html(rf.summary()) == html.render_html(rf.summary())
        assert sorted((_private_cache_home / "rubricgate" / render_cache.TEMPLATES).iterdir()) == stored
    finally:
        html._environment.cache_clear()


def test_a_page_is_written_when_the_cache_folder_went_meanwhile(_private_cache_home):
    # A copy-only run throws the whole cache folder away once its trials end, after the template
    # environment (and its bytecode cache) was made: the page is compiled and written all the same.
    import shutil

    from rubricgate.reports import html

    html._environment.cache_clear()
    try:
        html._environment()
        shutil.rmtree(_private_cache_home / "rubricgate")
        assert "<html" in html.render_html(rf.summary())
        # and kept, in the folder made again: compiled here from the package's source, it is what
        # the next copy-only run carries over its own retirement (runner/run_notes.py)
        folder = _private_cache_home / "rubricgate" / render_cache.TEMPLATES
        assert len(list(folder.iterdir())) >= 2 and oct(folder.stat().st_mode & 0o777) == "0o700"
    finally:
        html._environment.cache_clear()
