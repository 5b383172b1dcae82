"""rubricgate.yaml: ties paths, agent, default rubric and gate together."""

import copy
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from rubricgate.models import dimensions
from rubricgate.models.base import RepoPath, Severity, StrictModel, Tier, known_format
from rubricgate.models.bounds import MAX_ERRORED, MAX_IDLE_TIMEOUT_S, MAX_OUTPUT_CAP_BYTES, MAX_TIMEOUT_S, MAX_TRIALS
from rubricgate.models.task import Rubric
from rubricgate.models.verdict_config import VerdictConfig

DEFAULT_ENV_ALLOWLIST = ["PATH", "LANG", "LC_ALL", "TZ", "TERM", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS"]


class SuiteConfig(StrictModel):
    tasks: RepoPath = "evals/tasks"
    """The folder of task files (<id>.yaml or .json), repository-relative."""
    fixtures: RepoPath = "fixtures"
    """The folder of fixtures: pass/, warn/ and block/, one folder a case."""
    review_root: RepoPath = "skills"
    """Where the team's real skills live: a fixture fixtures/<tier>/<name>/ is reviewed at
    <review_root>/<name>/, so no path the reviewer sees names its expected tier."""
    workspace_exclude: list[RepoPath] = []
    """More repo paths kept out of every workspace (docs or tests that quote expected answers)."""
    layout: Literal["skills", "files"] = "skills"
    """What a fixture folder is: `skills`, a skill (its SKILL.md reviewed, the other files beside
    it); `files`, any files (all of them reviewed, or those its expect.yaml `review:` names)."""


class ReviewerConfig(StrictModel):
    prompt: RepoPath = "reviewer/prompts/evaluate.md"
    """The reviewer's prompt file, given to the agent."""
    skill: RepoPath = "reviewer/evaluator/SKILL.md"
    """The reviewer's skill file (its instructions)."""
    rubric: RepoPath = "reviewer/evaluator/references/rubric.md"
    """The rubric: a markdown table of rules (id, severity, kind, rule) and the tier derivation."""
    changed_files: RepoPath = "reviewer/.changed-skills.txt"
    """Where the harness writes the files to review, one per line, in each trial's copy."""
    files: list[RepoPath] = []
    """Globs (repo-relative, `**` spans folders) of files that are part of the reviewer although
    nothing it references names them: a data file its script opens (suite/closure.py)."""


class AgentLimits(StrictModel):
    """Per-trial bounds inside the sandbox (docs/isolation.md); a trial that reaches one fails
    as the reviewer's error. Upper bounds keep a typo from meaning "unlimited"."""

    processes: int = Field(strict=True, default=1024, ge=16, le=65_536)
    """Processes and threads (RLIMIT_NPROC)."""
    memory_mb: int = Field(strict=True, default=8192, ge=64, le=1_048_576)
    """Private writable memory in MB (RLIMIT_DATA)."""
    file_mb: int = Field(strict=True, default=1024, ge=1, le=1_048_576)
    """One file's size in MB (RLIMIT_FSIZE)."""
    tmp_mb: int = Field(strict=True, default=1024, ge=1, le=65_536)
    """The private /tmp in MB (a size-capped tmpfs)."""


class AgentConfig(StrictModel):
    name: str = "builtin"
    """The agent: builtin, an agent CLI (claude, cortex, opencode, codex, gemini, qwen, copilot),
    command or replay (`rubricgate agents` lists them)."""
    timeout_s: float = Field(strict=True, default=300.0, gt=0, le=MAX_TIMEOUT_S)
    """Wall-clock seconds a trial may take; past it the agent's process group is killed and the
    trial is a timeout."""
    idle_timeout_s: float = Field(strict=True, default=120.0, ge=0, le=MAX_IDLE_TIMEOUT_S)
    """An agent that prints nothing (stdout or stderr) this long is stalled, not thinking: it is
    stopped and the trial is an infrastructure failure (retried, then errored), never a reviewer
    timeout. 0 switches it off (a wrapper command that prints only at its end)."""
    output_cap_bytes: int = Field(strict=True, default=8_000_000, gt=0, le=MAX_OUTPUT_CAP_BYTES)
    """Bytes of stdout kept from one trial; past it the agent is stopped and the trial fails."""
    command: list[str] | None = None
    """The command adapter: a template with {prompt_file} {workspace} {last_message_file}
    {max_steps}."""
    format: str | None = None
    """Transcript format of `command`'s output: a CLI's stream format (claude, codex, ...) or text."""
    version_command: list[str] | None = None
    """How `command` learns its CLI's version (recorded, and part of the cache key). Unset, only a
    known agent CLI is asked `--version`: a wrapper script that
    ignores its arguments would otherwise run a whole review just to print a version."""
    model: str | None = None
    """The model the agent CLI uses (passed as its --model); unset: the CLI's own default."""
    extra_args: list[str] = []
    """More arguments for the agent CLI, after rubricgate's own."""
    env_allowlist: list[str] = Field(default_factory=lambda: list(DEFAULT_ENV_ALLOWLIST))
    """Environment variables passed from rubricgate's environment to the agent; nothing else reaches
    it."""
    secret_env: list[str] = Field(default_factory=lambda: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SNOWFLAKE_PAT",
                                                           "GEMINI_API_KEY", "COPILOT_PROVIDER_API_KEY"])
    """Passed through to the agent but scrubbed from every written output."""
    replay_dir: str | None = None
    """The folder of recorded transcripts the replay agent answers from (<case>-<trial>.json or
    .ndjson)."""
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    """Bubblewrap around every agent process. auto: when it works here (required under CI=true);
    bwrap: required; none: copy-only, on purpose. See rubricgate/isolation/sandbox.py."""
    sandbox_network: Literal["allowlist", "shared", "none"] = "allowlist"
    """The sandbox's network (docs/isolation.md). allowlist: a network namespace of its own; the
    model endpoints (the CLI's endpoint variables, or its public default) and network_allow
    reached only through rubricgate's proxy. none: nothing. shared: the host's network, every
    loopback service included; an explicit opt-out, warned in every report."""
    network_allow: list[str] = Field(default=[], max_length=100)
    """More host:port the reviewer may reach under the allowlist ([::1]:8080 for IPv6). A host on
    the host's loopback is reachable only when named here or by an endpoint variable."""
    limits: AgentLimits = Field(default_factory=AgentLimits)
    """Per-trial bounds inside the sandbox (processes, memory, file size, /tmp)."""
    retries: int = Field(strict=True, default=2, ge=0, le=10)
    """Infrastructure failures (API errors, auth, rate limits, a CLI that fails to start) are
    retried this many times with exponential backoff and jitter; a retry-after the CLI reports is
    honoured."""
    retry_backoff_s: float = Field(strict=True, default=2.0, ge=0, le=300)
    """Seconds before the first retry; doubled (with jitter) for each further one."""
    preflight: bool = True
    """Before the suite, each agent CLI answers one minimal request in the trials' sandbox and
    environment; a key, endpoint or network problem ends the run in seconds (exit 2)."""
    preflight_timeout_s: float = Field(strict=True, default=45.0, gt=0, le=600)
    """Seconds the preflight request may take before the run ends with exit 2."""
    jobs: int | None = Field(strict=True, default=None, ge=1, le=64)
    """Trials at once (`run --jobs` wins). Unset: 4 when a CLI reviews, 1 for the builtin."""


    @field_validator("network_allow")
    @classmethod
    def _host_ports(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            host, sep, port = entry.rpartition(":")
            bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
            if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not bare or \
                    (":" in bare and bare == host) or any(c in bare for c in "/@ \t?#[]"):
                raise ValueError(f"{entry!r} is not host:port (fix: write it as api.example.com:443, 127.0.0.1:8080 "
                                 "or [::1]:8080)")
        return entries


class GateConfig(StrictModel):
    method: Literal["strict", "statistical"] = "strict"
    """strict: any rate below the baseline's is a regression; statistical: exact tests decide PASS,
    REGRESSION or INCONCLUSIVE (docs/statistics.md)."""
    confidence: float = Field(strict=True, default=0.95, gt=0.5, lt=1.0)
    """Family-wise: the chance that an unchanged reviewer fails the run (any dimension) is at most
    1 - confidence under the statistical method."""
    max_errored: int = Field(strict=True, default=0, ge=0, le=MAX_ERRORED)
    """Trials whose infrastructure failed on every attempt; more than this and the run cannot judge."""
    margin: float = Field(strict=True, default=0.05, gt=0.0, lt=1.0)
    """A drop is labelled "no change" only when its upper confidence bound is below this."""
    drift_allowance: float = Field(strict=True, default=0.0, ge=0.0, lt=1.0)
    """Against a stored baseline a served model drifts by itself: a REGRESSION must also show the
    drop beyond this (its lower confidence bound above it), so a drift of at most this exits 1
    with probability at most 1 - confidence, at a cost in power (docs/statistics.md). 0 (the
    default) turns it off; below gate.margin."""
    new_cases: Literal["report", "strict"] | None = None
    """Cases the baseline does not have: listed with their rates (report), or required to pass every
    trial (strict). Unset: report under statistical, strict under strict."""
    inconclusive: Literal["fail", "pass"] = "fail"
    """What a run the gate cannot settle exits with: a changed rule no case exercises, or neither
    PASS nor REGRESSION within the trial budget. fail: exit 2 (the default); pass: exit 0, and
    every report's headline says so. Only an explicit `pass` lets an undecided run through."""
    max_trials_per_case: int = Field(strict=True, default=10, ge=1, le=MAX_TRIALS)
    """The most design trials any case gets under the statistical gate's adaptive rounds; a stable
    case re-tried after a failure may run as many again as confirmation."""
    baseline_max_age_days: int = Field(strict=True, default=30, ge=1, le=3650)
    """A stored baseline older than this (days) is warned about by `run` and the weekly job."""
    dimensions: list[str] | None = Field(default=None, min_length=1, max_length=20)
    """What is graded and gated (models/dimensions.py). Unset: every dimension the agent's
    transcript can show (an answer-only `command` reviewer: the verdict alone)."""

    @field_validator("dimensions")
    @classmethod
    def _known_dimensions(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        known = dimensions.names()
        for name in value:
            if name not in known:
                raise ValueError(f"unknown dimension {name!r} (fix: use some of {', '.join(known)})")
        if len(set(value)) != len(value):
            raise ValueError("a dimension is listed twice (fix: list each once)")
        return dimensions.ordered(value)

    @model_validator(mode="after")
    def _allowance_below_margin(self) -> "GateConfig":
        if self.drift_allowance and self.drift_allowance >= self.margin:
            raise ValueError(f"drift_allowance {self.drift_allowance} is not below margin {self.margin} "
                             "(fix: lower gate.drift_allowance, or 0 to turn it off)")
        return self

    def new_cases_rule(self) -> str:
        """The effective rule for new cases."""
        return self.new_cases or ("report" if self.method == "statistical" else "strict")


class TierRuleConfig(StrictModel):
    """One tier rule in the team's words: `at_least` findings of `severity` give `tier`."""

    severity: str = Field(min_length=1, max_length=40)
    """A word of the rubric's severity column (as `tiers.severities` maps it)."""
    at_least: int = Field(strict=True, default=1, ge=1, le=1000)
    """How many findings of that severity the rule needs."""
    tier: Tier
    """The tier those findings give: PASS, WARN or BLOCK."""


class TiersConfig(StrictModel):
    """The rubric's own severity words and tier derivation (docs/agents.md: the team's rubric).

    `severities` maps each word of the rubric's severity column to what it means to rubricgate
    (critical, warning or suggestion: report ordering); `rules` are applied in order, the first
    match gives the tier, no match is PASS. Without `rules`, the default derivation applies to
    the mapped meanings.
    """

    severities: dict[str, Severity] = Field(min_length=1, max_length=20)
    """Each word of the rubric's severity column -> what it means to rubricgate: critical, warning
    or suggestion."""
    rules: list[TierRuleConfig] | None = Field(default=None, max_length=50)
    """Tier rules in order, the first match wins, no match is PASS; unset: the default derivation
    over the mapped meanings."""


# What in a config makes the reviewer: its files, how its agent runs and the tier vocabulary its
# answers speak (the builtin reviewer derives its tier from it). `compare --base` runs each side's own.
REVIEWER_SECTIONS = ("reviewer", "agent", "tiers")


class Config(StrictModel):
    format_version: Annotated[int, known_format(1)] = 1
    """The file's format (1)."""
    suite: SuiteConfig = Field(default_factory=SuiteConfig)
    """Where the tasks and fixtures are, and what a fixture is."""
    reviewer: ReviewerConfig = Field(default_factory=ReviewerConfig)
    """The reviewer under test: prompt, skill, rubric and the files they use."""
    agent: AgentConfig = Field(default_factory=AgentConfig)
    """The agent that reviews, and how it runs (sandbox, network, limits, retries)."""
    rubric: Rubric = Field(default_factory=Rubric)
    """The rubric (tool use, trajectory) of the tasks and fixtures that give none of their own."""
    tiers: TiersConfig | None = None
    """The rubric's own severity words and tier rules; unset: critical/warning/suggestion and the
    rubric's derivation."""
    verdict: VerdictConfig | None = None
    """How the reviewer's answer becomes a tier and findings; unset: the JSON verdict contract
    (models/verdict_config.py)."""
    trials: int = Field(strict=True, default=1, ge=1, le=MAX_TRIALS)
    """Trials of each case, unless the case says otherwise."""
    gate: GateConfig = Field(default_factory=GateConfig)
    """How the rates are judged against the baseline."""
    baseline: RepoPath = "baseline.json"
    """The baseline file, repository-relative."""
    reports: RepoPath = "reports"
    """The folder of run folders, repository-relative."""
    cache_dir: str | None = None
    """--cache folder; unset: $XDG_CACHE_HOME/rubricgate (~/.cache/rubricgate). Never inside the
    repo."""

    def with_reviewer_of(self, other: "Config | None") -> "Config":
        """This config with `other`'s reviewer (REVIEWER_SECTIONS), or as it is when None."""
        if other is None:
            return self
        return self.model_copy(update={k: copy.deepcopy(getattr(other, k)) for k in REVIEWER_SECTIONS})

    def graded_dimensions(self) -> tuple[str, ...]:
        """What a trial is graded on: gate.dimensions, else what the agent's transcript shows."""
        if self.gate.dimensions is not None:
            return tuple(self.gate.dimensions)
        return dimensions.default_dimensions(self.agent.name, self.agent.format)
