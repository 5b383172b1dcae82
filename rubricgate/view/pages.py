"""What each page shows, as plain data for its template (rubricgate/view/templates/).

Runs, case and trend pages read only the index (rubricgate/view/index.py); a run, a comparison
and a transcript read that run's summary or transcript file, one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rubricgate.errors import GateInputError
from rubricgate.models.results import superseded_runs
from rubricgate.models.reviewer_digests import reviewer_changed
from rubricgate.models.view_index import CaseCell, RunHead
from rubricgate.view import comparisons, safe, urls
from rubricgate.view.catalog import Catalog, RunRef
from rubricgate.view.index import cell_failed

KINDS = ("run", "subset", "baseline", "record", "shard", "merged")
TREND_KINDS = ("run", "merged")  # the gated runs; baselines, records and shards are other questions
FLAKY_WINDOW = 8  # runs per point of the case page's flakiness-over-time line


class NotFound(Exception):
    """No run, case or transcript by that name."""


def runs_page(cat: Catalog) -> dict:
    """Every run and every comparison `compare` decided, newest first, with what the filters
    need; the runs still going, and those that ended without a summary (killed)."""
    heads = cat.heads()
    live, stopped = cat.unsummarised()
    # A comparison's own runs (each side's rounds) are on its page: the comparison is the row.
    listed = sorted([*(h for h in heads if not h.kind.startswith("compare-")),
                     *(head for _, _, head in cat.comparisons())],
                    key=lambda h: (h.started_at, h.finished_at, h.run_id), reverse=True)
    previous = _previous_of(heads)
    return {"runs": listed, "previous": previous, "kinds": sorted({h.kind for h in listed} | set(KINDS)),
            "statuses": STATUSES, "branches": sorted({h.branch for h in listed if h.branch}),
            "prs": sorted({h.pr for h in listed if h.pr}), "live": [r.key for r in live],
            "stopped": [r.key for r in stopped],
            "problems": list(cat.problems)}


STATUSES = ("pass", "regression", "inconclusive", "error", "baseline")


def _previous_of(heads: list[RunHead]) -> dict[str, str]:
    """Each run's predecessor of the same kind (heads newest first): the default comparison.
    A comparison's own rounds are not compared with each other."""
    out: dict[str, str] = {}
    last: dict[str, str] = {}
    for h in reversed(heads):
        if h.kind.startswith("compare"):
            continue
        if h.kind in last:
            out[h.run_id] = last[h.kind]
        last[h.kind] = h.run_id
    return out


def ref_of(cat: Catalog, run_slug: str) -> RunRef:
    """The run whose slug this is; NotFound otherwise."""
    found = next((r for r in cat.refs if urls.slug(r.key) == run_slug), None)
    if found is None:
        raise NotFound(f"no run {run_slug}")
    if found.folder and not safe.is_plain_dir(found.root):  # removed, or swapped for a link, since found
        raise NotFound(f"{found.root}: the run's folder is gone (removed since the viewer found it)")
    return found


def head_of(cat: Catalog, ref: RunRef) -> RunHead:
    head = cat.head(ref)
    if head is None:
        raise NotFound(f"run {ref.key} has no summary yet")
    return head


@dataclass(frozen=True)
class RunLinks:
    """What a run page shows of files other than its summary: with its summary's stamp, all a
    rendered run page is made of (rubricgate/view/site.py keeps pages by it)."""

    has_report: bool  # the run's own report.html is there
    previous: str | None  # the run before it of the same kind
    comparison_of: str | None  # the comparison a `compare --base` run was a side of


def run_links(cat: Catalog, ref: RunRef, head: RunHead) -> RunLinks:
    return RunLinks(ref.has("report.html"), _previous_of(cat.heads()).get(head.run_id),
                    _comparison_of(cat, ref) if head.kind.startswith("compare-") else None)


def run_page(cat: Catalog, ref: RunRef, links: RunLinks | None = None) -> dict:
    """The run as its report tells it, cause first (reports/story.py): the one line, the next
    step, the rates against baseline and margin, the failing cases with their trials grouped,
    the statistics folded, then every case with its trials, filterable by outcome, case and rule."""
    from rubricgate.reports import explain, html_context, story
    from rubricgate.reports.comment import delta_label, interval, plan_lines, signed_pp
    from rubricgate.reports.stored_next import dated

    head = head_of(cat, ref)
    links = links or run_links(cat, ref, head)
    # A `run --continue` its next step names is dated, not checked: checking loads the suite and
    # digests the reviewer, too slow for every page, and a static site has no repository to check.
    summary = dated(cat.summary(ref))
    cells = {c.id: c for c in cat.cases(ref)}
    stories = story.case_stories(summary)
    order = [st.case.id for st in stories] + [c.id for c in summary.cases if c.id not in {st.case.id for st in stories}]
    rows = [CaseRow(cells[cid], _outcome(cells[cid]), sorted({f.rule for t in by_id.trials for f in t.findings}))
            for by_id in summary.cases for cid in [by_id.id] if cid in cells]
    rows.sort(key=lambda r: order.index(r.cell.id) if r.cell.id in order else len(order))
    return {"head": head, "ref": ref, "summary": summary, "lead": story.lead(summary),
            "partial": story.partial(summary),
            "glyph": story.GLYPHS.get(summary.decision.status, "!"), "next_step": story.next_step(summary),
            "not_gated": story.not_gated(summary),
            "reviewer_lines": explain.reviewer_lines(summary), "stories": stories[:SHOWN_FAILING],
            "more_failing": stories[SHOWN_FAILING:], "cases": rows,
            "rules": sorted({r for row in rows for r in row.rules}),
            "meters": {d: html_context.meter(r, html_context.margin_of(summary)) for d, r in summary.rates.items()},
            "delta_label": delta_label, "interval": interval, "plan_lines": plan_lines(summary),
            "unconfirmed": story.unconfirmed_line(summary), "flaky": story.flaky_line(summary),
            "errored": story.errored_line(summary), "signed_pp": signed_pp,
            "warnings": html_context.warnings(summary), "reasons": summary.decision.reasons,
            "has_report": links.has_report, "previous": links.previous, "comparison_of": links.comparison_of,
            "NEXT_STEP_REVERT": explain.NEXT_STEP_REVERT, "NEXT_STEP_ACCEPT": explain.NEXT_STEP_ACCEPT}


def _comparison_of(cat: Catalog, ref: RunRef) -> str | None:
    """The key of the comparison a `compare --base` run was one side of."""
    for cref, record, head in cat.comparisons():
        if any(p.resolve() == ref.root for paths in comparisons.side_folders(cref, record).values() for p in paths):
            return head.run_id
    return None


SHOWN_FAILING = 30  # failing cases told in full on a run page; the rest are rows of the case table


@dataclass
class CaseRow:
    """A case of a run as its table row: its trials, its outcome for the filter, the rules it cited."""

    cell: CaseCell
    outcome: str  # failing, errored, flaky, passing, not run
    rules: list[str]


def _outcome(cell: CaseCell) -> str:
    if not cell.trials:
        return "not run"
    if any(t.errored for t in cell.trials) and not any(t.fails and not t.errored for t in cell.trials):
        return "errored"
    if any(cell_failed(t) for t in cell.trials):
        return "flaky" if cell.flaky else "failing"
    return "passing"


@dataclass
class CaseRun:
    """One run's view of a case: its trials (None when the run did not have the case)."""

    head: RunHead
    cell: CaseCell | None
    failed: bool = False
    pass_share: float | None = None


@dataclass
class CaseHistory:
    case_id: str
    rows: list[CaseRun] = field(default_factory=list)  # oldest first
    first_failure: CaseRun | None = None
    flaky_line: list[tuple[str, float]] = field(default_factory=list)  # (run id, share of flaky runs in the window)


def case_page(cat: Catalog, case_slug: str) -> CaseHistory:
    """A case across every run: the strip, when it first failed, its flakiness over time."""
    heads = cat.heads()
    case_id = next((cid for h in heads for cid in _case_id(cat, cat.ref(h.run_id), case_slug)), None)
    if case_id is None:
        raise NotFound(f"no case {case_slug}")
    rows = []
    for head in reversed(heads):  # oldest first
        ref = cat.ref(head.run_id)
        cell = cat.case(ref, case_id) if ref else None
        if cell is not None:
            rows.append(CaseRun(head, cell))
    return case_history(case_id, rows)


def _case_id(cat: Catalog, ref: RunRef | None, case_slug: str) -> list[str]:
    """The id whose slug this is, as a list of one (or none): looked up in one run's ids."""
    ids = cat.case_ids(ref) if ref is not None else []
    return [c for c in ids if urls.slug(c) == case_slug][:1]


def case_history(case_id: str, rows: list[CaseRun]) -> CaseHistory:
    """The case page's data from its runs (oldest first). Shares and failures are of the judged
    trials: an errored one was never judged (the reports' "no judged trial failed"), so a run
    whose every trial errored has no share and did not fail."""
    for r in rows:
        judged = [t for t in r.cell.trials if not t.errored] if r.cell else []
        r.failed = any(cell_failed(t) for t in judged)
        r.pass_share = sum(not cell_failed(t) for t in judged) / len(judged) if judged else None
    out = CaseHistory(case_id, rows, next((r for r in rows if r.failed), None))
    for i, r in enumerate(rows):
        window = rows[max(0, i - FLAKY_WINDOW + 1): i + 1]
        out.flaky_line.append((r.head.run_id, sum(bool(w.cell and w.cell.flaky) for w in window) / len(window)))
    return out


def compare_page(cat: Catalog, base: RunRef, head: RunRef) -> dict:
    """Per-case flips with their exact test, the rule-table diff, the reviewer files that differ."""
    from rubricgate.gating.compare import compare_summaries
    from rubricgate.models.config import GateConfig

    b, h = cat.summary(base), cat.summary(head)
    try:
        gate = GateConfig(method="statistical" if h.decision.method == "statistical" else "strict")
        comparison = compare_summaries(b, h, gate, base.key, head.key)
    except GateInputError as exc:
        raise NotFound(exc.problem) from exc
    bh, hh = head_of(cat, base), head_of(cat, head)
    return {"base": bh, "head": hh, "comparison": comparison, "base_label": bh.run_id, "head_label": hh.run_id,
            "record": None, "order": None, "side_runs": [], "moved": _moved(comparison.flips),
            "flips": [f for f in comparison.flips if f.kind != "unchanged"],
            "unchanged": sum(f.kind == "unchanged" for f in comparison.flips),
            "rules": _diff(bh.rules, hh.rules), "files": _diff(bh.reviewer_files, hh.reviewer_files)}


def comparison_page(cat: Catalog, record_slug: str) -> dict:
    """A comparison `compare` decided, as it recorded it, with the runs of each side it made."""
    found = next(((ref, record, head) for ref, record, head in cat.comparisons()
                  if urls.slug(head.run_id) == record_slug), None)
    if found is None:
        raise NotFound(f"no comparison {record_slug}")
    ref, record, head = found
    sides = {side: [r for r in (cat.ref_at(p) for p in paths) if r is not None]
             for side, paths in comparisons.side_folders(ref, record).items()}
    first = {side: next((cat.head(r) for r in runs if cat.head(r) is not None), None) for side, runs in sides.items()}
    # Both sides or neither: a side whose runs are gone (removed, or a record naming none) leaves
    # nothing to set the other against.
    bh, hh = (first["base"], first["head"]) if first["base"] and first["head"] else (None, None)
    return {"comparison": record, "record": head.run_id, "base_label": record.base, "head_label": record.head,
            "order": record.order or None, "moved": _moved(record.flips),
            "side_runs": [(side, [r.key for r in runs]) for side, runs in sides.items() if runs],
            "flips": [f for f in record.flips if f.kind != "unchanged"],
            "unchanged": sum(f.kind == "unchanged" for f in record.flips), "base": bh, "head": hh,
            "rules": _diff(bh.rules, hh.rules) if bh and hh else [],
            "files": _diff(bh.reviewer_files, hh.reviewer_files) if bh and hh else []}


def _moved(flips) -> str:
    """'2 cases regressed (a, b), 1 fixed' — what the comparison found, in one line."""
    by: dict[str, list[str]] = {}
    for f in flips:
        by.setdefault(f.kind, []).append(f.case_id)
    parts = [f"{len(by[k])} case(s) {k}" + (f" ({', '.join(by[k][:3])}{' …' if len(by[k]) > 3 else ''})"
                                          if k in ("regressed", "fixed") else "")
             for k in ("regressed", "fixed", "added", "removed") if by.get(k)]
    return "; ".join(parts) or f"no case moved ({len(by.get('unchanged', []))} unchanged)"


def _diff(base: dict, head: dict) -> list[tuple[str, object, object]]:
    """(key, base value, head value) for every key whose value differs (None: absent on that side)."""
    return [(k, base.get(k), head.get(k)) for k in sorted(set(base) | set(head)) if base.get(k) != head.get(k)]


@dataclass
class TrendPoint:
    head: RunHead
    tested_change: bool  # the reviewer files differ from the previous run's: a rubric/prompt change
    drift: list[str]  # agent CLI or model changes since the previous run

    @property
    def partial(self) -> bool:
        """Interrupted, budget spent or could not be judged: marked, never a rate point."""
        return not self.head.complete or self.head.status == "error"


NO_BRANCH = "(no branch recorded)"
DEFAULT_BRANCHES = ("main", "master", "trunk")


def branch_series(cat: Catalog) -> dict[str, list[RunHead]]:
    """The gated runs oldest first, one series per branch (a PR's branch apart from main's). A run a
    later run continued is no point of its own: the continuation's point holds its trials (of two
    regrades of one run, the newer's)."""
    series: dict[str, list[RunHead]] = {}
    heads = cat.heads()
    continued = superseded_runs({h.run_id: h.continues for h in heads}, {h.run_id: h.finished_at for h in heads})
    for h in reversed(heads):
        if h.kind in TREND_KINDS and h.run_id not in continued:
            series.setdefault(h.branch or NO_BRANCH, []).append(h)
    return series


def default_branch(series: dict[str, list[RunHead]]) -> str | None:
    """main (or master, trunk) when it has runs, else the branch with the most."""
    named = [b for b in DEFAULT_BRANCHES if b in series]
    return named[0] if named else max(series, key=lambda b: (len(series[b]), b), default=None)


def trend_page(cat: Catalog, branch_slug: str | None = None) -> dict:
    """One branch's gated runs oldest first, each marked with the changes since the one before."""
    series = branch_series(cat)
    branch = default_branch(series) if branch_slug is None else next(
        (b for b in series if urls.slug(b) == branch_slug), None)
    if branch_slug is not None and branch is None:
        raise NotFound(f"no branch {branch_slug} among the gated runs")
    heads = series.get(branch, []) if branch is not None else []
    points = []
    for prev, cur in zip([None, *heads], heads):
        changed = prev is not None and reviewer_changed((prev.reviewer, prev.reviewer_files),
                                                        (cur.reviewer, cur.reviewer_files))
        drift = [] if prev is None else [
            f"{label}: {getattr(prev, a) or 'unknown'} → {getattr(cur, a) or 'unknown'}"
            for a, label in (("agent", "agent"), ("agent_version", "CLI"), ("model", "model"))
            if getattr(prev, a) != getattr(cur, a)]
        points.append(TrendPoint(cur, changed, drift))
    dims = list(dict.fromkeys(d for h in heads for d in h.rates))
    branches = sorted(((b, len(hs)) for b, hs in series.items()), key=lambda x: (x[0] != branch, -x[1], x[0]))
    return {"points": points, "dims": dims, "heads": heads, "branch": branch, "branches": branches,
            "partial": sum(p.partial for p in points)}


def transcript_page(cat: Catalog, ref: RunRef, case_slug: str, trial: int) -> dict:
    """One trial: its grades from the index, its transcript's tool timeline and final message,
    and the failing trials before and after it in the run (case order, then trial order)."""
    head = head_of(cat, ref)
    cell = next((cat.case(ref, cid) for cid in _case_id(cat, ref, case_slug)), None)
    found = next((t for t in cell.trials if t.n == trial), None) if cell else None
    if cell is None or found is None:
        raise NotFound(f"no trial {trial} of case {case_slug} in run {ref.key}")
    transcript = cat.transcript(ref, found.transcript) if found.transcript else None
    grades = ([(d, found.fails.get(d)) for d in head.rates]
              + [(d, r) for d, r in found.fails.items() if d not in head.rates])
    trials = [(c.id, t.n, cell_failed(t)) for c in cat.cases(ref) for t in c.trials]
    at = next(i for i, (cid, n, _) in enumerate(trials) if cid == cell.id and n == trial)
    before = [(cid, n) for cid, n, failed in trials[:at] if failed]
    after = [(cid, n) for cid, n, failed in trials[at + 1:] if failed]
    return {"head": head, "case": cell, "trial": found, "transcript": transcript, "grades": grades,
            "previous_failing": before[-1] if before else None, "next_failing": after[0] if after else None,
            "failing_count": sum(f for _, _, f in trials), "failing_at": len(before) + 1 if trials[at][2] else None}
