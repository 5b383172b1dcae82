"""Trial cache: a rerun of an unchanged suite calls no agent.

An entry is the transcript of one (case, trial), keyed by a SHA-256 over everything that can
change the agent's answer:
  * the reviewer files: the reviewer's closure (suite/closure.py: the prompt, skill and rubric,
    their folders, every repository file they reference, transitively, and `reviewer.files`),
  * the case (its full spec, plus every file in the folder of each reviewed file),
  * repository-wide agent context files (AGENTS.md, CLAUDE.md, .claude/, ...) the CLIs load:
    every CLI's `CliSpec.context_files` (agents/registry.py context_files),
  * the agent name and its settings (command, format, model, extra args, timeout, max steps),
  * the values of the non-secret environment variables passed to the agent (a base URL or a
    model variable on the allowlist changes the answer; secrets change who pays, not what),
  * the agent program: the bytes of the file its command starts and of every file the command
    names (runner/cache_inputs.py), hashed once per run,
  * the agent CLI version and model, the rubricgate version, and the trial index.
The entry stores those parts too; a load whose parts differ in any way is a miss, so an entry
never crosses a change of any key part even if two keys ever collided.

Only transcripts that ended on the agent's own terms are stored (completed, max_turns): an API
error or a timeout says something about that moment, not about the reviewer, and is retried.
Transcripts, not grades, are cached: grading is cheap, deterministic and may itself change.

Entries cannot be forged. The cache lives outside the repository (`$XDG_CACHE_HOME/rubricgate`,
default ~/.cache/rubricgate; config `cache_dir` or RunOptions.cache_dir override it), and every
entry carries an HMAC-SHA256 over its cache key and content, made with a per-user key kept in
the cache folder (created on first use, mode 0600, never in the repository or a report). An
entry that is unsigned, unreadable, or whose HMAC does not match (hand-edited, or copied from
another case's slot) is rejected: not used, reported by the caller, and its trial re-run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rubricgate import __version__, boundary
from rubricgate.agents.registry import context_files
from rubricgate.errors import GateInputError
from rubricgate.models.config import AgentConfig, Config
from rubricgate.models.results import CacheRejection, CaseSpec, Summary
from rubricgate.models.transcript import Transcript
from rubricgate.runner.cache_inputs import own_code_digest, program_digest
from rubricgate.runner.digests import case_digest, digest_json, files_digest, reviewer_digest

CACHE_DIR = ".rubricgate-cache"  # a cache folder inside the repository: hidden from agents, never in a workspace
APP_DIR = "rubricgate"
KEY_FILE = "hmac-key"
FORMAT_VERSION = 4
CACHEABLE = {"completed", "max_turns"}
# Allowlisted variables that cannot change an answer and differ between a terminal and CI.
ENV_IGNORED = {"TERM"}


@dataclass(frozen=True)
class KeyParts:
    """Everything one cached answer depends on; each field is a digest or a plain value."""

    reviewer: dict[str, str]
    case: str
    context: dict[str, str]
    agent: str
    agent_settings: str
    agent_version: str | None
    model: str | None
    trial: int
    env: str = ""  # digest of the non-secret environment the agent sees
    program: str = ""  # digest of the agent program's files (runner/cache_inputs.py)
    harness_version: str = __version__
    format_version: int = FORMAT_VERSION


@dataclass(frozen=True)
class RunDigests:
    """The parts every trial of a run shares: hashed once per run, not once per trial.

    Safe because the tree may not change during a run (the scheduler checks it after each trial).
    """

    reviewer: dict[str, str]
    context: dict[str, str]
    programs: dict[str, str] = field(default_factory=dict)  # agent name -> program digest


def run_digests(repo: Path, config: Config, programs: Mapping[str, Sequence[str]] | None = None,
                path: str | None = None) -> RunDigests:
    """Digest the reviewer files, the repository-wide agent context files and each agent's
    program (`programs`: agent name -> the argv it starts, resolved on `path`)."""
    return RunDigests(reviewer=reviewer_digest(repo, config, whole_past_cap=True),
                      context=files_digest(repo, context_files()),
                      programs={name: program_digest(argv, repo, path) or own_code_digest()
                                for name, argv in (programs or {}).items()})


def key_parts(repo: Path, config: Config, case: CaseSpec, agent: AgentConfig, *,
              agent_name: str, agent_version: str | None, model: str | None, trial: int,
              env: Mapping[str, str] | None = None, digests: RunDigests | None = None) -> KeyParts:
    """Collect the key parts for one (case, trial); pass the run's `digests` to skip rehashing them."""
    digests = digests or run_digests(repo, config)
    return KeyParts(
        reviewer=digests.reviewer, case=case_digest(repo, case),
        context=digests.context, agent=agent_name,
        # `tiers:` too: the builtin reviewer derives its tier from it (an edit replayed stale answers).
        # `workspace_exclude` too: it decides what the reviewer can read (lifting it replayed stale answers).
        agent_settings=digest_json({"agent": _agent_settings(agent, case),
                                     "tiers": config.tiers.model_dump(mode="json") if config.tiers else None,
                                     "workspace_exclude": sorted(config.suite.workspace_exclude)}),
        agent_version=agent_version, model=model, trial=trial,
        env=env_digest(env or {}, agent.secret_env), program=digests.programs.get(agent_name, ""),
    )


def env_digest(env: Mapping[str, str], secret_names: list[str]) -> str:
    """Digest of the agent's environment without secrets (values are never stored raw)."""
    public = {k: v for k, v in env.items() if k not in secret_names and k not in ENV_IGNORED}
    return digest_json(public)


def cache_key(parts: KeyParts) -> str:
    """The SHA-256 hex key of the parts (canonical JSON, sorted keys)."""
    return digest_json(asdict(parts))


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/rubricgate, or ~/.cache/rubricgate (a relative XDG value is ignored, per the spec)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path(env.get("HOME") or Path.home()) / ".cache"
    return base / APP_DIR


def resolve_cache_dir(repo: Path, configured: str | None = None, override: Path | None = None,
                      env: Mapping[str, str] | None = None) -> Path:
    """The cache folder: RunOptions/flag beats config `cache_dir` beats the user default.

    A relative config value is relative to the repository. A folder inside the repository is
    refused: its signing key would sit in the tree, next to what it protects.
    """
    if override is not None:
        path = Path(override).expanduser()
    elif configured:
        path = repo / Path(configured).expanduser()
    else:
        path = default_cache_dir(env)
    path = path.resolve()
    if path == repo.resolve() or repo.resolve() in path.parents:
        raise GateInputError("rubricgate.yaml", "cache_dir", f"{path} is inside the repository",
                             "use a folder outside it, or leave cache_dir unset for ~/.cache/rubricgate")
    return path


RUNS_DIR = "runs"  # one empty file per run this user started, named by its run id
MARKS_DIR = "continued"  # a file per run this user continued (gating/continuation_marks.py user_mark)
NOTE_BYTES = 4096  # a note or mark is a line: anything longer is not one of ours
RUNNING_MARK = "a run in progress"  # how a continuation's mark begins while it runs (its pid follows)
TEMPLATES = "templates"  # report.html's compiled templates (reports/render_cache.py)
CHARTS = "charts"  # drawn charts by content (reports/render_cache.py)


def remember_run(cache_dir: Path | None, run_id: str) -> None:
    """Note that this user ran `run_id` (gating/continuation.py continues only such runs unasked:
    a run folder planted in the checkout has no note here). A cache folder that cannot be written
    leaves no note: the next run then starts afresh rather than continuing."""
    if cache_dir is None:
        return
    try:
        (cache_dir / RUNS_DIR).mkdir(mode=0o700, parents=True, exist_ok=True)
        (cache_dir / RUNS_DIR / run_id).touch()
    except OSError:
        return  # no note: the run is never continued unasked (the safe side)


def notes_dir(repo: Path, configured: str | None) -> Path:
    """Where the notes of the runs this user started are kept: the config's cache folder or the
    user's default, never a --cache-dir given to one run (the next command would not look there)."""
    return resolve_cache_dir(repo, configured)


def ran_here(cache_dir: Path | None, run_id: str) -> bool:
    """Did this user start `run_id` (remember_run)?"""
    return cache_dir is not None and "/" not in run_id and (cache_dir / RUNS_DIR / run_id).is_file()


def signing_key(cache_dir: Path) -> bytes:
    """The per-user HMAC key in `cache_dir`, created on first use (0600, atomically)."""
    cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = cache_dir / KEY_FILE
    if not os.path.lexists(path):
        _create_key(path)
    return _read_key(path)


def _create_key(path: Path) -> None:
    # mkstemp makes the file 0600; link() publishes it only if no key exists yet, so two runs
    # starting together agree on one key and nobody ever reads a half-written one.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")
    try:
        os.write(fd, os.urandom(32).hex().encode("ascii"))
        os.fsync(fd)
        os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another run created it first: use theirs
    finally:
        os.unlink(tmp)


def retire_cache(cache_dir: Path) -> Path | None:
    """Move the cache folder, its entries and its signing key out of use, after a copy-only run:
    that run's reviewer could read the key and sign entries a later sandboxed run would accept.
    A rename, so a planted symlink is moved, never what it points at; the next run with --cache
    starts a fresh key. Returns where the folder went, for `remove_retired`."""
    if not os.path.lexists(cache_dir):
        return None
    retired = cache_dir.with_name(f".{cache_dir.name}-retired-{os.urandom(6).hex()}")
    os.rename(cache_dir, retired)
    return retired


def retire_rendered(cache_dir: Path, default: Path | None = None) -> list[Path]:
    """After a copy-only run whose cache folder is not the user's default (config `cache_dir`,
    `--cache-dir`): the default's compiled templates and drawn charts moved out of use, each by a
    rename; where they went, for `remove_retired`. Rendering always keeps them in the default
    (reports/render_cache.py), and the unsandboxed reviewer could leave code jinja2 runs there,
    or SVG every later page inlines as it is."""
    default = default_cache_dir() if default is None else default
    if os.path.abspath(default) == os.path.abspath(cache_dir):
        return []  # retired with the cache folder itself
    moved = []
    for name in (TEMPLATES, CHARTS):
        if os.path.lexists(default / name):
            moved.append(default / f".{name}-retired-{os.urandom(6).hex()}")
            os.rename(default / name, moved[-1])
    return moved


def remove_retired(retired: Path) -> None:
    """Delete a retired cache folder without following links (a link itself is unlinked)."""
    if retired.is_symlink() or not retired.is_dir():
        retired.unlink()
    else:
        shutil.rmtree(retired)


def _read_key(path: Path) -> bytes:
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise GateInputError(str(path), "", "the cache signing key must be a regular file of yours, mode 0600",
                             f"run `chmod 600 {path}`, or delete it to start a fresh cache")
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError) as exc:
        raise GateInputError(str(path), "", f"unreadable cache signing key ({exc})",
                             "delete it; a new key and a fresh cache are made on the next run") from exc


@dataclass(frozen=True)
class Lookup:
    """A cache lookup: the transcript on a hit; `rejected` says why a present entry was refused."""

    transcript: Transcript | None = None
    rejected: str = ""


def note_rejections(summary: Summary, rejected: list[CacheRejection]) -> Summary:
    """The summary with rejected entries listed and a warning the terminal and reports show."""
    if not rejected:
        return summary
    which = ", ".join(f"{r.case_id}#{r.trial}" for r in rejected[:5]) + (" ..." if len(rejected) > 5 else "")
    warning = (f"{len(rejected)} cache entr{'y was' if len(rejected) == 1 else 'ies were'} rejected "
               f"(changed or unsigned) and re-run: {which}")
    decision = summary.decision.model_copy(update={"warnings": [*summary.decision.warnings, warning]})
    return summary.model_copy(update={"cache_rejected": list(rejected), "decision": decision})


def entry_path(cache_dir: Path, key: str) -> Path:
    """Where an entry lives: two-level fan-out keeps directories small."""
    return cache_dir / key[:2] / f"{key}.json"


def load_cached(cache_dir: Path, parts: KeyParts, signing: bytes | None = None) -> Lookup:
    """The cached transcript for these exact parts, a plain miss, or a rejected (forged) entry."""
    key = cache_key(parts)
    try:
        raw = entry_path(cache_dir, key).read_text(encoding="utf-8")
    except FileNotFoundError:
        return Lookup()
    except (OSError, ValueError) as exc:
        return Lookup(rejected=f"unreadable entry ({exc})")
    body, problem = _verified_body(raw, key, signing or signing_key(cache_dir))
    if problem:
        return Lookup(rejected=problem)
    if body.get("parts") != _jsonable(asdict(parts)):
        return Lookup()  # a genuine entry for other parts (a key collision): a miss
    try:
        return Lookup(Transcript.model_validate(body.get("transcript")))
    except ValidationError:
        return Lookup()  # genuine but no longer loadable (the transcript format changed)


def _verified_body(raw: str, key: str, signing: bytes) -> tuple[dict, str]:
    """(entry body, "") when its HMAC matches; ({}, why not) otherwise."""
    try:
        entry = boundary.loads(raw)
    except ValueError:
        return {}, "entry is not valid JSON (changed after it was written)"
    if not isinstance(entry, dict) or not isinstance(entry.get("hmac"), str):
        return {}, "entry is not signed"
    body = {k: v for k, v in entry.items() if k != "hmac"}
    if not hmac.compare_digest(entry["hmac"], _sign(signing, key, body)):
        return {}, "entry signature does not match (changed after it was written, or moved from another case)"
    return body, ""


def _sign(signing: bytes, key: str, body: dict) -> str:
    # The cache key is signed with the content, so a genuine entry moved to another slot fails too.
    message = key.encode("ascii") + b"\n" + json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hmac.new(signing, message, hashlib.sha256).hexdigest()


def store(cache_dir: Path, parts: KeyParts, transcript: Transcript, signing: bytes | None = None) -> bool:
    """Store a signed transcript that ended on the agent's own terms; False when not cacheable."""
    if transcript.termination not in CACHEABLE:
        return False
    signing = signing or signing_key(cache_dir)
    key = cache_key(parts)
    path = entry_path(cache_dir, key)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = _jsonable({"format_version": FORMAT_VERSION, "parts": asdict(parts),
                      "transcript": transcript.model_dump(mode="json")})
    entry = {**body, "hmac": _sign(signing, key, body)}
    # Write-then-rename: parallel trials and an interrupted run never leave a half entry.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(entry, handle, sort_keys=True)
        os.replace(tmp, path)
    except OSError:  # a full disk costs a future cache hit, never the run
        Path(tmp).unlink(missing_ok=True)
        return False
    return True


def _agent_settings(agent: AgentConfig, case: CaseSpec) -> dict[str, object]:
    # Secrets are deliberately left out: they must never be written anywhere, and they change
    # who pays, not what the reviewer answers. The other variables are in KeyParts.env.
    return {"command": agent.command, "format": agent.format, "model": agent.model,
            "extra_args": agent.extra_args, "timeout_s": agent.timeout_s,
            "output_cap_bytes": agent.output_cap_bytes, "replay_dir": agent.replay_dir,
            "case_agent": case.agent}


def _jsonable(value: dict[str, Any]) -> dict[str, Any]:
    """The dict as its JSON round trip holds it (tuples as lists, keys sorted): what is signed is what is read back."""
    return json.loads(json.dumps(value, sort_keys=True))
