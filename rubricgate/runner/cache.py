"""Trial cache: a rerun of an unchanged suite calls no agent.

An entry is the transcript of one (case, trial), keyed by a SHA-256 over everything that can
change the agent's answer:
  * the reviewer files (prompt, and every file in the evaluator skill and rubric folders),
  * the case (its full spec, plus every file in the folder of each reviewed file),
  * repository-wide agent context files (AGENTS.md, CLAUDE.md, .claude/, ...) the CLIs load,
  * the agent name and its settings (command, format, model, extra args, timeout, max steps),
  * the values of the non-secret environment variables passed to the agent (a base URL or a
    model variable on the allowlist changes the answer; secrets change who pays, not what),
  * the agent CLI version and model, the rubricgate version, and the trial index.
The entry stores those parts too; a load whose parts differ in any way is a miss, so an entry
never crosses a change of any key part even if two keys ever collided.

Only transcripts that ended on the agent's own terms are stored (completed, max_turns): an API
error or a timeout says something about that moment, not about the reviewer, and is retried.
Transcripts, not grades, are cached: grading is cheap, deterministic and may itself change.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import ValidationError

from rubricgate import __version__
from rubricgate.models.config import AgentConfig, ReviewerConfig
from rubricgate.models.results import CaseSpec
from rubricgate.models.transcript import Transcript

CACHE_DIR = ".rubricgate-cache"
FORMAT_VERSION = 2
CACHEABLE = {"completed", "max_turns"}
# Files an agent CLI reads on its own from the working tree; a change can change any answer.
AGENT_CONTEXT = ["AGENTS.md", "CLAUDE.md", ".claude", ".opencode", "opencode.json", ".codex", ".cortex"]
MISSING = "missing"
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
    harness_version: str = __version__
    format_version: int = FORMAT_VERSION


@dataclass(frozen=True)
class RunDigests:
    """The parts every trial of a run shares: hashed once per run, not once per trial.

    Safe because the tree may not change during a run (the scheduler checks it after each trial).
    """

    reviewer: dict[str, str]
    context: dict[str, str]


def run_digests(repo: Path, reviewer: ReviewerConfig) -> RunDigests:
    """Digest the reviewer files and the repository-wide agent context files."""
    return RunDigests(reviewer=reviewer_digest(repo, reviewer), context=files_digest(repo, AGENT_CONTEXT))


def key_parts(repo: Path, reviewer: ReviewerConfig, case: CaseSpec, agent: AgentConfig, *,
              agent_name: str, agent_version: str | None, model: str | None, trial: int,
              env: Mapping[str, str] | None = None, digests: RunDigests | None = None) -> KeyParts:
    """Collect the key parts for one (case, trial); pass the run's `digests` to skip rehashing them."""
    digests = digests or run_digests(repo, reviewer)
    return KeyParts(
        reviewer=digests.reviewer, case=case_digest(repo, case),
        context=digests.context, agent=agent_name,
        agent_settings=_digest_json(_agent_settings(agent, case)),
        agent_version=agent_version, model=model, trial=trial,
        env=env_digest(env or {}, agent.secret_env),
    )


def env_digest(env: Mapping[str, str], secret_names: list[str]) -> str:
    """Digest of the agent's environment without secrets (values are never stored raw)."""
    public = {k: v for k, v in env.items() if k not in secret_names and k not in ENV_IGNORED}
    return _digest_json(public)


def cache_key(parts: KeyParts) -> str:
    """The SHA-256 hex key of the parts (canonical JSON, sorted keys)."""
    return _digest_json(asdict(parts))


def reviewer_digest(repo: Path, reviewer: ReviewerConfig) -> dict[str, str]:
    """Digest per reviewer file: the prompt and every file in the skill's and rubric's folders."""
    folders = {str(Path(reviewer.skill).parent), str(Path(reviewer.rubric).parent)}
    digests = files_digest(repo, [reviewer.prompt, reviewer.skill, reviewer.rubric, *sorted(folders)])
    # The changed-files list is written per case; it is part of the case, not the reviewer.
    digests.pop(reviewer.changed_files, None)
    return digests


def case_digest(repo: Path, case: CaseSpec) -> str:
    """Digest of the case spec and of every file beside each reviewed file (e.g. references/).

    An overlaid file (case.files) is in the spec, but its folder may also hold repository files
    the agent reads beside it, so every reviewed file's folder is digested.
    """
    folders = sorted({str(Path(rel).parent) for rel in case.review})
    payload = {"spec": case.model_dump(mode="json"), "files": files_digest(repo, folders)}
    return _digest_json(payload)


def files_digest(repo: Path, paths: list[str]) -> dict[str, str]:
    """SHA-256 per file under each path (a file or a folder, walked); absent paths say so."""
    out: dict[str, str] = {}
    for rel in paths:
        target = repo / rel
        if target.is_file():
            out[rel] = _file_sha(target)
        elif target.is_dir():
            out.update({p.relative_to(repo).as_posix(): _file_sha(p) for p in _walk_files(target)})
        else:
            out[rel] = MISSING
    return out


def entry_path(cache_dir: Path, key: str) -> Path:
    """Where an entry lives: two-level fan-out keeps directories small."""
    return cache_dir / key[:2] / f"{key}.json"


def load_cached(cache_dir: Path, parts: KeyParts) -> Transcript | None:
    """The cached transcript for these exact parts, or None (absent, unreadable or mismatched)."""
    path = entry_path(cache_dir, cache_key(parts))
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        # Absent or corrupt: a miss; the next store() overwrites it atomically.
        return None
    if not isinstance(entry, dict) or entry.get("parts") != _jsonable(asdict(parts)):
        return None
    try:
        return Transcript.model_validate(entry.get("transcript"))
    except ValidationError:
        return None


def store(cache_dir: Path, parts: KeyParts, transcript: Transcript) -> bool:
    """Store a transcript that ended on the agent's own terms; False when not cacheable."""
    if transcript.termination not in CACHEABLE:
        return False
    path = entry_path(cache_dir, cache_key(parts))
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"format_version": FORMAT_VERSION, "parts": asdict(parts),
             "transcript": transcript.model_dump(mode="json")}
    # Write-then-rename: parallel trials and an interrupted run never leave a half entry.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(entry, handle, sort_keys=True)
    os.replace(tmp, path)
    return True


def _agent_settings(agent: AgentConfig, case: CaseSpec) -> dict[str, object]:
    # Secrets are deliberately left out: they must never be written anywhere, and they change
    # who pays, not what the reviewer answers. The other variables are in KeyParts.env.
    return {"command": agent.command, "format": agent.format, "model": agent.model,
            "extra_args": agent.extra_args, "timeout_s": agent.timeout_s,
            "output_cap_bytes": agent.output_cap_bytes, "replay_dir": agent.replay_dir,
            "case_agent": case.agent}


def _walk_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _jsonable(value: object) -> object:
    return json.loads(json.dumps(value, sort_keys=True))


def _digest_json(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()
