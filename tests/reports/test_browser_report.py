"""The HTML report in a real browser: headless Debian chromium.

Checks the key elements after load, that the failures filter works, that transcript payloads
(<script>, <img onerror>) execute nothing, that the inline SVG charts lay out with a real size,
and saves a screenshot as a test artifact. A canary
page with the same payload unescaped proves the detector would catch execution.
Without chromium the test skips; with RUBRICGATE_REQUIRE_BROWSER=1 (set by .ci/run) it fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
from cdp_browser import chromium_path  # noqa: E402

from rubricgate.reports.html import write_html  # noqa: E402

pytestmark = pytest.mark.browser
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def _chromium() -> str:
    return chromium_path()


def _run(chromium: str, tmp: Path, *args: str) -> str:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    got = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert got.returncode == 0, f"chromium failed ({got.returncode}): {got.stderr[-2000:]}"
    return got.stdout


def _dom(chromium: str, tmp: Path, url: str) -> str:
    return _run(chromium, tmp, "--virtual-time-budget=3000", "--dump-dom", url)


def _artifacts() -> Path:
    folder = Path(os.environ.get("RUBRICGATE_ARTIFACTS") or Path(__file__).parents[1] / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def chromium() -> str:
    return _chromium()


@pytest.fixture
def report(tmp_path) -> Path:
    run = rf.write_run_dir(tmp_path / "run")
    return write_html(rf.summary(), run, history=[rf.passing_summary()])


def test_canary_unescaped_payload_is_detected(chromium, tmp_path):
    page = tmp_path / "canary.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>clean</title></head><body>{rf.HOSTILE}</body></html>")
    assert "PWNED" in _dom(chromium, tmp_path, page.as_uri())


def test_report_loads_and_payloads_execute_nothing(chromium, tmp_path, report):
    dom = _dom(chromium, tmp_path, report.as_uri())
    assert 'data-ready="1"' in dom, "the report's own script did not run"
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert "PWNED" not in title and title.startswith("REGRESSION · rubricgate report")
    assert len(re.findall(r"<script", dom)) == 1 and not re.search(r"<img[^>]+onerror", dom)
    for marker in ('id="decision"', 'id="rates"', 'id="cases"', 'id="chart-trend"', 'class="timeline cards"', 'class="final"'):
        assert marker in dom


def test_failures_filter_hides_passing_cases(chromium, tmp_path, report):
    plain = _dom(chromium, tmp_path, report.as_uri())
    assert not re.search(r'<tr class="case"[^>]*hidden', plain)
    filtered = _dom(chromium, tmp_path, report.as_uri() + "#failures")
    assert re.search(r'<tr class="case" data-failed="0" data-case="pass-weekly-revenue"[^>]* hidden', filtered)
    assert not re.search(r'data-case="block-missing-description" hidden', filtered)


# Measures every chart's laid-out box; it runs in a copy of the report without the CSP (which
# admits only the report's own script), with the same markup and stylesheet.
MEASURE = ("<script>document.body.setAttribute('data-boxes', JSON.stringify([].map.call("
           "document.querySelectorAll('svg'), function (s) { var r = s.getBoundingClientRect();"
           " return [s.id, Math.round(r.width), Math.round(r.height)]; })));</script></body>")


def test_svg_charts_render_with_a_non_zero_box(chromium, tmp_path, report):
    page = tmp_path / "measured.html"
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", report.read_text())
    page.write_text(html.replace("</body>", MEASURE))
    found = re.search(r'data-boxes="([^"]*)"', _run(chromium, tmp_path, "--window-size=1280,2400",
                                                      "--virtual-time-budget=3000", "--dump-dom", page.as_uri()))
    boxes = json.loads(found.group(1).replace("&quot;", '"'))
    assert [b[0] for b in boxes] == ["chart-trend"]
    assert all(w > 100 and h > 50 for _, w, h in boxes), boxes


def test_screenshot_saved_as_artifact(chromium, tmp_path, report):
    shot = _artifacts() / "report.png"
    shot.unlink(missing_ok=True)
    _run(chromium, tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", report.as_uri())
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
