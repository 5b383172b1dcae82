"""The viewer's per-run index (rubricgate/view/index.py): what its pages need, read without
parsing a run's summary or any of its transcripts.

Two files in a run folder, both stamped with the summary.json they were built from (size and
mtime): `view-index.json`, the run's head (what the runs page shows), and `view-cases.jsonl`,
every case's trials as one short line each (what a case page reads across runs).
"""

from rubricgate.models.base import StrictModel

# 3: failing_cases counts judged failures alone (2 counted errored and not-run cases); 4: the
# runs a run continues; 5: those it regraded or merged too, and kind subset (`run --only`). An index of an
# earlier format is built again.
INDEX_FORMAT = 5


class RateCell(StrictModel):
    rate: float | None = None
    passes: int = 0
    trials: int = 0
    low: float | None = None
    high: float | None = None
    baseline: float | None = None


class RunHead(StrictModel):
    """One run as the runs page lists it."""

    format_version: int = INDEX_FORMAT
    stamp: str  # "size:mtime_ns" of the summary.json it was built from
    run_id: str
    kind: str = "run"  # run, subset (`run --only`), baseline, record, shard, merged
    branch: str | None = None
    pr: int | None = None
    started_at: str = ""
    finished_at: str = ""
    complete: bool = True
    status: str = ""
    exit_code: int = 0
    method: str = ""
    agent: str = ""
    agent_version: str | None = None
    model: str | None = None
    reviewer: str = ""  # the reviewer files' fingerprint
    reviewer_files: dict[str, str] = {}
    rules: dict[str, list[str]] = {}  # rule id -> [severity, kind]
    rates: dict[str, RateCell] = {}
    cases: int = 0
    trials: int = 0
    failing_cases: int = 0
    flaky_cases: int = 0
    errored: int = 0
    cost_usd: float | None = None
    tokens: int = 0
    run_url: str | None = None
    margin: float | None = None  # the statistical gate's margin (the trend draws it below the baseline)
    changes: list[str] = []  # the first rules changed since the baseline: "rule severity critical -> warning"
    continues: list[str] = []  # the runs whose trials this one holds as its own: continued, regraded or merged


class TrialCell(StrictModel):
    """One trial: its outcome, the dimensions it failed (with why) and its transcript file."""

    n: int
    outcome: str
    tier: str | None = None
    fails: dict[str, str] = {}  # dimension -> "category: reason"
    errored: bool = False
    transcript: str = ""


class CaseCell(StrictModel):
    id: str
    expected: str | None = None
    flaky: bool = False
    trials: list[TrialCell] = []


class RunCases(StrictModel):
    """Every case of a run; stored as view-cases.jsonl: a line {"format_version", "stamp"}, then
    `<case id as JSON>\t<CaseCell>` a line (rubricgate/view/index.py)."""

    format_version: int = INDEX_FORMAT
    stamp: str
    cases: dict[str, CaseCell] = {}
