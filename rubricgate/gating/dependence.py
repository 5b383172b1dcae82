"""Within-run dependence, checked from the data the gate has, not assumed away.

The exact tests (rubricgate/gating/exact.py) treat the trials of a case as independent draws of
the reviewer's randomness. Trials of one run need not be: a per-run cache, temperature 0 with a
per-job seed, or provider state can make a case repeat one answer for a whole run. Then a run's
count of a case varies more than a binomial's, the tests over-count the evidence, and an
unchanged reviewer exits 1 far more often than alpha (half the runs of a mixed 30-case suite when
a case repeats its answer with probability 0.3).

What can tell is the baseline measured in several sessions (separate runs: `rubricgate baseline
update` measures two by default, and pooling a re-measurement adds one). Within a case, the
sessions' counts vary as binomials do when the trials are independent; dependence within a
session spreads them further (by the design effect 1 + (k - 1) rho for k trials a session,
rho the intra-session correlation). The check:

  * per case, the dimension whose rate is nearest one half (the one that tells most), and its
    Pearson dispersion over the sessions, sum_j (x_j - k_j p)^2 / (k_j p (1 - p));
  * summed over the cases that varied, against its exact null distribution: given a case's
    total passes, independent trials land in the sessions as a multivariate hypergeometric
    draw, simulated (DRAWS, seeded by the counts, so the answer is reproducible);
  * rho estimated from the same sum (its excess over the degrees of freedom, per trial pair).

The outcome decides the statistic's unit (rubricgate/gating/evidence.py's Unit):
  independent       several sessions, dispersion within chance (p > LEVEL): trials count one by one;
  nothing to check  no case varied in the baseline: there is nothing for dependence to inflate;
  found             dispersion beyond chance (p <= LEVEL): a session of k trials counts as
                    k / (1 + (k - 1) rho) trials, rho the estimate (at least RHO_FLOOR) when at least
                    MIN_CASES cases varied, else RHO_FLOOR: from one or two cases the estimate is
                    noise (one p = .5 case split 5/0 over two sessions of 5, a 6% event under
                    independence, estimates 1.0, which would make every later run count each
                    case's trials as one and stop at a trial a case);
  unknown           cases varied but the baseline has one session: dependence cannot be ruled
                    out, so each case's run counts as one observation (rho = 1), and the warning
                    says how to re-measure.
Under found and unknown a single case's collapse cannot be shown in one run (its failing trials
may be one repeated answer): the per-case family calls it suspected, never a collapse.

A liberal LEVEL is deliberate: a false finding costs power, a missed one costs false alarms.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Literal

from rubricgate.gating.evidence import TRIAL, Unit
from rubricgate.gating.exact import import_numpy

LEVEL = 0.2  # the dispersion test's level: beyond it, dependence is found
RHO_FLOOR = 0.1  # the least intra-session correlation assumed once dependence is found
RHO_STEP = 0.05  # the correlation used is the estimate rounded up to a multiple of this
MIN_CASES = 3  # varied cases the estimate needs before it is used (fewer: RHO_FLOOR once found)
DRAWS = 2000  # simulated null draws of the dispersion sum
REMEASURE = "rubricgate baseline update --reason 're-measured in sessions'"

Status = Literal["independent", "nothing to check", "found", "unknown"]
Sessions = tuple[tuple[int, int], ...]  # one case's (passes, trials) per session


@dataclass(frozen=True)
class Dependence:
    """What the check found, and the intra-session correlation the statistics then use."""

    status: Status
    rho: float = 0.0
    estimate: float | None = None
    p_value: float | None = None
    sessions: int = 1  # the most sessions any checked case has
    cases: int = 0  # cases the check could use (several sessions, and they varied)

    def unit(self) -> Unit:
        return Unit(self.rho) if self.rho > 0 else TRIAL

    def line(self) -> str:
        """The warning that says why the statistic's unit changed ('' when it did not)."""
        if self.status == "found":
            about = (f"intra-run correlation about {self.estimate:.2f}" if self.cases >= MIN_CASES else
                     f"too few cases varied to estimate the intra-run correlation, {self.rho:.2f} assumed")
            return (f"within-run dependence found: the baseline's sessions vary more than independent trials do "
                    f"(dispersion p {self.p_value:.2g} over {self.cases} case(s); {about}): a run of k trials of a "
                    f"case counts as k / (1 + (k - 1) x {self.rho:.2f}) trials, and a single case's collapse cannot "
                    "be shown in one run")
        if self.status == "unknown":
            return ("within-run dependence cannot be ruled out: baseline.json holds one session per case, so each "
                    "case's run counts as one observation (a single case's collapse cannot be shown in one run); "
                    f"re-measure it in sessions: {REMEASURE}")
        return ""

    def as_json(self) -> dict:
        """summary.json gate.dependence."""
        return asdict(self)


def check(cases: Mapping[str, Mapping[str, Sequence[tuple[int, int]]]]) -> Dependence:
    """The check over these cases (case -> dimension -> sessions' (passes, trials))."""
    chosen: list[Sessions] = []
    varied = False
    for dims in cases.values():
        telling = [tuple(runs) for runs in dims.values() if _varies(runs)]
        varied = varied or bool(telling)
        if telling:
            chosen.append(max(telling, key=_spread))
    if not varied:
        return Dependence("nothing to check")
    several = [runs for runs in chosen if len(runs) > 1]
    if not several:
        return Dependence("unknown", 1.0, sessions=1, cases=0)
    return _dispersion(tuple(sorted(several)))


def baseline_sessions(baseline, case_ids: Sequence[str], dims: Sequence[str]) -> dict:
    """case -> dimension -> sessions of the baseline's counts (models.baseline.CaseCount.runs)."""
    out: dict = {}
    for case in case_ids:
        counts = baseline.cases.get(case, {})
        out[case] = {d: counts[d].runs() for d in dims if d in counts and counts[d].trials}
    return out


def _varies(runs: Sequence[tuple[int, int]]) -> bool:
    x, n = sum(r[0] for r in runs), sum(r[1] for r in runs)
    return 0 < x < n


def _spread(runs: Sessions) -> float:
    x, n = sum(r[0] for r in runs), sum(r[1] for r in runs)
    return (x / n) * (1 - x / n)


@lru_cache(maxsize=256)
def _dispersion(cases: tuple[Sessions, ...]) -> Dependence:
    np = import_numpy()
    observed = sum(_pearson(np, np.array([x for x, _ in runs]), np.array([n for _, n in runs])) for runs in cases)
    seed = int.from_bytes(hashlib.sha256(repr(cases).encode()).digest()[:8], "big")
    rng = np.random.default_rng(seed)
    null = np.zeros(DRAWS)
    for runs in cases:
        sizes = np.array([n for _, n in runs])
        total = sum(x for x, _ in runs)
        # Independent trials: the case's passes fall among its trials at random, session by session.
        draws = rng.multivariate_hypergeometric(sizes, total, size=DRAWS)
        null += _pearson(np, draws, sizes)
    p = float((1 + np.sum(null >= observed - 1e-9)) / (1 + DRAWS))
    df = sum(len(runs) - 1 for runs in cases)
    pairs = sum(n * (n - 1) for runs in cases for _, n in runs) / max(sum(n for runs in cases for _, n in runs), 1)
    estimate = float(min(1.0, max(0.0, (observed / df - 1) / max(pairs, 1e-9)))) if df else 0.0
    most = max(len(runs) for runs in cases)
    if p <= LEVEL:  # the correlation used: the estimate, rounded up to RHO_STEP (a few designs, each cached)
        trusted = estimate if len(cases) >= MIN_CASES else RHO_FLOOR
        used = min(1.0, math.ceil(max(trusted, RHO_FLOOR) / RHO_STEP - 1e-9) * RHO_STEP)
        return Dependence("found", used, estimate, p, most, len(cases))
    return Dependence("independent", 0.0, estimate, p, most, len(cases))


def _pearson(np, passes, sizes):
    """Sum over sessions of (x - k p)^2 / (k p (1 - p)), p the case's pooled rate (rows: draws)."""
    p = passes.sum(axis=-1, keepdims=True) / sizes.sum()
    return (((passes - sizes * p) ** 2) / (sizes * p * (1 - p))).sum(axis=-1)
