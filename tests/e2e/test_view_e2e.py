"""The viewer over a run of the REAL Claude Code CLI against the scripted model server
(tests/e2e/test_claude_e2e.py's suite): in headless chromium the runs page lists the run, its
page shows the scripted failures, and the transcript of the forbidden-tool case shows the CLI's
own tool calls with what each returned, and its final message. Newest installed Claude Code only: the other versions are
covered by test_claude_e2e.py, and the viewer reads the same normalized transcript from each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e import claude_scenarios as sc
from tests.e2e.anthropic_server import ScriptedAnthropicServer
from tests.e2e.support import install_fixture
from tests.e2e.test_claude_e2e import CASES, INSTALLS, make_suite, run_gate

sys.path.insert(0, str(Path(__file__).parents[1]))
from cdp_browser import Browser, artifacts, chromium_path  # noqa: E402

from rubricgate.records.files import read_summary  # noqa: E402
from rubricgate.view import urls  # noqa: E402
from rubricgate.view.server import serve_in_thread, url_of  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
install = install_fixture(INSTALLS[-1:])


@pytest.fixture(scope="module")
def viewed(install, tmp_path_factory):
    repo = tmp_path_factory.mktemp(f"view-e2e-{install.id}") / "repo"
    make_suite(repo)
    routes = {rel.split("/")[1]: behaviour for rel, (behaviour, _) in CASES.items()}
    with ScriptedAnthropicServer(sc.script_for(routes)) as server:
        proc = run_gate(repo, server.base_url, install)
    runs = sorted(p.parent for p in (repo / "reports").glob("*/summary.json"))
    assert runs, proc.stdout + proc.stderr
    srv, thread = serve_in_thread(site_for([repo / "reports"]), 0)
    browser = Browser(chromium_path())
    yield browser, url_of(srv), runs[-1]
    browser.close()
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def test_the_cli_run_is_listed_with_its_cli_version(viewed, install):
    browser, url, run = viewed
    browser.open(url)
    row = browser.js(f"document.querySelector('tr.run[data-run=\"{run.name}\"]').textContent")
    assert "claude" in row and install.version in row


def test_its_failing_cases_and_the_forbidden_tool_transcript(viewed):
    browser, url, run = viewed
    browser.open(url + urls.run(run.name))
    failing = browser.js("[].map.call(document.querySelectorAll('#failing-cases section'), function (s) {"
                         " return s.dataset.case; })")
    assert any("tool-happy" in c for c in failing) and any("long-winded" in c for c in failing), failing
    assert browser.js("document.querySelectorAll('#cases .cell.errored').length") >= 1  # the scripted outage
    browser.screenshot(artifacts() / "viewer-e2e-run.png")
    case = next(c for c in read_summary(run).cases if "tool-happy" in c.id)
    browser.open(url + urls.transcript(run.name, case.id, case.trials[0].trial))
    tools = browser.js("[].map.call(document.querySelectorAll('#timeline tr.call'), function (r) {"
                       " return r.children[3].textContent; })")
    assert "Bash" in tools, tools  # the raw name the CLI reported for the forbidden call
    first = browser.js("(function (r) { return [r.children[2].textContent, r.children[6].textContent]; })"
                       "(document.querySelector('#timeline tr.call'))")
    assert first[0] == "read" and "tool-happy/SKILL.md" in first[1], first  # the changed-files list, as the CLI read it
    assert "FAIL" in browser.js("document.getElementById('grades').textContent")
    assert '"tier"' in browser.js("document.getElementById('final').textContent")
    browser.screenshot(artifacts() / "viewer-e2e-transcript.png")
