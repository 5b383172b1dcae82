"""Folders and files the user cannot read: `view`, `view --build` and `trend`.

Run as a user without read permission on the reports folder, each printed
`internal error: PermissionError` and exit 2; a run folder it could not look into among readable
ones was left out of `view --build` without a word. A folder or file given on the command line
is now the one-line input error naming it, and an unreadable run folder inside a readable
reports folder is left out with a note (on the runs page, and printed by --build).

The tests run as root, which permission bits do not stop: reads of the denied paths fail as
they fail for an unprivileged user (PermissionError, EACCES), by patching the os calls under
pathlib and view/safe.py.
"""

from __future__ import annotations

import errno
import http.client
import io
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parents[1]))
import view_fixtures as vf  # noqa: E402

from rubricgate.cli import main  # noqa: E402
from rubricgate.view import urls  # noqa: E402
from rubricgate.view.catalog import Catalog  # noqa: E402
from rubricgate.view.server import serve_in_thread, url_of  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402
from tests.conftest import make_repo  # noqa: E402

OLD, MID, NEW = "20260101T000000Z-abc120", "20260102T000000Z-abc121", "20260103T000000Z-abc122"


def deny_reads(monkeypatch, *denied: Path) -> None:
    """Listing, opening or looking into each denied path fails with EACCES, as for a user
    without read permission on it (a stat of the path itself, from its readable parent, works)."""
    blocked = [str(p.resolve()) for p in denied]

    def where(path, dir_fd) -> str:
        shown = os.fsdecode(path)
        if dir_fd is not None and not os.path.isabs(shown):
            return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), shown)
        return os.path.abspath(shown)

    def guard(real, itself: bool):
        def call(path=".", *args, **kwargs):
            if isinstance(path, int):  # an open descriptor (os.fdopen): checked when it was opened
                return real(path, *args, **kwargs)
            full = where(path, kwargs.get("dir_fd"))
            if any(full.startswith(b + "/") or (itself and full == b) for b in blocked):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
            return real(path, *args, **kwargs)
        return call

    for name, itself in (("listdir", True), ("scandir", True), ("open", True), ("stat", False), ("lstat", False)):
        monkeypatch.setattr(os, name, guard(getattr(os, name), itself))
    monkeypatch.setattr(io, "open", guard(io.open, True))  # pathlib's read_bytes


@pytest.fixture
def reports(tmp_path) -> Path:
    vf.write_runs(tmp_path / "reports", 3)
    return tmp_path / "reports"


def _one_error(result, path: Path) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and "internal error" not in lines[0], result.output
    assert lines[0].startswith(f"error: {path}: cannot be read: permission denied (fix: "), result.output
    return lines[0]


def test_view_build_of_an_unreadable_reports_folder_is_a_one_line_error(reports, tmp_path, monkeypatch) -> None:
    deny_reads(monkeypatch, reports)
    result = CliRunner().invoke(main, ["view", "--build", str(tmp_path / "site"), str(reports)])
    _one_error(result, reports)
    assert not (tmp_path / "site").exists()


def test_view_of_an_unreadable_reports_folder_is_a_one_line_error_before_serving(reports, monkeypatch) -> None:
    deny_reads(monkeypatch, reports)
    result = CliRunner().invoke(main, ["view", "--no-open", "--port", "0", str(reports)])
    _one_error(result, reports)


def test_view_of_the_configured_reports_folder_when_unreadable_is_a_one_line_error(tmp_path, monkeypatch) -> None:
    repo = make_repo(tmp_path / "repo", commit=False)
    vf.write_runs(repo / "reports", 1)
    deny_reads(monkeypatch, repo / "reports")
    result = CliRunner().invoke(main, ["view", "--no-open", "--build", str(tmp_path / "site"), "--repo", str(repo)])
    _one_error(result, repo / "reports")


def test_a_folder_inside_a_folder_that_cannot_be_read_is_said_so_not_called_no_folder(reports, monkeypatch) -> None:
    deny_reads(monkeypatch, reports)
    result = CliRunner().invoke(main, ["view", "--no-open", "--port", "0", str(reports / NEW)])
    _one_error(result, reports / NEW)


def test_trend_of_a_summary_in_a_folder_that_cannot_be_read_is_a_one_line_error(reports, monkeypatch) -> None:
    deny_reads(monkeypatch, reports / MID)
    result = CliRunner().invoke(main, ["trend", str(reports / MID / "summary.json"), str(reports / NEW)])
    _one_error(result, reports / MID / "summary.json")
    result = CliRunner().invoke(main, ["trend", str(reports / MID), str(reports / NEW)])
    _one_error(result, reports / MID / "summary.json")


def test_trend_of_a_summary_that_cannot_be_read_is_a_one_line_error(reports, monkeypatch) -> None:
    deny_reads(monkeypatch, reports / MID / "summary.json")
    result = CliRunner().invoke(main, ["trend", str(reports / MID / "summary.json"), str(reports / NEW)])
    _one_error(result, reports / MID / "summary.json")


@pytest.mark.parametrize("denied", [MID, f"{MID}/summary.json"])
def test_an_unreadable_run_is_left_out_with_a_note(reports, monkeypatch, denied) -> None:
    deny_reads(monkeypatch, reports / denied)
    cat = Catalog.of([reports])
    assert [h.run_id for h in cat.heads()] == [NEW, OLD]
    assert len(cat.problems) == 1, cat.problems
    assert str(reports / denied) in cat.problems[0] and "cannot be read: permission denied" in cat.problems[0]


def test_view_build_prints_the_unreadable_run_it_left_out(reports, tmp_path, monkeypatch) -> None:
    deny_reads(monkeypatch, reports / MID)
    result = CliRunner().invoke(main, ["view", "--build", str(tmp_path / "site"), str(reports)])
    assert result.exit_code == 0, result.output
    assert "(2 runs," in result.output
    skipped = [line for line in result.output.splitlines() if str(reports / MID) in line]
    assert len(skipped) == 1 and "skipped" in skipped[0] and "cannot be read: permission denied" in skipped[0]
    assert (tmp_path / "site" / urls.run(NEW)).is_file() and not (tmp_path / "site" / urls.run(MID)).exists()
    assert "cannot be read: permission denied" in (tmp_path / "site" / urls.runs()).read_text()


def test_the_served_viewer_names_the_unreadable_run_it_left_out(reports, monkeypatch) -> None:
    deny_reads(monkeypatch, reports / MID)
    srv, thread = serve_in_thread(site_for([reports]), 0)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=30)
        conn.request("GET", "/" + url_of(srv).split("/", 3)[3])
        got = conn.getresponse()
        body = got.read().decode()
        conn.close()
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
    assert got.status == 200 and NEW in body and OLD in body
    assert "cannot be read: permission denied" in body and MID in body
