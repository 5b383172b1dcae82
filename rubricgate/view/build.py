"""`view --build DIR`: the viewer's pages as a static site (no server, no external request).

Every page the server answers, written to a file at its own path: runs, the trend of each branch,
each run and its own report.html (when it has one), each comparison `compare` decided, every case,
each run against the previous run of its kind, and the transcripts
of every failing trial (every trial of a run up to ALL_TRIALS; past that, passing trials'
transcripts would make a year of history hundreds of thousands of files). The live page needs
a server and is not built. DIR must be empty, absent or an earlier build (a marker file says so),
so a wrong path never overwrites someone's files.
"""

from __future__ import annotations

import os
import stat
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.records.writing import is_temp_name, write_text_atomic
from rubricgate.view import pages, urls
from rubricgate.view.index import cell_failed
from rubricgate.view.site import Site

MARKER = ".rubricgate-view-site"
ALL_TRIALS = 2_000


@dataclass
class Built:
    out: Path
    pages: int
    runs: int
    cases: int


def build_site(site: Site, out: Path) -> Built:
    """Write every page of `site` under `out`; a folder that cannot be written is bad input."""
    try:
        return _build(site, out)
    except OSError as exc:
        raise GateInputError(str(exc.filename or out), "--build", f"cannot write: {exc.strerror or exc}",
                             "give a folder you can write") from exc


def _build(site: Site, out: Path) -> Built:
    # The folders of runs it shows and the reports folders holding them: a site written there
    # would land among the runs.
    _check_out(out, [*site.catalog.folders, *{r.root.parent for r in site.catalog.refs if r.folder}])
    _remove_leftovers(out)
    # Marked before the first page: a build interrupted midway left pages and no marker, and
    # running it again, as the interrupt's line says, was refused as "not empty".
    (out / MARKER).write_text("written by rubricgate view --build: rebuilt in place\n", encoding="utf-8")
    site.static = True
    heads = site.catalog.heads()
    scan = _scan(site, heads)
    site.transcripts, site.histories = scan.keep, scan.histories
    previous = pages._previous_of(heads)
    site.compares = {(base, head) for head, base in previous.items()}
    paths = [urls.runs(), urls.trend()] + [urls.trend(b) for b in pages.branch_series(site.catalog)]
    paths += [urls.run(h.run_id) for h in heads]
    paths += [urls.compare_record(h.run_id) for _, _, h in site.catalog.comparisons()]
    # A run's own report.html, copied; a run without one (a history summary) is shown by its run page alone.
    paths += [urls.report(h.run_id) for h in heads if (ref := site.catalog.ref(h.run_id)) and ref.has("report.html")]
    paths += [urls.compare(base, head) for base, head in sorted(site.compares)]
    paths += [urls.case(c) for c in sorted(scan.case_ids)]
    paths += [urls.transcript(run_id, cid, n) for run_id, cid, n in scan.transcript_pages]
    for path in _write_order(out, paths):
        _write(out, path, site.page(path).body)
    return Built(out, len(paths), len(heads), len(scan.case_ids))


def _write_order(out: Path, paths: list[str]) -> list[str]:
    """The pages new to `out` first, then the earlier build's, each group with the pages linked to
    before those linking to them and the runs page last. Pages link both ways (a run to its
    cases, a case to its runs), so no order of `paths` alone has every page follow the pages it
    links to: a rewritten case page linked to a new run's page not yet written. No page of the
    earlier build links to a new page until it is rewritten, by when every new page exists, so a
    rebuild interrupted midway leaves every page reachable from the runs page resolving."""
    ordered = list(reversed(paths))
    return sorted(ordered, key=lambda path: (out / path).exists())  # stable: False (new) first


@dataclass
class _Scan:
    keep: set[tuple[str, str]]  # (run id, transcript) whose page is written
    transcript_pages: list[tuple[str, str, int]]  # (run id, case id, trial)
    histories: dict[str, pages.CaseHistory]  # case slug -> its page's data
    case_ids: list[str]


def _scan(site: Site, heads) -> _Scan:
    """One pass over every run's cases, oldest run first: the case pages' rows and the transcript
    pages to write (a case page per case would otherwise read every run again)."""
    keep: set[tuple[str, str]] = set()
    written: list[tuple[str, str, int]] = []
    rows: dict[str, list[pages.CaseRun]] = {}
    for h in reversed(heads):
        ref = site.catalog.ref(h.run_id)
        if ref is None:
            continue
        for cell in site.catalog.cases(ref):
            rows.setdefault(cell.id, []).append(pages.CaseRun(h, cell))
            for t in cell.trials:
                if ref.folder and t.transcript and (h.trials <= ALL_TRIALS or cell_failed(t)) and ref.has(t.transcript):
                    keep.add((h.run_id, t.transcript))
                    written.append((h.run_id, cell.id, t.n))
    histories = {urls.slug(cid): pages.case_history(cid, r) for cid, r in rows.items()}
    return _Scan(keep, written, histories, list(rows))


def _check_out(out: Path, viewed: list[Path]) -> None:
    target = out.resolve()
    for folder in viewed:
        if target == folder or folder in target.parents or target in folder.parents:
            raise GateInputError(str(out), "--build", f"overlaps the folder of runs it shows ({folder})",
                                 "give a folder outside the reports folders")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise GateInputError(str(out), "--build", "not a folder", "give a new or empty folder for the site")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise GateInputError(str(out), "--build", "folder is not empty and holds no earlier build",
                             "give a new or empty folder (a build is rebuilt in place)")
    out.mkdir(parents=True, exist_ok=True)


def _remove_leftovers(out: Path) -> None:
    """Remove the temp files a build killed mid-write left in `out` (an earlier build: _check_out
    let no other folder through). Never renamed into a page, each would be published with the site
    and no page write replaces it. Only regular files of the writer's naming; links are left."""
    for folder, _, names in os.walk(out):  # links to folders are not followed
        for name in filter(is_temp_name, names):
            path = Path(folder, name)
            with suppress(FileNotFoundError):
                if stat.S_ISREG(path.lstat().st_mode):
                    path.unlink()


def _write(out: Path, rel: str, body: bytes) -> None:
    target = out / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():  # an earlier build's folder holds a link: never write through it
        os.unlink(target)
    write_text_atomic(target, body.decode("utf-8"))
