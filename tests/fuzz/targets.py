"""What the harness does with each input format, and the outcome classes it may end in.

A target takes mutated bytes and returns the input's outcome class (a short string); anything it
raises is a failure of the fuzz: an internal error, a traceback. So is an outcome outside the
format's `classes` (tests/fuzz/harness.py checks each one), and each class is documented in
docs/architecture.md, "Data from outside" (tests/fuzz/test_targets.py checks that). Transcripts
go the way a trial's output goes (parse, finish, the limit watch, scrub, judge, the stored result,
written and read back); files go through every reader rubricgate has for them.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from click.testing import CliRunner

from rubricgate import boundary
from rubricgate.agents.ending import finish
from rubricgate.agents.formats import parser_for, watch_for
from rubricgate.agents.normalize import ENDPOINT_STOP, UNREACHABLE_STOP, Draft
from rubricgate.agents.registry import cli_specs
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.isolation.process import ProcessResult
from rubricgate.models.transcript import Transcript
from rubricgate.secrets import scrub_model
from tests.conftest import make_repo

if TYPE_CHECKING:
    from rubricgate.models.case import CaseSpec
    from rubricgate.models.results import TrialResult
    from rubricgate.runner.cache import KeyParts
    from rubricgate.suite.load import Loaded

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "tests" / "data" / "transcripts"
SECRET = "fuzz-secret-value-6c1d"

# A transcript's outcome is `<termination>/<verdict status>` (extractor_error only comes from a
# configured verdict hook, which the fuzz does not configure).
TERMINATIONS = ("completed", "max_turns", "api_error", "timeout", "crashed")
VERDICT_STATUSES = ("ok", "missing", "malformed", "invalid")
TRANSCRIPT_CLASSES = frozenset(f"{t}/{v}" for t in TERMINATIONS for v in VERDICT_STATUSES)


@dataclass(frozen=True)
class Companion:
    """A file a CLI writes beside its stream, recorded as <name><suffix>: mutated as `kind`, given
    to the parser as the keyword argument of its name, as text when the adapter decodes it first
    (isolation/untrusted.py read_reviewer_text), else as bytes."""

    suffix: str
    kind: str
    as_text: bool


COMPANIONS = {"rollout": Companion(".rollout.jsonl", "jsonl", False),  # codex's session rollout
              "usage": Companion(".usage.json", "json", True)}  # Copilot's --usage-output-file


class Unexplained(AssertionError):
    """An outcome outside the documented classes (a multi-line input error, say)."""


# -- transcripts ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Recording:
    """One real recorded stream (tests/data/transcripts/<cli>[-version]/<name>.ndjson)."""

    cli: str
    folder: str
    name: str
    stream: bytes
    meta: dict
    companions: dict[str, bytes]  # parser keyword -> bytes: codex's session rollout, Copilot's usage file

    @property
    def label(self) -> str:
        return f"{self.folder}/{self.name}"


def recordings() -> dict[str, list[Recording]]:
    """Transcript format -> its recordings: every folder under tests/data/transcripts, by the CLI
    its name starts with (claude-2.1.332 is claude's). A folder of a CLI without a CliSpec is an
    error, so a new CLI's recordings are fuzzed the day they land."""
    specs = cli_specs()
    out: dict[str, list[Recording]] = {}
    for folder in sorted(p for p in RECORDINGS.iterdir() if p.is_dir()):
        cli = folder.name.split("-")[0]
        if cli not in specs:
            raise LookupError(f"{folder}: recordings of {cli!r}, which has no CliSpec (rubricgate/agents/registry.py)")
        for stream in sorted(folder.glob("*.ndjson")):
            name = stream.name.removesuffix(".ndjson")
            meta_path = folder / f"{name}.meta.json"
            meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
            companions = {keyword: (folder / f"{name}{c.suffix}").read_bytes()
                          for keyword, c in COMPANIONS.items() if (folder / f"{name}{c.suffix}").is_file()}
            out.setdefault(specs[cli].format.name, []).append(
                Recording(cli, folder.name, name, stream.read_bytes(), meta, companions))
    return out


@dataclass
class World:
    """What grading needs (a loaded suite) and a scratch folder of real run files to mutate."""

    root: Path
    repo: Path
    run: Path  # a real shard run of the repo: summary.json, events.jsonl, shard.json, transcripts
    loaded: Loaded
    cache_dir: Path = Path()
    parts: KeyParts | None = None  # the cache entry's key parts
    trial: TrialResult | None = None  # the run's first trial with a transcript (its case's first)
    # A `compare --base` folder (comparison.json, base/ and head/ runs) outside the reports folder,
    # so the summary's and the events' viewer sees the run alone.
    comparison: Path = Path()

    @classmethod
    def make(cls, root: Path | None = None) -> World:
        from rubricgate.suite.load import load_all

        root = root or Path(tempfile.mkdtemp(prefix="rubricgate-fuzz-"))
        repo = make_repo(root / "repo", fixtures=["pass/weekly-revenue-summary", "block/data-loader"],
                         tasks=["block-missing-description"], commit=False)
        done = CliRunner().invoke(_main(), ["run", "--repo", str(repo), "--shard", "1/1"])
        if done.exit_code != 0:
            raise RuntimeError(f"the fuzz world's run failed: {done.output}")
        [run] = [p for p in (repo / "reports").iterdir() if p.is_dir()]
        world = cls(root, repo, run, load_all(repo))
        world.trial = world._first_trial()
        world._store_cache_entry()
        world._store_comparison()
        return world

    def _store_comparison(self) -> None:
        """comparison.json as `compare --base` keeps it: in compare-<id>/ beside a copy of the run
        on each side, the run folders relative to it, the comparison of the run with itself."""
        from rubricgate.flows.comparison_record import RECORD_FILE, comparison_record, write_record
        from rubricgate.gating.compare import compare_summaries
        from rubricgate.records.files import read_summary

        folder = self.root / "compared" / "compare-fuzz"
        sides = [folder / side / f"{self.run.name}-{side}" for side in ("base", "head")]  # a run id each
        for side in sides:
            shutil.copytree(self.run, side)
        summary = read_summary(self.run)
        comparison = compare_summaries(summary, summary, self.loaded.config.gate, "reviewer at main", "working tree")
        record = comparison_record(comparison, started_at="2026-12-04T00:00:00+00:00", record_id=folder.name,
                                   runs=([sides[0]], [sides[1]]), env={}, repo=self.repo)
        self.comparison = write_record(folder / RECORD_FILE, record)

    def _store_cache_entry(self) -> None:
        from rubricgate.runner.cache import key_parts, store

        self.cache_dir = self.root / "cache"
        config = self.loaded.config
        self.parts = key_parts(self.repo, config, self.case(), config.agent, agent_name="fuzz", agent_version="1",
                               model="m", trial=1)
        transcript = Transcript.model_validate_json((self.run / self.transcript_rel()).read_bytes())
        if not store(self.cache_dir, self.parts, transcript):
            raise RuntimeError("the fuzz world's cache entry was not stored")

    def _first_trial(self) -> TrialResult:
        from rubricgate.records.files import read_summary

        return next(t for c in read_summary(self.run).cases for t in c.trials if t.transcript)

    def transcript_rel(self) -> str:
        assert self.trial is not None
        return self.trial.transcript

    def case(self) -> CaseSpec:
        return self.loaded.cases[0]

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _main():
    from rubricgate.cli import main

    return main


def run_transcript(world: World, rec: Recording, stream: bytes, companions: dict[str, bytes]) -> str:
    """A trial's output as the harness takes it in, from the parser to the stored result."""
    from rubricgate.graders import judge
    from rubricgate.runner.scheduler import trial_result

    fmt = cli_specs()[rec.cli].format.name
    allowed = rec.meta.get("allowed_tools")
    given = {k: v.decode("utf-8", errors="replace") if COMPANIONS[k].as_text else v for k, v in companions.items()}
    draft = parser_for(fmt)(stream, agent=rec.cli, allowed=allowed, **given)
    proc = ProcessResult(exit_code=rec.meta.get("exit_code", 0), timed_out=bool(rec.meta.get("timed_out")),
                         stdout_truncated=False, stderr_tail="", duration_s=1.0,
                         stopped=str(rec.meta.get("stopped", "")).removeprefix("stopped by rubricgate: "))
    transcript = scrub_model(finish(draft, proc, version=rec.meta.get("cli_version")), [SECRET])
    watch = watch_for(fmt, rec.meta.get("max_steps"), allowed)
    for line in stream.split(b"\n") if watch else []:
        if watch(line + b"\n"):
            break
    _shown_on_one_line(transcript)
    parsed, grades = judge(world.case(), transcript, world.loaded.rubric, world.loaded.config)
    result = trial_result(world.case().id, 1, transcript, parsed, grades, "transcripts/fuzz-1.json")
    written = transcript.model_dump_json().encode("utf-8")
    result.model_dump_json().encode("utf-8")
    boundary.validate_json(Transcript, written)
    return f"{transcript.termination}/{parsed.status}"


# -- side logs: what a CLI writes beside its pipes that the harness reads while it runs -----------

def _side_log_watches() -> dict[str, Callable[[], Callable[[bytes], str | None]]]:
    from rubricgate.agents.qwen import retry_watch

    return {"qwen": retry_watch}  # Qwen Code's debug log, a FIFO its retries are read from


SIDE_LOG_CLASSES = ("read", f"stopped: {UNREACHABLE_STOP}", f"stopped: {ENDPOINT_STOP}")


@dataclass(frozen=True)
class SideLogRecording:
    """One real recorded side log (tests/data/transcripts/<cli>[-version]/<name>.log)."""

    cli: str
    label: str
    data: bytes


def side_logs() -> dict[str, list[SideLogRecording]]:
    """Side-log format ("<cli> debug log") -> its recordings; a log of a CLI the harness reads no
    side log of is an error (as a folder of a CLI without a CliSpec is in `recordings`)."""
    watches = _side_log_watches()
    out: dict[str, list[SideLogRecording]] = {}
    for log in sorted(RECORDINGS.glob("*/*.log")):
        cli = log.parent.name.split("-")[0]
        if cli not in watches:
            raise LookupError(f"{log}: a side log of {cli!r}, whose adapter reads none (tests/fuzz/targets.py)")
        out.setdefault(f"{cli} debug log", []).append(SideLogRecording(cli, f"{log.parent.name}/{log.name}",
                                                                       log.read_bytes()))
    return out


def run_side_log(rec: SideLogRecording, data: bytes) -> str:
    """The log read as the run reads it (isolation/streams.py SideLog, in pipe-sized chunks, each
    complete line shown to the adapter's watch) and its stop made a trial's reason: `read`, or
    `stopped: <class>` at the first stop."""
    from rubricgate.isolation.streams import CappedSink, SideLog

    side = SideLog(-1, _side_log_watches()[rec.cli]())
    sink = CappedSink(io.BytesIO(), 1 << 20, side=side)
    for at in range(0, len(data), 1 << 16):
        side.feed(data[at:at + (1 << 16)], sink)
        if sink.stop_reason:
            break
    reason = sink.stop_reason
    stopped = ProcessResult(exit_code=None if reason else 0, timed_out=False, stdout_truncated=False, stderr_tail="",
                            duration_s=1.0, stopped=reason)
    _shown_on_one_line(finish(Draft(agent=rec.cli), stopped, version=None))
    return f"stopped: {reason.split(':', 1)[0]}" if reason else "read"


def _shown_on_one_line(transcript: Transcript) -> None:
    """A trial's reason and evidence are printed as one console line: no line break, no escape."""
    for text in (transcript.error, transcript.evidence):
        if text != boundary.printable(text):
            raise Unexplained(f"a reason with control characters: {text!r}")


# -- files --------------------------------------------------------------------------------------

def _input_errors(load: Callable[[], object]) -> str:
    """`loaded`, or `input error` when every problem is one line naming its file."""
    try:
        load()
    except (GateInputError, GateInputErrors) as exc:
        errors = exc.errors if isinstance(exc, GateInputErrors) else [exc]
        for err in errors:
            line = err.one_line()
            if "\n" in line or "\r" in line or not err.file:
                raise Unexplained(f"not a one-line error naming a file: {line!r}") from exc
        return "input error"
    return "loaded"


@dataclass(frozen=True)
class FileFormat:
    """A file format: where the world keeps it, its kind for the mutators, and its target."""

    name: str
    kind: str  # mutators.MUTATIONS key
    where: Callable[[World], Path]
    target: Callable[[World, Path], str]
    classes: tuple[str, ...]  # every outcome the target may return (docs/architecture.md)


SUITE = ("loaded", "input error")


def _load_suite(world: World, _path: Path) -> str:
    """The suite loaded as every command loads it, and the reviewer's closure hashed as `run`
    keys its cache (suite/closure.py reads every file the prompt, skill and rubric name)."""
    from rubricgate.runner.cache import run_digests
    from rubricgate.suite.load import load_all

    return _input_errors(lambda: run_digests(world.repo, load_all(world.repo).config))


def _summary(world: World, path: Path) -> str:
    from rubricgate.records.files import read_summary
    from rubricgate.view.catalog import Catalog

    for leftover in ("view-index.json", "view-cases.jsonl"):
        (path.parent / leftover).unlink(missing_ok=True)
    outcome = _input_errors(lambda: read_summary(path.parent))
    if outcome == "loaded":
        _export(path.parent)
    catalog = Catalog.of([path.parent.parent])
    heads = catalog.heads()
    for head in heads:
        ref = catalog.ref(head.run_id)
        catalog.cases(ref)
        catalog.summary(ref)
    listed = "listed" if heads else "left out"
    if not heads and not catalog.problems:
        raise Unexplained("the viewer left the run out without a note")
    return f"{'read' if outcome == 'loaded' else outcome}/{listed}"


SUMMARY = tuple(f"{read}/{listed}" for read in ("read", "input error") for listed in ("listed", "left out"))


def _export(run: Path) -> None:
    from rubricgate.analysis import export

    out = Path(tempfile.mkdtemp(prefix="rubricgate-fuzz-export-"))
    try:
        export([run], "csv", out)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _events(world: World, path: Path) -> str:
    from rubricgate.cli.reports_cmd import _started
    from rubricgate.records.events import read_events
    from rubricgate.view.catalog import Catalog
    from rubricgate.view.live import progress

    events = read_events(path)
    catalog = Catalog.of([path.parent.parent])
    for ref in catalog.refs:
        progress(ref)
    catalog.heads()
    _started(path.parent)
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    return "read" if len(events) == len(lines) else "read (lines skipped)"


def _shard(world: World, path: Path) -> str:
    from rubricgate.fleet.shard import read_shard_record

    return "read" if _input_errors(lambda: read_shard_record(path.parent)) == "loaded" else "input error"


def _entry(world: World) -> Path:
    from rubricgate.runner.cache import cache_key, entry_path

    assert world.parts is not None
    return entry_path(world.cache_dir, cache_key(world.parts))


def _cache(world: World, _path: Path) -> str:
    from rubricgate.runner.cache import load_cached

    assert world.parts is not None
    found = load_cached(world.cache_dir, world.parts)
    if found.transcript is not None:
        found.transcript.model_dump_json().encode("utf-8")
        return "hit"
    return "rejected" if found.rejected else "miss"


def resign(world: World, data: bytes) -> bytes:
    """A mutated entry signed again with the cache's key (as if its writer had made it): the
    content checks behind the signature are fuzzed too, not only the signature."""
    from rubricgate.runner.cache import _sign, cache_key, signing_key

    try:
        entry = json.loads(data)
    except (ValueError, RecursionError):
        return data
    if not isinstance(entry, dict):
        return data
    body = {k: v for k, v in entry.items() if k != "hmac"}
    try:
        assert world.parts is not None
        signed = {**body, "hmac": _sign(signing_key(world.cache_dir), cache_key(world.parts), body)}
        return json.dumps(signed).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):  # a value the writer could not have written either
        return data


def _stored_transcript(world: World, path: Path) -> str:
    """A run's stored transcript as `regrade` reads it, and as the viewer's trial page shows it."""
    from rubricgate.reports.regrade import regrade_run
    from rubricgate.view import urls
    from rubricgate.view.site import site_for

    out = Path(tempfile.mkdtemp(prefix="rubricgate-fuzz-regrade-"))
    try:
        regraded = _input_errors(lambda: regrade_run(world.run, world.loaded, out))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    site = site_for([world.run.parent])
    [ref] = site.catalog.refs
    trial = world.trial
    assert trial is not None
    page = site.page(urls.transcript(ref.key, trial.case_id, trial.trial))
    if page.status != 200:
        raise Unexplained(f"the trial page answered {page.status}")
    shown = "shown" if site.catalog.transcript(ref, trial.transcript) is not None else "not shown"
    return f"{'regraded' if regraded == 'loaded' else regraded}/{shown}"


def _comparison(world: World, path: Path) -> str:
    """A `compare --base` record as the viewer reads it: the runs page lists it (or leaves it out
    with a note naming it), and a listed one's page opens with the runs of each side."""
    from rubricgate.view import urls
    from rubricgate.view.site import site_for

    site = site_for([path.parent.parent])
    runs = site.page(urls.runs())
    if runs.status != 200:
        raise Unexplained(f"the runs page answered {runs.status}")
    listed = site.catalog.comparisons()
    if not listed:
        if not any(path.parent.name in problem for problem in site.catalog.problems):
            raise Unexplained("the viewer left the comparison out without a note")
        return "left out"
    [(_, _, head)] = listed
    page = site.page(urls.compare_record(head.run_id))
    if page.status != 200:
        raise Unexplained(f"the comparison's page answered {page.status}")
    return "listed/opened"


STORED_TRANSCRIPT = tuple(f"{r}/{s}" for r in ("regraded", "input error") for s in ("shown", "not shown"))

FILES: list[FileFormat] = [
    FileFormat("rubricgate.yaml", "yaml", lambda w: w.repo / "rubricgate.yaml", _load_suite, SUITE),
    FileFormat("task", "yaml", lambda w: w.repo / "evals" / "tasks" / "block-missing-description.yaml", _load_suite,
               SUITE),
    FileFormat("expect.yaml", "yaml", lambda w: w.repo / "fixtures" / "block" / "data-loader" / "expect.yaml",
               _load_suite, SUITE),
    FileFormat("baseline.json", "json", lambda w: w.repo / "baseline.json", _load_suite, SUITE),
    FileFormat("rubric.md", "text", lambda w: w.repo / "reviewer" / "evaluator" / "references" / "rubric.md",
               _load_suite, SUITE),
    FileFormat("prompt.md", "text", lambda w: w.repo / "reviewer" / "prompts" / "evaluate.md", _load_suite, SUITE),
    FileFormat("summary.json", "json", lambda w: w.run / "summary.json", _summary, SUMMARY),
    FileFormat("events.jsonl", "jsonl", lambda w: w.run / "events.jsonl", _events, ("read", "read (lines skipped)")),
    FileFormat("shard.json", "json", lambda w: w.run / "shard.json", _shard, ("read", "input error")),
    FileFormat("transcript.json", "json", lambda w: w.run / w.transcript_rel(), _stored_transcript,
               STORED_TRANSCRIPT),
    FileFormat("cache entry", "json", _entry, _cache, ("hit", "miss", "rejected")),
    FileFormat("comparison.json", "json", lambda w: w.comparison, _comparison, ("listed/opened", "left out")),
]
