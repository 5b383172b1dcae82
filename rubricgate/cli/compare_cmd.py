"""`rubricgate compare`: per-case flips between two runs, or the reviewer at REF vs the working tree."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from rubricgate.cli.app import main
from rubricgate.cli.core import (
    _listeners,
    _repo,
    cache_option,
    config_option,
    fail_input,
    interrupt_on_sigterm,
    max_cost_option,
    one_malloc_arena,
    repo_option,
)
from rubricgate.cli.options import CASE_TEXT, TRIALS
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.flows.compare_run import paired_run
from rubricgate.flows.comparison_record import RECORD_FILE, comparison_record, side_runs, write_record
from rubricgate.gating.changes import held_whatever
from rubricgate.gating.compare import Comparison, compare_summaries, one_sided, summary_counts
from rubricgate.models.comparison import ComparisonRecord
from rubricgate.models.config import GateConfig
from rubricgate.pipeline import RunOptions
from rubricgate.records.files import read_summary
from rubricgate.reports.story import LET_THROUGH_WORDS
from rubricgate.suite.config import CONFIG_NAME, load_config


@main.command()
@click.argument("runs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--base", "base_ref", default=None, metavar="REF",
              help="Run the suite with the reviewer files at REF and as in the working tree, and compare.")
@repo_option
@config_option
@click.option("--method", type=click.Choice(["strict", "statistical"]), default=None,
              help="Gate method (default: gate.method in rubricgate.yaml, else strict).")
@click.option("--agent", default=None, help="Agent adapter for every case (with --base).")
@click.option("--trials", type=TRIALS, default=None,
              help="Trials per case a side (with --base); under the statistical gate the rounds before the first "
                   "look, then a round at a time up to gate.max_trials_per_case until decided.")
@click.option("--only", multiple=True, type=CASE_TEXT, help="Only cases whose id contains this text (with --base).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="Trials run at once (with --base).")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seed of the base/head interleaving (with --base; default: drawn and printed).")
@cache_option
@max_cost_option
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the comparison as JSON to this file.")
def compare(runs, base_ref, repo, config_path, method, agent, trials, only, jobs, seed, cache, max_cost,
            json_out) -> None:
    """Per-case flips, the stratified exact test per dimension (Holm), and a decision.

    \b
    rubricgate compare RUN_A RUN_B     two stored runs (base = RUN_A, head = RUN_B)
    rubricgate compare --base REF      reviewer at REF vs the working tree, same cases and trials
    Exit 0: head holds; 1: head regressed; 2: could not judge.
    """
    interrupt_on_sigterm()
    started = _now()
    try:
        _drop_earlier_record(json_out)
        _check_mode(runs, base_ref)
        root = _repo(repo)
        if base_ref is not None:
            options = RunOptions(repo=root, config_path=config_path, agent=agent, trials=trials, only=list(only),
                                 jobs=jobs, cache=cache, max_cost=max_cost)
            comparison, record = _paired(options, base_ref, method, seed, started)
        else:
            comparison = _stored(runs, _gate(root, config_path, method))
            record = comparison_record(comparison, started_at=started, finished_at=_now(),
                                       runs=([runs[0]], [runs[1]]), repo=root)
        if json_out is not None:
            _write_json(json_out, record)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    click.echo(render_comparison(comparison))
    sys.exit(comparison.decision.exit_code)


def _drop_earlier_record(path: Path | None) -> None:
    """--json: an earlier comparison's record at that path goes before this one starts. Written
    only at the end, a comparison stopped on bad input or killed outright left it standing, and
    `publish --compare` stated its decision for this push; a missing record reads as could not
    judge."""
    if path is None:
        return
    try:
        path.unlink(missing_ok=True)
    except NotADirectoryError:  # no record can be there: writing it is --json's error, said at the end
        return
    except OSError as exc:
        raise GateInputError(str(path), "--json", f"cannot remove the earlier record: {exc.strerror}",
                             "choose a writable path") from exc


def _write_json(path: Path, record) -> None:
    """--json: a file that cannot be written is that flag's problem (and only that one's: an
    OSError elsewhere in the comparison is no --json error)."""
    try:
        write_record(path, record)
    except OSError as exc:
        raise GateInputError(str(path), "--json", f"cannot write: {exc.strerror}", "choose a writable path") from exc


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _check_mode(runs: tuple[Path, ...], base_ref: str | None) -> None:
    if base_ref is not None and runs:
        raise GateInputError("compare", "RUNS", "give either two run dirs or --base REF, not both",
                             "drop the run dirs or --base")
    if base_ref is None and len(runs) != 2:
        raise GateInputError("compare", "RUNS", f"expected two run dirs, got {len(runs)}",
                             "rubricgate compare reports/RUN_A reports/RUN_B, or --base REF")


def _gate(root: Path, config_path: Path | None, method: str | None) -> GateConfig:
    """The repo's gate settings when there is a config, else the defaults; --method wins."""
    path = config_path or root / CONFIG_NAME
    gate = load_config(root, path).gate if path.is_file() else GateConfig()
    return gate.model_copy(update={"method": method}) if method else gate


def _stored(runs: tuple[Path, ...], gate: GateConfig) -> Comparison:
    base, head = read_summary(runs[0]), read_summary(runs[1])
    comparison = compare_summaries(base, head, gate, str(runs[0]), str(runs[1]))
    # A dimension one side grades alone is compared with nothing: held whatever gate.inconclusive says.
    comparison.decision = held_whatever(comparison.decision, one_sided(summary_counts(base), summary_counts(head)),
                                        gate)
    return comparison


def _paired(options: RunOptions, ref: str, method: str | None, seed: int | None,
            started: str) -> tuple[Comparison, ComparisonRecord]:
    """Run and compare; keep the comparison as `comparison.json` beside its base and head runs."""
    one_malloc_arena()  # before the sides' first thread: glibc reads the limit then
    outcome = paired_run(options, ref, method, listeners=_listeners, seed=seed)
    for side, run_dir in (("base", outcome.base_run_dir), ("head", outcome.head_run_dir)):
        if run_dir.is_dir():  # an interrupted comparison may never have started a side
            click.echo(f"{side} run: {run_dir}", err=True)
    folder = outcome.base_run_dir.parent
    record = comparison_record(outcome.comparison, started_at=started, finished_at=_now(), record_id=folder.name,
                               runs=(side_runs(outcome.base_run_dir), side_runs(outcome.head_run_dir)),
                               repo=options.repo)
    try:
        folder.mkdir(parents=True, exist_ok=True)  # an interrupt may have come before either side's run folder
        write_record(folder / RECORD_FILE, record)
    except OSError as exc:
        raise GateInputError(str(folder / RECORD_FILE), "", f"cannot write: {exc.strerror}",
                             "check the reports folder") from exc
    return outcome.comparison, record


UNJUDGED_NAMED = 5  # case ids named on one line of unjudged cases that share their reasons


def unjudged_lines(flips: list) -> list[str]:
    """Unjudged cases, one line per set of them with the same counts and reasons: an interrupt
    leaves every case not yet run unjudged for one reason, and 2,000 identical lines would bury
    the decision under them."""
    groups: dict[tuple, list] = {}
    for flip in flips:
        groups.setdefault((flip.base, flip.head, tuple(flip.reasons[:3])), []).append(flip.case_id)
    lines = []
    for (base, head, reasons), ids in groups.items():
        named = ", ".join(ids[:UNJUDGED_NAMED]) + (f" and {len(ids) - UNJUDGED_NAMED} more" if len(ids) > UNJUDGED_NAMED
                                                  else "")
        cases = ids[0] if len(ids) == 1 else f"{len(ids)} cases ({named})"
        lines.append(f"  {'UNJUDGED':<10} {cases}  {base} -> {head}")
        lines += [f"      {reason}" for reason in reasons]
    return lines


def render_comparison(comparison: Comparison) -> str:
    """Flips first (regressions on top, with reasons), then the paired tests, then the decision."""
    counts = comparison.counts()
    lines = [f"compare {comparison.base_label} -> {comparison.head_label}: "
             + ", ".join(f"{n} {k}" for k, n in counts.items() if n or k in ("regressed", "fixed", "unchanged"))]
    order = {"regressed": 0, "fixed": 1, "removed": 2, "added": 3, "unchanged": 4}  # the unjudged come grouped
    for flip in sorted((f for f in comparison.flips if f.kind != "unjudged"), key=lambda f: order[f.kind]):
        if flip.kind == "unchanged" and not flip.reasons:
            continue
        mark = "" if flip.p_value is None else (
            f"  credible (p={flip.p_value:.3g})" if flip.credible
        else f"  not established at this size (p={flip.p_value:.3g}; more trials would tell)")
        lines.append(f"  {flip.kind.upper():<10} {flip.case_id}  {flip.base} -> {flip.head}{mark}")
        lines += [f"      {reason}" for reason in flip.reasons[:3]]
    lines += unjudged_lines([f for f in comparison.flips if f.kind == "unjudged"])
    lines.append("per-case counts (stratified exact test, one-sided, Holm across dimensions; "
                 "a case's p is Holm-adjusted over every case both sides hold):")
    for t in comparison.tests:
        holm = "" if t.p_holm is None else f", Holm {t.p_holm:.3g}"
        lines.append(f"  {t.dimension:<11}{t.base_passes}/{t.base_trials} -> {t.head_passes}/{t.head_trials} "
                     f"on {t.cases} cases  p={t.p_value:.3g}{holm}  {t.label or t.status}")
    if comparison.order:
        o = comparison.order
        how = (f"interleaved in {len(o['rounds'])} rounds" if o.get("interleaved")
               else "one side after the other" + (" (cached answers are keyed by trial index)" if o.get("cached")
                                                  else ""))
        lines.append(f"order: {how}, seed {o.get('seed')}")
    d = comparison.decision
    let_through = f", {LET_THROUGH_WORDS}"  # as `run` says it (reports/terminal.py decision_words)
    verdict = {"pass": "PASS (exit 0)", "regression": "REGRESSION (exit 1)", "error": "COULD NOT JUDGE (exit 2)",
               "inconclusive": f"INCONCLUSIVE (exit {d.exit_code}{let_through if d.exit_code == 0 else ''})"}[d.status]
    lines.append(f"decision ({d.method}): {verdict}" + (f" - {'; '.join(d.reasons)}" if d.reasons else ""))
    lines += [f"warning: {w}" for w in d.warnings]
    return "\n".join(lines)
