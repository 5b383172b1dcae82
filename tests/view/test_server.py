"""The loopback server: GET/HEAD only, its own pages only, the right Host only."""

from __future__ import annotations

import http.client
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import view_fixtures as vf  # noqa: E402

from rubricgate.view import urls  # noqa: E402
from rubricgate.view.server import serve_in_thread  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402

OLD = "20260101T000000Z-abc120"


@pytest.fixture
def server(tmp_path):
    vf.write_runs(tmp_path / "reports")
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    srv, thread = serve_in_thread(site_for([tmp_path / "reports"]), 0)
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def ask(server, method: str, path: str, host: str | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{server.server_address[1]}")
    conn.endheaders()
    got = conn.getresponse()
    body = got.read()
    conn.close()
    return got.status, dict(got.getheaders()), body


def test_binds_to_loopback_only(server):
    assert server.server_address[0] == "127.0.0.1"


def test_get_and_head_serve_pages(server):
    status, headers, body = ask(server, "GET", "/")
    assert status == 200 and b'<tr class="run"' in body and headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = ask(server, "HEAD", "/" + urls.run(OLD))
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 1000


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND"])
def test_every_other_method_is_refused(server, method):
    status, headers, _ = ask(server, method, "/")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", ["/../secret.txt", "/%2e%2e/secret.txt", "/run/..%2f..%2fsecret.txt",
                                  "//etc/passwd", f"/{OLD}/summary.json", "/reports/" + OLD + "/summary.json",
                                  "http://evil.example/", "/case/..%2F..%2Fsecret.html"])
def test_no_path_reaches_a_file_of_its_own(server, path):
    status, _, body = ask(server, "GET", path)
    assert status in (400, 404) and b"TOP-SECRET" not in body and b'"run_id"' not in body


def test_a_foreign_host_is_refused(server):
    status, _, _ = ask(server, "GET", "/", host="evil.example")
    assert status == 403
    assert ask(server, "GET", "/", host=f"localhost:{server.server_address[1]}")[0] == 200


def test_a_transcript_linked_out_of_the_run_is_not_shown(server, tmp_path):
    run = tmp_path / "reports" / OLD
    target = run / "transcripts" / "evil-1.json"
    target.unlink()
    os.symlink(tmp_path / "secret.txt", target)
    status, _, body = ask(server, "GET", "/" + urls.transcript(OLD, vf.HOSTILE_ID, 1))
    assert status == 200 and b'id="no-transcript"' in body and b"TOP-SECRET" not in body


def test_a_run_started_later_shows_up_live(server, tmp_path):
    live = tmp_path / "reports" / "20260103T000000Z-live00"
    live.mkdir()
    (live / "events.jsonl").write_text('{"event": "run_started", "total_trials": 3}\n'
                                       '{"event": "trial_result", "case_id": "<b>x</b>", "trial": 1, '
                                       '"outcome": "PASS", "grades": {"verdict": {"passed": true}}}\n{"event": "tri')
    status, _, body = ask(server, "GET", "/")
    assert status == 200 and urls.live(live.name).encode() in body
    status, headers, body = ask(server, "GET", "/" + urls.live_data(live.name))
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert b'"done": 1' in body and b'"total": 3' in body and b'"verdict": [1, 1]' in body
