"""The shared run loop for adapters that drive an agent CLI as a subprocess.

A subclass says how to build argv and extra environment and how to parse the native stream;
this class does the hygiene every run needs: prompt read from the request, an environment
built from the allowlist plus a throwaway HOME, the process runner (own group, hard timeout,
output cap), normalization, and scrubbing secret values out of the transcript and raw stream.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.decoded_lines import shared_decoding
from rubricgate.agents.ending import finish, with_proxy_evidence
from rubricgate.agents.normalize import Draft, read_stream
from rubricgate.agents.spec import CliSpec
from rubricgate.isolation.environment import isolated_env
from rubricgate.isolation.untrusted import DEFAULT_CAP
from rubricgate.secret_env import secret_values
from rubricgate.secrets import scrub, scrub_file

# The process runner, the sandbox and the config and transcript models are imported where a run
# needs them: `rubricgate agents` and `validate` read the adapters' specs without them.
if TYPE_CHECKING:
    from rubricgate.isolation.process import ProcessResult, Watch
    from rubricgate.isolation.streams import SideLog
    from rubricgate.models.config import AgentConfig
    from rubricgate.models.transcript import Transcript

VERSION_TIMEOUT_S = 30.0
_UNKNOWN = object()


class CliAgent(ABC):
    """Base for claude, cortex and other subprocess adapters. Never raises for agent failures."""

    spec: ClassVar[CliSpec | None] = None  # the CLI's facts (agents/spec.py); None: `command`
    name = "cli"
    binary = ""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self._version: object = _UNKNOWN

    # --- what subclasses provide -------------------------------------------------------
    @abstractmethod
    def argv(self, request: AgentRequest, prompt: str) -> list[str]:
        """The full command line for one run."""

    def agent_env(self, request: AgentRequest) -> dict[str, str]:
        """Variables this CLI needs on top of the allowlisted environment."""
        return {}

    @abstractmethod
    def parse(self, data: bytes, request: AgentRequest) -> Draft:
        """Native stdout -> Draft."""

    def watch(self, request: AgentRequest) -> Watch | None:
        """A per-line check that stops the run, for limits the CLI cannot enforce itself."""
        return None

    def read_stderr(self, draft: Draft, stderr_tail: str) -> None:
        """What the CLI's stderr adds to the parsed stream (its retry notices), if anything."""
        return None

    def stderr_watch(self, request: AgentRequest) -> Watch | None:
        """The same for stderr's lines: a CLI that reports its own retries there is stopped at the
        first, with the endpoint's answer as evidence (agent.retries is the one retry policy)."""
        return None

    # --- shared machinery --------------------------------------------------------------
    def executable(self, request: AgentRequest | None = None) -> str:
        """The CLI's path on the run's PATH (the harness's without a request), or its bare name.

        Resolving on the agent's own PATH matters: that is the PATH the process will have.
        """
        from rubricgate.isolation.sandbox import find_program

        path = request.env.get("PATH") if request is not None else None
        return find_program(self.binary, path) or self.binary

    def missing_program(self, path: str | None = None) -> str | None:
        """The program this adapter would start when it cannot be found on `path`, else None.

        Checked at plan time and by `validate`: a missing CLI is bad input (exit 2), not a trial.
        A relative path with a slash is resolved in each trial's workspace, so it is not judged here.
        """
        program = self.binary
        if "/" in program:  # a path: absolute is checked as is; relative lives in the workspace
            ok = not Path(program).is_absolute() or (Path(program).is_file() and os.access(program, os.X_OK))
            return None if ok else program
        found = shutil.which(program, path=path if path is not None else os.environ.get("PATH", ""))
        return None if found else program

    def version(self) -> str | None:
        """The spec's version command (`<binary> --version`), first line; None when the CLI is not
        installed. Cached."""
        if self._version is _UNKNOWN:
            found = shutil.which(self.binary)
            if self.spec is None:
                self._version = probe_version([self.executable(), "--version"]) if found else None
            else:
                self._version = spec_version(self.spec, self.executable()) if found else None
        return self._version  # type: ignore[return-value]

    def model_args(self, request: AgentRequest, flag: str) -> list[str]:
        model = request.model or self.config.model
        return [flag, model] if model else []

    def run(self, request: AgentRequest) -> Transcript:
        """One trial: read the prompt, run the CLI with hygiene, normalize. The transcript is the
        agent's own (graders read it as given); what is written is scrubbed (runner/written.py)."""
        secrets = secret_values(request.env, self.config.secret_env)
        try:
            prompt = request.prompt_text()
        except OSError as exc:
            return self._failed(request, f"cannot read prompt {request.prompt_file}: {exc.strerror}")
        clear_kept(self.kept_files(request))
        with shared_decoding() as decoded:  # each stream line decoded once, by a watch or the parser
            proc = self.execute(request, self.argv(request, prompt))
            # stderr is read for the one-line error alone, never graded: scrubbed before its cut
            # (the 300-character error line) so the cut cannot leave part of a secret behind.
            proc = replace(proc, stderr_tail=scrub(proc.stderr_tail, secrets))
            decoded.parsing()
            draft = self.parse(read_stream(request.raw_stream_file), request)
        self.read_stderr(draft, proc.stderr_tail)
        sandbox = request.sandbox
        proxied = sandbox is not None and sandbox.enforced and sandbox.network.proxied
        transcript = with_proxy_evidence(finish(draft, proc, version=self.version()), proxied)
        scrub_scratch(request, secrets, self.kept_files(request))
        return transcript

    def kept_files(self, request: AgentRequest) -> list[Path]:
        """What rubricgate keeps beside the run, scrubbed of secrets: the raw stream, the last message."""
        return [request.raw_stream_file, request.last_message_file]

    def execute(self, request: AgentRequest, argv: list[str]) -> ProcessResult:
        """Run argv in the workspace with the isolated environment."""
        return self.launch(request, argv)

    def launch(self, request: AgentRequest, argv: list[str], side_log: SideLog | None = None) -> ProcessResult:
        """The process itself (`side_log`: a log the CLI writes beside its pipes, watched like
        stderr: isolation/streams.py)."""
        from rubricgate.isolation.process import run_process

        env = {**isolated_env(request.env, request.home, request.agent_view(request.home)), **self.agent_env(request)}
        return run_process(argv, cwd=request.workspace, env=env, timeout_s=request.timeout_s,
                           idle_timeout_s=request.idle_timeout_s, output_cap_bytes=request.output_cap_bytes,
                           stdout_path=request.raw_stream_file, watch=self.watch(request),
                           sandbox=request.sandbox, writable=[(request.scratch, request.agent_view(request.scratch))],
                           slots=request.slots, stderr_watch=self.stderr_watch(request), side_log=side_log)

    def _failed(self, request: AgentRequest, error: str) -> Transcript:
        from rubricgate.models.transcript import Transcript

        return Transcript(agent=self.name, agent_version=self.version(), termination="crashed",
                          exit_code=None, error=error)


def clear_kept(kept: list[Path]) -> None:
    """Before an attempt, remove what the last one left of the files rubricgate reads after it (last
    message, usage file, rollout copy): a retry runs in the same scratch folder, and one that wrote
    none was read as the failed attempt's answer or token counts. A link is removed, not followed."""
    from rubricgate.isolation.overlay import remove_tree

    for path in kept:
        if path.is_dir() and not path.is_symlink():
            remove_tree(path)
        else:
            path.unlink(missing_ok=True)


def scrub_scratch(request: AgentRequest, secrets: list[str], kept: list[Path]) -> None:
    """Scrub what rubricgate keeps beside the run (`kept`: raw stream, last message, rollout copy).

    These survive a run under --keep-workspaces; the throwaway HOME is the CLI's own business, and
    so is any other file of the scratch folder: a reviewer that wrote two 480 MB files there had
    the harness read each whole after its trial (90 s and 1 GB of memory). Each is read up to the
    output cap at most (a last message is never read further: isolation/untrusted.py), and kept
    cut there. Nothing to look for without secrets.
    """
    if not secrets:
        return
    cap = max(request.output_cap_bytes, DEFAULT_CAP)
    for path in kept:
        scrub_file(path, secrets, cap)


def spec_version(spec: CliSpec, program: str) -> str | None:
    """`program`'s version by its spec: the version command's first line, the version read from it."""
    return spec.version_from(probe_version([program, *spec.version_args]))


def probe_version(argv: list[str]) -> str | None:
    """First non-empty stdout line of a version command, or None when it fails."""
    from rubricgate.isolation.process import run_process

    with tempfile.TemporaryDirectory(prefix="rubricgate-version-") as tmp:
        out = Path(tmp) / "stdout"
        env = isolated_env({"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, Path(tmp) / "home")
        res = run_process(argv, cwd=Path(tmp), env=env, timeout_s=VERSION_TIMEOUT_S,
                          output_cap_bytes=65536, stdout_path=out)
        if res.exit_code != 0:
            return None
        lines = [ln.strip() for ln in out.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[0] if lines else None
