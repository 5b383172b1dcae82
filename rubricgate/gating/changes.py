"""Change-aware decisions: which rules an edit to the reviewer touched, and which cases can see it.

When the reviewer differs from the one baseline.json (format 3) was measured with, every changed
rule is named with the cases that exercise it (rubricgate/suite/coverage.py): rules added,
removed, moved to another severity or kind, the warning threshold of the tier derivation, and
reviewer files changed outside the rule table (the prompt, the evaluator skill, rubric prose),
which every case exercises. A changed rule that no case exercises cannot be judged by the suite:
the decision is INCONCLUSIVE (exit 2) under `gate.inconclusive: fail` (the default), INCONCLUSIVE
let through (exit 0, its headline saying so) under `pass`; never a silent PASS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Literal

from rubricgate import exitcodes
from rubricgate.models.baseline import Baseline, RuleRecord
from rubricgate.models.case import CaseSpec
from rubricgate.models.config import GateConfig
from rubricgate.models.coverage import RuleChange
from rubricgate.models.results import Decision, GateDetail, ReviewerRecord, Summary
from rubricgate.runner.digests import CONFIG_KEY
from rubricgate.suite.coverage import rule_coverage, tier_exercises
from rubricgate.suite.rubric import RubricSpec, Rule, meaning_of

ADVICE = "add one with `rubricgate record` or a fixture"


def listed(ids: list[str], shown: int = 10) -> str:
    """The first `shown` ids, and "..." when there are more: how every gate line names cases (gating/gate.py too)."""
    return ", ".join(ids[:shown]) + (" ..." if len(ids) > shown else "")


def rule_changes(rubric: RubricSpec, cases: list[CaseSpec], baseline: Baseline | None,
                 digests: Mapping[str, str] | None = None, rubric_path: str = "") -> list[RuleChange]:
    """Every rule the reviewer changed since the baseline, with the cases that exercise it.

    Empty when the baseline does not record its rule table (formats 1 and 2). `digests` (this
    reviewer's files) adds the files changed outside the rule table.
    """
    if baseline is None or not baseline.rubric_rules:
        return []
    cov = rule_coverage(rubric, cases, baseline)
    exercised = {r.rule: r.cases for r in cov.rows}
    old, now = baseline.rubric_rules, rubric.rules
    # An added or moved rule is shown only by a case that expects it cited (or whose baseline run
    # cited it): one naming it in absent_rules passes with a reviewer that never applies it.
    citing = {r: {c.id for c in cases if r in c.expect.rules} | {c for c, ids in baseline.cited.items() if r in ids}
              for r in now}
    out = [RuleChange(rule=r, change="added", detail=f"added ({now[r].severity})",
                      cases=[c for c in exercised.get(r, []) if c in citing[r]])
           for r in now if r not in old]
    out += [RuleChange(rule=r, change="removed", detail=f"removed (was {old[r].severity})",
                       cases=sorted(c for c, rules in baseline.cited.items() if r in rules))
            for r in old if r not in now]
    for r in (r for r in now if r in old):
        shown = [c for c in exercised.get(r, []) if c in citing[r]]
        out += [RuleChange(rule=r, change=attr, detail=detail, cases=shown)
                for attr, detail in _moved(old[r], now[r], rubric)]
        out += _statement_change(r, old[r].statement, now[r], exercised.get(r, []))
    out += _threshold_change(rubric, cases, baseline)
    out += _file_changes(digests or {}, baseline, rubric_path, [c.id for c in cases], bool(out))
    return out


def _moved(before: RuleRecord, now: Rule, rubric: RubricSpec) -> list[tuple[Literal["severity", "kind"], str]]:
    """(attribute, detail) of a rule's severity or kind that changed; the severity by what it
    means (a `tiers:` edit mapping "suggestion" to warning moves every suggestion rule)."""
    out: list[tuple[Literal["severity", "kind"], str]] = []
    means = meaning_of(now.severity, rubric.vocabulary) or now.severity
    # A meaning the baseline did not record is not known to differ: its word alone is compared
    # (every rule of a `tiers:` rubric read as moved held each run after an upgrade, exit 2).
    if before.severity != now.severity or before.meaning() not in ("", means):
        then = before.meaning()
        shown = "" if not then or (then == before.severity and means == now.severity) else f" (means {then} -> {means})"
        out.append(("severity", f"severity {before.severity} -> {now.severity}{shown}"))
    if before.kind != now.kind:
        out.append(("kind", f"kind {before.kind} -> {now.kind}"))
    return out


def _statement_change(rule: str, before: str, now: Rule, cases: list[str]) -> list[RuleChange]:
    """A rule stated in the reviewer's files (rubricgate.yaml verdict.rules): its line edited, or gone."""
    after = now.text if now.file else ""
    if not before or before == after:
        return []
    if not after:
        return [RuleChange(rule=rule, change="removed",
                           detail=f"removed from the reviewer's files (was: {before[:120]!r})", cases=cases)]
    return [RuleChange(rule=rule, change="statement", detail=f"statement {before[:120]!r} -> {after[:120]!r}",
                       cases=cases)]


def _threshold_change(rubric: RubricSpec, cases: list[CaseSpec], baseline: Baseline) -> list[RuleChange]:
    before = baseline.tier_threshold
    if before is None or before == rubric.warning_block_threshold:
        return []
    then = replace(rubric, warning_block_threshold=before)
    seen = sorted(c.id for c in cases if any("tier:warning-threshold" in tier_exercises(spec, c, baseline.cited)
                                             for spec in (rubric, then)))
    return [RuleChange(rule="tier:warning-threshold", change="threshold",
                       detail=f"warning threshold {before} -> {rubric.warning_block_threshold}", cases=seen)]


def _file_changes(digests: Mapping[str, str], baseline: Baseline, rubric_path: str, every: list[str],
                  table_changed: bool) -> list[RuleChange]:
    """Reviewer files changed beyond the rule table: every case reads them."""
    if not digests or not baseline.reviewer_digests:
        return []
    old = baseline.reviewer_digests
    # A config section a baseline written before they were recorded does not know: not a change.
    files = sorted(p for p in set(digests) | set(old) if digests.get(p) != old.get(p)
                   and not (p.startswith(CONFIG_KEY) and p not in old))
    if table_changed:  # the rubric's edit is already named rule by rule
        files = [p for p in files if p != rubric_path]
    return [RuleChange(rule=p, change="file", detail=f"file {p} changed", cases=list(every)) for p in files]


def change_line(change: RuleChange, shown: int = 8) -> str:
    """'rule X changed severity critical -> warning; exercised by 3 case(s): a, b, c' (or the advice)."""
    what = f"rule {change.rule} changed {change.detail}" if change.change != "file" else change.detail
    if not change.cases:
        return f"{what}; no case exercises it; {ADVICE}"
    ids = ", ".join(change.cases[:shown]) + (f" +{len(change.cases) - shown}" if len(change.cases) > shown else "")
    return f"{what}; exercised by {len(change.cases)} case(s): {ids}"


def change_aware(decision: Decision, changes: list[RuleChange], gate: GateConfig) -> Decision:
    """Name every changed rule; a change no case exercises makes a PASS inconclusive, each such
    change one of its reasons. Under gate.inconclusive: pass it exits 0 as the rate tests'
    INCONCLUSIVE does, marked so (LET_THROUGH): one decision, so every report (the headline, the
    JUnit <skipped>) says it alike; it was a PASS with the change among its warnings."""
    if not changes:
        return decision
    blind = [change_line(c) for c in changes if not c.cases]
    seen = [change_line(c) for c in changes if c.cases]
    if not blind or decision.status not in ("pass", "inconclusive"):
        return decision.model_copy(update={"warnings": [*blind, *seen, *decision.warnings]})
    if gate.inconclusive == "fail":
        return decision.model_copy(update={"status": "inconclusive", "exit_code": exitcodes.CANNOT_JUDGE,
                                           "reasons": [*blind, *decision.reasons],
                                           "warnings": [*seen, *decision.warnings]})
    if decision.status == "inconclusive":  # its first reason stays first (a held run's: why it is held)
        return decision.model_copy(update={"reasons": [*decision.reasons, *blind],
                                           "warnings": [*seen, *decision.warnings]})
    return decision.model_copy(update={"status": "inconclusive", "reasons": blind,
                                       "warnings": [LET_THROUGH, *seen, *decision.warnings]})


def with_rule_changes(summary: Summary, rubric: RubricSpec, cases: list[CaseSpec], baseline: Baseline | None,
                      gate: GateConfig, rubric_path: str = "") -> Summary:
    """The summary with its coverage table, the changed rules and the change-aware decision."""
    now: ReviewerRecord | None = summary.reviewer
    changes = rule_changes(rubric, cases, baseline, now.digests if now else None, rubric_path)
    coverage = rule_coverage(rubric, cases, baseline).as_dict()
    decision = summary.decision if summary.kind == "baseline" else change_aware(summary.decision, changes, gate)
    detail = summary.gate
    if summary.kind != "baseline":
        reviewer = [c for c in changes if c.rule not in JUDGING]
        beside = edited_beside(reviewer, summary.gate) + graded_beside(reviewer, changes)
        decision = hold(decision, beside, gate)
        # The gate's own settings changed: held whatever the changed settings say of holding; so
        # is a dimension judged against nothing (its failures, every trial's, would pass unseen).
        lines = gate_changed(changes) + ungraded(baseline, summary) + unmeasured_beside(reviewer, baseline, summary)
        decision = held_whatever(decision, lines, gate)
        if detail is not None and summary.decision.status == "pass" and decision.status == "inconclusive" \
                and beside + lines:
            detail = detail.model_copy(update={"next": HELD_NEXT})
    return summary.model_copy(update={"coverage": coverage, "rule_changes": changes, "decision": decision,
                                      "gate": detail})


def line_end_noted(summary: Summary, note: Callable[[], str], edited: Sequence[str]) -> Summary:
    """`note()` (suite/trees.py autocrlf_note: git wrote the checkout with CRLF line ends) on a run
    that reads reviewer files or cases as changed since the baseline: a checkout of an unchanged
    reviewer read "changed" (exit 2 once every case read edited) with nothing saying why. A
    reason of a run that did not decide, else a warning. Asked only then: it is a git process."""
    if not (edited or any(c.change == "file" for c in summary.rule_changes)) or not (said := note()):
        return summary
    d = summary.decision
    undecided = d.exit_code != exitcodes.OK and d.status in ("error", "inconclusive")
    update = {"reasons": [*d.reasons, said]} if undecided else {"warnings": [*d.warnings, said]}
    return summary.model_copy(update={"decision": d.model_copy(update=update)})


# The next step of a run whose rates passed and that a change holds: continuing it, more cases or
# a larger budget (what an undecided rate needs) would never lift the hold.
HELD_NEXT = ("the rates passed; the change(s) named above hold the run, and more trials or cases will not lift "
             "that: make each a change of its own, or record an intended one with "
             "`rubricgate baseline update --reason \"...\"`")


HELD = "gate.inconclusive: pass cannot let this run exit 0"  # a held run's first reason begins so
LET_THROUGH = "gate.inconclusive: pass lets this undecided run exit 0"  # the warning of a run it let through

# The config sections that grade answers and decide the run (reports/explain.py config_digests).
GRADING = {CONFIG_KEY + "rubric", CONFIG_KEY + "verdict"}
JUDGING = GRADING | {CONFIG_KEY + "gate"}


def graded_beside(reviewer: list[RuleChange], changes: list[RuleChange]) -> list[str]:
    """How answers are graded (rubricgate.yaml `rubric:`, `verdict:`) changed beside a reviewer
    change: a loosened grading would hide the reviewer's regression, as compare --base holds it."""
    graded = [c.rule.removeprefix(CONFIG_KEY) for c in changes if c.rule in GRADING]
    if not graded or not reviewer:
        return []
    return [f"this change also changes how answers are graded ({', '.join(graded)}) beside the reviewer: the "
            "reviewer change is judged by the baseline's grading; change the grading in a change of its own, "
            "or re-measure: rubricgate baseline update"]


def unmeasured_beside(reviewer: list[RuleChange], baseline: Baseline | None, summary: Summary) -> list[str]:
    """A dimension this run grades that baseline.json does not measure, beside a reviewer change:
    an `agent.format` now showing tool calls graded tool_use, which failed every trial, and the
    verdict's test alone passed the run (exit 0)."""
    if not reviewer or baseline is None:
        return []
    measured = set(baseline.rates) | {d for dims in baseline.cases.values() for d in dims}
    new = [d for d in summary.rates if d not in measured]
    if not new:
        return []
    return [f"the reviewer changed since baseline.json was measured and this run grades {', '.join(new)}, which "
            "baseline.json does not measure: nothing is judged against it; `rubricgate baseline update` measures it"]


def ungraded(baseline: Baseline | None, summary: Summary) -> list[str]:
    """A dimension baseline.json measures that this run does not grade (`gate.dimensions`): seen
    also where the baseline does not record the gate's settings (written by an older rubricgate)."""
    measured = {d for dims in (baseline.cases.values() if baseline else []) for d in dims}
    left = sorted(measured - set(summary.rates))
    if not left or not summary.rates:
        return []
    return [f"baseline.json measures {', '.join(left)}, which this run does not grade (gate.dimensions): a change "
            "to the gate is judged in a change of its own; `rubricgate baseline update` records the new one"]


def gate_changed(changes: list[RuleChange]) -> list[str]:
    """The gate's settings differ from those baseline.json was measured with (a change may not
    loosen the gate that judges it: `compare --base` takes the base's)."""
    if not any(c.rule == CONFIG_KEY + "gate" for c in changes):
        return []
    return ["the gate settings in rubricgate.yaml differ from those baseline.json was measured with: a change to "
            "the gate is judged in a change of its own; `rubricgate baseline update` records the new ones"]


def edited_beside(changes: list[RuleChange], detail: GateDetail | None) -> list[str]:
    """A reviewer changed since the baseline beside cases the baseline holds edited since: the
    edits may re-expect exactly what the change regresses (deleting those cases is an input
    error), so the run is held, as `compare --base` holds them (flows/compare_scope.py)."""
    edited = detail.edited_cases if detail is not None else []
    if not changes or not edited:
        return []
    return [f"the reviewer changed since baseline.json was measured ({listed([c.rule for c in changes], 3)}) and "
            f"{len(edited)} case(s) it holds were edited since ({listed(edited, 5)}): the reviewer change is judged "
            "on the cases as they were; edit the cases in a change of their own, or re-measure: "
            "rubricgate baseline update"]



def changed_first(cases: list[CaseSpec], changes: list[RuleChange]) -> list[CaseSpec]:
    """Cases that exercise a changed rule (not a whole changed file) first, suite order kept otherwise."""
    first = {c for ch in changes if ch.change != "file" for c in ch.cases}
    return [c for c in cases if c.id in first] + [c for c in cases if c.id not in first]


def hold(decision: Decision, lines: list[str], gate: GateConfig) -> Decision:
    """A PASS made INCONCLUSIVE by what `lines` say the gate cannot see, `lines` its reasons;
    under `gate.inconclusive: pass` it exits 0 marked LET_THROUGH, as change_aware's and the rate
    tests' INCONCLUSIVE do (it was a PASS with the lines among its warnings: no headline or JUnit
    mark said so). An INCONCLUSIVE one gets them as further reasons; a REGRESSION as it is."""
    if not lines or decision.status not in ("pass", "inconclusive"):
        return decision
    if decision.status == "inconclusive" and gate.inconclusive == "fail" and decision.exit_code == exitcodes.OK:
        # Let through by gate.inconclusive: pass, but held here whatever that key says.
        warnings = [w for w in decision.warnings if w != LET_THROUGH]
        return decision.model_copy(update={"exit_code": exitcodes.CANNOT_JUDGE, "warnings": warnings,
                                           "reasons": [held_reason([line.split(": ", 1)[0] for line in lines]),
                                                       *decision.reasons, *lines]})
    if decision.status == "inconclusive":
        return decision.model_copy(update={"reasons": [*decision.reasons, *lines]})
    let_through = gate.inconclusive == "pass"
    return decision.model_copy(update={
        "status": "inconclusive", "exit_code": exitcodes.OK if let_through else exitcodes.CANNOT_JUDGE,
        "reasons": [*lines, *decision.reasons],
        "warnings": [LET_THROUGH, *decision.warnings] if let_through else decision.warnings})


def held_whatever(decision: Decision, lines: list[str], gate: GateConfig) -> Decision:
    """hold() whatever gate.inconclusive says: a PASS it would have let through exits 2, its first
    reason saying why (as final_decision's held run does), then the lines."""
    out = hold(decision, lines, gate.model_copy(update={"inconclusive": "fail"}))
    if gate.inconclusive != "pass" or decision.status != "pass" or out.status != "inconclusive":
        return out
    return out.model_copy(update={"reasons": [held_reason([line.split(": ", 1)[0] for line in lines]),
                                              *out.reasons]})


def held_reason(what: Sequence[str]) -> str:
    """The first reason of a run `what` holds against gate.inconclusive: pass."""
    return f"{HELD}: {'; '.join(what)} (held whatever that key says: it lets through only what the gate " \
           "could not decide)"
