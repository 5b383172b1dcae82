"""summary.json, events and replay artifacts: what a run writes."""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, model_serializer, model_validator

# CaseSpec and AgentSupport live in their own modules so `validate` and `agents` load them
# without every result and transcript model (bench/startup.py); they stay importable from here.
from rubricgate.models.agent_support import AgentSupport
from rubricgate.models.base import Meaning, Outcome, RunFile, StrictModel, Tier, drop_empty, known_format
from rubricgate.models.case import CaseSpec
from rubricgate.models.coverage import RuleChange
from rubricgate.models.failures import FailureClass
from rubricgate.models.transcript import Attempt, ToolCall, Transcript, Usage
from rubricgate.models.verdict import Finding, ParsedVerdict, Verdict

GradeCategory = Literal[
    "wrong_tier", "missed_rule", "unexpected_rule", "no_verdict", "malformed_verdict",
    "forbidden_tool", "missing_tool", "too_many_steps", "agent_error", "timeout", "not_run",
    "errored",  # infrastructure failure after every retry: no grader judged it, excluded from rates
]

# run: gated; baseline: a `baseline update` run, measured and not gated; record: `record`'s one run
RunKind = Literal["run", "baseline", "record"]


class Grade(StrictModel):
    # Frozen: graders hand out one instance for every equal grade (graders/shared.py), so a
    # 2,000-case run holds a few dozen grades, not 6,000.
    model_config = ConfigDict(frozen=True)

    passed: bool
    category: GradeCategory | None = None
    reason: str = ""


class TrialResult(StrictModel):
    case_id: str
    trial: int
    outcome: Outcome
    reported_tier: Tier | None = None
    effective_tier: Tier | None = None
    escalated: bool = False
    grades: dict[str, Grade]
    steps: int = 0
    tool_calls: list[str] = []
    verdict_warnings: list[str] = []
    termination: str = "completed"
    exit_code: int | None = 0
    duration_s: float = 0.0
    input_tokens: int | None = 0  # None: the agent reported no token counts
    output_tokens: int | None = 0
    cost_usd: float | None = None
    model: str | None = None  # as the agent reported it (transcript.model)
    cached: bool = False
    transcript: RunFile = ""  # path relative to the run dir
    # Infrastructure failed on every attempt (API, auth, missing CLI, sandbox): the reviewer was
    # never judged, so the trial is excluded from every rate and counted against gate.max_errored.
    errored: bool = False
    # Why the run did not complete (models/failures.py; None when it did) and what the harness saw
    # that decided it: an errored trial's class is an infrastructure one.
    failure: FailureClass | None = None
    evidence: str = ""
    # A confirmation trial of the statistical gate's adaptive rounds (a reliable case re-tried
    # after it failed): tested on its own by the per-case family, never in a dimension's rate.
    confirmation: bool = False
    # The run that ran it, when another run holds it (a continuation takes up the trials of the run
    # it continues; '': the summary's own run): a session of its own for `baseline update --from`.
    session: str = ""
    attempts: list[Attempt] = []  # every attempt, when there was more than one
    run_error: str = ""  # the run ended in an error even though a verdict was graded
    notes: list[str] = []  # stream cross-checks (turn counts, ...)
    findings: list[Finding] = []  # the verdict's findings, as the reviewer wrote them


def judged_failed(trial: TrialResult) -> bool:
    """A trial the reviewer was judged on and failed. One that errored (infrastructure) or that the
    budget refused (not_run) was never judged: its case is errored or not run, never failing."""
    return not trial.errored and any(not g.passed and g.category != "not_run" for g in trial.grades.values())


class CaseSummary(StrictModel):
    id: str
    source: str
    tags: list[str] = []
    expected_tier: Tier | None = None
    rates: dict[str, float] = {}
    intervals: dict[str, list[float]] = {}  # Wilson [low, high] per dimension
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    flaky: bool = False
    trials: list[TrialResult] = []
    why: str = ""  # what the case protects (task `why:`, fixture expect.yaml `why:`)
    workspace_paths: dict[str, str] = {}  # neutral path in the workspace -> source path
    # What the case asks and reviews (runner/digests.py case_digest, meaning only): baseline.json keeps
    # it per case, so a case edited since the baseline was measured is not judged against it.
    digest: str = ""

    # A run's cases of equal counts share one read-only rates and intervals (gating/case_rows.py).
    # deepcopy and pickle make one copy of an object for all that hold it: the cases of a copied
    # summary would share one plain dict, and an edit of one case's rates would be every such
    # case's. A copied case takes dicts of its own instead.
    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> "CaseSummary":
        copied = super().__deepcopy__(memo)
        copied._own_rows()
        return copied

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._own_rows()

    def _own_rows(self) -> None:
        values = self.__dict__
        values["rates"] = dict(values["rates"])
        values["intervals"] = {d: list(pair) for d, pair in values["intervals"].items()}


class RuleRow(StrictModel):
    severity: str
    kind: str
    statement: str = ""  # the rule as the reviewer's files state it (rules named in rubricgate.yaml)
    means: Meaning = ""  # what the severity word means under `tiers:` when that is another word ("": the word)

    @model_serializer(mode="wrap")
    def _without_empty_statement(self, handler):
        return drop_empty(handler(self), "statement", "means")


class ReviewerRecord(StrictModel):
    """What the reviewer was: a SHA-256 per reviewer file, and the rubric's rule table."""

    digests: dict[str, str] = {}
    rules: dict[str, RuleRow] = {}
    # One sha256 over `digests` (json, sorted keys): what baseline format 2 keeps as reviewer_digest.
    fingerprint: str = ""
    tier_threshold: int | None = None  # warning findings that make a BLOCK (the rubric's tier derivation)
    # One digest of the program the agent started and the values of the variables passed to it
    # beyond the machine's own (gating/design.py agent_setup): what the files do not show of the
    # reviewer (an endpoint variable pointed at another model). "": not recorded.
    setup: str = ""


class RateRow(StrictModel):
    rate: float | None
    passes: int
    trials: int
    low: float | None = None
    high: float | None = None
    baseline: float | None = None
    delta: float | None = None
    status: Literal["ok", "regression", "inconclusive", "no_baseline"] = "ok"
    # The gate's evidence: Holm-adjusted exact p (statistical), the upper confidence bound on the
    # drop over the shared cases, and the label the reports show (see rubricgate/gating/gate.py).
    p_value: float | None = None
    drop_upper: float | None = None
    label: str = ""


def shared_phrase(judged: int, shared: int) -> str:
    """'36 of 39 shared case(s) (3 with no judged trial)', or '39 shared case(s)': the shared cases
    a count covers. A case whose every trial errored is shared yet in no count, and "9/36 on 39
    shared case(s)" read as if the 36 trials came from 39 cases."""
    if judged >= shared:
        return f"{judged} shared case(s)"
    return f"{judged} of {shared} shared case(s) ({shared - judged} with no judged trial)"


class GateDetail(StrictModel):
    """What the gate compared: the cases both runs share, and the ones only one side has."""

    shared_cases: int = 0
    judged_cases: int | None = None  # of the shared, those with a judged trial (None: a summary from before)
    new_cases: list[str] = []  # in the run, not in the baseline
    missing_cases: list[str] = []  # in the baseline, not in the run
    edited_cases: list[str] = []  # in both, but edited since the baseline was measured: judged as new cases
    new_case_rates: dict[str, RateRow] = {}
    new_cases_rule: str = "report"
    interval: str = ""  # what the suite intervals cover
    notes: list[str] = []
    # The per-case family (rubricgate/gating/collapse.py), one line per (case, dimension) and kind:
    case_regressions: list[str] = []  # collapses: established and beyond the margin (REGRESSION)
    suspected: list[str] = []  # every trial failed where the baseline never failed, not testable here (INCONCLUSIVE)
    unconfirmed: list[str] = []  # every trial failed, the case's own test not established (a note)
    flaky: list[str] = []  # stable baseline cases with mixed outcomes now (a note)
    # Confirmation trials of re-tried cases, kept apart from the rates the gate compared:
    # case -> dimension -> [passes, trials] (the trials themselves carry `confirmation: true`).
    confirmations: dict[str, dict[str, list[int]]] = {}
    # The within-run dependence check (gating/dependence.py): status, the correlation used, the evidence.
    dependence: dict[str, Any] = {}

    def cases_phrase(self) -> str:
        """The shared cases the rates, baseline and delta cover (shared_phrase)."""
        judged = self.shared_cases if self.judged_cases is None else self.judged_cases
        return shared_phrase(judged, self.shared_cases)
    # A run continued after it ended INCONCLUSIVE (gating/continuation.py): the runs it continues
    # (their trials are this run's too), how many continuations the design has taken, what
    # identifies the design (baseline, gate settings, cases), and the one next step when undecided.
    continues: list[str] = []
    continuations: int = 0
    design_key: str = ""
    next: str = ""
    plan: dict[str, Any] = {}  # the power plan: smallest detectable drop per dimension (gating/power.py)
    looks: list[dict[str, Any]] = []  # adaptive rounds: trials so far and outcome per look


class Decision(StrictModel):
    # baseline: measured for baseline.json, not gated; inconclusive: a change the suite cannot see,
    # or neither PASS nor REGRESSION at this size (exit 2, or 0 under gate.inconclusive: pass)
    status: Literal["pass", "regression", "error", "baseline", "inconclusive"]
    exit_code: int
    method: str = "strict"
    reasons: list[str] = []
    warnings: list[str] = []


class CacheRejection(StrictModel):
    """A cache entry refused because its signature did not hold; its trial was re-run."""

    case_id: str
    trial: int
    reason: str


class Summary(StrictModel):
    format_version: Annotated[int, known_format(1)] = 1
    run_id: str
    started_at: str
    finished_at: str = ""
    complete: bool = True
    # baseline: a `baseline update` run, measured and not gated; record: the one run `record` makes of a new task
    kind: RunKind = "run"
    # The runs whose trials this summary holds besides its own: those it continues, the shards it
    # merged, the run it regraded. A baseline counts each run once, whichever summary brings it
    # (gating/baseline.py).
    counted_runs: list[str] = []
    agent: str
    agent_version: str | None = None
    # Per agent CLI the run used that has a tested range; a warning when outside it.
    agent_support: dict[str, AgentSupport] = {}
    model: str | None = None
    trials_default: int = 1
    decision: Decision
    rates: dict[str, RateRow]
    rates_by_tag: dict[str, dict[str, float]] = {}
    intervals_by_tag: dict[str, dict[str, list[float]]] = {}
    cases: list[CaseSummary]
    flaky_cases: list[str] = []
    errored: list[str] = []  # "case #trial: reason" of every errored trial
    # Suite pass@k / pass^k (tau-bench), each case at its own trials, averaged over the cases with
    # the same k: {k, cases, pass_at_k, pass_hat_k} for the most common k, `by_k` for every k, and
    # `all_pass` (trials that passed every dimension: what pass@k counts).
    pass_k: dict[str, Any] = {}
    gate: GateDetail | None = None
    cost: dict[str, Any] = {}
    config: dict[str, Any] = {}
    # How agent processes were isolated: "bwrap" (kernel sandbox) or "copy-only" (a throwaway
    # copy and nothing more, said loudly everywhere), with why copy-only was chosen.
    isolation: Literal["bwrap", "copy-only"] = "bwrap"
    isolation_reason: str = ""
    # The sandbox's network (agent.sandbox_network; docs/isolation.md); None: copy-only, or a
    # summary written before it was recorded. "shared" is warned like copy-only.
    sandbox_network: Literal["allowlist", "none", "shared"] | None = None
    cache_rejected: list[CacheRejection] = []  # forged or damaged entries, re-run
    reviewer: ReviewerRecord | None = None  # this run's reviewer files and rule table
    baseline_reviewer: ReviewerRecord | None = None  # the baseline's, when it is known
    run_url: str | None = None  # the CI run (GitHub Actions) that produced this summary
    # Which cases exercise each rule (rubricgate/suite/coverage.py Coverage.as_dict), and the
    # rules the reviewer changed since the baseline with the cases that see them.
    coverage: dict[str, Any] | None = None
    rule_changes: list[RuleChange] = []

    @model_validator(mode="after")
    def _counted_runs_of_an_older_summary(self) -> "Summary":
        """A summary written before `counted_runs` existed names the runs whose trials it holds
        only where it kept them then: the runs a continuation took up (gate.continues) and the
        run a regrade re-graded (config.regraded_from). Read from there, or `baseline update
        --from` a run and its continuation counted the first run's trials twice."""
        if not self.counted_runs:
            regraded = self.config.get("regraded_from")
            held = [*(self.gate.continues if self.gate else []), *([regraded] if isinstance(regraded, str) else [])]
            if held:
                self.counted_runs = list(dict.fromkeys(r for r in held if r))
        return self


LEFT_OUT_CASES = "left_out_cases"  # summary.config: how many of the suite's cases the run did not select (`--only`)


def of_some_cases(summary: Summary) -> bool:
    """A gated run of some of the suite's cases (`--only`): no point of the suite's trend."""
    return summary.kind == "run" and bool(summary.config.get(LEFT_OUT_CASES))


def held_runs(summary: Summary) -> list[str]:
    """The runs whose trials `summary` holds as its own (it continued, regraded or merged them):
    beside it in a trend or an export, each would count those trials a second time."""
    return list(dict.fromkeys([*summary.counted_runs, *(summary.gate.continues if summary.gate else [])]))


def superseded_runs(holders: dict[str, list[str]], finished: Mapping[str, str] | None = None) -> set[str]:
    """Of runs (id -> the runs it holds, `held_runs`), those no point of a trend may stand for:
    each run another holds, and each run holding trials another run holds too that holds more or,
    as many, is newer (its id's start second, then `finished`: id -> finished_at): two regrades of
    one run hold the same trials, and a point for each would test those trials against themselves."""
    holding: dict[str, list[str]] = {}  # a held run -> the runs holding it
    for run_id, runs in holders.items():
        for held in set(runs):
            holding.setdefault(held, []).append(run_id)
    # A run id's random suffix does not order two regrades started in one second (a script's
    # regrade takes half a second): by it the older one was kept half the time.
    ended = finished or {}
    key = {run_id: (len(runs), run_id.split("-", 1)[0], ended.get(run_id, ""), run_id)
           for run_id, runs in holders.items()}
    # Of the runs holding one run's trials, each but the one holding most (the newest of equals):
    # one pass over what is held, not every pair of runs (a trend of a long history).
    out = set(holding)
    for runs in holding.values():
        out.update(set(runs) - {max(runs, key=key.__getitem__)})
    return out


class ReplayArtifact(StrictModel):
    format_version: Annotated[int, known_format(1)] = 1
    case: CaseSpec
    trial: TrialResult
    transcript: dict[str, Any]
    # What the reviewer was shown: each reviewed file as it was in the run (overlay or repository).
    reviewed_files: dict[str, str] = {}


# What every trial builds as it ends (its transcript, verdict and result), then what the run's end
# builds: `run` builds both, in this order, once its first agents are out (reports/ahead.py).
TRIAL_MODELS = (ToolCall, Usage, Attempt, Transcript, Finding, Verdict, ParsedVerdict, Grade, TrialResult)
RUN_END_MODELS = (RuleChange, CaseSummary, RuleRow, ReviewerRecord, RateRow, GateDetail, Decision, Summary,
                  ReplayArtifact)
