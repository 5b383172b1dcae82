"""mutation.json: what `rubricgate mutate` measured (rubricgate/mutate/)."""

from rubricgate.models.base import StrictModel


class MutantResult(StrictModel):
    id: str
    kind: str
    rule: str
    description: str
    status: str  # killed | rejected | flagged | undecided | survived | error | not_run
    detail: str = ""
    cases: list[str] = []  # the cases that failed: what killed it
    explanation: str = ""  # why a survivor survived, and what would kill it
    skeleton: str = ""  # the fixture skeleton folder written for it, if any
    seconds: float = 0.0
    trials: int = 0  # trials its suite run recorded
    cached_trials: int = 0  # of those, answers replayed from the trial cache (--cache)


class SkippedMutant(StrictModel):
    id: str
    rule: str
    reason: str


class MutationReport(StrictModel):
    format_version: int = 1
    agent: str
    jobs: int
    shard: str = ""
    mutants: list[MutantResult]
    skipped: list[SkippedMutant] = []
    killed: int  # killed + rejected: edits the suite cannot pass
    undecided: int = 0  # INCONCLUSIVE within the trial budget (statistical gate): in no score
    score: float | None  # killed / mutants decided (killed, rejected, flagged, survived)
    control_status: str = ""  # the unmutated run: survived (PASS) or undecided
    mechanical_score: float | None  # the same over mutants of mechanical rules and the tier derivation
    control_seconds: float = 0.0  # the unmutated run
    wall_seconds: float = 0.0
    interrupted: bool = False  # stopped (Ctrl-C, SIGTERM): the mutants not run are `not_run`
