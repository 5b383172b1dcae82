"""Headless chromium driven over its DevTools protocol on a pipe (--remote-debugging-pipe).

Standard library only: chromium reads commands on fd 3 and writes replies and events on fd 4,
each a JSON message ending in a NUL byte. One page (a target attached with flatten=true), and
the few calls the viewer's browser tests need: navigate, evaluate, wait, screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--disable-extensions", "--remote-debugging-pipe"]


def chromium_path() -> str:
    """The chromium binary; skip (or fail under RUBRICGATE_REQUIRE_BROWSER=1) without one.
    RUBRICGATE_CHROMIUM names it; a name that is not there is no browser (a fresh machine's
    test run is simulated with RUBRICGATE_CHROMIUM=/nonexistent)."""
    given = os.environ.get("RUBRICGATE_CHROMIUM")
    found = (given if os.path.exists(given) else None) if given else (
        shutil.which("chromium") or shutil.which("chromium-browser"))
    if found:
        return found
    if os.environ.get("RUBRICGATE_REQUIRE_BROWSER") == "1":
        pytest.fail("chromium not found but RUBRICGATE_REQUIRE_BROWSER=1: run .ci/install-browser.sh")
    pytest.skip("chromium not installed (apt-get install -y chromium, or .ci/install-browser.sh)")


def artifacts() -> Path:
    """Where screenshots go: $RUBRICGATE_ARTIFACTS (set by .ci/run), else tests/artifacts."""
    folder = Path(os.environ.get("RUBRICGATE_ARTIFACTS") or Path(__file__).parent / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Browser:
    """One headless chromium and one page in it."""

    def __init__(self, binary: str, width: int = 1400, height: int = 900):
        self.profile = tempfile.mkdtemp(prefix="rubricgate-cdp-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: fd 3 = commands in, fd 4 = replies out
            high_r, high_w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        # subprocess closes every other descriptor after preexec_fn: 3 and 4 are kept by number.
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     preexec_fn=wire, pass_fds=(3, 4),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next, self._buffer, self.session = 0, b"", None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params):
        """Send one command and return its result (events in between are dropped)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self) -> dict:
        deadline = time.monotonic() + 60
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium sent nothing for 60 s")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def js(self, expression: str):
        """The value of a JavaScript expression in the page."""
        got = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"{expression}: {got['exceptionDetails']}")
        return got["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0):
        """Poll until the expression is truthy; its value."""
        deadline = time.monotonic() + timeout
        guarded = f"(function () {{ try {{ return ({expression}); }} catch (e) {{ return false; }} }})()"  # mid-navigation
        while time.monotonic() < deadline:
            try:
                value = self.js(guarded)
            except RuntimeError as exc:  # asked while a click's navigation swaps the page: not yet
                if "navigated or closed" not in str(exc) and "context was destroyed" not in str(exc):
                    raise
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"never true: {expression}")

    def open(self, url: str) -> None:
        """Navigate and wait until the page's own script has run."""
        self.call("Page.navigate", url=url)
        self.wait_for(f"location.href === {json.dumps(url)} && document.readyState === 'complete' "
                      "&& document.body && document.body.getAttribute('data-ready') === '1'")

    def click(self, selector: str) -> None:
        """Click the first element matching `selector` (as a user would: a real mouse event)."""
        box = self.js(f"(function(){{var e=document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
                      "var r=e.getClientRects()[0];"  # a link wrapped over two lines: its first line box
                      "return [r.left + r.width / 2, r.top + r.height / 2];})()")
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=box[0], y=box[1])
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", buttons=1, clickCount=1)

    def screenshot(self, path: Path, full: bool = True) -> Path:
        """A PNG of the page (the whole page when `full`)."""
        got = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=full)
        path.write_bytes(base64.b64decode(got["data"]))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            self.proc.kill()  # it would not close itself: a test run must not leave it behind
        self.proc.wait(20)
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)


# --- what the accessibility and layout tests measure ---------------------------------------------

AXE_DIR = "/opt/rubricgate-axe"  # .ci/install-axe.sh puts axe-core here (npm, its own prefix)


def axe_source() -> str:
    """axe-core's script (installed from npm by .ci/install-axe.sh); skip (or fail under
    RUBRICGATE_REQUIRE_BROWSER=1) without it."""
    found = Path(os.environ.get("RUBRICGATE_AXE") or
                 Path(os.environ.get("RUBRICGATE_AXE_DIR", AXE_DIR)) / "lib/node_modules/axe-core/axe.min.js")
    if found.is_file():
        return found.read_text(encoding="utf-8")
    if os.environ.get("RUBRICGATE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"axe-core not found at {found} but RUBRICGATE_REQUIRE_BROWSER=1: run .ci/install-axe.sh")
    pytest.skip(f"axe-core not installed at {found} (bash .ci/install-axe.sh)")


def axe_violations(browser: Browser, source: str) -> list[dict]:
    """axe-core's serious and critical violations on the page shown (WCAG 2.x A and AA rules and
    best practices), each as {id, impact, help, targets}."""
    if not browser.js("typeof window.axe === 'object'"):
        browser.call("Runtime.evaluate", expression=source)
    got = browser.call("Runtime.evaluate", awaitPromise=True, returnByValue=True, expression=(
        "axe.run(document, {resultTypes: ['violations']}).then(function (r) { return r.violations.map(function (v) {"
        " return {id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map(function (n) {"
        " return n.target.join(' '); })}; }); })"))
    if "exceptionDetails" in got:
        raise RuntimeError(f"axe.run: {got['exceptionDetails']}")
    return [v for v in got["result"]["value"] if v["impact"] in ("serious", "critical")]


def set_scheme(browser: Browser, dark: bool) -> None:
    """prefers-color-scheme: dark (or light) for the pages opened next."""
    browser.call("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme",
                                                          "value": "dark" if dark else "light"}])


def set_width(browser: Browser, width: int, height: int = 900) -> None:
    """A viewport `width` CSS pixels wide (a phone's below 700: the mobile flag honours the
    viewport meta tag)."""
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                 mobile=width < 700)


def overflow(browser: Browser) -> tuple[int, int]:
    """(the page's scroll width, the viewport's width): no horizontal overflow when the first is
    not larger."""
    return browser.js("[document.documentElement.scrollWidth, window.innerWidth]")


BADGE_CONTRAST = """(function () {
  function rgb(c) { var m = c.match(/[\\d.]+/g).map(Number); return m.slice(0, 3); }
  function lum(c) { return rgb(c).map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce(function (s, v, i) { return s + v * [0.2126, 0.7152, 0.0722][i]; }, 0); }
  var e = document.querySelector(%s), s = getComputedStyle(e), a = lum(s.color), b = lum(s.backgroundColor);
  return {text: e.textContent.trim(), cls: e.className, ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
})()"""


def badge(browser: Browser, selector: str = "#decision .decision, span#decision.decision") -> dict:
    """The decision badge's text, classes and its text-on-background contrast (computed styles)."""
    return browser.js(BADGE_CONTRAST % json.dumps(selector))


@contextlib.contextmanager
def serving(folders: list[Path]):
    """`rubricgate view` over these folders on a free loopback port: its URL (with its token)."""
    from rubricgate.view.server import serve_in_thread, url_of
    from rubricgate.view.site import site_for

    srv, thread = serve_in_thread(site_for(folders), 0)
    try:
        yield url_of(srv)
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for a test module (import this fixture into the module)."""
    b = Browser(chromium_path())
    yield b
    b.close()
