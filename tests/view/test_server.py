"""The loopback server: GET/HEAD only, its own pages only, the right Host only, its token only."""

from __future__ import annotations

import http.client
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import view_fixtures as vf  # noqa: E402

from rubricgate.view import urls  # noqa: E402
from rubricgate.view.server import serve_in_thread, url_of  # noqa: E402
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


def tokened(server, path: str) -> str:
    """An origin-form path below the server's token (what its printed URL leads to); any other
    request target as it is."""
    if not path.startswith("/"):
        return path
    return "/" + url_of(server).split("/", 3)[3] + path[1:]


def ask(server, method: str, path: str, host: str | None = None, token: bool = True) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    conn.putrequest(method, tokened(server, path) if token else path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{server.server_address[1]}")
    conn.endheaders()
    got = conn.getresponse()
    body = got.read()
    conn.close()
    return got.status, dict(got.getheaders()), body


def test_binds_to_loopback_only(server):
    assert server.server_address[0] == "127.0.0.1"


@pytest.mark.parametrize("path", ["/", "/index.html", "/" + urls.run(OLD), "/" + urls.live_data(OLD)])
def test_nothing_is_served_without_the_token(server, path):
    # Any local process (a reviewer sharing the host's network, another user) can reach the port.
    token = url_of(server).split("/")[3]
    wrong = "A" * len(token)
    for target in (path, f"/{wrong}{path}", f"/{token[:-1]}{path}", f"/{token}", f"/x/{token}{path}"):
        status, _, body = ask(server, "GET", target, token=False)
        assert status == 403, target
        assert b"<tr" not in body and OLD.encode() not in body and token.encode() not in body


def test_each_server_has_its_own_token(tmp_path):
    one, two = (serve_in_thread(site_for([tmp_path]), 0) for _ in range(2))
    try:
        assert url_of(one[0]) != url_of(two[0])
        assert url_of(one[0]).split("/")[3] != url_of(two[0]).split("/")[3]
        assert len(url_of(one[0]).split("/")[3]) >= 32
    finally:
        for srv, thread in (one, two):
            srv.shutdown()
            srv.server_close()
            thread.join(5)


def test_get_and_head_serve_pages(server):
    status, headers, body = ask(server, "GET", "/")
    assert status == 200 and b'<tr class="run"' in body and headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = ask(server, "HEAD", "/" + urls.run(OLD))
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 1000


@pytest.mark.parametrize("path", ["/", "/" + urls.run(OLD), "/" + urls.report(OLD), "/" + urls.live(OLD), "/nope.html"])
def test_every_page_refuses_frames_elsewhere_and_sends_no_referrer(server, path):
    # docs/viewer.md: no frames of it elsewhere (X-Frame-Options: DENY), nosniff, no-referrer.
    status, headers, _ = ask(server, "GET", path)
    assert status in (200, 404), status
    assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Content-Type-Options"] == "nosniff"


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


def test_a_live_adaptive_runs_total_is_its_plans_most_and_grows_with_confirmations(tmp_path):
    # The live page took the first round's trials for the total: "done 222 of 20".
    from rubricgate.view.catalog import find_runs
    from rubricgate.view.live import progress
    run = tmp_path / "reports" / "20260103T000000Z-adapt0"
    run.mkdir(parents=True)
    events = [{"event": "run_started", "total_trials": 20}, {"event": "plan", "lines": [], "total_trials": 200},
              {"event": "confirming", "trials": 2}]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    ref = next(r for r in find_runs([tmp_path / "reports"]) if r.key.endswith("adapt0"))
    assert progress(ref)["total"] == 202


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


def test_a_run_folder_swapped_for_a_link_while_serving_is_not_read_through_it(server, tmp_path):
    # Found as a real folder, then replaced by a link: every page of the run reads below its
    # folder, and a link there is refused as it was when the viewer looked for runs.
    run = tmp_path / "reports" / OLD
    assert ask(server, "GET", "/" + urls.run(OLD))[0] == 200
    elsewhere = tmp_path / "elsewhere"
    run.rename(elsewhere)
    (elsewhere / "report.html").write_text("<p>TOP-SECRET</p>")
    summary = elsewhere / "summary.json"
    summary.write_text(summary.read_text().replace('"m-1"', '"LINKED-MODEL"'))
    os.symlink(elsewhere, run)
    for path in (urls.run(OLD), urls.report(OLD), urls.transcript(OLD, vf.HOSTILE_ID, 1)):
        status, _, body = ask(server, "GET", "/" + path)
        assert b"TOP-SECRET" not in body and b"LINKED-MODEL" not in body, path
        assert status == 404 or b'id="no-transcript"' in body, (path, status)
