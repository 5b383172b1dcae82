"""What a comparison can judge: a pull request's reviewer change, on the cases the base has.

`compare --base` runs the reviewer at REF and as in the working tree on the working tree's suite.
Changes that come with a reviewer change in the same pull request could hide a regression from it:

- a rule the PR adds, removes or moves in severity or kind (or the tier threshold) that no case
  exercises (both sides pass every case; `run` against the baseline already says INCONCLUSIVE
  for it, gating/changes.py): the head's rule table is compared with the base's directly, so a
  PR that also updates baseline.json changes nothing here. A reworded rule is named, not held;
- cases the PR deletes or changes (a reviewer made worse on exactly the cases that would show
  it, and those cases removed, moved to the tier it now gives, or run by another agent): the
  base's cases are read from REF's suite folders, each compared by what it reviews, expects, is
  graded by and runs with (edited_cases);
- how answers are graded, changed in rubricgate.yaml (`rubric:`, `verdict:`) or in the
  verdict hook's folder: both sides are graded the working tree's way, so a PR that loosens the
  grading (a forbidden tool allowed, more steps, an extractor that reads every answer as PASS)
  hides its reviewer's regression on both sides alike.

Any of these makes a PASS INCONCLUSIVE (exit 2; exit 0 under `gate.inconclusive: pass`, the
decision line reading "passed by gate.inconclusive: pass", as for `run`), with a line naming what
the suite cannot see. A pull request that changes
the suite but not the reviewer is not held (its two sides are the same reviewer), unless cases it
re-expects or re-points fail every trial and its baseline.json does not record them as they now
are (disagreeing_answer_key: a second pull request making the reviewer lenient would read them
as "fixed"). Held whatever
else changed: a side that replays recorded answers where the base's runs its reviewer (nothing
is reviewed there), a base side that passed no trial of a dimension (its reviewer did not
run as it does at REF: nothing is judged against it), and a dimension one side grades and the
other does not (an `agent.format` that shows tool calls on one side only: nothing tests it); these
two dimension holds whatever `gate.inconclusive` says.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel

from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.gating.changes import change_aware, change_line, held_whatever, hold, rule_changes
from rubricgate.gating.stats import counted
from rubricgate.models.baseline import Baseline, RuleRecord
from rubricgate.models.config import Config, GateConfig
from rubricgate.models.coverage import RuleChange
from rubricgate.models.results import Decision, Summary
from rubricgate.models.task import ToolUseRubric
from rubricgate.reports.explain import statement_of
from rubricgate.suite.checks import TASK_SUFFIXES, TIER_FOLDERS
from rubricgate.suite.config import load_config
from rubricgate.suite.load import Loaded, load_all, reviewer_rubric
from rubricgate.suite.rubric import Rule, meaning_of

GRADING_SECTIONS = ("rubric", "verdict")  # rubricgate.yaml's sections that decide how answers are graded


def load_sides(roots: dict[str, Path], config_path: Path | None, base_reviewer_from: Config | None = None,
               foreign_rules: Sequence[Rule] = (), cited: Path | None = None) -> tuple[Loaded, Loaded] | None:
    """Each side's suite as its run loaded it (`base_reviewer_from`: the config whose reviewer the
    base side runs, compare_config.py `reviewer_at_base`; `foreign_rules`: rules_base_lacks, which
    load its cases but are no rules of its rubric); None when a side does not load. The head side
    holds the baseline at `cited` (REF's: its citations say which cases exercise a rule)."""
    try:
        base = load_all(roots["base"], config_path, require_baseline=False, reviewer_from=base_reviewer_from,
                        foreign_rules=foreign_rules)
        head = load_all(roots["head"], config_path, require_baseline=False)
    except (GateInputError, GateInputErrors):
        return None
    return base, replace(head, baseline=cited_baseline(cited))


def cited_baseline(path: Path | None) -> Baseline | None:
    """The baseline at REF (`path` in REF's tree), or None when it has none or it does not load.
    Its citations say which cases exercise a rule no expect.yaml names (suite/coverage.py):
    without them a change to such a rule read as one no case exercises, INCONCLUSIVE where `run`
    judged it. REF's, never the checkout's: a pull request could write citations into its own
    baseline.json that make a rule it loosens look exercised."""
    from rubricgate.suite.baseline_file import load_baseline

    if path is None or not path.is_file():
        return None
    try:
        return load_baseline(path, path.name)
    except (GateInputError, GateInputErrors):
        return None


def pr_rule_changes(sides: tuple[Loaded, Loaded] | None, ran: set[str] | None = None) -> list[RuleChange]:
    """The rules the head's reviewer changed against the base's, read from each side's tree and
    compared directly (a PR that also updates baseline.json has it record the new rule table
    already), with the cases that exercise each among those that ran (`ran`: `--only` may leave
    out every case that would show a change)."""
    if sides is None:
        return []
    base, head = sides
    cases = [c for c in head.cases if ran is None or c.id in ran]
    rules = {r.id: RuleRecord(severity=r.severity, kind=r.kind, statement=statement_of(r),
                              means=meaning_of(r.severity, base.rubric.vocabulary)) for r in base.rubric.rules.values()}
    then = (head.baseline or Baseline(rates={})).model_copy(
        update={"rubric_rules": rules, "tier_threshold": base.rubric.warning_block_threshold})
    return rule_changes(head.rubric, cases, then, None, head.config.reviewer.rubric)


def replayed_cases(sides: tuple[Loaded, Loaded] | None, agent_override: str | None) -> list[str]:
    """The cases this checkout's side answers by replaying recorded transcripts (the `replay`
    agent, in `agent:` or a task's) where the base's side runs its reviewer: nothing is reviewed
    on that side, whatever its prompt says."""
    if sides is None or agent_override:  # --agent: both sides run the same agent
        return []

    def replayed(loaded: Loaded) -> set[str]:
        return {c.id for c in loaded.cases if (c.agent or loaded.config.agent.name) == "replay"}

    return sorted(replayed(sides[1]) - replayed(sides[0]))


def case_ids(root: Path, config: Config) -> set[str]:
    """The ids of the cases in a tree's suite folders, by their file and folder names (a task's id
    is its file's stem, a fixture's `fixture-<folder>`), without loading them."""
    tasks, fixtures = root / config.suite.tasks, root / config.suite.fixtures
    ids = {p.stem for p in tasks.iterdir() if p.suffix in TASK_SUFFIXES} if tasks.is_dir() else set()
    for tier in TIER_FOLDERS:
        folder = fixtures / tier
        ids |= {f"fixture-{p.name}" for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()
    return ids


def reviewer_changed(base: Summary | None, head: Summary | None) -> bool:
    """Do the two sides run different reviewer files (unknown: assume they do)?"""
    prints = [s.reviewer.fingerprint if s is not None and s.reviewer else "" for s in (base, head)]
    return not all(prints) or prints[0] != prints[1]


def grading_changes(at_ref: Config | None, head: Config | None, ref_tree: Path, repo: Path) -> list[str]:
    """What the working tree changes in how answers are graded (GRADING_SECTIONS' keys and the
    verdict hook's file), both configs read as their files say (paths not resolved)."""
    if at_ref is None or head is None:
        return []  # no config at REF that loads: the gate note already says so
    changed = changed_keys({s: (getattr(at_ref, s), getattr(head, s)) for s in GRADING_SECTIONS})
    hook = head.verdict.hook.rpartition(":")[0] if head.verdict and head.verdict.hook else None
    if hook and _hook_files(ref_tree, hook) != _hook_files(repo, hook):
        changed.append(f"the verdict hook's files ({hook} and its folder)")
    return changed


def _hook_files(tree: Path, hook: str) -> dict[str, str]:
    """The hook's file and every file in its folder (a data file or module it loads), by digest."""
    from rubricgate.runner.digests import files_digest

    folder = posixpath.dirname(hook)
    return files_digest(tree, [folder] if folder else [hook])


def changed_keys(sections: dict[str, tuple[BaseModel | None, BaseModel | None]]) -> list[str]:
    """'<section>.<key>' for each key whose value differs between a section's two sides; the
    section's name alone when it is set on one side only."""
    changed = []
    for name, (base, head) in sections.items():
        if base is None or head is None:
            changed += [name] if base != head else []
        else:
            changed += [f"{name}.{k}" for k in sorted(type(head).model_fields)
                        if _canonical(getattr(base, k)) != _canonical(getattr(head, k))]
    return changed


def _canonical(value):
    """A value as it grades (a tool allowlist's lists are sets: ToolUseRubric.canonical)."""
    return value.canonical() if isinstance(value, ToolUseRubric) else value


@dataclass
class Unseen:
    """What a comparison cannot see, gathered around its rounds (module docstring)."""

    changes: list[RuleChange] = field(default_factory=list)  # the PR's rule changes (pr_rule_changes)
    removed: list[str] = field(default_factory=list)  # cases the base has that the PR deletes
    edited: list[str] = field(default_factory=list)  # cases the base has that the PR changes (edited_cases)
    unrecorded: list[str] = field(default_factory=list)  # of those, the ones this checkout's baseline does not hold
    regraded: list[str] = field(default_factory=list)  # grading keys the PR changes (grading_changes)
    replayed: list[str] = field(default_factory=list)  # cases the PR's side replays (replayed_cases)
    blank: list[str] = field(default_factory=list)  # dimensions the base side passed no trial of (blank_dimensions)
    one_sided: list[str] = field(default_factory=list)  # dimensions one side grades alone (gating/compare.py one_sided)
    # The config's reviewer sections (REVIEWER_SECTIONS) differ between the sides: a reviewer change
    # no reviewer file shows (`tiers:`, another rubric the base already had, `agent.extra_args`).
    config_changed: bool = False


def scoped(decision: Decision, base: Summary | None, head: Summary | None, unseen: Unseen,
           gate: GateConfig) -> Decision:
    """The comparison's decision once what it cannot see is taken into account (module docstring)."""
    # A dimension compared with nothing (the base passed none of it, or one side alone grades it):
    # held whatever gate.inconclusive says, as `run` holds a dimension one side measures alone.
    dimensions = [*blank_lines(unseen.blank), *unseen.one_sided]
    decision = held_whatever(decision, dimensions, gate)
    lines = []
    if unseen.replayed:
        lines.append(f"this checkout's side replays recorded answers for {len(unseen.replayed)} case(s) "
                     f"({few(unseen.replayed)}) where the base's runs its reviewer: nothing is reviewed on that "
                     "side; compare with the reviewer's own agent")
    # `verdict:` may be the reviewer's rule table (`verdict.rules` with severities) as much as how
    # its answers are read: both sides read the working tree's way, so a lowered severity fails or
    # passes a case alike on both. Held whatever else changed; `run` against the baseline judges it.
    if read_otherwise := [k for k in unseen.regraded if k.startswith(("verdict", "the verdict hook"))]:
        lines.append(f"this pull request changes how answers are read ({', '.join(read_otherwise)}): both sides are "
                     "read the working tree's way, so the comparison cannot judge it; `rubricgate run` against "
                     "the baseline does")
    same_reviewer = not (unseen.config_changed or reviewer_changed(base, head))
    if same_reviewer:  # a pull request of the suite alone: its new answer key is what it changes
        lines += disagreeing_answer_key(unseen.unrecorded, head)
    if lines or dimensions or same_reviewer:
        return hold(decision, lines, gate)
    # A reworded rule is named, not held: its wording is what the comparison itself judges on the
    # cases that exercise it (a benign rewording of the rules must pass the PR gate). A rule added,
    # removed, moved in severity or kind, or the threshold, changes the verdicts the suite cannot see.
    held = [c for c in _shown_by(unseen.changes, head) if c.change not in ("statement", "file")]
    reworded = [change_line(c) for c in unseen.changes if c.change == "statement" and not c.cases]
    decision = change_aware(decision, held, gate)
    if reworded:
        decision = decision.model_copy(update={"warnings": [*reworded, *decision.warnings]})
    also = {"removes": unseen.removed, "changes what is reviewed or expected in": unseen.edited}
    for what, ids in also.items():
        if ids:
            lines.append(f"this pull request also {what} {len(ids)} case(s) the base has ({few(ids)}): its reviewer "
                         "change is judged on the base's cases as they are; change them in a pull request of their own")
    if unseen.regraded:
        lines.append(f"this pull request also changes how answers are graded ({', '.join(unseen.regraded)}): its "
                     "reviewer change is judged by the base's grading; change the grading in a pull request of its own")
    return hold(decision, lines, gate)


def blank_lines(blank: list[str]) -> list[str]:
    """The line holding a comparison whose base side passed no trial of the `blank` dimensions."""
    if not blank:
        return []
    return [f"the base side passed no trial of {', '.join(blank)}: its reviewer did not run as it does at the "
            "base (a file it reads missing from its workspaces?), so nothing is judged against it"]


def disagreeing_answer_key(unrecorded: list[str], head: Summary | None) -> list[str]:
    """The line holding a pull request of the suite alone that changes what cases expect or review
    where the reviewer then fails them: comparing one reviewer with itself shows no change, and a
    second pull request making the reviewer lenient would read those cases as "fixed" (two pull
    requests, each passing, let a weaker reviewer in). A baseline update in the same pull request,
    with its reason, records the new answer key and the reviewer's answers to it."""
    if head is None or not unrecorded:
        return []
    passing, unrecorded_ids = passed_once(head), set(unrecorded)
    failing = [c.id for c in head.cases if c.id in unrecorded_ids and c.id not in passing]
    if not failing:
        return []
    return [f"this pull request changes what {len(failing)} case(s) expect or review ({few(failing)}) and the reviewer "
            "fails every trial of them, on both sides: a new answer key the reviewer disagrees with, which comparing "
            "the reviewer with itself cannot judge; if the cases are right, record them in this pull request with "
            "`rubricgate baseline update --reason \"...\"`"]


def unrecorded_edits(edited: list[str], head: Loaded | None, repo: Path) -> list[str]:
    """The cases among `edited` that this checkout's baseline.json does not hold as they now are
    (the digest it keeps of each case, gating/case_edits.py): none recorded by a baseline update
    in the same pull request. A baseline that does not load holds none."""
    if not edited or head is None:
        return edited
    from rubricgate.runner.digests import case_digest
    from rubricgate.suite.baseline_file import load_baseline

    try:
        kept = load_baseline(repo / head.config.baseline, head.config.baseline).case_digests
    except (GateInputError, GateInputErrors):
        return edited
    cases = {c.id: c for c in head.cases}
    seen: dict[tuple[str, bool], str] = {}
    return [cid for cid in edited if cid not in cases
            or kept.get(cid) != case_digest(repo, cases[cid], meaning_only=True, grading=False, seen=seen)]


def passed_once(summary: Summary) -> set[str]:
    """The cases of which a counted trial passed on every dimension."""
    return {c.id for c in summary.cases
            if any(counted(t) and all(g.passed for g in t.grades.values()) for t in c.trials)}


def _shown_by(changes: list[RuleChange], head: Summary | None) -> list[RuleChange]:
    """A rule the pull request adds is exercised only by cases this checkout's reviewer passes at
    least once: a case that expects it and always fails shows the rule not working (a strict
    comparison passed such a pull request, the case failing on both sides)."""
    if head is None:
        return changes
    passing = passed_once(head)
    return [c.model_copy(update={"cases": [x for x in c.cases if x in passing]}) if c.change == "added" else c
            for c in changes]


def edited_cases(ref_tree: Path, at_ref: Config | None, config_rel: str | None, repo: Path,
                 head: Loaded | None) -> list[str]:
    """The cases REF's suite has whose content the working tree changes: what they review (the
    files of each reviewed file's folder), expect, grade by (`rubric:`) or run with (`agent:`,
    `files:`), a fixture turned into a task. Their wording (`why:`, tags) and place do not count.
    None when REF's suite does not load (nothing to hold it against)."""
    if head is None or config_rel is None or at_ref is None:
        return []
    for folder in (at_ref.suite.tasks, at_ref.suite.fixtures):  # git keeps no empty folder
        made = (ref_tree / folder).resolve()
        if made.is_relative_to(ref_tree.resolve()):
            made.mkdir(parents=True, exist_ok=True)
    try:
        suite_at_ref = load_all(ref_tree, ref_tree / config_rel, require_baseline=False)
    except (GateInputError, GateInputErrors):
        return []
    from rubricgate.runner.digests import case_digest

    seen: dict[str, dict] = {"ref": {}, "head": {}}  # each side's folders hashed once, not once a case
    then = {c.id: case_digest(ref_tree, c, meaning_only=True, seen=seen["ref"]) for c in suite_at_ref.cases}
    return sorted(c.id for c in head.cases
                  if c.id in then and then[c.id] != case_digest(repo, c, meaning_only=True, seen=seen["head"]))


def rules_base_lacks(base_repo: Path, repo: Path, config_path: Path | None, at_ref: Config | None) -> list[Rule]:
    """The rules this checkout's cases expect that REF's reviewer does not have (a pull request
    adding a rule with the case that shows it), as this checkout's rubric states them.

    Loading those cases against REF's rubric was an input error. The base side's grading knows
    these rules too (RunOptions.foreign_rules), so the cases run on both sides: REF's reviewer
    cannot cite the rule, and the case shows what the pull request adds. A case REF has that
    now expects such a rule is an edited case, held (edited_cases)."""
    try:
        head = load_all(repo, config_path, require_baseline=False)
        known = reviewer_rubric(base_repo, load_config(base_repo, config_path, at_ref)).rules
    except (GateInputError, GateInputErrors):
        return []  # the side that does not load says so when it runs
    wanted = {r for c in head.cases for r in (*c.expect.rules, *c.expect.absent_rules)}
    return [head.rubric.rules[r] for r in sorted(wanted) if r not in known and r in head.rubric.rules]


def rules_base_lacks_line(rules: list[Rule], ref: str) -> list[str]:
    """The line naming the rules the base side grades by without its reviewer having them."""
    if not rules:
        return []
    return [f"this checkout's cases expect {len(rules)} rule(s) {ref}'s reviewer does not have "
            f"({few([r.id for r in rules])}): the base side runs those cases too, and cannot cite them"]


def judged_cases(base_ids: set[str], head_ids: set[str]) -> tuple[set[str] | None, str]:
    """The cases a comparison's tests are on, and a line naming the ones left out: the base's,
    when the pull request adds cases. Under the statistical gate copies of a passing case diluted a
    regression on the others under the margin (60 copies hid a 2-case drop); under strict, added
    cases expecting the regressed answers cancelled it out (2 regressed, 2 added "fixed": no
    change). None: every case (a suite only the head has cannot be judged on the base's)."""
    added, shared = sorted(head_ids - base_ids), head_ids & base_ids
    if not added or not shared:
        return None, ""
    return shared, (f"{len(added)} case(s) this pull request adds ({few(added)}) are shown, not in the tests: a pull "
                    "request is judged on the cases its base has (a run against the baseline judges them once "
                    "the baseline holds them)")


def blank_dimensions(counts: dict[str, dict[str, tuple[int, int]]]) -> list[str]:
    """The dimensions the base side graded but passed no trial of, on any case."""
    totals: dict[str, list[int]] = {}
    for dims in counts.values():
        for dim, (passes, trials) in dims.items():
            total = totals.setdefault(dim, [0, 0])
            total[0], total[1] = total[0] + passes, total[1] + trials
    return [dim for dim, (passes, trials) in totals.items() if trials and not passes]


def few(ids: list[str]) -> str:
    """The first five ids, and '...' when there are more."""
    return ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
