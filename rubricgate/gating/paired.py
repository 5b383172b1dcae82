"""The adaptive rounds of `compare --base`: head against base, a look after every round of both.

`rubricgate compare --base REF` runs the suite with the reviewer at REF and as in the working
tree, one trial a case a side per round, base and head in a seeded order (flows/compare_run.py).
Under the statistical gate it looks as `run` does: first after `trials` rounds (`--trials`, else
the config's `trials`), then after every round up to gate.max_trials_per_case, and stops at the
first look that decides. Each round is a separate run of each side, so trials of different
rounds share no run: dependence within a run (gating/dependence.py) cannot make rounds agree.

Both sides grow, so the looks' information is proportional to the rounds (per case
1 / (1/k + 1/k)). The errors over the looks:
  * a false REGRESSION: Lan-DeMets (Pocock type) over the rounds, each look's exact test at the
    nominal level its increment allows under the looks' joint distribution
    (rubricgate/gating/boundaries.py), computed at Holm's first level over the graded
    dimensions, as the run's tests;
  * a false PASS: the union bound, each look's bound calibrated exactly for a design that looks
    once at its sizes (rubricgate/gating/passbound.py) at its share of alpha: PASS_LAST at the
    last look (where the data are most), the rest shared evenly by the earlier ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

from rubricgate.gating.boundaries import nominal_fractions
from rubricgate.gating.evidence import fixed_scores
from rubricgate.gating.sequential import ld_spending, tests_alpha_share
from rubricgate.models.config import GateConfig

PASS_LAST = 0.9  # the PASS bound's share of alpha at the last look; the rest spread over the earlier ones


@dataclass(frozen=True)
class PairedLook:
    """One look's levels: the tests' nominal fraction, the per-case fraction, the PASS scores."""

    spend: float
    case_spend: float
    pass_scores: tuple[float, ...]


@dataclass(frozen=True)
class PairedDesign:
    cases: int
    looks: tuple[int, ...]  # rounds after which the comparison looks
    alpha: float
    margin: float
    spend: tuple[float, ...]
    increments: tuple[float, ...]
    pass_share: tuple[float, ...]

    def look(self, k: int) -> PairedLook:
        """The levels of look k (0-based), after self.looks[k] rounds."""
        n = self.cases * self.looks[k]
        return PairedLook(self.spend[k], self.increments[k],
                          fixed_scores(n, n, self.alpha * self.pass_share[k], self.margin))

    def index(self, rounds: int) -> int | None:
        """The look taken after `rounds` rounds (None: no look there)."""
        return self.looks.index(rounds) if rounds in self.looks else None


def paired_design(cases: int, first: int, most: int, gate: GateConfig, dims: int) -> PairedDesign:
    """The design for `cases` cases a side: looks after `first` rounds and every round up to
    `most` (one look when first >= most), `dims` graded dimensions."""
    alpha = 1 - gate.confidence
    looks = tuple(range(min(first, most), most + 1)) if first < most else (first,)
    increments = ld_spending([r / looks[-1] for r in looks], 1.0)
    cumulative = list(accumulate(increments))[:-1] + [1.0]
    spend = nominal_fractions([float(r) for r in looks], cumulative, alpha * tests_alpha_share(dims)) \
        if len(looks) > 1 else [1.0]
    early = (1 - PASS_LAST) / (len(looks) - 1) if len(looks) > 1 else 0.0
    shares = [early] * (len(looks) - 1) + [PASS_LAST if len(looks) > 1 else 1.0]
    return PairedDesign(cases, looks, alpha, gate.margin, tuple(spend), tuple(increments), tuple(shares))
