"""The agent interface: one run of a reviewer in a prepared workspace -> Transcript."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

# Annotations only: `validate` and `agents` load this interface without the transcript models and
# the sandbox (bench/startup.py); the adapters and the runner import what they use.
if TYPE_CHECKING:
    from rubricgate.isolation.admission import AgentSlots
    from rubricgate.isolation.sandbox import SandboxPolicy
    from rubricgate.models.transcript import Transcript
    from rubricgate.suite.rubric import Vocabulary


@dataclass
class AgentRequest:
    """Everything an adapter needs for one trial. Paths are absolute."""

    case_id: str
    trial: int
    workspace: Path  # the throwaway copy; the agent's cwd
    prompt_file: Path  # inside the workspace
    rubric_file: Path  # inside the workspace
    changed_files_file: Path  # inside the workspace, one reviewed path per line
    scratch: Path  # outside the workspace, writable by the agent: HOME, last-message file
    allowed_tools: list[str] | None = None  # normalized names; None = no allowlist
    max_steps: int | None = None
    timeout_s: float = 300.0
    idle_timeout_s: float = 0.0  # stop after this long without a line of output (0: never)
    output_cap_bytes: int = 8_000_000
    env: dict[str, str] = field(default_factory=dict)  # minimal env; adapters add HOME etc.
    model: str | None = None
    extra_args: list[str] = field(default_factory=list)
    private: Path | None = None  # harness-only (raw stream); the agent never sees it. None: scratch
    sandbox: SandboxPolicy | None = None  # None: run unsandboxed (adapter unit tests)
    # Where the harness reads the prompt: an overlay workspace exists only inside the sandbox.
    prompt_source: Path | None = None
    slots: AgentSlots | None = None  # the run's bound on agents running at once (None: no bound)
    vocabulary: Vocabulary | None = None  # rubricgate.yaml `tiers:` (None: the default words)
    # Where the agent sees `scratch` when the sandbox mounts it elsewhere (isolation/scratch.py).
    scratch_view: Path | None = None
    # An in-process agent's workspace never materialized: read-only layers, topmost first, read
    # with the overlay's rules (agents/workspace_view.py). Empty: `workspace` is a real folder.
    layers: tuple[Path, ...] = ()
    _prompt: str | None = field(default=None, init=False, repr=False, compare=False)  # prompt_text()

    def prompt_text(self) -> str:
        """The prompt as the trial's first attempt read it (OSError when it cannot be). A retry
        runs in the same workspace, where the failed attempt may have made a copy's prompt file
        a link to a host file, which the harness, outside the sandbox, would read for the next
        attempt's prompt: so it is read once, before any attempt ran."""
        if self._prompt is None:
            self._prompt = (self.prompt_source or self.prompt_file).read_text(encoding="utf-8")
        return self._prompt

    def agent_view(self, path: Path) -> Path:
        """A path under `scratch` as the agent sees it (argv, environment): the harness reads
        and writes `path` itself, the agent the same file at its view of the scratch folder."""
        if self.scratch_view is None or not path.is_relative_to(self.scratch):
            return path
        return self.scratch_view / path.relative_to(self.scratch)

    def write_scratch(self, path: Path, text: str) -> None:
        """Write a file the agent is given under `scratch` (its settings, before each attempt).
        A retry runs in the same scratch folder, where the failed attempt may have left a link
        (`home/.qwen -> /etc`): it is replaced, never written through (isolation/untrusted.py)."""
        from rubricgate.isolation.untrusted import write_under

        write_under(self.scratch, path.relative_to(self.scratch), text.encode("utf-8"))

    def scratch_folder(self, path: Path) -> int:
        """A descriptor of the folder `path` under `scratch`, made the same way (write_scratch)."""
        from rubricgate.isolation.untrusted import folder_under

        return folder_under(self.scratch, path.relative_to(self.scratch))

    @property
    def home(self) -> Path:
        return self.scratch / "home"

    @property
    def last_message_file(self) -> Path:
        return self.scratch / "last-message.txt"

    @property
    def raw_stream_file(self) -> Path:
        return (self.private or self.scratch) / "stream.ndjson"


class Agent(Protocol):
    """An adapter. `run` never raises for agent failures: they become transcript data."""

    name: str

    def version(self) -> str | None:
        """The CLI's version string, or None when not found."""

    def run(self, request: AgentRequest) -> Transcript:
        """Run one trial and return its normalized transcript."""


def runs_a_process(agent: object) -> bool:
    """Does the agent run a program of its own (every CLI adapter), which the sandbox can hold?
    The builtin reviewer and replay run in rubricgate's process."""
    return hasattr(agent, "execute")


def writes_nothing(agent: object) -> bool:
    """Is the agent rubricgate's own code that only reads (the builtin reviewer, replay)? A run
    of such agents alone has no reviewer that could write to the repository or needs a sandbox's
    layers; any other agent (a process, a test double) is watched."""
    return getattr(agent, "writes_nothing", False) is True
