"""What the harness does with each input format, and the outcome classes it may end in.

A target takes mutated bytes and returns the input's outcome class (a short documented string);
anything it raises is a failure of the fuzz: an internal error, a traceback. Transcripts go the
way a trial's output goes (parse, finish, the limit watch, scrub, judge, the stored result,
written and read back); files go through every reader rubricgate has for them.

Outcome classes (docs/architecture.md, "Data from outside"):
  transcripts   `<termination>/<verdict status>`: termination one of completed, max_turns,
                api_error, timeout, crashed; verdict status ok, missing, malformed, invalid
                (extractor_error only for a configured hook)
  config files  `loaded` or `input error` (each problem one line naming file and field)
  summary.json  `read` or `input error`, and in the viewer `listed` or `left out` (with a note)
  events.jsonl  `read N events` bucketed as `read`, `read (lines skipped)`
  shard.json    `read` or `input error`
  cache entry   `hit`, `miss` or `rejected` (the entry is re-run, never used)
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from rubricgate import boundary
from rubricgate.agents.formats import parser_for, watch_for
from rubricgate.agents.normalize import finish
from rubricgate.agents.registry import cli_specs
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.isolation.process import ProcessResult
from rubricgate.models.transcript import Transcript
from rubricgate.secrets import scrub_model
from tests.conftest import make_repo

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "tests" / "data" / "transcripts"
SECRET = "fuzz-secret-value-6c1d"


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
    companions: dict[str, bytes]  # e.g. codex's session rollout

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
            rollout = folder / f"{name}.rollout.jsonl"
            companions = {"rollout": rollout.read_bytes()} if rollout.is_file() else {}
            out.setdefault(specs[cli].format.name, []).append(
                Recording(cli, folder.name, name, stream.read_bytes(), meta, companions))
    return out


@dataclass
class World:
    """What grading needs (a loaded suite) and a scratch folder of real run files to mutate."""

    root: Path
    repo: Path
    run: Path  # a real shard run of the repo: summary.json, events.jsonl, shard.json, transcripts
    loaded: object
    cache_dir: Path | None = None
    parts: object = None  # the cache entry's KeyParts

    @classmethod
    def make(cls, root: Path | None = None) -> World:
        root = root or Path(tempfile.mkdtemp(prefix="rubricgate-fuzz-"))
        repo = make_repo(root / "repo", fixtures=["pass/weekly-revenue-summary", "block/data-loader"],
                         tasks=["block-missing-description"], commit=False)
        done = CliRunner().invoke(_main(), ["run", "--repo", str(repo), "--shard", "1/1"])
        if done.exit_code != 0:
            raise RuntimeError(f"the fuzz world's run failed: {done.output}")
        [run] = [p for p in (repo / "reports").iterdir() if p.is_dir()]
        from rubricgate.suite.load import load_all

        world = cls(root, repo, run, load_all(repo))
        world._store_cache_entry()
        return world

    def _store_cache_entry(self) -> None:
        from rubricgate.runner.cache import key_parts, store

        self.cache_dir = self.root / "cache"
        self.parts = key_parts(self.repo, self.loaded.config, self.case(), self.loaded.config.agent,  # type: ignore[attr-defined]
                               agent_name="fuzz", agent_version="1", model="m", trial=1)
        transcript = Transcript.model_validate_json((self.run / self._first_transcript()).read_bytes())
        if not store(self.cache_dir, self.parts, transcript):  # type: ignore[arg-type]
            raise RuntimeError("the fuzz world's cache entry was not stored")

    def _first_transcript(self) -> str:
        summary = json.loads((self.run / "summary.json").read_text())
        return next(t["transcript"] for c in summary["cases"] for t in c["trials"] if t["transcript"])

    def case(self):
        return self.loaded.cases[0]  # type: ignore[attr-defined]

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
    draft = parser_for(fmt)(stream, agent=rec.cli, allowed=allowed, **companions)
    proc = ProcessResult(exit_code=rec.meta.get("exit_code", 0), timed_out=bool(rec.meta.get("timed_out")),
                         stdout_truncated=False, stderr_tail="", duration_s=1.0,
                         stopped=str(rec.meta.get("stopped", "")).removeprefix("stopped by rubricgate: "))
    transcript = scrub_model(finish(draft, proc, version=rec.meta.get("cli_version")), [SECRET])
    watch = watch_for(fmt, rec.meta.get("max_steps"), allowed)
    for line in stream.split(b"\n") if watch else []:
        if watch(line + b"\n"):
            break
    parsed, grades = judge(world.case(), transcript, world.loaded.rubric, world.loaded.config)  # type: ignore[attr-defined]
    result = trial_result(world.case().id, 1, transcript, parsed, grades, "transcripts/fuzz-1.json")
    written = transcript.model_dump_json().encode("utf-8")
    result.model_dump_json().encode("utf-8")
    boundary.validate_json(Transcript, written)
    return f"{transcript.termination}/{parsed.status}"


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


def _load_suite(world: World, _path: Path) -> str:
    from rubricgate.suite.load import load_all

    return _input_errors(lambda: load_all(world.repo))


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
    return f"{'read' if outcome == 'loaded' else outcome}, {listed}"


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

    return entry_path(world.cache_dir, cache_key(world.parts))  # type: ignore[arg-type]


def _cache(world: World, _path: Path) -> str:
    from rubricgate.runner.cache import load_cached

    found = load_cached(world.cache_dir, world.parts)  # type: ignore[arg-type]
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
        signed = {**body, "hmac": _sign(signing_key(world.cache_dir), cache_key(world.parts), body)}  # type: ignore[arg-type]
        return json.dumps(signed).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):  # a value the writer could not have written either
        return data


FILES: list[FileFormat] = [
    FileFormat("rubricgate.yaml", "yaml", lambda w: w.repo / "rubricgate.yaml", _load_suite),
    FileFormat("task", "yaml", lambda w: w.repo / "evals" / "tasks" / "block-missing-description.yaml", _load_suite),
    FileFormat("expect.yaml", "yaml", lambda w: w.repo / "fixtures" / "block" / "data-loader" / "expect.yaml",
               _load_suite),
    FileFormat("baseline.json", "json", lambda w: w.repo / "baseline.json", _load_suite),
    FileFormat("rubric.md", "text", lambda w: w.repo / "reviewer" / "evaluator" / "references" / "rubric.md",
               _load_suite),
    FileFormat("summary.json", "json", lambda w: w.run / "summary.json", _summary),
    FileFormat("events.jsonl", "jsonl", lambda w: w.run / "events.jsonl", _events),
    FileFormat("shard.json", "json", lambda w: w.run / "shard.json", _shard),
    FileFormat("cache entry", "json", _entry, _cache),
]
