"""The terminal summary: readable in five seconds."""

from __future__ import annotations

from pathlib import Path

from rubricgate.boundary import printable
from rubricgate.credentials import mask_credentials
from rubricgate.models.dimensions import ordered
from rubricgate.models.results import Summary, TrialResult
from rubricgate.reports.comment import k_groups, new_cases_line, signed_pp
from rubricgate.reports.story import LET_THROUGH_WORDS, passed_unseen


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:6.1%}"


def rate_lines(summary: Summary) -> list[str]:
    lines = []
    for dim in ordered(summary.rates):
        row = summary.rates[dim]
        base = ("" if row.baseline is None
                else f"  baseline {_pct(row.baseline)}  delta {signed_pp(row.delta)}" if row.delta is not None
                else "")
        mark = (f"  {row.label}" if row.label
                else {"regression": "  REGRESSION", "inconclusive": "  inconclusive"}.get(row.status, ""))
        ci = "" if row.low is None or row.high is None else f" [{row.low:.0%}-{row.high:.0%}]"
        lines.append(f"  {dim:<11}{_pct(row.rate)}  ({row.passes}/{row.trials}){ci}{base}{mark}")
    new = new_cases_line(summary)
    return lines + ([f"  {new}"] if new else [])


def failure_lines(summary: Summary, limit: int = 15) -> list[str]:
    """One line per failed (case, dimension, category, reason), with how many trials it hit."""
    out = []
    for case in summary.cases:
        groups: dict[tuple[str, str, str], list[TrialResult]] = {}
        for trial in case.trials:
            for dim, g in trial.grades.items():
                if not g.passed and g.category != "errored":  # errored trials have their own list
                    groups.setdefault((dim, g.category or "failed", g.reason), []).append(trial)
        design = sum(not t.confirmation for t in case.trials)  # as the case's rate counts them
        for (dim, category, reason), trials in groups.items():
            failed = sum(not t.confirmation for t in trials)
            extra = f", {len(trials) - failed} confirmation" if failed < len(trials) else ""
            which = f"#{trials[0].trial}" if len(case.trials) == 1 else f"{failed}/{design} trials{extra}"
            out.append(f"  {case.id} {dim}: {category} ({which}): {reason}")
    return _at_most(out, limit)


def _at_most(lines: list[str], limit: int) -> list[str]:
    """The first `limit` lines, and how many more there are: a list cut unsaid reads as whole."""
    return lines[:limit] + ([f"  ... and {len(lines) - limit} more (see summary.json)"] if len(lines) > limit else [])


def honesty_lines(summary: Summary, limit: int = 15) -> list[str]:
    """Errored trials (infrastructure, not judged) and runs that errored after a graded verdict."""
    lines = []
    if summary.errored:
        lines.append(f"errored (infrastructure, left out of every rate): {len(summary.errored)}")
        lines += _at_most([f"  {e}" for e in summary.errored], limit)
    run_errors = [(c.id, t) for c in summary.cases for t in c.trials if t.run_error]
    if run_errors:
        lines.append("run errors after a graded verdict:")
        lines += _at_most([f"  {cid} #{t.trial}: {t.run_error}" for cid, t in run_errors], limit)
    return lines


def _noise_and_cost_lines(summary: Summary) -> list[str]:
    """Flaky cases, pass^k when trials were repeated, and the spend."""
    lines = []
    if summary.flaky_cases:
        lines.append(f"flaky (mixed results across trials): {', '.join(summary.flaky_cases)}")
    for g in k_groups(summary.pass_k):
        if g["k"] > 1:  # each k over the cases that ran k trials; all-dimension rate beside it
            every = summary.pass_k.get("all_pass") or {}
            lines.append(f"pass@{g['k']} {g['pass_at_k']:.1%}  pass^{g['k']} {g['pass_hat_k']:.1%}  "
                         f"({g['cases']} cases with {g['k']} trials; all-dimension rate "
                         f"{every.get('passes', 0)}/{every.get('trials', 0)})")
    cost = summary.cost
    if cost.get("input_tokens") or cost.get("cost_usd") or cost.get("cached_trials") or cost.get("budget"):
        usd = "unknown" if cost.get("cost_usd") is None else f"${cost['cost_usd']:.4f}"
        lines.append(f"cost: {usd}, {cost.get('input_tokens', 0)} in / {cost.get('output_tokens', 0)} out tokens, "
                     f"{cost.get('cached_trials', 0)} cached, {cost.get('not_run_trials', 0)} not run")
    return lines


def render_terminal(summary: Summary, run_dir: str, shard: tuple[str, int] | None = None) -> str:
    """Rates vs baseline, the failing cases with reasons, then the decision; credential-shaped
    text in a reason shown as <masked:KIND> (CI logs are often public). `shard`: (K/N, the exit
    code of the shard, which does not gate): its slice's decision is said as the slice's."""
    d = summary.decision
    head = f"rubricgate {summary.run_id}: {len(summary.cases)} cases, {trial_count(summary)}, agent {summary.agent}"
    lines = [head, "rates:", *rate_lines(summary)]
    fails = failure_lines(summary)
    if fails:
        lines += ["failures:", *fails]
    lines += honesty_lines(summary)
    lines += _noise_and_cost_lines(summary)
    verdict = decision_words(summary) if shard is None else shard_words(summary, *shard)
    lines += [f"decision: {verdict}" + (f" - {'; '.join(d.reasons)}" if d.reasons else "")]
    lines += [f"warning: {w}" for w in d.warnings]
    lines += [f"warning: {a.warning}" for a in summary.agent_support.values() if a.warning]
    html = Path(run_dir) / "report.html"
    lines.append(f"report: {printable(str(html if html.is_file() else run_dir))}")  # a path may hold a newline
    return mask_credentials("\n".join(lines))


def trial_count(summary: Summary) -> str:
    """'N trials', and for a continued run how many ran here and how many it took up (each names
    the run that ran it: TrialResult.session), so the line agrees with "run finished"."""
    trials = [t for c in summary.cases for t in c.trials]
    continued = set(summary.counted_runs)  # a regrade's trials name their runs too: none ran here, none taken up
    taken = sum(1 for t in trials if t.session in continued)
    if not taken:
        return f"{len(trials)} trials"
    return f"{len(trials)} trials ({len(trials) - taken} run here, {taken} taken up from the run(s) it continues)"


def shard_words(summary: Summary, shard: str, exit_code: int) -> str:
    """'REGRESSION in shard 2/4's slice (a shard does not gate: exit 0; ...)': its slice's status,
    never an exit the process does not take ("REGRESSION (exit 1)" printed, then exit 0)."""
    return (f"{summary.decision.status.upper()} in shard {shard}'s slice (a shard does not gate: exit {exit_code}; "
            "`rubricgate merge` of all shards gates the suite)")


def decision_words(summary: Summary) -> str:
    """'PASS (exit 0)', 'INCONCLUSIVE (exit 2)', ...; a run let through by `gate.inconclusive: pass`
    says so in the same words."""
    d = summary.decision
    let_through = f", {LET_THROUGH_WORDS}"
    if d.status == "pass":
        return "PASS (exit 0" + (f"{let_through}: a changed rule no case exercises)" if passed_unseen(summary) else ")")
    if d.status == "inconclusive":
        return f"INCONCLUSIVE (exit {d.exit_code}" + (f"{let_through})" if d.exit_code == 0 else ")")
    words = {"regression": "REGRESSION (exit 1)", "error": "COULD NOT JUDGE (exit 2)",
             "baseline": "BASELINE RUN (measured, not gated)"}
    return words.get(d.status, f"{d.status.upper()} (exit {d.exit_code})")
