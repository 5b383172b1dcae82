"""`trend SUMMARY...`: rates over time for the weekly job, flagging agent CLI or model drift.

A rate that moves when the agent CLI version or the model changed is a different finding from
one that moves after a rubric edit, so every such change between consecutive runs is flagged
next to the rates. A rate's move itself is flagged only when a test says it is more than noise:
an unchanged noisy reviewer moves 5 points or more between runs a good part of the time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rubricgate.analysis import case_counts
from rubricgate.errors import GateInputError
from rubricgate.gating.evidence import weigh
from rubricgate.gating.exact import holm
from rubricgate.gating.stats import compared
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.results import Summary, held_runs, of_some_cases, superseded_runs
from rubricgate.records.events import unfinished_run
from rubricgate.records.files import MUTATION_TEST, comparison_folder, mutation_folder, read_summary
from rubricgate.records.run_index import SHARD_FILE
from rubricgate.reports.comment import escape_md, pct, signed_pp

_WATCHED = (("agent", "agent"), ("agent_version", "agent CLI version"), ("model", "model"))


@dataclass(frozen=True)
class Drift:
    """One change of agent, CLI version or model between two consecutive runs."""

    what: str
    before: str
    after: str
    from_run: str
    to_run: str

    def line(self) -> str:
        return f"{self.what} changed: {self.before} → {self.after} (between {self.from_run} and {self.to_run})"


def load_summaries(paths: list[Path]) -> list[Summary]:
    """Read each summary (a summary.json or a run dir), oldest first by started_at."""
    if not paths:
        raise GateInputError("trend", "SUMMARY", "no summaries given",
                             "pass one or more summary.json files or run dirs")
    summaries = [read_summary(p) for p in paths]
    return sorted(summaries, key=lambda s: (s.started_at, s.finished_at or "", s.run_id))


@dataclass(frozen=True)
class TrendRuns:
    """The runs a trend shows, oldest first, and how many of each other kind it left out."""

    runs: list[Summary]
    left_out: dict[str, int]
    notes: tuple[str, ...] = ()  # a folder among several left out: a run that wrote no summary


CONTINUED = "continued"  # left out whatever the kinds asked: a later run holds their trials


def suite_runs(paths: list[Path], all_kinds: bool = False) -> TrendRuns:
    """The runs of the whole suite among `paths` (a gated run or a merge of shards): a `record`
    run (one case), a run of some cases (`--only`: "subset"), a `baseline update` run and a single
    shard answer other questions and would read as jumps in the rates. With `all_kinds`, every run."""
    if not paths:
        load_summaries(paths)  # its one-line error for no summaries
    paths, notes = finished(paths)
    tagged = sorted(((_kind(p, s), s) for p, s in ((p, read_summary(p)) for p in paths)),
                    key=lambda ks: (ks[1].started_at, ks[1].finished_at or "", ks[1].run_id))
    continued = continued_runs(s for _, s in tagged)
    kept = [s for k, s in tagged if (all_kinds or k == "run") and s.run_id not in continued]
    left = Counter(k for k, s in tagged if not all_kinds and k != "run" and s.run_id not in continued)
    if superseded := sum(s.run_id in continued for _, s in tagged):
        left[CONTINUED] = superseded
    return TrendRuns(kept, dict(sorted(left.items())), notes)


def finished(paths: list[Path]) -> tuple[list[Path], tuple[str, ...]]:
    """The paths but, among several (a glob of reports/), the folders of runs that wrote no summary
    (killed outright, or still going: records/events.py unfinished_run) and those of `compare
    --base` and `mutate`, each named in a note. One named alone, or nothing else left, is read:
    its "no summary.json here" is the error."""
    found = {p: _no_run_of_the_suite(p) for p in paths} if len(paths) > 1 else {}
    kept = [p for p in paths if not found.get(p)]
    if not kept:
        return paths, ()
    return kept, tuple(f"left out: {p} ({how})" for p, how in found.items() if how)


def _no_run_of_the_suite(path: Path) -> str:
    """Why a folder of a glob of reports/ holds no point of the trend ('' when it may): a
    comparison's sides are runs of two branches' reviewers, a mutation test's of mutants."""
    if comparison_folder(path):
        return "a comparison, not a run of the suite: its sides are runs of two reviewers"
    return MUTATION_TEST if mutation_folder(path) else unfinished_run(path)


def continued_runs(summaries: Iterable[Summary]) -> set[str]:
    """The runs whose trials a later run holds (`counted_runs`: it continued, regraded or merged
    them), and an older run holding the same trials as another (two regrades of one run): a
    point for each counted those trials twice, and the changed test between them compared a
    run's trials with themselves."""
    summaries = list(summaries)
    return superseded_runs({s.run_id: held_runs(s) for s in summaries}, {s.run_id: s.finished_at for s in summaries})


def _kind(path: Path, summary: Summary) -> str:
    folder = path if path.is_dir() else path.parent
    return "shard" if (folder / SHARD_FILE).is_file() else "subset" if of_some_cases(summary) else summary.kind


def left_out_line(left_out: dict[str, int]) -> str:
    """'Left out 3 run(s) that are not runs of the whole suite: 1 baseline, 2 record', and the runs
    a later run continued, or ''."""
    kinds = {k: n for k, n in left_out.items() if k != CONTINUED}
    lines = []
    if kinds:
        parts = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
        lines.append(f"Left out {sum(kinds.values())} run(s) that are not runs of the whole suite: {parts} "
                     "(`--all-kinds` includes them).")
    if left_out.get(CONTINUED):
        lines.append(f"Left out {left_out[CONTINUED]} run(s) a later run continued (`run --continue`), "
                     "regraded or merged: the later run's point holds their trials.")
    return " ".join(lines)


def drifts(summaries: list[Summary]) -> list[Drift]:
    """Every change of agent, agent CLI version or model between consecutive runs."""
    out = []
    for prev, cur in zip(summaries, summaries[1:]):
        for attr, label in _WATCHED:
            before, after = getattr(prev, attr), getattr(cur, attr)
            if before != after:
                out.append(Drift(label, str(before or "unknown"), str(after or "unknown"), prev.run_id, cur.run_id))
    return out


def _dims(summaries: list[Summary]) -> list[str]:
    seen = {d for s in summaries for d in s.rates}
    return [d for d in DIMENSIONS if d in seen] + sorted(seen - set(DIMENSIONS))


@dataclass(frozen=True)
class Move:
    """A run-to-run change of one rate, and whether a test says it is real."""

    delta: float
    p_value: float | None  # two-sided stratified exact p on the shared cases, Holm across dimensions
    changed: bool


def moves(prev: Summary, cur: Summary, confidence: float = 0.95) -> dict[str, Move]:
    """Per dimension: the change from `prev` to `cur` on the cases both runs hold, flagged only when
    the two-sided stratified exact test on those cases (Holm across dimensions) says so."""
    return series_moves([prev, cur], confidence)[1]


def series_moves(summaries: list[Summary], confidence: float = 0.95) -> list[dict[str, Move]]:
    """Every run-to-run move of the series ({} for the first run). Each delta and test is over the
    cases both runs hold; Holm runs across every move of every dimension in the series, so an
    unchanged reviewer shows a CHANGED anywhere in the table with probability at most 1 - confidence."""
    steps = [_step(prev, cur) for prev, cur in zip(summaries, summaries[1:])]
    raw = {f"{i}\x00{dim}": p for i, step in enumerate(steps) for dim, (_, p) in step.items() if p is not None}
    adjusted = holm(raw, 1 - confidence)
    out: list[dict[str, Move]] = [{}]
    for i, step in enumerate(steps):
        row = {}
        for dim, (delta, _) in step.items():
            p = adjusted.get(f"{i}\x00{dim}")
            row[dim] = Move(delta, p, p is not None and p <= 1 - confidence)
        out.append(row)
    return out


def _step(prev: Summary, cur: Summary) -> dict[str, tuple[float, float | None]]:
    """Per dimension (delta over the shared cases, raw two-sided p)."""
    before, after = case_counts(prev), case_counts(cur)
    shared = [c for c in after if c in before]
    out: dict[str, tuple[float, float | None]] = {}
    for dim in _dims([prev, cur]):
        strata = [(*after[c][dim], *before[c][dim]) for c in shared if dim in after[c] and dim in before[c]]
        x1, n1 = sum(s[0] for s in strata), sum(s[1] for s in strata)
        x0, n0 = sum(s[2] for s in strata), sum(s[3] for s in strata)
        ev = weigh(strata, 1.0, None)  # the gate's own evidence (rubricgate/gating/evidence.py)
        if n1 and n0 and ev is not None:
            out[dim] = (x1 / n1 - x0 / n0, min(1.0, 2 * min(ev.p_drop, ev.p_rise)))
    return out


def _cell(s: Summary, move: Move | None, dim: str) -> str:
    row = s.rates.get(dim)
    if row is None or row.rate is None:
        return "n/a"
    ci = "" if row.low is None or row.high is None else f" [{pct(row.low)}–{pct(row.high)}]"
    text = f"{pct(row.rate)}{ci}"
    if move is None:
        return text
    flag = f", CHANGED (p={move.p_value:.2g})" if move.changed else ""
    return f"{text} ({signed_pp(move.delta)}{flag})"


def _shape(s: Summary) -> str:
    trials = [len([t for t in c.trials if compared(t)]) for c in s.cases]
    spread = sorted(set(trials))
    per_case = "/".join(map(str, spread)) if len(spread) <= 3 else f"{spread[0]}-{spread[-1]}"
    return f"{len(s.cases)} × {per_case or 0}"


NO_BRANCH = "(no branch recorded)"


def branch_of(s: Summary) -> str:
    """The branch a run recorded (the CI's, or outside CI the one checked out)."""
    branch = s.config.get("branch")
    return str(branch) if branch else NO_BRANCH


def by_branch(summaries: list[Summary]) -> dict[str, list[Summary]]:
    """The runs (oldest first) as one series per branch: a pull request's runs apart from main's."""
    out: dict[str, list[Summary]] = {}
    for s in summaries:
        out.setdefault(branch_of(s), []).append(s)
    return out


def judged(s: Summary) -> bool:
    """A rate point: the run finished and was judged (an interrupted or errored run is marked)."""
    return s.complete and s.decision.status != "error"


def render_trend(summaries: list[Summary], confidence: float = 0.95, left_out: dict[str, int] | None = None) -> str:
    """Markdown: per branch, one row per run with each rate, its interval, the cases x trials it
    rests on, and its change from the previous judged run (CHANGED only when the test says so);
    a run that is partial or could not be judged is marked, never a rate point; what was left out
    (`suite_runs`), then drift flags."""
    series = by_branch(summaries)
    lines = ["## rubricgate trend", ""]
    for branch, runs in series.items():
        if len(series) > 1:
            lines += [f"### Branch {escape_md(branch)} ({len(runs)} run(s))", ""]
        lines += [*_table(runs, confidence), ""]
    found = [d for runs in series.values() for d in drifts([s for s in runs if judged(s)])]
    lines += [f"A move (in brackets: on the cases both runs hold) is marked CHANGED only when a two-sided "
              f"stratified exact test on those cases says so at {confidence:.0%}, Holm across every move of every "
              "dimension in its table (series-wide control); other moves are not established. Each branch is a "
              "series of its own; a run that is partial or could not be judged is no rate point.",
              *(["", left_out_line(left_out)] if left_out else []), "", "### Agent drift"]
    lines += [f"- WARNING: {escape_md(d.line(), 500)}" for d in found] or [
        "No change of agent, CLI version or model across these runs."]
    return "\n".join(lines) + "\n"


def _table(summaries: list[Summary], confidence: float) -> list[str]:
    """One branch's table: its judged runs' moves tested, its partial runs marked."""
    dims = _dims(summaries)
    lines = ["| run | started | agent | CLI version | model | cases × trials | "
             + " | ".join(escape_md(d) for d in dims) + " | decision |", "| --- " * (7 + len(dims)) + "|"]
    rated = [s for s in summaries if judged(s)]
    changed_runs = {d.to_run for d in drifts(rated)}
    steps = dict(zip((s.run_id for s in rated), series_moves(rated, confidence)))
    for s in summaries:
        mark = " (changed)" if s.run_id in changed_runs else ""
        step = steps.get(s.run_id)
        unrated = "partial: not a rate point" if not s.complete else "could not judge: not a rate point"
        cells = " | ".join(_cell(s, step.get(d), d) if step is not None else unrated for d in dims)
        decision = escape_md(s.decision.status) + ("" if judged(s) else " (partial)" if not s.complete else "")
        lines.append(f"| {escape_md(s.run_id)}{mark} | {escape_md(s.started_at)} | {escape_md(s.agent)} | "
                     f"{escape_md(s.agent_version or 'unknown')} | {escape_md(s.model or 'unknown')} | {_shape(s)} | "
                     f"{cells} | {decision} |")
    return lines
