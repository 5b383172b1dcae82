"""The simulated reviewer, baselines and runs that bench/gate_power.py measures the gate with.

Each simulated CI run draws a suite of per-case pass probabilities, measures a baseline the way
`rubricgate baseline update` does by default (gating/planning.py's baseline_measure: separate
sessions, each every case at the same trials), then runs the suite again through the project's
own code: rubricgate.gating.adaptive.AdaptiveRun (the rounds, looks, confirmations and stopping
the pipeline uses) for the adaptive design, rubricgate.gating.gate.decide once at a fixed number
of trials per case for a fixed design, and rubricgate.gating.compare for the PR workflow.

Within-run dependence (issue 39's definition): in each session (a baseline session, or the run)
every case, with probability rho, repeats one answer for the whole session: one draw of its
trial outcome (all dimensions), repeated for every trial of that session, confirmations
included. Otherwise its trials are independent draws.

Every design of a row runs on the same suites, baselines and trial outcomes (Streams), so the
designs, and two versions of the code, are compared paired.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rubricgate.gating.adaptive import AdaptiveRun, _rates  # noqa: E402
from rubricgate.gating.compare import case_collapses, decide_comparison, dimension_tests  # noqa: E402
from rubricgate.gating.gate import decide  # noqa: E402
from rubricgate.gating.paired import paired_design  # noqa: E402
from rubricgate.gating.planning import baseline_measure  # noqa: E402
from rubricgate.models.baseline import Baseline, CaseCount  # noqa: E402
from rubricgate.models.config import GateConfig  # noqa: E402
from rubricgate.models.dimensions import DIMENSIONS  # noqa: E402

GATE = GateConfig(method="statistical")  # confidence .95, margin .05, max_trials_per_case 10
PR_FIRST = 3  # `compare --base --trials 3`, as the PR workflow `init` writes runs it


def perfect_suite(cases: int, rng: random.Random) -> list[float]:
    return [1.0] * cases


def stable_suite(cases: int, rng: random.Random) -> list[float]:
    """Every case good: 90% never fail, 10% fail 1% of the time."""
    return [1.0 if i / cases < 0.9 else 0.99 for i in range(cases)]


def near_stable_suite(cases: int, rng: random.Random) -> list[float]:
    """70% never fail, 30% fail half a percent of the time."""
    return [1.0 if rng.random() < 0.7 else 0.995 for _ in range(cases)]


def mixed_suite(cases: int, rng: random.Random) -> list[float]:
    """70% at .99, 20% flaky at .3-.8, 10% at .9."""
    out = []
    for i in range(cases):
        u = i / cases
        out.append(0.99 if u < 0.7 else rng.uniform(0.3, 0.8) if u < 0.9 else 0.9)
    return out


SUITES = {"perfect": perfect_suite, "stable": stable_suite, "near-stable": near_stable_suite, "mixed": mixed_suite}


@dataclass
class Scenario:
    name: str
    suite: str  # perfect | stable | near-stable | mixed
    cases: int
    drop: float = 0.0  # points off the verdict dimension's mean over the shared cases
    how: str = "spread"  # spread | flaky | collapse | drift | interleaved (compare --base of a drift) | pr <how> (compare --base)
    fixed_trials: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    rho: float = 0.0  # within-run dependence
    more: int = 1  # runs of the adaptive design for this row: `more` x the table's
    fixed_more: int | None = None  # of its fixed designs (default: `more`)
    continuations: int = 0  # continue an INCONCLUSIVE adaptive run up to this many times
    adaptive: bool = True

    def gate(self) -> GateConfig:
        return GATE


class Session:
    """One run (or one baseline session): per case, with probability rho, one answer repeated."""

    def __init__(self, rng: random.Random, rho: float, seed: int):
        self.rng, self.rho, self.seed, self.fixed = rng, rho, seed, {}

    def trial(self, case: str, p: dict[str, float], draw: random.Random) -> dict[str, bool]:
        if self.rho:
            if case not in self.fixed:
                repeat = random.Random(f"{self.seed}/{case}/repeat").random() < self.rho
                self.fixed[case] = {d: draw.random() < p[d] for d in DIMENSIONS} if repeat else None
            if self.fixed[case] is not None:
                return dict(self.fixed[case])
        return {d: draw.random() < p[d] for d in DIMENSIONS}


class Streams:
    """The run's trial outcomes: per case, one random stream for its design trials and one for its
    confirmations, so the n-th design trial of a case is the same draw in every design of a row."""

    def __init__(self, seed: int, session: Session):
        self.seed, self.rngs, self.session = seed, {}, session

    def trial(self, case: str, confirm: bool, p: dict[str, float]) -> dict[str, bool]:
        rng = self.rngs.get((case, confirm))
        if rng is None:
            rng = self.rngs[(case, confirm)] = random.Random(f"{self.seed}/{case}/{confirm}")
        return self.session.trial(case, p, rng)


def draw_baseline(probs: dict[str, float], rng: random.Random, rho: float) -> Baseline:
    """Measured as `baseline update` does by default: its sessions, each a session of its own."""
    sessions, per = baseline_measure(len(probs), len(DIMENSIONS), GATE, 1)
    runs: dict[str, dict[str, list[tuple[int, int]]]] = {c: {d: [] for d in DIMENSIONS} for c in probs}
    for s in range(sessions):
        session = Session(rng, rho, rng.getrandbits(32))
        for c, p in probs.items():
            draw = random.Random(rng.getrandbits(32))
            outs = [session.trial(c, {d: p for d in DIMENSIONS}, draw) for _ in range(per)]
            for d in DIMENSIONS:
                runs[c][d].append((sum(o[d] for o in outs), per))
    cases = {c: {d: CaseCount(passes=sum(x for x, _ in r), trials=sum(n for _, n in r), sessions=r)
                 for d, r in dims.items()} for c, dims in runs.items()}
    return Baseline(rates={d: 1.0 for d in DIMENSIONS}, trials=sessions * per, cases=cases)


def current_probs(s: Scenario, probs: dict[str, float]) -> dict[str, dict[str, float]]:
    """Per case and dimension, the run's pass probability under the scenario."""
    verdict, how = dict(probs), s.how.removeprefix("pr ")
    if how in ("spread", "drift", "interleaved") and s.drop:
        mean = sum(probs.values()) / len(probs)
        verdict = {c: p * (1 - s.drop / mean) for c, p in probs.items()}
    elif how == "flaky":
        flaky = [c for c, p in probs.items() if p < 0.85]
        share = s.drop * len(probs) / len(flaky)
        verdict = {c: max(0.0, p - share) if c in flaky else p for c, p in probs.items()}
    elif how == "collapse":
        victim = next(c for c, p in probs.items() if p >= 0.999)
        verdict = {**probs, victim: 0.0}
    return {c: {d: (verdict[c] if d == "verdict" else p) for d in DIMENSIONS} for c, p in probs.items()}


def one_run(s: Scenario, rng: random.Random, fixed: int | None) -> tuple[int, int, int]:
    """(exit code, trials spent, continuations taken) of one simulated run; fixed=None: adaptive."""
    probs = {f"c{i}": p for i, p in enumerate(SUITES[s.suite](s.cases, rng))}
    baseline = draw_baseline(probs, rng, s.rho)
    now = current_probs(s, probs)
    seed = rng.getrandbits(64)
    streams = Streams(seed, Session(rng, s.rho, seed))
    if s.how == "interleaved":  # drift: both sides at the day's rates
        return (*interleaved_run(now, now, fixed or 1, seed, s.rho), 0)
    if s.how.startswith("pr "):  # compare --base: base at the suite's rates, head at the scenario's
        base = current_probs(Scenario(s.name, s.suite, s.cases), probs)
        if fixed is None:
            return (*paired_adaptive_run(base, now, PR_FIRST, seed), 0)
        return (*interleaved_run(base, now, fixed, seed, s.rho), 0)
    if fixed is not None:
        return (*fixed_run(baseline, now, fixed, streams), 0)
    return adaptive_run(baseline, now, streams, s.continuations)


def adaptive_run(baseline: Baseline, now: dict[str, dict[str, float]], streams: Streams,
                 continuations: int = 0, gate: GateConfig = GATE) -> tuple[int, int, int]:
    run = AdaptiveRun(baseline, gate, list(now), first=1)
    taken = 0
    while True:
        for case, _, confirm in run.next_batch():
            run.record(case, streams.trial(case, confirm, now[case]), confirm)
        result = run.look()
        if not result.stop:
            continue
        if result.decision.status == "inconclusive" and taken < continuations and run.extend():
            taken += 1
            continue
        return result.decision.exit_code, result.trials, taken


def fixed_run(baseline: Baseline, now: dict[str, dict[str, float]], trials: int, streams: Streams,
              gate: GateConfig = GATE) -> tuple[int, int]:
    per_case = draw_counts(now, trials, streams)
    decision, _ = decide(_rates(per_case, DIMENSIONS), baseline, gate, per_case)
    return decision.exit_code, trials * len(now)


def interleaved_run(base: dict[str, dict[str, float]], head: dict[str, dict[str, float]], trials: int, seed: int,
                    rho: float, gate: GateConfig = GATE) -> tuple[int, int]:
    """`rubricgate compare --base` at a fixed number of rounds (the strict gate's, or --trials at
    the budget): base and head in the same job (each side its own session under dependence)."""
    sides = []
    for side, now in (("base/", base), ("head/", head)):
        streams = Streams(seed, Session(random.Random(seed), rho, hash((seed, side)) & 0xFFFFFFFF))
        sides.append(draw_counts(now, trials, streams, side))
    decision = decide_comparison(dimension_tests(sides[0], sides[1], gate), gate,
                                 case_collapses(sides[0], sides[1], gate))
    return decision.exit_code, 2 * trials * len(base)


def paired_adaptive_run(base: dict[str, dict[str, float]], head: dict[str, dict[str, float]], first: int, seed: int,
                        gate: GateConfig = GATE) -> tuple[int, int]:
    """`rubricgate compare --base --trials first` under the statistical gate (gating/paired.py): one
    trial a case a side per round (each round a run of its own), a look after round `first` and
    after every round up to gate.max_trials_per_case, stopping at the first look that decides."""
    design = paired_design(len(base), first, gate.max_trials_per_case, gate, len(DIMENSIONS))
    streams = {side: Streams(seed, Session(random.Random(seed), 0.0, 0)) for side in ("base/", "head/")}
    counts: dict[str, dict[str, dict[str, list[int]]]] = {side: {c: {d: [0, 0] for d in DIMENSIONS} for c in base}
                                                          for side in streams}
    for r in range(1, design.looks[-1] + 1):
        for side, now in (("base/", base), ("head/", head)):
            for case, p in now.items():
                out = streams[side].trial(side + case, False, p)
                for d in DIMENSIONS:
                    counts[side][case][d][0] += out[d]
                    counts[side][case][d][1] += 1
        k = design.index(r)
        if k is None:
            continue
        frozen = [{c: {d: (x, n) for d, (x, n) in dims.items()} for c, dims in counts[side].items()} for side in streams]
        look = design.look(k)
        decision = decide_comparison(dimension_tests(frozen[0], frozen[1], gate, look), gate,
                                     case_collapses(frozen[0], frozen[1], gate, look))
        if decision.status != "inconclusive" or k == len(design.looks) - 1:
            return decision.exit_code, 2 * r * len(base)
    raise AssertionError("the last look always returns")


def draw_counts(now: dict[str, dict[str, float]], trials: int, streams: Streams,
                stream: str = "") -> dict[str, dict[str, tuple[int, int]]]:
    """Per case and dimension, (passes, trials) of `trials` design trials from the case's stream."""
    per_case = {}
    for case, p in now.items():
        outs = [streams.trial(stream + case, False, p) for _ in range(trials)]
        per_case[case] = {d: (sum(o[d] for o in outs), trials) for d in DIMENSIONS}
    return per_case
