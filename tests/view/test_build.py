"""`view --build`: the same pages as files, linked relatively, nothing fetched from elsewhere."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
import view_fixtures as vf  # noqa: E402

from rubricgate.errors import GateInputError  # noqa: E402
from rubricgate.view import build, urls  # noqa: E402
from rubricgate.view.site import site_for  # noqa: E402

OLD, NEW = "20260101T000000Z-abc120", "20260102T000000Z-abc121"


@pytest.fixture
def built(tmp_path) -> Path:
    vf.write_runs(tmp_path / "reports")
    (tmp_path / "reports" / NEW / "report.html").write_text("<!DOCTYPE html><p>the run's own report</p>")
    build.build_site(site_for([tmp_path / "reports"]), tmp_path / "site")
    return tmp_path / "site"


def test_every_page_is_written_at_its_path(built):
    for path in (urls.runs(), urls.trend(), urls.run(OLD), urls.report(NEW), urls.compare(OLD, NEW),
                 urls.case(vf.HOSTILE_ID), urls.case("pass-weekly-revenue"), urls.transcript(OLD, vf.HOSTILE_ID, 2)):
        assert (built / path).is_file(), path
    assert not list(built.glob("live/*"))
    assert (built / urls.report(NEW)).read_text() == "<!DOCTYPE html><p>the run's own report</p>"
    assert not (built / urls.report(OLD)).exists() and urls.report(OLD) not in (built / urls.run(OLD)).read_text()


def test_every_relative_link_resolves_to_a_written_page(built):
    for page in built.rglob("*.html"):
        for href in re.findall(r'href="([^"#]+)"', page.read_text()):
            if href.startswith("https://github.com/octo/repo/actions/runs/"):
                continue  # the summary's own workflow link
            assert not re.match(r"[a-z]+:|//", href), f"{page}: {href}"
            assert (page.parent / href).resolve().is_file(), f"{page.relative_to(built)} links to missing {href}"


def test_passing_trials_of_a_large_run_link_nowhere(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "ALL_TRIALS", 1)
    rf.write_run_dir(tmp_path / "reports" / OLD, rf.summary(run_id=OLD))
    build.build_site(site_for([tmp_path / "reports"]), tmp_path / "site")
    written = {p.name for p in (tmp_path / "site" / "transcript").rglob("*.html")}
    assert written == {f"{urls.slug('block-missing-description')}.html"}
    assert len(list((tmp_path / "site" / "transcript").rglob("*.html"))) == 2  # both of its trials failed


def test_refuses_a_folder_that_holds_other_files(tmp_path, built):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(GateInputError, match="not empty"):
        build.build_site(site_for([tmp_path / "reports"]), tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    build.build_site(site_for([tmp_path / "reports"]), built)  # an earlier build is rebuilt in place


def test_case_pages_from_the_one_pass_scan_match_the_servers(built, tmp_path):
    served = site_for([tmp_path / "reports"]).page(urls.case(vf.HOSTILE_ID)).body.decode()
    written = (built / urls.case(vf.HOSTILE_ID)).read_text()
    rows = r'class="case-run" data-run="([^"]+)" data-failed="(\d)"'
    assert re.findall(rows, written) == re.findall(rows, served) and len(re.findall(rows, served)) == 2
    assert re.search(r'id="first-failure">first failed in <a href="\.\./run/[^"]+">' + OLD, written)
    assert written.count('class="cell fail"') == served.count('class="cell fail"') == 4


def _interrupted_after(pages: int, tmp_path, monkeypatch, site: str = "site") -> bool:
    """`view --build` of tmp_path/reports into tmp_path/`site`, Ctrl-C after `pages` pages; False
    when it wrote every page first."""
    real, written = build._write, []

    def interrupted(out, rel, body):
        if len(written) == pages:
            raise KeyboardInterrupt
        written.append(rel)
        real(out, rel, body)

    monkeypatch.setattr(build, "_write", interrupted)
    try:
        build.build_site(site_for([tmp_path / "reports"]), tmp_path / site)
    except KeyboardInterrupt:
        return True
    finally:
        monkeypatch.setattr(build, "_write", real)
    return False


def _interrupted_after_two_pages(tmp_path, monkeypatch) -> None:
    """`view --build` of tmp_path/reports into tmp_path/site, Ctrl-C after its second page."""
    assert _interrupted_after(2, tmp_path, monkeypatch)


def _dead_links_from_the_entry_page(site: Path) -> list[tuple[str, str]]:
    """(page, href) of every relative link missing from `site`, on every page its runs page reaches."""
    seen, todo, dead = set(), [site / urls.runs()], []
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for href in re.findall(r'href="([^"#]+)"', page.read_text()):
            if re.match(r"[a-z]+:|//", href):
                continue
            target = (page.parent / href).resolve()
            if not target.is_file():
                dead.append((str(page.relative_to(site)), href))
            elif target.suffix == ".html":
                todo.append(target)
    return dead


def test_a_build_interrupted_midway_is_built_again_in_place(tmp_path, monkeypatch):
    """It left pages and no marker: running it again, as the interrupt's line says, was refused as
    'folder is not empty and holds no earlier build'."""
    vf.write_runs(tmp_path / "reports")
    _interrupted_after_two_pages(tmp_path, monkeypatch)
    assert len(list((tmp_path / "site").rglob("*.html"))) == 2
    monkeypatch.undo()
    done = build.build_site(site_for([tmp_path / "reports"]), tmp_path / "site")
    assert (tmp_path / "site" / urls.runs()).is_file() and done.pages > 2


def test_a_rebuild_interrupted_midway_keeps_an_entry_page_whose_links_resolve(tmp_path, monkeypatch):
    """The runs page was written first: interrupted after it, the site listed a new run whose
    page, comparison and transcripts were never written (dead links until the next build)."""
    vf.write_runs(tmp_path / "reports")
    build.build_site(site_for([tmp_path / "reports"]), tmp_path / "site")
    later = "20260103T000000Z-abc122"
    rf.write_run_dir(tmp_path / "reports" / later, rf.summary(run_id=later))
    _interrupted_after_two_pages(tmp_path, monkeypatch)
    entry = tmp_path / "site" / urls.runs()
    for href in re.findall(r'href="([^"#]+)"', entry.read_text()):
        if not href.startswith("https://"):
            assert (entry.parent / href).resolve().is_file(), f"the runs page links to missing {href}"


def test_a_rebuild_interrupted_after_any_page_leaves_no_dead_link_reachable_from_the_runs_page(tmp_path, monkeypatch):
    """Pages link both ways (a run to its cases, a case to its runs): written in one fixed order,
    a case page rewritten before the new run's page linked, from the last build's pages, to that
    page not yet written. The new pages are written first now."""
    vf.write_runs(tmp_path / "reports")
    build.build_site(site_for([tmp_path / "reports"]), tmp_path / "last")
    later = "20260103T000000Z-abc122"
    rf.write_run_dir(tmp_path / "reports" / later, rf.summary(run_id=later))
    pages, interrupted = 0, True
    while interrupted:
        shutil.copytree(tmp_path / "last", tmp_path / f"site-{pages}")
        interrupted = _interrupted_after(pages, tmp_path, monkeypatch, f"site-{pages}")
        dead = _dead_links_from_the_entry_page(tmp_path / f"site-{pages}")
        assert dead == [], f"interrupted after {pages} pages: {dead[:3]}"
        pages += 1
    assert (tmp_path / f"site-{pages - 1}" / urls.run(later)).is_file()


KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from rubricgate.records import writing
from rubricgate.view import build
from rubricgate.view.site import site_for
real = writing._create
def dying(path):
    handle = real(path)
    handle.write(b"<!DOCTYPE html><p>half a pa")
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)
writing._create = dying
build.build_site(site_for([Path(sys.argv[1], "reports")]), Path(sys.argv[1], "site"))
"""


def test_temp_files_a_killed_build_left_are_removed_by_the_next_and_nothing_else(tmp_path, built):
    """A build killed mid-write (SIGKILL: no cleanup) left `.<page>.<pid>.tmp` in the site, and
    every later build published it with the site: nothing removed it."""
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(tmp_path)], capture_output=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = [p for p in built.rglob(".*.tmp") if p.is_file()]
    assert len(left) == 1 and left[0].read_bytes().startswith(b"<!DOCTYPE html><p>half")
    (built / "case" / ".old.html.4242.tmp").write_text("an earlier kill's")
    kept = {".notes.tmp": "not ours", "notes.1.tmp": "not ours", ".page.html.12x.tmp": "not ours"}
    for name, text in kept.items():
        (built / name).write_text(text)
    (tmp_path / "outside.txt").write_text("keep me")
    (built / ".linked.html.7.tmp").symlink_to(tmp_path / "outside.txt")  # a link of our naming: left
    (built / ".folder.html.8.tmp").mkdir()
    build.build_site(site_for([tmp_path / "reports"]), built)  # still an earlier build: rebuilt in place
    assert not (built / "case" / ".old.html.4242.tmp").exists() and not any(p.exists() for p in left)
    assert all((built / name).read_text() == text for name, text in kept.items())
    assert (built / ".linked.html.7.tmp").is_symlink() and (tmp_path / "outside.txt").read_text() == "keep me"
    assert (built / ".folder.html.8.tmp").is_dir() and (built / urls.runs()).is_file()


def test_a_built_run_page_dates_the_continuation_its_run_named(tmp_path):
    """A static site has no repository to check `run --continue` against: the step is the run's, said so."""
    from rubricgate.models.results import Decision, GateDetail

    step = f"continue this run: rubricgate run --continue reports/{OLD}"
    decision = Decision(status="inconclusive", exit_code=2, reasons=["undecided"], warnings=[f"next: {step}"])
    rf.write_run_dir(tmp_path / "reports" / OLD, rf.summary(run_id=OLD, decision=decision, gate=GateDetail(next=step)))
    build.build_site(site_for([tmp_path / "reports"]), tmp_path / "site")
    page = (tmp_path / "site" / urls.run(OLD)).read_text()
    assert f"reports/{OLD} (at the time of the run, 2026-01-01 00:01;" in page, page
