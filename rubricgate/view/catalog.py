"""Every run the viewer was given: found in folders, indexed once, read through safe.py.

A folder given to `view` may be a run folder (summary.json and/or events.jsonl), a reports folder
of run folders, or a folder of summary files (`<run id>.json`, as the weekly workflow keeps them
on its history branch, also under `summaries/`). Links are never followed: a linked run folder
or summary is skipped, as anything the harness reads from a folder it did not write.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from rubricgate import boundary
from rubricgate.errors import GateInputError, unreadable
from rubricgate.models.view_index import CaseCell, RunHead
from rubricgate.records.events import writer_alive
from rubricgate.records.run_index import SHARD_FILE
from rubricgate.view import comparisons, index, safe

if TYPE_CHECKING:  # the runs and case pages read only the index: these models load when needed
    from rubricgate.models.comparison import ComparisonRecord
    from rubricgate.models.results import Summary
    from rubricgate.models.transcript import Transcript

M = TypeVar("M", bound=BaseModel)
SUMMARY = "summary.json"
EVENTS = "events.jsonl"
SKIP_FIX = "make it readable by this user, or move it out of the reports folder"


@dataclass(frozen=True)
class RunRef:
    """Where one run's files are: `root` is the folder they are read under."""

    key: str  # the run id (or the folder's name while a run has no summary yet)
    root: Path
    summary: str  # summary file below root ("summary.json", or "<id>.json" for a summary alone)
    folder: bool  # a run folder (transcripts, events, report.html) rather than a summary file alone

    def has(self, rel: str) -> bool:
        return self.folder and safe.file_stamp(self.root, rel) is not None


def find_runs(folders: list[Path], notes: list[str] | None = None) -> list[RunRef]:
    """The runs in these folders (one level down, or two for a history checkout's summaries/);
    a folder given that cannot be read is a GateInputError, an unreadable run folder inside one
    is named in `notes` and left out."""
    found: dict[str, RunRef] = {}
    for folder in folders:
        try:
            if not safe.is_plain_dir(folder, strict=True):
                raise GateInputError(str(folder), "", "not a folder (or a link to one)",
                                     "pass a reports folder or a run folder")
            refs = _runs_in(folder.resolve(), [] if notes is None else notes)
        except PermissionError:
            raise unreadable(folder) from None
        for ref in refs:
            # The same run as a folder and as a history summary: the folder has its transcripts.
            if ref.key not in found or (ref.folder and not found[ref.key].folder):
                found[ref.key] = ref
    return list(found.values())


def _runs_in(folder: Path, notes: list[str]) -> list[RunRef]:
    """The runs in `folder`; PermissionError when it cannot be read, a note for each folder in
    it that cannot (left out: one unreadable run never hides the others)."""
    if _is_run(folder):
        return [RunRef(folder.name, folder, SUMMARY, True)]
    out = []
    for child in sorted(folder.iterdir()):
        try:
            out += _child_runs(folder, child, notes)
        except PermissionError:
            notes.append(unreadable(child, SKIP_FIX).one_line())
    # The runs a `compare --base` made, in its folder beside its record.
    for run in comparisons.in_folder(folder, notes)[1]:
        try:
            out += [RunRef(run.name, run, SUMMARY, True)] if _is_run(run) else []
        except PermissionError:
            notes.append(unreadable(run, SKIP_FIX).one_line())
    return out


def _child_runs(folder: Path, child: Path, notes: list[str]) -> list[RunRef]:
    """The runs one entry of a reports folder holds: a run folder, a summary file, or summaries/."""
    if safe.is_plain_dir(child) and _is_run(child):
        return [RunRef(child.name, child, SUMMARY, True)]
    if (child.suffix == ".json" and safe.is_plain_file(child) and not child.name.startswith("view-")
            and not comparisons.is_record(child)):
        return [RunRef(child.stem, folder, child.name, False)]
    if child.name == "summaries" and safe.is_plain_dir(child):
        return [r for r in _runs_in(child, notes) if not r.folder]
    return []


def find_comparisons(folders: list[Path]) -> list[comparisons.ComparisonRef]:
    """The comparison records in these folders (a folder, or its compare-* folders)."""
    out = []
    for folder in folders:
        try:
            out += comparisons.in_folder(folder.resolve())[0] if safe.is_plain_dir(folder) else []
        except PermissionError:  # unreadable since found: said by refresh(), which lists the folder too
            continue
    return out


def writer_gone(ref: RunRef) -> bool:
    """A run whose events file no process holds any more (records/events.py): it ended without a
    summary. One that cannot be opened is not said to have stopped."""
    try:
        fd = safe.open_below(ref.root, EVENTS)
    except safe.Refused:
        return False
    try:
        return not writer_alive(fd)
    finally:
        os.close(fd)


def _is_run(folder: Path) -> bool:
    """A run folder; PermissionError when it may not be looked into."""
    return safe.is_plain_file(folder / SUMMARY, strict=True) or safe.is_plain_file(folder / EVENTS, strict=True)


@dataclass
class Catalog:
    """The runs, their heads (cached per stamp) and what each page reads from them."""

    refs: list[RunRef]
    folders: list[Path] = field(default_factory=list)  # as given: where refresh() looks again
    _heads: dict[str, RunHead] = field(default_factory=dict)
    _memory_cases: dict[str, bytes] = field(default_factory=dict)  # unwritable folders: their cases file
    _lock: threading.Lock = field(default_factory=threading.Lock)
    problems: list[str] = field(default_factory=list)  # runs left out of the last listing, and why
    unreadable_runs: list[str] = field(default_factory=list)  # what could not be read: always left out
    records: list[comparisons.ComparisonRef] = field(default_factory=list)  # what `compare` decided

    @classmethod
    def of(cls, folders: list[Path]) -> Catalog:
        """Every run and comparison under these folders."""
        notes: list[str] = []
        refs = find_runs(folders, notes)
        return cls(refs, [f.resolve() for f in folders], records=find_comparisons(folders),
                   unreadable_runs=notes)

    def refresh(self) -> None:
        """Look for new runs and comparisons (a live viewer: a run started since)."""
        known = {r.key for r in self.refs}
        notes: list[str] = []
        for root in self.folders:
            try:
                self.refs += [r for r in _runs_in(root, notes) if r.key not in known] if safe.is_plain_dir(root) else []
            except PermissionError:  # made unreadable since the viewer started: the runs found stay listed
                notes.append(unreadable(root).one_line())
        self.unreadable_runs = notes
        self.records += [r for r in find_comparisons(self.folders) if r not in self.records]

    def comparisons(self) -> list[tuple[comparisons.ComparisonRef, ComparisonRecord, RunHead]]:
        """Every comparison record once (the copy in its own folder when there are two), newest
        first; one that cannot be read is named in `problems`."""
        found: dict[str, tuple[comparisons.ComparisonRef, ComparisonRecord, RunHead]] = {}
        for ref in self.records:
            try:
                record = comparisons.read(ref)
            except GateInputError as exc:
                self.problems.append(exc.one_line())
                continue
            key = comparisons.key_of(ref, record)
            if key not in found or ref.file == comparisons.RECORD_FILE:
                found[key] = (ref, record, comparisons.head_of(ref, record))
        return sorted(found.values(), key=lambda x: (x[2].started_at, x[2].run_id), reverse=True)

    def ref_at(self, folder: Path) -> RunRef | None:
        """The run whose folder this is (None: none; a comparison.json's side names its folder, and
        a name too long for the file system is no folder, not an error of the page)."""
        try:
            wanted = folder.resolve() if folder.exists() else folder
        except OSError:  # ENAMETOOLONG: Path.exists() raises it
            return None
        return next((r for r in self.refs if r.folder and r.root == wanted), None)

    def ref(self, key: str) -> RunRef | None:
        return next((r for r in self.refs if r.key == key), None)

    def heads(self) -> list[RunHead]:
        """Every finished run's head, newest first (a run without a summary is live, not listed
        here; one whose summary cannot be read, or whose folder is gone, is left out and named in
        `problems`: one bad run never takes the listing down)."""
        out, self.problems = [], list(self.unreadable_runs)
        for ref in self.refs:
            if not safe.is_plain_dir(ref.root):
                self.problems.append(f"{ref.root}: the run's folder is gone (removed since the viewer found it)")
                continue
            try:
                head = self.head(ref)
            except GateInputError as exc:
                self.problems.append(exc.one_line())
                continue
            if head is not None:
                out.append(head)
        return sorted(out, key=lambda h: (h.started_at, h.finished_at, h.run_id), reverse=True)

    def unsummarised(self) -> tuple[list[RunRef], list[RunRef]]:
        """Run folders with events and no summary: (live: their run still writes them, stopped:
        their run is gone, killed before its summary or the summary removed since; nothing was
        gated, the trials it logged are kept). Each run's lock is asked once."""
        live: list[RunRef] = []
        stopped: list[RunRef] = []
        for ref in self.refs:
            if ref.folder and safe.file_stamp(ref.root, ref.summary) is None and ref.has(EVENTS):
                (stopped if writer_gone(ref) else live).append(ref)
        return live, stopped

    def head(self, ref: RunRef) -> RunHead | None:
        """The run's head from the index (built on first use), None while it has no summary."""
        try:
            stamp = safe.file_stamp(ref.root, ref.summary, strict=True)
        except safe.Unreadable:
            raise unreadable(ref.root / ref.summary, SKIP_FIX) from None
        if stamp is None:
            return None
        with self._lock:
            cached = self._heads.get(ref.key)
            if cached is not None and cached.stamp == stamp:
                return cached
            head = (index.load_cached(ref.root, stamp) if ref.folder else None) or self._build(ref, stamp)
            head = self._as_found(ref, head)
            self._heads[ref.key] = head
            return head

    def _as_found(self, ref: RunRef, head: RunHead) -> RunHead:
        """The head under the name the run is found by (a folder renamed after its run: its pages
        are named by the folder, so every link finds them) and, for a run a `compare --base` made,
        that kind (it wrote its own index as a plain run)."""
        side = comparisons.side_of(ref.root) if ref.folder else None
        update = {**({"run_id": ref.key} if head.run_id != ref.key else {}), **({"kind": side} if side else {})}
        return head.model_copy(update=update) if update else head

    def _build(self, ref: RunRef, stamp: str) -> RunHead:
        summary = self.summary(ref)
        try:
            head = index.head_of(summary, stamp, self._kind(ref, summary))
            cases = index.dump_cases(index.cases_of(summary, stamp))
        except ValueError as exc:  # a summary that validates but holds what no run writes (a hand edit)
            raise GateInputError(str(ref.root / ref.summary), "", f"cannot be indexed: {str(exc).splitlines()[0]}",
                                 "point the viewer at folders rubricgate wrote") from exc
        if ref.key != summary.run_id:
            head = head.model_copy(update={"run_id": ref.key})
        if not (ref.folder and index.store(ref.root, head, cases)):
            self._memory_cases[ref.key] = cases
        return head

    def _kind(self, ref: RunRef, summary: Summary) -> str:
        if ref.has(SHARD_FILE):
            return "shard"
        side = comparisons.side_of(ref.root) if ref.folder else None
        if side:
            return side
        if ref.has(EVENTS) and "shards" in self._first_event(ref):
            return "merged"
        return summary.kind

    def _first_event(self, ref: RunRef) -> dict:
        first = safe.read_text(ref.root, EVENTS).split("\n", 1)[0]
        try:
            found = boundary.loads(first)
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def summary(self, ref: RunRef) -> Summary:
        """The full summary (the run and comparison pages); GateInputError naming the file when bad."""
        from rubricgate.models.results import Summary

        display = str(ref.root / ref.summary)
        try:
            return read_json_model(Summary, safe.read_bytes(ref.root, ref.summary))
        except safe.Unreadable:
            raise unreadable(display, SKIP_FIX) from None
        except safe.Refused as exc:
            raise GateInputError(display, "", f"cannot read: {exc}", "check the run folder") from exc
        except ValueError as exc:
            raise GateInputError(display, "", f"not a valid summary: {str(exc).splitlines()[0]}",
                                 "point the viewer at folders rubricgate wrote") from exc

    def case(self, ref: RunRef, case_id: str) -> CaseCell | None:
        """One case's trials in one run, from the index (never the summary, once indexed)."""
        data = self._cases(ref)
        return index.find_case(data, case_id) if data is not None else None

    def cases(self, ref: RunRef) -> list[CaseCell]:
        """Every case of the run in suite order."""
        data = self._cases(ref)
        return index.all_cases(data) if data is not None else []

    def case_ids(self, ref: RunRef) -> list[str]:
        """The run's case ids in suite order."""
        data = self._cases(ref)
        return index.case_ids(data) if data is not None else []

    def _cases(self, ref: RunRef) -> bytes | None:
        """The run's view-cases.jsonl (built again when absent, damaged or stale)."""
        head = self.head(ref)
        if head is None:
            return None
        data = self._memory_cases.get(ref.key)
        if data is None and ref.folder:
            try:
                data = safe.read_bytes(ref.root, index.CASES_FILE)
            except safe.Refused:
                data = None
        if data is None or not index.cases_valid(data, head.stamp):
            with self._lock:
                self._build(ref, head.stamp)
            data = self._memory_cases.get(ref.key) or safe.read_bytes(ref.root, index.CASES_FILE)
        return data

    def transcript(self, ref: RunRef, rel: str) -> Transcript | None:
        """A stored transcript below the run folder, None when absent or unreadable."""
        if not ref.folder or not rel.startswith("transcripts/"):
            return None
        from rubricgate.models.transcript import Transcript

        try:
            return read_json_model(Transcript, safe.read_bytes(ref.root, rel))
        except (safe.Refused, ValueError):
            return None


def read_json_model(model: type[M], raw: bytes) -> M:
    """A summary or transcript from its JSON, through the bounded loader (boundary.validate_json):
    a value nested too deep is a ValueError, and a lone surrogate (a CLI's undecodable output,
    written JSON-escaped as \\udc80) is shown as its backslash escape, as the reports show it."""
    return boundary.validate_json(model, raw)
