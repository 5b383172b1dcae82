"""Issue 37: under the default settings a sandboxed reviewer reaches its model endpoint and
nothing else of the network: no host loopback port, no abstract unix socket, no other host, not
a served `rubricgate view` (even knowing its URL and token). `sandbox_network: shared` is an
explicit opt-out, warned in every report; a user's proxy the sandbox cannot chain through is one
line and exit 2.

The probe reviewer (a `command` agent) tries each door twice: directly, and through the proxy
the sandbox's HTTP_PROXY names (as a CLI would). Every server here listens on this machine's
loopback range (127.0.0.1, 127.0.0.2 for "another host").
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rubricgate.pipeline import RunOptions, run_suite
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer
from tests.loopback import AnsweringServer

pytestmark = pytest.mark.usefixtures("bwrap_ready")
FIXTURES = ["block/data-loader"]

PROBE = r'''
import json, os, socket, urllib.request, urllib.error

def tcp(host, port):
    s = socket.socket(); s.settimeout(5)
    try:
        s.connect((host, port)); s.sendall(f"GET / HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode())
        return "connected:" + s.recv(300).decode(errors="replace")
    except OSError as exc:
        return "error:" + type(exc).__name__
    finally:
        s.close()

def abstract(name):
    s = socket.socket(socket.AF_UNIX); s.settimeout(5)
    try:
        s.connect("\0" + name); return "connected:" + s.recv(100).decode(errors="replace")
    except OSError as exc:
        return "error:" + type(exc).__name__
    finally:
        s.close()

def proxied(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as got:
            return "ok:" + got.read(300).decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return f"http:{exc.code}"
    except OSError as exc:
        return "error:" + type(exc).__name__

seen = {"proxy_env": os.environ.get("HTTPS_PROXY", ""),
        "loopback_direct": tcp("127.0.0.1", HIDDEN), "loopback_proxy": proxied("http://127.0.0.1:HIDDEN/"),
        "abstract": abstract("ABSTRACT"),
        "other_host_direct": tcp("127.0.0.2", OTHER), "other_host_proxy": proxied("http://127.0.0.2:OTHER/"),
        "viewer_direct": tcp("127.0.0.1", VIEWPORT), "viewer_proxy": proxied("VIEWER"),
        "endpoint_proxy": proxied("http://127.0.0.1:ALLOWED/"), "endpoint_direct": tcp("127.0.0.1", ALLOWED)}
note = "SEEN:" + json.dumps(seen) + ":SEEN"
'''


def banner(text: str, address: object = ("127.0.0.1", 0), family: int = socket.AF_INET) -> AnsweringServer:
    """A server answering every connection with an HTTP response naming itself."""
    body = text.encode()
    return AnsweringServer(f"HTTP/1.0 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body, address, family)


def _seen(run_dir: Path) -> dict:
    text = json.loads(next((run_dir / "transcripts").glob("*.json")).read_text())["final_text"]
    return json.loads(text.split("SEEN:")[1].split(":SEEN")[0])


def _network(run_dir: Path) -> list[dict]:
    return json.loads(next((run_dir / "transcripts").glob("*.json")).read_text())["network"]


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> Iterator[tuple]:
    """One run of the probe under the default network (and one with shared, for the old
    behaviour the tests must fail on): (what it saw, the transcript's network log, summary)."""
    from rubricgate.view.server import serve_in_thread, url_of
    from rubricgate.view.site import site_for

    root = tmp_path_factory.mktemp("net")
    hidden = banner("SECRET-LOOPBACK")
    other = banner("SECRET-OTHER-HOST", ("127.0.0.2", 0))
    allowed = banner("ENDPOINT-OK")
    name = f"rubricgate-test-{os.getpid()}-{secrets.token_hex(4)}"  # abstract names are machine-wide
    abstract = banner("SECRET-ABSTRACT", "\0" + name, socket.AF_UNIX)
    viewed = make_repo(root / "viewed", fixtures=FIXTURES)
    run_suite(RunOptions(repo=viewed))  # a run whose pages hold the answer key
    viewer, thread = serve_in_thread(site_for([viewed / "reports"]), 0)
    results = {}
    try:
        for mode in ("allowlist", "shared"):
            repo = make_repo(root / mode, fixtures=FIXTURES)
            attack = (PROBE.replace("HIDDEN", str(hidden.port)).replace("OTHER", str(other.port))
                      .replace("ABSTRACT", name).replace("VIEWPORT", str(viewer.server_address[1]))
                      .replace("VIEWER", url_of(viewer)).replace("ALLOWED", str(allowed.port)))
            use_reviewer(repo, write_reviewer(root / f"agents-{mode}", attack), sandbox_network=mode,
                         network_allow=[f"127.0.0.1:{allowed.port}"])
            git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "probe")
            out = run_suite(RunOptions(repo=repo))
            results[mode] = (_seen(out.run_dir), _network(out.run_dir), out)
        yield results
    finally:
        viewer.shutdown()
        viewer.server_close()
        thread.join(5)
        for server in (hidden, other, allowed, abstract):
            server.close()


def _got_through(result: str, secret: str) -> bool:
    return secret in result


# -- failure paths first: each door is shut under the default, open under `shared` ---------------

@pytest.mark.parametrize("door, secret", [
    ("loopback_direct", "SECRET-LOOPBACK"), ("loopback_proxy", "SECRET-LOOPBACK"),
    ("abstract", "SECRET-ABSTRACT"),
    ("other_host_direct", "SECRET-OTHER-HOST"), ("other_host_proxy", "SECRET-OTHER-HOST"),
])
def test_no_host_loopback_port_abstract_socket_or_other_host_is_reachable(probed, door: str, secret: str) -> None:
    seen, _, out = probed["allowlist"]
    assert out.summary.isolation == "bwrap" and out.summary.sandbox_network == "allowlist"
    assert not _got_through(seen[door], secret), seen[door]
    shared, _, _ = probed["shared"]
    if door.endswith("_direct") or door == "abstract":  # what the old default let through
        assert _got_through(shared[door], secret), shared[door]


def test_a_served_viewer_gives_a_probe_nothing_even_with_its_token(probed) -> None:
    seen, _, _ = probed["allowlist"]
    assert seen["viewer_direct"].startswith("error:"), seen["viewer_direct"]
    assert seen["viewer_proxy"] == "http:403", seen["viewer_proxy"]  # the proxy's refusal, not the viewer's
    shared, _, _ = probed["shared"]
    assert shared["viewer_proxy"].startswith("ok:"), shared["viewer_proxy"]  # what a shared network let through


def test_the_allowed_endpoint_is_reached_through_the_proxy_and_directly_at_its_port(probed) -> None:
    seen, _, _ = probed["allowlist"]
    assert seen["proxy_env"].startswith("http://127.0.0.1:")
    assert seen["endpoint_proxy"] == "ok:ENDPOINT-OK", seen["endpoint_proxy"]
    assert seen["endpoint_direct"].startswith("connected:") and "ENDPOINT-OK" in seen["endpoint_direct"]


def test_the_trial_record_logs_what_was_relayed_and_what_was_refused(probed) -> None:
    _, network, _ = probed["allowlist"]
    relayed = [n for n in network if n["outcome"] == "relayed"]
    refused = [n for n in network if n["outcome"] == "refused"]
    assert {(n["host"], n["kind"], n["status"]) for n in relayed} == {("127.0.0.1", "http", 200)}
    assert all(n["received"] > 0 for n in relayed)
    assert {n["host"] for n in refused} == {"127.0.0.1", "127.0.0.2"} and len(refused) >= 3, refused
    assert all("network_allow" in n["detail"] for n in refused)
    keys = {k for n in network for k in n}
    assert keys == {"host", "port", "kind", "outcome", "detail", "status", "retry_after", "sent", "received", "at_s",
                    "duration_s"}  # never a header, path or body


def test_a_shared_network_is_warned_in_every_report(probed) -> None:
    _, network, out = probed["shared"]
    assert out.summary.sandbox_network == "shared" and network == []
    assert any(w.startswith("shared network") for w in out.summary.decision.warnings)
    for report in ("comment.md", "report.html"):
        assert "shared network" in (out.run_dir / report).read_text()
    from rubricgate.reports.terminal import render_terminal
    assert "shared network" in render_terminal(out.summary, str(out.run_dir))
    allowlisted = probed["allowlist"][2]
    assert not any("shared network" in w for w in allowlisted.summary.decision.warnings)


def test_a_users_proxy_that_cannot_be_chained_is_one_line_and_exit_2(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from rubricgate.cli.app import main

    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    use_reviewer(repo, write_reviewer(tmp_path / "agents"), env_allowlist=["PATH", "HTTPS_PROXY"])
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "probe")
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    got = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert got.exit_code == 2, got.output
    lines = [ln for ln in got.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "agent.sandbox_network" in lines[0] and "HTTPS_PROXY" in lines[0], got.output
    assert not list((repo / "reports").glob("*/summary.json"))


def test_network_allow_entries_are_checked_at_load(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rubricgate.cli.app import main

    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["agent"]["network_allow"] = ["https://api.example.com"]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 2 and "network_allow" in got.output and "host:port" in got.output, got.output
