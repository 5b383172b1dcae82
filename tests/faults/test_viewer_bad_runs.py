"""Issue 37, item 5: one bad run never takes the viewer down.

A summary.json nested 200,000 levels deep raised RecursionError on the runs page, the trend page
and in `view --build`; a run folder removed while `rubricgate view` served made every page that
lists runs fail (FileNotFoundError), so the viewer answered nothing. Each such run is now left
out with a note, and every other page is served.
"""

from __future__ import annotations

import http.client
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import view_fixtures as vf  # noqa: E402

from rubricgate.view import build, urls  # noqa: E402
from rubricgate.view.catalog import Catalog  # noqa: E402
from rubricgate.view.server import serve_in_thread, url_of  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402

OLD, MID, NEW = "20260101T000000Z-abc120", "20260102T000000Z-abc121", "20260103T000000Z-abc122"
DEEP = "[" * 200_000 + "]" * 200_000


@pytest.fixture
def reports(tmp_path) -> Path:
    vf.write_runs(tmp_path / "reports", 3)
    return tmp_path / "reports"


def _get(server, path: str) -> tuple[int, bytes]:
    """GET `path` below the server's token (the URL `rubricgate view` prints)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    conn.request("GET", "/" + url_of(server).split("/", 3)[3] + path.lstrip("/"))
    got = conn.getresponse()
    body = got.read()
    conn.close()
    return got.status, body


@pytest.fixture
def serving(reports):
    srv, thread = serve_in_thread(site_for([reports]), 0)
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def test_a_summary_nested_200000_levels_deep_is_left_out_with_a_note(reports) -> None:
    (reports / OLD / "summary.json").write_text(DEEP)
    cat = Catalog.of([reports])
    assert [h.run_id for h in cat.heads()] == [NEW, MID]
    assert len(cat.problems) == 1 and "nested deeper than" in cat.problems[0] and OLD in cat.problems[0]


def test_view_build_writes_every_other_run_beside_a_deep_summary(reports, tmp_path) -> None:
    (reports / OLD / "summary.json").write_text(DEEP)
    build.build_site(site_for([reports]), tmp_path / "site")
    assert (tmp_path / "site" / urls.run(NEW)).is_file() and (tmp_path / "site" / urls.trend()).is_file()
    assert not (tmp_path / "site" / urls.run(OLD)).exists()
    assert "nested deeper than" in (tmp_path / "site" / urls.runs()).read_text()


def test_the_served_viewer_keeps_answering_with_a_deep_summary(reports, serving) -> None:
    (reports / OLD / "summary.json").write_text(DEEP)
    for path in ("/", "/" + urls.trend(), "/" + urls.run(NEW), "/" + urls.case("pass-weekly-revenue")):
        status, body = _get(serving, path)
        assert status == 200, (path, body[:300])
    status, body = _get(serving, "/" + urls.run(OLD))
    assert status in (404, 500) and b"nested deeper than" in body


def test_the_served_viewer_keeps_answering_after_a_run_folder_is_removed(reports, serving) -> None:
    assert _get(serving, "/")[0] == 200  # every run found and indexed
    shutil.rmtree(reports / MID)
    for path in ("/", "/" + urls.trend(), "/" + urls.run(NEW), "/" + urls.case("pass-weekly-revenue"),
                 "/" + urls.compare(OLD, NEW)):
        status, body = _get(serving, path)
        assert status == 200, (path, body[:300])
    status, body = _get(serving, "/")
    assert b"the run&#39;s folder is gone" in body or b"the run's folder is gone" in body
    assert _get(serving, "/" + urls.run(MID))[0] in (404, 500)


def test_a_summary_holding_what_no_run_writes_is_listed_or_left_out_never_a_failed_page(reports, serving) -> None:
    """A hand-edited summary whose cost section holds words (the fuzz's summary.json mutations)
    made the index build raise out of every listing page."""
    import json

    for run, cost in ((OLD, {"input_tokens": "PASS", "output_tokens": "\ud800"}), (MID, {"cost_usd": "x"})):
        summary = json.loads((reports / run / "summary.json").read_text())
        summary["cost"] = cost
        (reports / run / "summary.json").write_text(json.dumps(summary))
        for leftover in ("view-index.json", "view-cases.jsonl"):
            (reports / run / leftover).unlink(missing_ok=True)
    status, body = _get(serving, "/")
    assert status == 200 and b"cannot be indexed" in body and OLD.encode() in body
