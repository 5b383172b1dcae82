"""The viewer in a real headless chromium (DevTools protocol over a pipe, tests/cdp_browser.py).

Over run folders written by the real pipeline (the builtin reviewer) beside hand-built ones with
hostile content: the runs page and its filter, a run, a case across runs, a comparison, a
transcript and the trend, each clicked through as a user would; a live run followed through its
trial completions; markup in a case id, a finding's quote and a final message shown as text.
A screenshot of each page goes to $RUBRICGATE_ARTIFACTS/viewer-*.png.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
import view_fixtures as vf  # noqa: E402
from cdp_browser import Browser, artifacts, browser, serving  # noqa: E402
from conftest import make_repo  # noqa: E402

from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402
from rubricgate.view import urls  # noqa: E402

__all__ = ["browser"]  # a fixture, shared with the other browser tests

pytestmark = pytest.mark.browser
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader", "warn/oncall-handoff"]
HOSTILE_OLD = "20260101T000000Z-abc120"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A repository with two real builtin runs, a folder of hostile runs, a server over both."""
    base = tmp_path_factory.mktemp("viewer")
    repo = make_repo(base / "repo", fixtures=FIXTURES)
    runs = [run_suite(RunOptions(repo=repo, trials=2)).run_dir for _ in range(2)]
    vf.write_runs(base / "hostile")
    with serving([repo / "reports", base / "hostile"]) as url:
        yield {"repo": repo, "runs": runs, "url": url}


def shot(browser: Browser, name: str) -> None:
    path = browser.screenshot(artifacts() / f"viewer-{name}.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def nothing_ran(browser: Browser) -> None:
    assert not browser.js("document.title").startswith("PWNED")  # each payload sets the whole title
    assert browser.js("document.querySelectorAll('img, script:not(:last-of-type)').length") == 0


def test_runs_page_lists_every_run_and_filters_by_kind(browser, world):
    browser.open(world["url"])
    listed = browser.js("[].map.call(document.querySelectorAll('tr.run'), function (r) { return r.dataset.run; })")
    assert set(listed) == {r.name for r in world["runs"]} | {HOSTILE_OLD, "20260102T000000Z-abc121"}
    shot(browser, "runs")
    browser.js("var k = document.getElementById('kind'); k.value = 'baseline'; k.dispatchEvent(new Event('change'))")
    assert browser.js("document.querySelectorAll('tr.run:not([hidden])').length") == 0
    browser.js("var k = document.getElementById('kind'); k.value = 'run'; k.dispatchEvent(new Event('change'))")
    assert browser.js("document.querySelectorAll('tr.run:not([hidden])').length") == 4


def test_open_a_run_then_a_case_then_a_transcript(browser, world):
    newest = world["runs"][-1].name
    browser.open(world["url"])
    browser.click(f'tr.run[data-run="{newest}"] a')
    browser.wait_for(f"document.getElementById('run-id') && document.getElementById('run-id').textContent === '{newest}'")
    assert browser.js("document.querySelectorAll('#cases tr.case').length") == 3
    shot(browser, "run")
    browser.click('#cases tr.case a')
    browser.wait_for("document.body.dataset.page === 'case' && document.body.dataset.ready === '1'")
    assert browser.js("document.querySelectorAll('#strip tr.case-run').length") == 2
    shot(browser, "case")
    browser.click('#strip tr.case-run a.cell')
    browser.wait_for("document.body.dataset.page === 'transcript' && document.body.dataset.ready === '1'")
    assert browser.js("document.querySelectorAll('#timeline tr.call').length") >= 1
    assert '"tier"' in browser.js("document.getElementById('final').textContent")
    shot(browser, "transcript")


def test_compare_with_the_previous_run(browser, world):
    old, new = (r.name for r in world["runs"])
    browser.open(world["url"])
    browser.click(f'tr.run[data-run="{new}"] a.vs-previous')
    browser.wait_for("document.body.dataset.page === 'compare' && document.body.dataset.ready === '1'")
    assert old in browser.js("document.querySelector('h1').textContent")
    assert browser.js("document.getElementById('flips').textContent").count("no case moved") == 1
    shot(browser, "compare")


def test_trend_page_draws_the_rates(browser, world):
    browser.open(world["url"] + urls.trend())
    assert browser.js("document.querySelectorAll('#chart-trend g.series').length") == 3
    box = browser.js("(function(){var r=document.getElementById('chart-trend').getBoundingClientRect();"
                     "return [r.width, r.height];})()")
    assert box[0] > 300 and box[1] > 100
    shot(browser, "trend")


def test_hostile_case_id_quote_and_final_message_render_as_text(browser, world):
    browser.open(world["url"] + urls.run(HOSTILE_OLD))
    quotes = browser.js("[].map.call(document.querySelectorAll('table.findings code'), function (c) { return c.textContent; })")
    assert any(rf.HOSTILE.replace("\x00", "").replace("\x07", "")[:40] in q for q in quotes), quotes
    nothing_ran(browser)
    browser.open(world["url"] + urls.case(vf.HOSTILE_ID))
    assert browser.js("document.getElementById('case-id').textContent") == vf.HOSTILE_ID
    nothing_ran(browser)
    shot(browser, "hostile-case")
    browser.open(world["url"] + urls.transcript(HOSTILE_OLD, vf.HOSTILE_ID, 1))
    assert "<script>document.title='PWNED-SCRIPT'</script>" in browser.js("document.getElementById('final').textContent")
    nothing_ran(browser)


def test_follow_a_live_run_through_its_trial_completions(browser, world):
    """A real run, slowed by a listener on its event log (written first, then the listener is
    told), while the live page polls: at least three completions are seen one by one."""
    repo = world["repo"]
    slow = lambda event: time.sleep(0.9) if event["event"] == "trial_result" else None  # noqa: E731
    done = threading.Event()
    worker = threading.Thread(target=lambda: (run_suite(RunOptions(repo=repo, trials=2, jobs=1, listeners=[slow])),
                                              done.set()))
    known = {p.name for p in (repo / "reports").iterdir()}
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while not [p for p in (repo / "reports").iterdir() if p.name not in known and (p / "events.jsonl").is_file()]:
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        browser.open(world["url"])
        browser.click("#live-runs a")
        browser.wait_for("document.body.dataset.page === 'live' && document.body.dataset.ready === '1'")
        seen = []
        while browser.js("document.body.dataset.finished") != "1":
            value = int(browser.js("document.body.dataset.done || '0'"))
            if not seen or value != seen[-1]:
                seen.append(value)
                if len(seen) == 3:
                    shot(browser, "live")
            assert time.monotonic() < deadline + 60, seen
            time.sleep(0.1)
    finally:
        worker.join(120)
    assert done.is_set()
    progress = [v for v in seen if v > 0]
    assert len(progress) >= 3 and progress == sorted(progress), seen
    assert browser.js("document.getElementById('done').textContent") == browser.js("document.getElementById('total').textContent") == "6"
    assert browser.js("document.querySelectorAll('#live-rates tr').length") == 3


def test_canary_the_payload_unescaped_does_run(browser, tmp_path):
    """The detector above can fail: the same payload as markup changes the title."""
    page = tmp_path / "canary.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>clean</title></head><body>{vf.HOSTILE_ID}</body></html>")
    browser.call("Page.navigate", url=page.as_uri())
    assert browser.wait_for("document.title.indexOf('PWNED') === 0 && document.title") == "PWNED-ID"
