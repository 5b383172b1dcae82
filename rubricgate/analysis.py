"""Run results as pandas DataFrames: one or many run folders, one row per run, case or trial.

    from rubricgate.analysis import trials_df, cases_df, runs_df
    trials = trials_df(["reports/20260101T000000Z-ab12", "reports/20260108T000000Z-cd34"])
    trials.groupby(["run_id", "case_id"])["verdict_passed"].mean()

`runs` is a run folder, a summary.json, a loaded Summary, or a list of any of these. Every
frame starts with `run_id`; rows keep the runs' order, each run's cases in suite order, each
case's trials in trial order. Per-dimension columns exist for the three gated dimensions
(verdict, tool_use, trajectory) and any other dimension a run recorded. docs/architecture.md
lists the columns too; `rubricgate export` writes these frames as CSV, Parquet or JSON lines.

pandas is imported when a frame is built, never when this module is: `--help`, `validate` and
the start of a run do not pay for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rubricgate.errors import GateInputError
from rubricgate.gating.stats import compared
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.results import CaseSummary, Summary, TrialResult, held_runs
from rubricgate.records.events import unfinished_run
from rubricgate.records.files import MUTATION_TEST, comparison_folder, mutation_folder, read_summary

if TYPE_CHECKING:
    import pandas as pd

RunsArg = str | Path | Summary | Iterable[str | Path | Summary]
Counts = dict[str, dict[str, tuple[int, int]]]


def summaries(runs: RunsArg) -> list[Summary]:
    """The summaries behind `runs` (folders and summary.json files are read; GateInputError, exit 2,
    names one that cannot be)."""
    items = [runs] if isinstance(runs, (str, Path, Summary)) else list(runs)
    return [r if isinstance(r, Summary) else read_summary(Path(r)) for r in items]


def _dims(loaded: list[Summary]) -> list[str]:
    seen = ({d for s in loaded for c in s.cases for t in c.trials for d in t.grades}
            | {d for s in loaded for d in s.rates})
    return [*DIMENSIONS, *sorted(seen - set(DIMENSIONS))]


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


TRIAL_COLUMNS = ["run_id", "case_id", "trial", "outcome", "expected_tier", "reported_tier", "effective_tier",
                 "escalated", "counted", "errored", "cached", "steps", "tool_calls", "termination", "exit_code",
                 "duration_s", "input_tokens", "output_tokens", "cost_usd", "model"]


def trials_df(runs: RunsArg) -> pd.DataFrame:
    """One row per trial. Columns: run_id, case_id, trial (1-based), outcome (PASS/WARN/BLOCK/
    ERROR), expected_tier, reported_tier (what the reviewer said), effective_tier (after the
    rubric's escalation), escalated, counted (False for errored or not-run trials, and for an
    adaptive run's confirmation trials: they are in no rate), errored, cached (replayed from the
    trial cache), steps, tool_calls (how many), termination, exit_code, duration_s, input_tokens,
    output_tokens, cost_usd (None when unpriced), model;
    then per dimension `<dim>_passed` (bool, None when the trial has no such grade) and
    `<dim>_category` (the failure category, None when it passed)."""
    loaded = summaries(runs)
    dims = _dims(loaded)
    rows = [_trial_row(s.run_id, c, t, dims) for s in loaded for c in s.cases for t in c.trials]
    return _frame(rows, TRIAL_COLUMNS + [f"{d}_{k}" for d in dims for k in ("passed", "category")])


def _trial_row(run_id: str, case: CaseSummary, t: TrialResult, dims: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": run_id, "case_id": case.id, "trial": t.trial, "outcome": t.outcome,
        "expected_tier": case.expected_tier, "reported_tier": t.reported_tier, "effective_tier": t.effective_tier,
        "escalated": t.escalated,
        "counted": compared(t), "errored": t.errored, "cached": t.cached, "steps": t.steps,
        "tool_calls": len(t.tool_calls), "termination": t.termination, "exit_code": t.exit_code,
        "duration_s": t.duration_s, "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
        "cost_usd": t.cost_usd, "model": t.model}
    for d in dims:
        grade = t.grades.get(d)
        row[f"{d}_passed"] = None if grade is None else grade.passed
        row[f"{d}_category"] = None if grade is None else grade.category
    return row


CASE_COLUMNS = ["run_id", "case_id", "source", "tags", "expected_tier", "trials", "counted_trials",
                "all_passed", "pass_at_k", "pass_hat_k", "flaky"]


def cases_df(runs: RunsArg) -> pd.DataFrame:
    """One row per case of each run. Columns: run_id, case_id, source (task/fixture), tags
    (comma-separated), expected_tier, trials (recorded), counted_trials (those in the rates),
    all_passed (counted trials that passed every dimension), pass_at_k, pass_hat_k, flaky; then per
    dimension `<dim>_passes` and `<dim>_trials` (over the counted trials) and `<dim>_rate`
    (passes / trials, None when no counted trial has that grade)."""
    loaded = summaries(runs)
    dims = _dims(loaded)
    trials = trials_df(loaded)
    counts = _case_counts(trials, dims)
    rows = [_case_row(s.run_id, c, dims, counts) for s in loaded for c in s.cases]
    return _frame(rows, CASE_COLUMNS + [f"{d}_{k}" for d in dims for k in ("passes", "trials", "rate")])


def _case_counts(trials: pd.DataFrame, dims: list[str]) -> pd.DataFrame:
    """Per (run_id, case_id): counted trials, those that passed every dimension, and per dimension
    the passes and trials with that grade."""
    # As a mask, not a list of labels: an empty frame's column is of object dtype, and pandas reads
    # an empty object Series as column labels (a run stopped before its first trial ended).
    kept = trials.loc[trials["counted"].astype(bool)].copy()
    passed = kept[[f"{d}_passed" for d in dims]]
    kept["all_passed"] = passed.notna().any(axis=1) & passed.fillna(True).astype(bool).all(axis=1)
    aggs: dict[str, tuple[str, str]] = {"counted_trials": ("trial", "size"), "all_passed": ("all_passed", "sum")}
    for d in dims:
        kept[f"{d}_has"] = kept[f"{d}_passed"].notna()
        kept[f"{d}_ok"] = kept[f"{d}_passed"].fillna(False).astype(bool)
        aggs |= {f"{d}_passes": (f"{d}_ok", "sum"), f"{d}_trials": (f"{d}_has", "sum")}
    return kept.groupby(["run_id", "case_id"], sort=False).agg(**aggs)


def _case_row(run_id: str, case: CaseSummary, dims: list[str], counts: pd.DataFrame) -> dict[str, Any]:
    key = (run_id, case.id)
    got = counts.loc[key] if key in counts.index else None
    row: dict[str, Any] = {
        "run_id": run_id, "case_id": case.id, "source": case.source, "tags": ",".join(case.tags),
        "expected_tier": case.expected_tier, "trials": len(case.trials),
        "counted_trials": int(got["counted_trials"]) if got is not None else 0,
        "all_passed": int(got["all_passed"]) if got is not None else 0,
        "pass_at_k": case.pass_at_k, "pass_hat_k": case.pass_hat_k, "flaky": case.flaky}
    for d in dims:
        passes = int(got[f"{d}_passes"]) if got is not None else 0
        n = int(got[f"{d}_trials"]) if got is not None else 0
        row |= {f"{d}_passes": passes, f"{d}_trials": n, f"{d}_rate": passes / n if n else None}
    return row


RUN_COLUMNS = ["run_id", "started_at", "finished_at", "kind", "complete", "agent", "agent_version", "model",
               "decision", "exit_code", "method", "isolation", "cases", "trials", "errored_trials", "flaky_cases",
               "cost_usd", "continues"]


def runs_df(runs: RunsArg) -> pd.DataFrame:
    """One row per run. Columns: run_id, started_at, finished_at (ISO 8601, UTC), kind (run/
    baseline/record), complete (False: interrupted or trials not run), agent, agent_version, model,
    decision (pass/regression/error/baseline/inconclusive), exit_code, method (the gate's),
    isolation (bwrap/copy-only), cases, trials, errored_trials, flaky_cases, cost_usd (None when
    unpriced), continues (the runs it continued, regraded or merged, space-separated: their trials
    are among its own, so a run and its continuation or regrade together count those trials
    twice); then per dimension
    `<dim>_rate`, `<dim>_low`, `<dim>_high` (its interval), `<dim>_baseline` and `<dim>_status`
    (ok/regression/inconclusive/no_baseline)."""
    loaded = summaries(runs)
    dims = _dims(loaded)
    rows = [_run_row(s, dims) for s in loaded]
    return _frame(rows, RUN_COLUMNS + [f"{d}_{k}" for d in dims for k in ("rate", "low", "high", "baseline", "status")])


def _run_row(s: Summary, dims: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": s.run_id, "started_at": s.started_at, "finished_at": s.finished_at, "kind": s.kind,
        "complete": s.complete, "agent": s.agent, "agent_version": s.agent_version, "model": s.model,
        "decision": s.decision.status, "exit_code": s.decision.exit_code, "method": s.decision.method,
        "isolation": s.isolation, "cases": len(s.cases), "trials": sum(len(c.trials) for c in s.cases),
        "errored_trials": len(s.errored), "flaky_cases": len(s.flaky_cases), "cost_usd": s.cost.get("cost_usd"),
        "continues": " ".join(held_runs(s))}
    for d in dims:
        r = s.rates.get(d)
        row |= {f"{d}_rate": r and r.rate, f"{d}_low": r and r.low, f"{d}_high": r and r.high,
                f"{d}_baseline": r and r.baseline, f"{d}_status": r and r.status}
    return row


def case_counts(summary: Summary) -> Counts:
    """Per case and dimension of one run: (passes, trials) over the counted trials, from cases_df
    (what the trend's run-to-run test is computed on)."""
    frame = cases_df(summary)
    dims = [d for d in _dims([summary]) if f"{d}_trials" in frame]
    out: Counts = {}
    for row in frame[frame["counted_trials"] > 0].to_dict("records"):
        out[row["case_id"]] = {d: (int(row[f"{d}_passes"]), int(row[f"{d}_trials"])) for d in dims
                               if row[f"{d}_trials"]}
    return out


FORMATS = {"csv": ".csv", "parquet": ".parquet", "jsonl": ".jsonl"}
FRAMES = {"runs": runs_df, "cases": cases_df, "trials": trials_df}


def export(runs: RunsArg, fmt: str, out_dir: Path, notes: list[str] | None = None) -> list[Path]:
    """Write runs, cases and trials (the three frames) to `out_dir` as runs.<ext>, cases.<ext>,
    trials.<ext>; returns their paths. Parquet needs pyarrow (the `parquet` extra).

    Streamed run by run: one summary is loaded at a time and its cases and trials appended to the
    files, so the peak memory is one run's, whatever the number of runs (bench/export_history.py).
    The columns are the gated dimensions' unless a run graded another: then the runs are written
    once more with every dimension's columns (each file has one set of columns)."""
    if fmt not in FORMATS:
        raise GateInputError("--format", fmt, f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        _require_pyarrow()
    items = [runs] if isinstance(runs, (str, Path, Summary)) else list(runs)
    held: dict[str, tuple[list[str], list[str]]] = {}
    try:
        with _staged(out_dir) as staging:
            dims = list(DIMENSIONS)  # `held`: run id -> the runs whose trials it holds, filled as each is written
            while (found := _export_pass(items, dims, fmt, staging, held)) != dims:
                dims = found
            written = _publish(staging, out_dir, fmt)
        if notes is not None:
            notes += [f"{later} {verb} {earlier} and holds its trials: count one of the two (runs' `continues`)"
                      for later, earlier, verb in _twice_counted(held)]
        return written
    except OSError as exc:
        raise GateInputError(str(exc.filename or out_dir), "", f"cannot write: {exc.strerror}",
                             "choose a writable --out folder") from exc


@contextlib.contextmanager
def _staged(out_dir: Path) -> Iterator[Path]:
    """A temp folder inside `out_dir` the three files are written into, removed however the
    export ends: a run that cannot be read part way (or an interrupt) leaves the files an earlier
    export wrote as they were, never runs.csv of one export beside trials.csv of another."""
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".rubricgate-export-", dir=out_dir))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(staging: Path, out_dir: Path, fmt: str) -> list[Path]:
    """Move the finished set into `out_dir`: three renames in one folder, once every file is whole,
    the folder locked meanwhile: two exports into it at once (a scheduled one and one by hand)
    interleaved their renames, leaving runs of one beside cases and trials of the other."""
    written = [out_dir / f"{name}{FORMATS[fmt]}" for name in FRAMES]
    with _locked(out_dir):
        for path in written:
            os.replace(staging / path.name, path)
    return written


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """`folder` locked (flock on the folder itself: the files in it are replaced, not written)
    until the block ends; a file system without flock leaves it unlocked."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the kernel drops the lock with its last descriptor


def run_folders(paths: list[Path]) -> tuple[list[Path], list[str]]:
    """The run folders `export` reads for these arguments (a shell glob of reports/ included), and
    a note for each argument left out: a comparison's folder stands for the runs of its sides
    (base/ and head/, a run a round), a mutation test's holds no run of the suite, and among
    several (a glob) a run that wrote no summary (records/events.py unfinished_run)."""
    runs, notes, unfinished = [], [], []
    for path in paths:
        if comparison_folder(path):
            runs += sorted(p.parent for side in ("base", "head") for p in (path / side).glob("*/summary.json"))
        elif mutation_folder(path):
            notes.append(f"left out: {path} ({MUTATION_TEST})")
        elif len(paths) > 1 and (how := unfinished_run(path)):  # one named alone: its own error
            notes.append(f"left out: {path} ({how})")
            unfinished.append(path)
        else:
            runs.append(path)
    runs = runs or unfinished  # nothing else: read, its "no summary.json here" the error
    if not runs:
        raise GateInputError(str(paths[0]) if paths else "RUN", "", "no run folder to export",
                             "name run folders under reports/ (or a comparison's folder)")
    return runs, notes


def _twice_counted(held: dict[str, tuple[list[str], list[str]]]) -> list[tuple[str, str, str]]:
    """(run, a run whose trials it holds, how) for every pair both exported."""
    return [(later, earlier, "continues" if earlier in continued else "regraded or merged")
            for later, (holds, continued) in held.items() for earlier in holds if earlier in held]


def _export_pass(items: list[str | Path | Summary], dims: list[str], fmt: str, out_dir: Path,
                 held: dict[str, tuple[list[str], list[str]]]) -> list[str]:
    """Write every run with these dimensions' columns; returns the dimensions the runs have. As
    soon as one has a dimension not in `dims`, the rest are only read for theirs (the caller
    writes them all again with the full set)."""
    seen, run_rows = list(dims), []
    with _Sink(out_dir / f"cases{FORMATS[fmt]}", fmt) as cases, _Sink(out_dir / f"trials{FORMATS[fmt]}", fmt) as trials:
        for item in items:
            summary = item if isinstance(item, Summary) else read_summary(Path(item))
            seen = [*DIMENSIONS, *sorted((set(seen) | set(_dims([summary]))) - set(DIMENSIONS))]
            if seen != dims:
                continue
            run_rows.append(_run_row(summary, dims))
            held[summary.run_id] = (held_runs(summary), list(summary.gate.continues) if summary.gate else [])
            trial_frame = _frame([_trial_row(summary.run_id, c, t, dims) for c in summary.cases for t in c.trials],
                                 TRIAL_COLUMNS + [f"{d}_{k}" for d in dims for k in ("passed", "category")])
            counts = _case_counts(trial_frame, dims)
            trials.write(trial_frame)
            cases.write(_frame([_case_row(summary.run_id, c, dims, counts) for c in summary.cases],
                               CASE_COLUMNS + [f"{d}_{k}" for d in dims for k in ("passes", "trials", "rate")]))
            del summary, trial_frame, counts
    if seen == dims:
        with _Sink(out_dir / f"runs{FORMATS[fmt]}", fmt) as sink:
            sink.write(_frame(run_rows, RUN_COLUMNS + [f"{d}_{k}" for d in dims
                                                       for k in ("rate", "low", "high", "baseline", "status")]))
    return seen


def _require_pyarrow() -> None:
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        raise GateInputError("--format", "parquet", "pyarrow is not installed",
                             "pip install 'rubricgate[parquet]', or use --format csv or jsonl")


# A spreadsheet opening a CSV runs a cell that starts with one of these as a formula (OWASP, "CSV
# Injection"): a reviewer's model name or a case id `=HYPERLINK(...)` would be a live link.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, prefixed with a single quote
    (shown as text); any other value unchanged."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def _is_text(dtype: Any) -> bool:
    """Object or string columns: pandas 3 reads text as its own `str` dtype, which
    select_dtypes("object") still includes with a deprecation warning (and pandas 2 refuses "str")."""
    import pandas as pd

    return pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)


# Integer columns that may be empty (a trial with no exit code): written as integers in every
# chunk, not as floats in the chunks that hold an empty one.
NULLABLE_INTS = ("trial", "steps", "tool_calls", "exit_code", "input_tokens", "output_tokens", "trials",
                 "counted_trials", "all_passed", "cases", "errored_trials", "flaky_cases")


class _Sink:
    """One export file written a frame at a time: CSV and JSON lines appended, Parquet as row
    groups of one writer whose schema is the first frame's with every column's type fixed."""

    def __init__(self, path: Path, fmt: str):
        self.path, self.fmt = path, fmt
        self.first = True
        self.parquet: Any = None

    def __enter__(self) -> _Sink:
        self.path.unlink(missing_ok=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.parquet is not None:
            self.parquet.close()

    def write(self, frame: pd.DataFrame) -> None:
        frame = frame.astype({c: "Int64" for c in NULLABLE_INTS if c in frame})
        # Only CSV is opened by spreadsheets as it is; Parquet and JSON lines keep each value typed
        # and unchanged (what reads them gets the data, not a formula).
        if self.fmt == "csv":
            text = [c for c in frame.columns if _is_text(frame[c].dtype)]
            frame.assign(**{c: frame[c].map(csv_safe) for c in text}).to_csv(
                self.path, index=False, mode="w" if self.first else "a", header=self.first)
        elif self.fmt == "jsonl":
            lines = frame.to_json(orient="records", lines=True) if len(frame) else ""
            with self.path.open("a", encoding="utf-8") as out:
                out.write(lines if lines.endswith("\n") or not lines else lines + "\n")
        else:
            self._parquet(frame)
        self.first = False

    def _parquet(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.parquet is None:
            schema = pa.Schema.from_pandas(frame, preserve_index=False)
            schema = pa.schema([f.with_type(_arrow_type(f.name, f.type)) for f in schema],
                               metadata=schema.metadata)
            self.parquet = pq.ParquetWriter(self.path, schema)
        self.parquet.write_table(pa.Table.from_pandas(frame, schema=self.parquet.schema, preserve_index=False))


def _arrow_type(column: str, inferred: Any) -> Any:
    """A column's Parquet type whatever the first run held (an all-empty column is inferred as
    null, which a later run's values would not fit)."""
    import pyarrow as pa

    if column in NULLABLE_INTS:
        return pa.int64()
    if column.endswith(("_passed", "escalated", "counted", "errored", "cached", "complete", "flaky")):
        return pa.bool_()
    if column.endswith(("_rate", "_low", "_high", "_baseline", "duration_s", "cost_usd", "pass_at_k", "pass_hat_k",
                        "_passes", "_trials")):
        return pa.int64() if column.endswith(("_passes", "_trials")) else pa.float64()
    return pa.string() if pa.types.is_null(inferred) else inferred
