"""`rubricgate view`: --build over a real run, and one-line errors with exit 2."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from rubricgate.cli.app import main
from rubricgate.pipeline import RunOptions, run_suite


def test_build_over_the_default_reports_folder_of_a_real_run(repo, tmp_path):
    run = run_suite(RunOptions(repo=repo)).run_dir
    got = CliRunner().invoke(main, ["view", "--repo", str(repo), "--build", str(tmp_path / "site")])
    assert got.exit_code == 0, got.output
    assert "wrote " in got.output and "(1 runs, 2 cases)" in got.output
    assert run.name in (tmp_path / "site" / "index.html").read_text()


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path):
    got = CliRunner().invoke(main, ["view", str(tmp_path / "nope"), "--build", str(tmp_path / "site")])
    assert got.exit_code == 2 and got.output.count("\n") == 1 and "not a folder" in got.output


def test_a_build_folder_that_cannot_be_written_is_one_line_and_exit_2(repo):
    run_suite(RunOptions(repo=repo))
    for out in ("/proc/rubricgate-site", "/proc/self/rubricgate-site/sub"):  # no one may write there
        got = CliRunner().invoke(main, ["view", "--repo", str(repo), "--build", out])
        assert got.exit_code == 2 and got.output.count("\n") == 1, got.output
        assert "--build: cannot write" in got.output and "internal error" not in got.output, got.output


def test_no_reports_yet_is_one_line_and_exit_2(repo):
    got = CliRunner().invoke(main, ["view", "--repo", str(repo), "--no-open"])
    assert got.exit_code == 2 and "no reports folder yet" in got.output


def test_a_port_in_use_is_one_line_and_exit_2(repo):
    # docs/viewer.md: a port in use is one line and exit 2, never a traceback.
    import socket

    run = run_suite(RunOptions(repo=repo)).run_dir
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        got = CliRunner().invoke(main, ["view", "--port", str(port), "--no-open", str(run.parent)])
    assert got.exit_code == 2 and got.output.count("\n") == 1, got.output
    assert f"127.0.0.1:{port}: cannot listen" in got.output and "--port" in got.output


def test_help_loads_no_template_engine():
    code = ("import sys\nfrom rubricgate.cli.app import main\nmain(['view', '--help'], standalone_mode=False)\n"
            "print('jinja2' in sys.modules)")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert got.stdout.strip().endswith("False"), got.stdout + got.stderr


def test_the_served_viewer_prints_its_url_with_the_token_and_serves_nothing_without_it(repo):
    import re
    import urllib.error
    import urllib.request

    run = run_suite(RunOptions(repo=repo)).run_dir
    proc = subprocess.Popen([sys.executable, "-m", "rubricgate", "view", "--port", "0", "--no-open", str(run.parent)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        found = re.fullmatch(r"rubricgate view: (http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]{32,})/) \(Ctrl-C to stop\)\n",
                             line)
        assert found, line
        url, port, _ = found.groups()
        with urllib.request.urlopen(url, timeout=10) as page:
            assert run.name in page.read().decode()
        for bare in (f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/index.html"):
            try:
                urllib.request.urlopen(bare, timeout=10)
                raise AssertionError(f"{bare} served a page without the token")
            except urllib.error.HTTPError as exc:
                assert exc.code == 403 and run.name not in exc.read().decode()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # reaps it and closes both pipes
