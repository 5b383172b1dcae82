"""What a run's reports say first, in the same words on every screen: the PR comment, the step
summary, report.html and the viewer's run page all open with one line (the decision, the
dimension and its drop, the cause and the cases), then the next step, then the table.

Pure functions over the Summary, returning plain text (each renderer escapes it):

- `lead`: the one line. Its cause is the changed rule the failing cases exercise (or any
  changed rule, or the reviewer files that changed, or a changed agent, CLI or model);
- `partial`: what a run that did not finish, or could not be judged, ran and did not run, and why;
- `case_stories`: each failing case with its trials grouped ("3/3 trials: verdict wrong_tier:
  expected BLOCK, got WARN"), failing first;
- `unconfirmed` and `flaky`: two different things with two names. "flaky" is only a case whose
  trials disagree; a case stable in the baseline that fails now without the drop being
  established is an unconfirmed drop, told in one grouped line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rubricgate.gating.changes import change_line
from rubricgate.models.coverage import RuleChange
from rubricgate.models.results import CaseSummary, RateRow, Summary, TrialResult, judged_failed
from rubricgate.reports import explain
from rubricgate.reports.explain import reviewer_change

BADGES = {"pass": "PASS", "regression": "REGRESSION", "inconclusive": "INCONCLUSIVE", "error": "COULD NOT JUDGE",
          "baseline": "BASELINE"}
# A shape beside each badge's text, so no decision is told by colour alone (HTML: aria-hidden).
GLYPHS = {"pass": "✓", "regression": "✗", "inconclusive": "?", "error": "!", "baseline": "◆"}
EMOJI = {"pass": "✅", "regression": "❌", "inconclusive": "❔", "error": "⚠️", "baseline": "📏"}
SHOWN_CASES = 3  # named in the one line; the rest counted
UNCONFIRMED = "unconfirmed drop"  # the gate's word for a stable case failing without an established drop


def badge(summary: Summary) -> str:
    """The decision in one or two words, as every badge shows it."""
    return BADGES.get(summary.decision.status, summary.decision.status.upper())


LET_THROUGH_WORDS = "passed by gate.inconclusive: pass"  # an undecided run that key let exit 0, in every report


@dataclass
class Lead:
    """The one line every report starts with."""

    status: str
    badge: str
    what: str  # the dimensions and their drops, or what stopped the run
    cause: str = ""  # "after <rule> <change>", "" when there is none to name
    cases: list[str] = field(default_factory=list)
    cases_label: str = "failing"
    exit_code: int = 0
    qualifier: str = ""  # "passed by gate.inconclusive: pass"

    def text(self) -> str:
        """'REGRESSION: verdict 94.9% vs 100.0% baseline (-5.1 pp) after ...; failing: a, b (+1 more)'."""
        head = self.badge + (f" ({self.qualifier})" if self.qualifier else "")
        parts = [p for p in (self.what, self.cause) if p]
        line = f"{head}: {' '.join(parts)}" if parts else head
        return line + (f"; {self.cases_label}: {shown_cases(self.cases)}" if self.cases else "")


def shown_cases(cases: list[str]) -> str:
    more = len(cases) - SHOWN_CASES
    return ", ".join(cases[:SHOWN_CASES]) + (f" (+{more} more)" if more > 0 else "")


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def pp(delta: float | None) -> str:
    """-0.051 -> '-5.1 pp', 0 -> '0.0 pp' (as the rates tables write it)."""
    if delta is None:
        return "n/a"
    return "0.0 pp" if abs(delta) < 5e-4 else f"{delta * 100:+.1f} pp"


def _row_text(dim: str, row: RateRow) -> str:
    if row.baseline is None:
        return f"{dim} {pct(row.rate)} (no baseline)"
    return f"{dim} {pct(row.rate)} vs {pct(row.baseline)} baseline ({pp(row.delta)})"


def lead(summary: Summary) -> Lead:
    """Decision, dimension and drop, cause and cases: by decision."""
    d = summary.decision
    out = Lead(d.status, badge(summary), "", exit_code=d.exit_code)
    if (d.status == "inconclusive" and d.exit_code == 0) or passed_unseen(summary):
        out.qualifier = LET_THROUGH_WORDS
    builder = {"regression": _regression, "inconclusive": _inconclusive, "pass": _pass, "baseline": _baseline}
    return builder.get(d.status, _error)(summary, out)


def _regression(s: Summary, out: Lead) -> Lead:
    rows = [_row_text(dim, r) for dim, r in s.rates.items() if r.status == "regression"]
    collapses = s.gate.case_regressions if s.gate else []
    out.what = "; ".join(rows) or (f"{len(collapses)} case(s) collapsed" if collapses else _first(s.decision.reasons))
    failing = [c.id for c in failing_cases(s)]
    out.cause, out.cases = cause(s, set(failing)), failing
    return out


def held_blind(s: Summary) -> list[RuleChange]:
    """The changes no case exercises that hold this decision (each one of its reasons): one that
    gate.inconclusive: pass let through is no reason, whatever else held the run."""
    reasons = set(s.decision.reasons)
    return [c for c in s.rule_changes if not c.cases and change_line(c) in reasons]


def _inconclusive(s: Summary, out: Lead) -> Lead:
    blind = held_blind(s)
    open_rows = [(dim, r) for dim, r in s.rates.items() if r.status == "inconclusive"]
    if open_rows:
        out.what = "; ".join(f"{_row_text(dim, r)}: {r.label}" if r.label else _row_text(dim, r)
                             for dim, r in open_rows)
        out.cause = cause(s, {c.id for c in failing_cases(s)})
    elif blind:
        out.what = "; ".join(f"{c.rule} {arrow(c.detail)} and no case exercises it" for c in blind[:2])
        out.what += f" (+{len(blind) - 2} more)" if len(blind) > 2 else ""
    elif suspected_cases(s):
        out.what = "every trial of a case failed where its baseline never did, not testable at this size"
    else:
        out.what = _first(s.decision.reasons)
    for cases, label in ((suspected_cases(s), "collapse suspected"), (unconfirmed_cases(s), "unconfirmed drops"),
                         ([c.id for c in failing_cases(s)], "failing")):
        if cases:
            out.cases, out.cases_label = cases, label
            break
    return out


def _pass(s: Summary, out: Lead) -> Lead:
    margin = (s.gate.plan or {}).get("margin") if s.gate else None
    held = "every dimension within the margin" if s.decision.method == "statistical" else "no rate below baseline"
    if margin is not None:
        held = f"every dimension within the {margin * 100:.0f}-point margin"
    # A dimension with no baseline was judged against nothing: never listed as within the margin.
    judged = ", ".join(f"{d} {pct(r.rate)}" for d, r in s.rates.items() if r.status != "no_baseline")
    unmeasured = [f"{d} {pct(r.rate)}" for d, r in s.rates.items() if r.status == "no_baseline"]
    beside = f"; no baseline: {', '.join(unmeasured)}" if unmeasured else ""
    out.what = f"{held} ({judged}){beside}{_partly(s)}"
    unseen = [c for c in s.rule_changes if not c.cases]
    if unseen:  # let through by gate.inconclusive: pass; the line says what the suite cannot see
        out.cause = "although no case exercises " + "; ".join(f"{c.rule} {arrow(c.detail)}" for c in unseen[:2])
        out.cause += f" (+{len(unseen) - 2} more)" if len(unseen) > 2 else ""
        return out
    change = cause(s, set())
    out.cause = change.replace("after ", "with ", 1) if change.startswith("after ") else ""
    return out


def _partly(s: Summary) -> str:
    """' on 1 of the baseline's 4 cases (3 not judged: left out, or every trial errored)', or '': a
    PASS of the cases `--only` chose read as the suite's in the headline, the rest in a warning."""
    missing = s.gate.missing_cases if s.gate else []
    if not missing:
        return ""
    shared = s.gate.shared_cases if s.gate else 0
    return (f" on {shared} of the baseline's {shared + len(missing)} cases ({len(missing)} not judged: "
            "left out, or every trial errored)")


def passed_unseen(s: Summary) -> bool:
    """A PASS beside a changed rule no case exercises: `gate.inconclusive: pass` gave one before
    such a run was INCONCLUSIVE let through (gating/changes.py change_aware); a run recorded so
    is re-rendered saying so in every report's first line."""
    return s.decision.status == "pass" and s.decision.exit_code == 0 and any(not c.cases for c in s.rule_changes)


def _baseline(s: Summary, out: Lead) -> Lead:
    out.what = (f"measured {len(s.cases)} case(s) × {trial_shape(s)} for baseline.json "
                f"({', '.join(f'{d} {pct(r.rate)}' for d, r in s.rates.items())}); not gated")
    return out


def _error(s: Summary, out: Lead) -> Lead:
    facts = partial(s)
    out.what = facts.headline() if facts.why else _first(s.decision.reasons)
    errored = [c.id for c in s.cases if c.trials and all(t.errored for t in c.trials)]
    out.cases, out.cases_label = (errored, "no judged trial") if errored else ([], "")
    return out


def _first(reasons: list[str]) -> str:
    return reasons[0] if reasons else ""


def arrow(detail: str) -> str:
    return detail.replace(" -> ", " → ")


def trial_shape(s: Summary) -> str:
    """'3 trials' or '1-3 trials' per case."""
    counts = sorted({len(c.trials) for c in s.cases} or {0})
    return f"{counts[0]} trial(s)" if len(counts) == 1 else f"{counts[0]}-{counts[-1]} trials"


def cause(s: Summary, cases: set[str]) -> str:
    """What changed since the baseline that these cases see: the changed rules they exercise (or
    any changed rule), else the reviewer files that differ, else a changed agent, CLI or model."""
    changes = [c for c in s.rule_changes if c.change != "file"]
    hit = [f"{c.rule} {arrow(c.detail)}" for c in changes if cases & set(c.cases)] or [
        f"{c.rule} {arrow(c.detail)}" for c in changes] or _rule_table_changes(s)
    if hit:
        return f"after {'; '.join(hit[:2])}" + (f" (+{len(hit) - 2} more rule changes)" if len(hit) > 2 else "")
    files = reviewer_change(s).files or [c.rule for c in s.rule_changes if c.change == "file"]
    if files:
        return f"after {', '.join(files[:3])} changed"
    drift = [n for n in (s.gate.notes if s.gate else []) if n.startswith("the baseline was measured with")]
    if drift:
        return "with the reviewer files unchanged: " + drift[0]
    return ""


def _rule_table_changes(s: Summary) -> list[str]:
    """The rule table's changes against the baseline's reviewer, when the run recorded no rule
    changes of its own (a summary rendered again, or one from before they were recorded)."""
    change = reviewer_change(s)
    return ([f"{r} severity {old} → {new}" for r, old, new in change.severity]
            + [f"{r} added ({sev})" for r, sev in change.added]
            + [f"{r} removed (was {sev})" for r, sev in change.removed])


def failing_cases(s: Summary) -> list[CaseSummary]:
    """Cases with a judged trial that failed, in suite order (a trial that errored was never
    judged: its case is errored, not failing)."""
    return [c for c in s.cases if any(judged_failed(t) for t in c.trials)]


def errored_cases(s: Summary) -> list[CaseSummary]:
    """Cases with an errored trial (infrastructure: the reviewer was never judged), in suite order."""
    return [c for c in s.cases if any(t.errored for t in c.trials)]


def errored_line(s: Summary) -> str:
    """One line for the errored cases, or ''."""
    cases = errored_cases(s)
    if not cases:
        return ""
    trials = sum(t.errored for c in cases for t in c.trials)
    return (f"{trials} errored trial(s) in {len(cases)} case(s) (infrastructure: never judged, in no rate): "
            + ", ".join(c.id for c in cases[:10]) + (" ..." if len(cases) > 10 else ""))


# --- cases and their trials, grouped ------------------------------------------------------


@dataclass
class Problem:
    """One way a case failed, over its dimensions and trials: 'verdict wrong_tier: expected BLOCK,
    got WARN' in 2 trials; an errored trial's one reason for every dimension, once."""

    dimensions: list[str]
    category: str
    reason: str
    trials: list[int]

    @property
    def dimension(self) -> str:
        return ", ".join(self.dimensions)


@dataclass
class CaseStory:
    case: CaseSummary
    failed: int  # trials that failed a dimension or errored
    problems: list[Problem]
    first: TrialResult | None  # the first failing trial (its findings are shown)

    @property
    def trials(self) -> int:
        """The design trials, as the case's rate counts them (confirmations apart: confirmed())."""
        return sum(not t.confirmation for t in self.case.trials)

    def confirmed(self) -> str:
        """' (confirmation trials: 1/1 passed)', or '': an adaptive run's re-tries of a failing case
        are in no rate, and counted among its trials "1/11 failed" sat beside a rate of 9/10."""
        extra = [t for t in self.case.trials if t.confirmation]
        passed = sum(not judged_failed(t) and not t.errored for t in extra)
        return f" (confirmation trials: {passed}/{len(extra)} passed)" if extra else ""

    def line(self) -> str:
        """'2/3 trials failed: verdict wrong_tier: expected BLOCK, got WARN (#1, #2)'."""
        shown = "; ".join(f"{p.dimension} {p.category}: {p.reason}" + _which(p.trials, self.trials)
                          for p in self.problems[:3])
        more = f"; +{len(self.problems) - 3} more" if len(self.problems) > 3 else ""
        return f"{self.failed}/{self.trials} trials failed{self.confirmed()}: {shown}{more}"


def _which(trials: list[int], of: int) -> str:
    return "" if len(trials) == of else " (trial " + ", ".join(f"#{n}" for n in trials) + ")"


def case_story(case: CaseSummary) -> CaseStory:
    grouped: dict[tuple[str, str], tuple[list[str], list[int]]] = {}
    for t in case.trials:
        for dim, g in t.grades.items():
            if not g.passed:
                dims, trials = grouped.setdefault((g.category or "failed", g.reason or "no reason given"), ([], []))
                dims.append(dim) if dim not in dims else None
                trials.append(t.trial) if t.trial not in trials else None
    problems = [Problem(dims, cat, reason, trials) for (cat, reason), (dims, trials) in grouped.items()]
    problems.sort(key=lambda p: (p.category == "errored", -len(p.trials)))
    failing = [t for t in case.trials if judged_failed(t)]
    failed = sum(not t.confirmation for t in failing)  # as the rate counts: the design trials
    return CaseStory(case, failed, problems, failing[0] if failing else None)


def case_stories(s: Summary) -> list[CaseStory]:
    """Every failing case's story, the most failing trials first (suite order among equals)."""
    stories = [case_story(c) for c in failing_cases(s)]
    return sorted(stories, key=lambda st: -st.failed / max(st.trials, 1))


def unconfirmed_cases(s: Summary) -> list[str]:
    """Cases failing every trial now without an established drop, by case id (the gate's per-case
    family, summary.json gate.unconfirmed; gate.flaky holds the stable cases with mixed outcomes)."""
    lines = s.gate.unconfirmed if s.gate else []
    return list(dict.fromkeys(line.split(": ", 1)[0] for line in lines))


def suspected_cases(s: Summary) -> list[str]:
    """Cases whose every trial failed where the baseline never failed, not testable at this size
    (summary.json gate.suspected: the run is INCONCLUSIVE naming them)."""
    lines = s.gate.suspected if s.gate else []
    return list(dict.fromkeys(line.split(": ", 1)[0] for line in lines))


def unconfirmed_line(s: Summary) -> str:
    """One grouped line for them, or ''."""
    cases = unconfirmed_cases(s)
    if not cases:
        return ""
    return (f"{len(cases)} {UNCONFIRMED}(s), stable in the baseline and failing now, not established at this size "
            f"(more trials would tell): {', '.join(cases[:10])}" + (" ..." if len(cases) > 10 else ""))


def flaky_line(s: Summary) -> str:
    """Cases whose trials disagree (some passed, some failed), or ''."""
    if not s.flaky_cases:
        return ""
    return (f"{len(s.flaky_cases)} flaky case(s) (mixed outcomes across their trials): "
            + ", ".join(s.flaky_cases[:10]) + (" ..." if len(s.flaky_cases) > 10 else ""))


# --- runs that did not finish or could not be judged ---------------------------------------


@dataclass
class Partial:
    """What ran and what did not, and why (why '' for a run that finished and was judged)."""

    why: str
    ran: int  # trials that ran (judged or errored)
    judged: int
    errored: int
    not_run: int  # trials the budget refused
    cases_run: int
    cases_not_run: list[str]
    errored_kinds: Counter = field(default_factory=Counter)

    def headline(self) -> str:
        if self.why == "interrupted":
            return (f"the run was interrupted after {self.ran} trial(s) of {self.cases_run} case(s); "
                    f"{len(self.cases_not_run)} case(s) did not run")
        if self.why == "budget":
            return f"the budget was spent: {self.not_run} trial(s) not run, {self.ran} ran"
        kinds = ", ".join(f"{k} ×{n}" for k, n in self.errored_kinds.most_common(3))
        return (f"{self.errored} of {self.ran} trial(s) errored (infrastructure: {kinds}); "
                f"the {self.judged} judged trial(s) are shown, not gated")

    def lines(self) -> list[str]:
        """What ran, what did not, why: for the report's 'Partial run' section."""
        out = [f"ran: {self.ran} trial(s) of {self.cases_run} case(s); judged: {self.judged}; "
               f"errored (infrastructure, in no rate): {self.errored}"]
        if self.not_run:
            out.append(f"not run (the budget refused them): {self.not_run} trial(s)")
        if self.cases_not_run:
            out.append(f"did not run: {len(self.cases_not_run)} case(s): " + ", ".join(self.cases_not_run[:10])
                       + (" ..." if len(self.cases_not_run) > 10 else ""))
        return out


def partial(s: Summary) -> Partial:
    """The facts of a run that did not finish or could not be judged (why '' otherwise)."""
    from rubricgate.runner.cost import is_not_run

    trials = [t for c in s.cases for t in c.trials]
    not_run = sum(is_not_run(t) for t in trials)
    ran = [t for t in trials if not is_not_run(t)]
    errored = [t for t in ran if t.errored]
    kinds = Counter(_error_kind(t) for t in errored)
    why = ("budget" if not_run else "interrupted") if not s.complete else ("errored" if errored else "")
    if why == "errored" and s.decision.status != "error":
        why = ""  # within gate.max_errored: a warning, the run was judged
    return Partial(why, len(ran), len(ran) - len(errored), len(errored), not_run,
                   sum(1 for c in s.cases if any(not is_not_run(t) for t in c.trials)),
                   [c.id for c in s.cases if not any(not is_not_run(t) for t in c.trials)], kinds)


def next_step(s: Summary) -> str | None:
    """What to do now: the report's next step, said for what stopped a partial run."""
    why = partial(s).why
    if why == "interrupted":
        return ("run it again: it was stopped before every trial ran "
                "(nothing was gated; the trials that finished are kept here)")
    if why == "budget":
        return "raise the budget (--max-cost) or run fewer cases (--only), then run it again"
    if why == "errored" and s.gate is not None and s.gate.next:  # a continuation: the run it took up continues
        return f"check the agent's endpoint, key and network (each errored trial says what failed); {s.gate.next}"
    if why == "errored":
        return ("check the agent's endpoint, key and network (each errored trial says what failed), then run it "
                "again; gate.max_errored sets how many errored trials a run may have")
    blind = [c.rule for c in held_blind(s)]
    if s.decision.status == "inconclusive" and blind and not any(r.status == "inconclusive" for r in s.rates.values()):
        return (f"add a case that exercises {', '.join(blind[:3])}: rubricgate coverage --suggest DIR writes a fixture "
                "skeleton for each uncovered rule, rubricgate record turns a real review into a task")
    return explain.next_step(s)


def not_gated(s: Summary) -> bool:
    """A run whose rates were not compared with the baseline: it could not be judged."""
    return s.decision.status == "error"


def _error_kind(t: TrialResult) -> str:
    """The trial's failure class (rate_limit, auth, ...), as summary.json and its own line name it;
    its termination (api_error for most of them) for a record that carries no class."""
    last = t.attempts[-1] if t.attempts else None
    return t.failure or (last.failure if last else None) or (last.termination if last else "") or t.termination \
        or "error"
