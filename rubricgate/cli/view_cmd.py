"""Command: view (the run folders as pages: a loopback server, or a static site with --build)."""

from __future__ import annotations

import sys
import webbrowser
from pathlib import Path

import click

from rubricgate.cli.app import main
from rubricgate.cli.options import config_option, fail_input, repo_option
from rubricgate.cli.options import repo_root as _repo
from rubricgate.errors import GateInputError, GateInputErrors


@main.command()
# readable=False: an unreadable folder is our one-line error (catalog.py), not a usage error.
@click.argument("reports", nargs=-1, type=click.Path(readable=False, path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--build", "build_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the pages as a static site into this folder instead of serving them.")
@repo_option
@config_option
def view(reports, port, no_open, build_dir, repo, config_path) -> None:
    """Browse runs, cases across runs, comparisons, the trend, transcripts and live runs in a browser.

    REPORTS: run folders, reports folders or folders of summary files (default: the configured
    reports folder and a checkout of the rubricgate-history branch, when there is one).
    """
    from rubricgate.view.build import build_site
    from rubricgate.view.site import site_for

    try:
        site = site_for(list(reports) or _defaults(repo, config_path))
        if build_dir is not None:
            built = build_site(site, build_dir)
            for problem in site.catalog.problems:  # each run left out (unreadable, bad), said, never skipped silently
                click.echo(f"skipped: {problem}", err=True)
            click.echo(f"wrote {built.pages} pages ({built.runs} runs, {built.cases} cases) to {built.out}")
            return
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    _serve(site, port, not no_open)


def _defaults(repo: Path | None, config_path: Path | None) -> list[Path]:
    from rubricgate.suite.config import load_config
    from rubricgate.view.folders import default_folders

    root = _repo(repo)
    return default_folders(root, load_config(root, config_path).reports)


def _serve(site, port: int, open_browser: bool) -> None:
    from rubricgate.view.server import make_server, url_of

    try:
        server = make_server(site, port)
    except OSError as exc:
        click.echo(f"error: 127.0.0.1:{port}: cannot listen: {exc.strerror} (fix: pick another --port, or 0)", err=True)
        sys.exit(2)
    url = url_of(server)
    click.echo(f"rubricgate view: {url} (Ctrl-C to stop)")
    if open_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()
