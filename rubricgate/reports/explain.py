"""What a report needs to explain a result, beyond rates: why a failing case matters, what the
reviewer found, whether the reviewer differs from the one the baseline was measured with (and how
its rule table changed), where the CI run is, and what to do next.

Pure functions over the Summary, shared by the PR comment and the HTML report, plus `annotate`,
which records the run's reviewer (file digests, rule table) and CI link into the summary.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rubricgate.models.results import CaseSummary, ReviewerRecord, RuleRow, Summary, TrialResult
from rubricgate.models.verdict import Finding
from rubricgate.reports.replay import trial_failed

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
FILES_UNNAMED = "(which ones the baseline does not record)"
NEXT_STEP_REVERT = "revert the change to the reviewer (prompt, evaluator skill or rubric) and re-run"
NEXT_STEP_ACCEPT = 'rubricgate baseline update --reason "why the lower rate is right"'


# --- recording the reviewer into the summary --------------------------------------------------


def reviewer_record(repo: Path, config, rubric, agent: str = "") -> ReviewerRecord:
    """SHA-256 of each reviewer file (the cache's own digest), the rubric's rule table and, given
    the agent, the digest of its program and environment."""
    from rubricgate.gating.design import agent_setup
    from rubricgate.runner.digests import recorded_digests
    from rubricgate.suite.rubric import meaning_of

    rules = {r.id: RuleRow(severity=r.severity, kind=r.kind, statement=statement_of(r),
                           means=meaning_of(r.severity, rubric.vocabulary)) for r in rubric.rules.values()}
    digests = recorded_digests(repo, config)
    return ReviewerRecord(digests=digests, rules=rules, fingerprint=fingerprint(digests),
                          tier_threshold=rubric.warning_block_threshold,
                          setup=agent_setup(repo, config, agent) if agent else "")


def statement_of(rule) -> str:
    """A rule's statement in the reviewer's files (rules named in rubricgate.yaml: suite/rule_table.py);
    "" for a rubric table's row, whose edits the rubric file's digest shows."""
    return rule.text if getattr(rule, "file", "") or not rule.line else ""


def fingerprint(digests: Mapping[str, str]) -> str:
    """One sha256 over the per-file digests, as baseline format 2 records the reviewer."""
    return hashlib.sha256(json.dumps(dict(digests), sort_keys=True).encode("utf-8")).hexdigest()


def run_url(env: Mapping[str, str]) -> str | None:
    """The GitHub Actions run page, when the summary is built inside one."""
    server, repo, run = (env.get(k, "").strip() for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    # Strict shapes: the URL is put into markdown and HTML links as it is.
    if not (re.fullmatch(r"https?://[A-Za-z0-9.-]+(:\d+)?", server.rstrip("/")) and _REPO.fullmatch(repo)
            and run.isdigit()):
        return None
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run}"


_PULL_REF = re.compile(r"refs/pull/(\d{1,9})/(merge|head)")
_BRANCH = re.compile(r"[A-Za-z0-9._/+-]{1,200}")


def ci_ref(env: Mapping[str, str]) -> dict[str, str | int]:
    """The branch and pull request a CI run was for ({"branch", "pr"} as known; empty outside CI),
    so the viewer can list a PR's runs and a branch's. Strict shapes, as for run_url."""
    out: dict[str, str | int] = {}
    branch = (env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME") or "").strip()
    pull = _PULL_REF.fullmatch(env.get("GITHUB_REF", "").strip())
    if pull:
        out["pr"] = int(pull.group(1))
        branch = env.get("GITHUB_HEAD_REF", "").strip()  # GITHUB_REF_NAME is "N/merge" there
    if branch and _BRANCH.fullmatch(branch):
        out["branch"] = branch
    return out


def local_branch(repo: Path) -> str | None:
    """The branch checked out in `repo` (outside CI, where no environment names it), read from
    .git/HEAD without starting git; None when detached, not a repository, or unreadable."""
    dot = repo / ".git"
    try:
        if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
            gitdir = dot.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()
            dot = (repo / gitdir) if not Path(gitdir).is_absolute() else Path(gitdir)
        head = (dot / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeError):
        return None
    name = head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else ""
    return name if _BRANCH.fullmatch(name) else None


def baseline_reviewer(baseline, reports: Path) -> ReviewerRecord | None:
    """The reviewer the baseline was measured with.

    Best: the summary of the run it was measured on, when that run folder is still here (file by
    file, and the rule table). Else what the baseline itself records: format 2's one digest over
    all reviewer files (`measured_with.reviewer_digest`), or per-file digests and rules if given.
    """
    measured = getattr(baseline, "measured_with", None)
    history = getattr(baseline, "history", None) or []
    run_id = getattr(measured, "run_id", "") or (getattr(history[-1], "run_id", "") if history else "")
    path = reports / run_id / "summary.json" if run_id and "/" not in run_id else None
    if path is not None and path.is_file():
        from rubricgate.errors import GateInputError
        from rubricgate.records.files import read_summary

        try:  # an unreadable old run must not cost this run its report: the comparison is a nicety
            found = read_summary(path.parent).reviewer
        except GateInputError:
            found = None
        if found is not None:
            return found
    digests = getattr(baseline, "reviewer_digests", None)
    if digests:
        rules = _plain(getattr(baseline, "rubric_rules", None) or {})
        return ReviewerRecord.model_validate({"digests": dict(digests), "rules": rules,
                                              "fingerprint": fingerprint(digests),
                                              "tier_threshold": getattr(baseline, "tier_threshold", None)})
    one = getattr(measured, "reviewer_digest", None)
    return ReviewerRecord(fingerprint=one) if one else None


def _plain(rules: Mapping) -> dict:
    return {k: v.model_dump() if hasattr(v, "model_dump") else dict(v) for k, v in rules.items()}


def annotate(summary: Summary, loaded, repo: Path, env: Mapping[str, str]) -> Summary:
    """The summary with this run's reviewer, the baseline's reviewer, the CI run link and the
    branch and pull request (from the CI environment, or outside CI the branch checked out), so
    `trend` and the viewer keep one series per branch."""
    base = baseline_reviewer(loaded.baseline, repo / loaded.config.reports) if loaded.baseline is not None else None
    where = ci_ref(env)
    if "branch" not in where and not env.get("GITHUB_ACTIONS"):  # outside CI: the checked-out branch
        branch = local_branch(repo)
        where = {**where, **({"branch": branch} if branch else {})}
    return summary.model_copy(update={"reviewer": reviewer_record(repo, loaded.config, loaded.rubric, summary.agent),
                                      "baseline_reviewer": base, "run_url": run_url(env),
                                      "config": {**summary.config, **where}})


# --- comparing reviewers ----------------------------------------------------------------------


@dataclass
class ReviewerChange:
    """How this run's reviewer differs from the baseline's (known=False: nothing to compare with)."""

    known: bool
    files: list[str] = field(default_factory=list)  # changed, added or removed reviewer files
    added: list[tuple[str, str]] = field(default_factory=list)  # (rule, severity)
    removed: list[tuple[str, str]] = field(default_factory=list)
    severity: list[tuple[str, str, str]] = field(default_factory=list)  # (rule, old, new)

    @property
    def changed(self) -> bool:
        return bool(self.files or self.added or self.removed or self.severity)


def reviewer_change(summary: Summary) -> ReviewerChange:
    """Compare digests file by file and the rule tables rule by rule."""
    now, then = summary.reviewer, summary.baseline_reviewer
    if now is None or then is None or not (then.digests or then.fingerprint):
        return ReviewerChange(known=False)
    if not then.digests:  # one digest over all files: whether, not which
        same = (now.fingerprint or fingerprint(now.digests)) == then.fingerprint
        return ReviewerChange(known=True, files=[] if same else [FILES_UNNAMED])
    paths = sorted(set(now.digests) | set(then.digests))
    files = [p for p in paths if now.digests.get(p) != then.digests.get(p)]
    change = ReviewerChange(known=True, files=files)
    if then.rules:  # an older record may carry digests only
        change.added = [(r, now.rules[r].severity) for r in sorted(set(now.rules) - set(then.rules))]
        change.removed = [(r, then.rules[r].severity) for r in sorted(set(then.rules) - set(now.rules))]
        change.severity = [(r, then.rules[r].severity, now.rules[r].severity)
                           for r in sorted(set(now.rules) & set(then.rules))
                           if then.rules[r].severity != now.rules[r].severity]
    return change


def reviewer_lines(summary: Summary) -> list[str]:
    """Plain sentences (unescaped) saying whether and how the reviewer differs from the baseline's."""
    change = reviewer_change(summary)
    if not change.known:
        return ["Reviewer vs baseline: unknown (the baseline does not record the reviewer files it was measured with)"]
    if not change.changed:
        return ["Reviewer vs baseline: the same reviewer files as the baseline run"]
    lines = ["Reviewer vs baseline: changed files " + ", ".join(change.files) if change.files
             else "Reviewer vs baseline: the rule table differs"]
    lines += [f"rule added: {r} ({s})" for r, s in change.added]
    lines += [f"rule removed: {r} ({s})" for r, s in change.removed]
    lines += [f"severity changed: {r} {old} → {new}" for r, old, new in change.severity]
    return lines


# --- failing cases, findings, next step -------------------------------------------------------


def failing_cases(summary: Summary) -> list[CaseSummary]:
    """Cases with a failed trial, in suite order."""
    return [c for c in summary.cases if any(trial_failed(t) for t in c.trials)]


def first_failure(case: CaseSummary) -> TrialResult | None:
    return next((t for t in case.trials if trial_failed(t)), None)


def source_path(path: str, mapping: Mapping[str, str]) -> str | None:
    """The source path behind a workspace path, or None when it is not mapped (or maps to itself).

    `mapping` is CaseSpec.workspace_paths, {neutral path: source path}; a key may name a file or
    a folder (then files below it map by the same relative path). A leading './' is ignored.
    """
    clean = _clean(path)
    source = mapping.get(clean)
    if source is None:
        folder = max((k for k in mapping if clean.startswith(k.rstrip("/") + "/")), key=len, default=None)
        source = None if folder is None else mapping[folder].rstrip("/") + clean[len(folder.rstrip("/")):]
    return None if source == clean else source


def _clean(path: str) -> str:
    clean = str(PurePosixPath(path)) if path else ""
    return clean[2:] if clean.startswith("./") else clean


def display_path(path: str, mapping: Mapping[str, str]) -> str:
    """A workspace path as the reader knows it: 'neutral (source: src)' when the two differ."""
    source = source_path(path, mapping)
    return _clean(path) if source is None else f"{_clean(path)} (source: {source})"


def finding_location(f: Finding, mapping: Mapping[str, str]) -> str:
    """file:line, with the source path beside a neutral one: 'skills/x/SKILL.md:7 (source: fixtures/...)'."""
    if not f.file:
        return "(no file)"
    where = _clean(f.file) + (f":{f.line}" if f.line is not None else "")
    source = source_path(f.file, mapping)
    return where if source is None else f"{where} (source: {source})"


def next_step(summary: Summary) -> str | None:
    """What to do now, by decision: revert or record the new rate; fix the input; nothing on a pass."""
    status = summary.decision.status
    if status == "regression":
        return f"{NEXT_STEP_REVERT}; or, if the new behaviour is intended, {NEXT_STEP_ACCEPT}"
    if status == "error":
        return "fix what the reasons above name (exit 2: the gate could not judge), then re-run"
    if status == "inconclusive":
        if summary.gate is not None and summary.gate.next:  # the gate's own: the command that continues the run
            return summary.gate.next
        return ("add cases or raise the budget (gate.max_trials_per_case, --max-cost); "
                "`rubricgate plan` shows what would reach the margin")
    return None
