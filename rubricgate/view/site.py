"""Every page of the viewer by its path: what the server answers and what --build writes."""

from __future__ import annotations

import html
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.view import charts, live, pages, safe, urls
from rubricgate.view.catalog import Catalog
from rubricgate.view.render import render

HTML = "text/html; charset=utf-8"
# Rendered run and compare pages kept by what they are made of: a 2,000-case run's page is ~1 MB
# and ~0.5 s of CPU to parse its summary and render, 1 ms once kept.
PAGES_KEPT = 8
# report.html links a trial past its inline budget to its file beside it, `transcripts/<file>.json`
# (only in an attribute: the report escapes every quote of its text).
_TRANSCRIPT_HREF = re.compile(rb'href="(transcripts/[^"<>]+)"')


@dataclass(frozen=True)
class Page:
    status: int
    content_type: str
    body: bytes


class Site:
    """The pages over one catalog; `static`: links only to pages a static build writes."""

    def __init__(self, catalog: Catalog, static: bool = False):
        self.catalog = catalog
        self.static = static
        self.transcripts: set[tuple[str, str]] | None = None  # static: (run id, transcript) pages written
        self.compares: set[tuple[str, str]] | None = None  # static: (base, head) pages written
        self.histories: dict[str, pages.CaseHistory] | None = None  # static: every case page's data, read in one pass
        self._kept: OrderedDict[Hashable, Page] = OrderedDict()
        self._kept_lock = threading.Lock()

    def page(self, path: str) -> Page:
        """The page at `path` (relative, no leading slash); 404 for anything else."""
        found = urls.route(path)
        if found is None:
            return self._missing(path, f"no page {path!r}")
        name, slugs = found
        try:
            return getattr(self, f"_{name}")(path, **slugs)
        except pages.NotFound as exc:
            return self._missing(path, str(exc))
        except GateInputError as exc:
            return self._missing(path, exc.one_line(), status=500)

    def _html(self, template: str, path: str, **data) -> Page:
        body = render(template, path, static=self.static, linkable=self._linkable, can_compare=self._can_compare,
                      **data)
        return Page(200, HTML, body.encode("utf-8"))

    def _missing(self, path: str, problem: str, status: int = 404) -> Page:
        body = render("missing.html", path if urls.route(path) else "missing.html", static=self.static, problem=problem)
        return Page(status, HTML, body.encode("utf-8"))

    def _linkable(self, run_id: str, trial) -> bool:
        if not trial.transcript:
            return False
        return self.transcripts is None or (run_id, trial.transcript) in self.transcripts

    def _can_compare(self, base: str, head: str) -> bool:
        return self.compares is None or (base, head) in self.compares

    def _runs(self, path: str) -> Page:
        data = pages.runs_page(self.catalog)
        dims = list(dict.fromkeys(d for h in data["runs"] for d in h.rates))
        return self._html("runs.html", path or "index.html", dims=dims, **data)

    def _trend(self, path: str, branch: str | None = None) -> Page:
        data = pages.trend_page(self.catalog, branch)
        wide, narrow = charts.trend_svgs(data["heads"]) if data["heads"] else ("", "")
        return self._html("trend.html", path, wide=_markup(wide), narrow=_markup(narrow), **data)

    def _trend_branch(self, path: str, branch: str) -> Page:
        return self._trend(path, branch)

    def _run(self, path: str, run: str) -> Page:
        ref = pages.ref_of(self.catalog, run)
        links = pages.run_links(self.catalog, ref, pages.head_of(self.catalog, ref))
        return self._keep((path, self._stamp(ref), links),
                          lambda: self._html("run.html", path, **pages.run_page(self.catalog, ref, links)))

    def _stamp(self, ref) -> str | None:
        return safe.file_stamp(ref.root, ref.summary)

    def _keep(self, key: Hashable, make: Callable[[], Page]) -> Page:
        """The page made by `make`, or the one made before for the same key (a served viewer;
        a static build makes each page once). The key holds the stamps of the summaries the
        page is made of, so a summary written again makes the page again."""
        if self.static:
            return make()
        with self._kept_lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        page = make()
        with self._kept_lock:
            self._kept[key] = page
            while len(self._kept) > PAGES_KEPT:
                self._kept.popitem(last=False)
        return page

    def _report(self, path: str, run: str) -> Page:
        """The run's own report.html as it wrote it (its own CSP), or rendered from the summary."""
        ref = pages.ref_of(self.catalog, run)
        if ref.has("report.html"):
            return Page(200, HTML, self._link_transcripts(safe.read_bytes(ref.root, "report.html"), path, ref))
        from rubricgate.reports.html import render_html

        body = render_html(self.catalog.summary(ref), None).encode("utf-8")
        return Page(200, HTML, self._link_transcripts(body, path, ref))

    def _link_transcripts(self, body: bytes, path: str, ref) -> bytes:
        """The report with each link to a transcript file pointing at the viewer's page for that
        trial (the case's page where a static build wrote none): the viewer serves no file of a
        run folder, so `transcripts/<file>.json` beside the report answered 404."""
        targets: dict[str, str] = {}
        for cell in self.catalog.cases(ref):
            for t in cell.trials:
                if t.transcript:
                    page = urls.transcript(ref.key, cell.id, t.n) if self._linkable(ref.key, t) else urls.case(cell.id)
                    targets[t.transcript] = urls.up(path) + page
        fallback = urls.up(path) + urls.run(ref.key)  # a file no trial of the run names

        def link(m: re.Match[bytes]) -> bytes:  # the attribute holds the name HTML-escaped
            return b'href="%s"' % targets.get(html.unescape(m.group(1).decode("utf-8", "replace")), fallback).encode()
        return _TRANSCRIPT_HREF.sub(link, body)

    def _case(self, path: str, case: str) -> Page:
        found = self.histories.get(case) if self.histories is not None else None
        history = found or pages.case_page(self.catalog, case)
        return self._html("case.html", path, h=history, window=pages.FLAKY_WINDOW)

    def _compare(self, path: str, base: str, head: str) -> Page:
        refs = pages.ref_of(self.catalog, base), pages.ref_of(self.catalog, head)
        return self._keep((path, *map(self._stamp, refs)),
                          lambda: self._html("compare.html", path, **pages.compare_page(self.catalog, *refs)))

    def _comparison(self, path: str, record: str) -> Page:
        return self._html("compare.html", path, **pages.comparison_page(self.catalog, record))

    def _transcript(self, path: str, run: str, trial: str, case: str) -> Page:
        ref = pages.ref_of(self.catalog, run)
        return self._html("transcript.html", path, **pages.transcript_page(self.catalog, ref, case, int(trial)))

    def _live(self, path: str, run: str) -> Page:
        if self.static:
            raise pages.NotFound("a static site has no live pages: run `rubricgate view` to follow a run")
        ref = pages.ref_of(self.catalog, run)
        return self._html("live.html", path, run_id=ref.key, live_source=urls.live_data(ref.key).split("/", 1)[1])

    def _live_data(self, path: str, run: str) -> Page:
        if self.static:
            raise pages.NotFound("a static site has no live data")
        data = live.progress(pages.ref_of(self.catalog, run))
        return Page(200, "application/json", json.dumps(data).encode("utf-8"))


def _markup(svg: str):
    """A chart drawn by reports/charts.py: its SVG was re-serialised by ElementTree, every text in
    it escaped, so it goes into the page as markup."""
    from markupsafe import Markup

    return Markup(svg)


def site_for(folders: list[Path], static: bool = False) -> Site:
    """A site over every run in these folders."""
    return Site(Catalog.of(folders), static)
