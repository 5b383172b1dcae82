"""baseline.json: per-case, per-dimension pass counts, what they were measured with, history.

Format 2 keeps, per case and dimension, passes and trials: the gate compares each case the run
shares with the baseline at its own trials. The suite rates are kept for display. Format 3 adds
what rule coverage and change-aware decisions need: per reviewer file its digest, the rule table
and the warning threshold the baseline was measured with, and per case the rule ids the
baseline run's reviewer cited. Format 4 adds `measured_with.setup` (the program the agent ran
and the variables passed to it), which pooling compares: a rubricgate that reads format 3 and
older says the file is newer and to upgrade, where it said "remove it (unknown key)", and a
baseline without it pools trials of any setup. Formats 1 to 3 are still read (without those,
coverage counts expectations only and rule changes are unknown); `rubricgate baseline update`
rewrites them as format 4.
"""

from typing import Annotated, Literal, get_args

from pydantic import ConfigDict, Field, StrictFloat, StrictInt, model_serializer, model_validator

from rubricgate.models.base import Meaning, Severity, StrictModel, drop_empty, known_format
from rubricgate.models.bounds import MAX_BASELINE_TRIALS
from rubricgate.models.dimensions import ordered


class CaseCount(StrictModel):
    # Frozen: a baseline holds one instance for every equal count (Baseline._one_count_per_value).
    model_config = ConfigDict(frozen=True)

    passes: int = Field(ge=0, le=MAX_BASELINE_TRIALS)
    """Trials of the case that passed the dimension."""
    trials: int = Field(ge=1, le=MAX_BASELINE_TRIALS)
    """Trials of the case the dimension was graded on."""
    sessions: tuple[tuple[int, int], ...] = Field(default=(), max_length=10_000)
    """Per session (one `rubricgate run`, or one measured run of `baseline update`), [passes, trials]:
    what lets the gate check that the trials of one run are independent (gating/dependence.py).
    Empty: one session, the totals above; when given, they sum to the totals."""

    @model_validator(mode="after")
    def _passes_within_trials(self) -> "CaseCount":
        if self.passes > self.trials:
            raise ValueError(f"passes {self.passes} > trials {self.trials}")
        if self.sessions:
            if any(not 0 <= x <= n or n < 1 for x, n in self.sessions):
                raise ValueError(f"a session's passes are not within its trials: {self.sessions}")
            if (sum(x for x, _ in self.sessions), sum(n for _, n in self.sessions)) != (self.passes, self.trials):
                raise ValueError(f"sessions {self.sessions} do not sum to passes {self.passes}, trials {self.trials}")
        return self

    @model_serializer(mode="wrap")
    def _without_one_session(self, handler):
        return drop_empty(handler(self), "sessions")

    def runs(self) -> list[tuple[int, int]]:
        """(passes, trials) of each session (one when none was recorded)."""
        return list(self.sessions) or [(self.passes, self.trials)]


class MeasuredWith(StrictModel):
    """What the baseline was measured with: a different reviewer or agent makes it stale."""

    reviewer_digest: str | None = None
    """SHA-256 over the reviewer files' own SHA-256s."""
    agent: str | None = None
    """The agent that reviewed the baseline run."""
    agent_version: str | None = None
    """That agent CLI's version, as its --version printed it."""
    model: str | None = None
    """The model the agent used, as configured or as its transcripts reported it."""
    setup: str | None = None
    """The program the agent started and the variables passed to it (summary reviewer.setup); None: not recorded."""
    run_id: str = ""
    """The run the counts were measured by."""


class BaselineChange(StrictModel):
    at: str
    """When the baseline changed (ISO 8601, UTC)."""
    rates: dict[str, float]
    """The suite rates per dimension after the change."""
    trials: int
    """The most trials any case had after the change."""
    reason: str = ""
    """Why (required to lower a rate: `baseline update --reason`)."""
    run_id: str = ""
    """The run the change took its counts from."""
    cases: list[str] = []
    """The cases a merge (`--from` a partial run) changed."""


# A rate is a number: `true` or "1.0" in baseline.json is a mistake, not 1.0.
Rate = StrictFloat | StrictInt


class RuleRecord(StrictModel):
    """One row of the rule table the baseline was measured with."""

    severity: str
    """The rule's severity in the rubric (critical, warning, suggestion, or the rubric's own word)."""
    kind: str
    """mechanical or judgement, as the rubric's table says."""
    statement: str = ""
    """The rule as the reviewer's files stated it (rules named in rubricgate.yaml)."""
    means: Meaning = ""
    """What the severity word meant under rubricgate.yaml's `tiers:` when that was another word
    (critical, warning or suggestion); empty: the word itself."""

    @model_serializer(mode="wrap")
    def _without_empty_statement(self, handler):
        return drop_empty(handler(self), "statement", "means")

    def meaning(self) -> str:
        """The severity as the tier derivation reads it; '' when not known: a word of the rubric's
        own (`tiers:`) that a baseline written before `means` existed kept without its meaning."""
        if self.means or self.severity in get_args(Severity):
            return self.means or self.severity
        return ""


class Baseline(StrictModel):
    format_version: Annotated[Literal[1, 2, 3, 4], known_format(4)] = 4
    """1: suite rates only (read to be replaced); 2: per-case counts; 3: also the reviewer's files,
    rules and citations; 4: also the agent's program and variables (measured_with.setup)."""
    rates: dict[str, Rate]
    """Suite rates, for display (format 1: what the gate compared against)."""
    trials: int = Field(default=1, ge=1, le=MAX_BASELINE_TRIALS)
    """Format 1: trials per case; format 2: the most any case ran."""
    cases: dict[str, dict[str, CaseCount]] = {}
    """Per case id and dimension, the passes and trials the gate compares a run with."""
    measured_with: MeasuredWith | None = None
    """What the baseline was measured with (a different reviewer, agent or model makes it stale)."""
    history: list[BaselineChange] = []
    """Every change of the baseline, oldest first, with its reason."""
    reviewer_digests: dict[str, str] = {}
    """Format 3: the reviewer the counts were measured with, file by file and rule by rule."""
    rubric_rules: dict[str, RuleRecord] = {}
    """Format 3: the rule table (rule id -> severity and kind) the baseline was measured with."""
    tier_threshold: int | None = Field(default=None, ge=1)
    """Warnings that make a BLOCK."""
    case_digests: dict[str, str] = {}
    """Per case, the digest of what it asked and reviewed when its counts were measured (a case's
    expectations, spec and reviewed files; runner/digests.py case_digest): a case edited since is
    judged as a new case, and its counts are replaced, not pooled, on the next update."""
    cited: dict[str, list[str]] = {}
    """Per case, the rule id of every finding the baseline run's reviewer reported (one entry a
    finding, the most any trial reported): the "cited by the reviewer" half of rule coverage."""

    @model_validator(mode="after")
    def _one_count_per_value(self) -> "Baseline":
        """Equal counts are one object: a suite's cases mostly share a few ({"passes": 3, "trials":
        3} on every dimension), and a 2,000-case baseline held 6,000 CaseCount objects and their
        dicts (~0.9 MB of a run's peak, bench/run_memory.py)."""
        pool: dict[tuple, CaseCount] = {}
        for dims in self.cases.values():
            for dim, count in dims.items():  # the same keys: no dict changes size while read
                dims[dim] = pool.setdefault((count.passes, count.trials, count.sessions), count)
        return self

    @model_validator(mode="after")
    def _rates_are_rates(self) -> "Baseline":
        bad = next((k for k, v in self.rates.items() if not 0.0 <= v <= 1.0), None)
        if bad is not None:
            raise ValueError(f"rates.{bad} is {self.rates[bad]}, not a rate between 0 and 1")
        return self


def suite_rates(cases: dict[str, dict[str, CaseCount]]) -> dict[str, float]:
    """Pooled rate per dimension over every case that holds it: for display, and what a change
    records (BaselineChange.rates)."""
    rates = {}
    for dim in ordered({d for c in cases.values() for d in c}):
        n = sum(c[dim].trials for c in cases.values() if dim in c)
        rates[dim] = round(sum(c[dim].passes for c in cases.values() if dim in c) / n, 6) if n else 0.0
    return rates
