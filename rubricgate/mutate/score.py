"""The mutation score, and for every surviving mutant why it survived and what would kill it."""

from __future__ import annotations

from rubricgate.models.mutation import MutantResult
from rubricgate.mutate.execute import Outcome
from rubricgate.suite.rubric import RubricSpec

CAUGHT = ("killed", "rejected")
RUN = ("killed", "rejected", "flagged", "survived")


def explain(outcome: Outcome, rubric: RubricSpec, agent: str, expecting: list[str] | None = None) -> str:
    """Why the mutant survived (or was only flagged), in one sentence with what to add.
    `expecting`: the cases that expect a finding of the mutant's rule."""
    m = outcome.mutant
    if outcome.status in CAUGHT:
        return ""
    if outcome.status in ("error", "not_run"):
        return outcome.detail
    if outcome.status == "undecided":
        return ("the gate could not decide within the trial budget: raise gate.max_trials_per_case, or add cases "
                "that exercise this edit")
    builtin = agent == "builtin"
    if m.rule == "prompt":
        return ("the builtin reviewer does not read the prompt: only a model reviewer (--agent) can kill it"
                if builtin else "no case's verdict depends on this paragraph: record a case that does")
    rule = rubric.rules.get(m.rule)
    if rule is not None and rule.kind == "judgement" and builtin:
        return ("judgement rule: the builtin reviewer never reports it, so no case run with it can see the edit; "
                "add a case citing it and run mutate with a model reviewer (--agent)")
    if m.rule == "tier:warning-threshold":
        return ("no case sits at the threshold's boundary: add a BLOCK case with exactly N warnings and no critical, "
                "and a WARN case with N - 1")
    if m.kind == "delete-rule" and expecting:
        # Only a statement line can go while cases still name the rule (verdict.rules): they passed.
        return (f"{len(expecting)} case(s) expect a finding of {m.rule} ({', '.join(expecting[:3])}) and still "
                "pass without its statement: the reviewer finds it unprompted; add a case only the statement decides")
    if m.kind == "delete-rule":
        return f"no case expects a finding of {m.rule} (expect.rules): add one (skeleton)"
    return f"no case's tier depends on the severity of {m.rule}: add a case whose only finding is {m.rule} (skeleton)"


def mechanical(outcome: Outcome, rubric: RubricSpec) -> bool:
    """A mutant of a mechanical rule or of the tier derivation: what the builtin reviewer can judge."""
    rule = rubric.rules.get(outcome.mutant.rule)
    return outcome.mutant.rule == "tier:warning-threshold" or (rule is not None and rule.kind == "mechanical")


def score(outcomes: list[Outcome]) -> float | None:
    """Caught (killed or rejected) over the mutants that ran."""
    ran = [o for o in outcomes if o.status in RUN]
    return round(sum(o.status in CAUGHT for o in ran) / len(ran), 4) if ran else None


def score_range(statuses: list[str]) -> tuple[float, float] | None:
    """The score with every undecided mutant counted survived, and counted caught. The score
    leaves undecided mutants out: one caught and nine undecided scored 100%, and passed any
    --min-score though nine edits may go unseen."""
    judged = [s for s in statuses if s in RUN or s == "undecided"]
    if not judged:
        return None
    caught, undecided = sum(s in CAUGHT for s in judged), judged.count("undecided")
    # Rounded as the score is (mutation.json's 0.6667): `--min-score 0.6667` at 2 of 3 caught passes.
    return round(caught / len(judged), 4), round((caught + undecided) / len(judged), 4)


def below_min_score(statuses: list[str], score: float | None, min_score: float) -> str | None:
    """"below" when the score is below --min-score whatever the undecided mutants are, "open" when
    it depends on them (the run could not judge), else None."""
    bounds = score_range(statuses)
    low, high = bounds if bounds else (score or 0.0, score or 0.0)
    if high < min_score:
        return "below"
    return "open" if low < min_score else None


def result(outcome: Outcome, rubric: RubricSpec, agent: str, skeleton: str = "",
           expecting: list[str] | None = None) -> MutantResult:
    m = outcome.mutant
    return MutantResult(id=m.id, kind=m.kind, rule=m.rule, description=m.description, status=outcome.status,
                        detail=outcome.detail, cases=list(outcome.failed_cases),
                        explanation=explain(outcome, rubric, agent, expecting), skeleton=skeleton,
                        seconds=round(outcome.seconds, 3), trials=outcome.trials, cached_trials=outcome.cached)
