"""`rubricgate compare`: per-case flips between two runs, or the reviewer at REF vs the working tree."""

from __future__ import annotations

import sys
from dataclasses import asdict
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
    repo_option,
)
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.flows.compare_run import paired_run
from rubricgate.gating.compare import Comparison, compare_summaries
from rubricgate.models.config import GateConfig
from rubricgate.pipeline import RunOptions
from rubricgate.records.files import read_summary, write_json_atomic
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
@click.option("--trials", type=click.IntRange(min=1), default=None, help="Trials per case (with --base).")
@click.option("--only", multiple=True, help="Only cases whose id contains this text (with --base).")
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
    try:
        _check_mode(runs, base_ref)
        root = _repo(repo)
        if base_ref is not None:
            options = RunOptions(repo=root, config_path=config_path, agent=agent, trials=trials, only=list(only),
                                 jobs=jobs, cache=cache, max_cost=max_cost)
            comparison = _paired(options, base_ref, method, seed)
        else:
            comparison = _stored(runs, _gate(root, config_path, method))
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    if json_out is not None:
        write_json_atomic(json_out, comparison_json(comparison))
    click.echo(render_comparison(comparison))
    sys.exit(comparison.decision.exit_code)


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
    return compare_summaries(base, head, gate, str(runs[0]), str(runs[1]))


def _paired(options: RunOptions, ref: str, method: str | None, seed: int | None) -> Comparison:
    outcome = paired_run(options, ref, method, listeners=_listeners, seed=seed)
    click.echo(f"base run: {outcome.base_run_dir}\nhead run: {outcome.head_run_dir}", err=True)
    return outcome.comparison


def comparison_json(comparison: Comparison) -> dict:
    """The comparison as plain JSON (flips, per-dimension tests, decision)."""
    return {"format_version": 2, "base": comparison.base_label, "head": comparison.head_label,
            "order": comparison.order, "counts": comparison.counts(), "flips": [asdict(f) for f in comparison.flips],
            "tests": [asdict(t) for t in comparison.tests],
            "decision": comparison.decision.model_dump(mode="json")}


def render_comparison(comparison: Comparison) -> str:
    """Flips first (regressions on top, with reasons), then the paired tests, then the decision."""
    counts = comparison.counts()
    lines = [f"compare {comparison.base_label} -> {comparison.head_label}: "
             + ", ".join(f"{n} {k}" for k, n in counts.items() if n or k in ("regressed", "fixed", "unchanged"))]
    order = {"regressed": 0, "fixed": 1, "removed": 2, "added": 3, "unchanged": 4}
    for flip in sorted(comparison.flips, key=lambda f: order[f.kind]):
        if flip.kind == "unchanged" and not flip.reasons:
            continue
        mark = "" if flip.p_value is None else (
            f"  credible (p={flip.p_value:.3g})" if flip.credible
        else f"  not established at this size (p={flip.p_value:.3g}; more trials would tell)")
        lines.append(f"  {flip.kind.upper():<10} {flip.case_id}  {flip.base} -> {flip.head}{mark}")
        lines += [f"      {reason}" for reason in flip.reasons[:3]]
    lines.append("per-case counts (stratified exact test, one-sided, Holm across dimensions; "
                 "a case's p is Holm-adjusted over the cases that moved):")
    for t in comparison.tests:
        holm = "" if t.p_holm is None else f", Holm {t.p_holm:.3g}"
        lines.append(f"  {t.dimension:<11}{t.base_passes}/{t.base_trials} -> {t.head_passes}/{t.head_trials} "
                     f"on {t.cases} cases  p={t.p_value:.3g}{holm}  {t.label or t.status}")
    if comparison.order:
        o = comparison.order
        how = (f"interleaved in {len(o['rounds'])} rounds" if o.get("interleaved")
               else "one side after the other (cached answers are keyed by trial index)")
        lines.append(f"order: {how}, seed {o.get('seed')}")
    d = comparison.decision
    verdict = {"pass": "PASS (exit 0)", "regression": "REGRESSION (exit 1)", "error": "CANNOT JUDGE (exit 2)",
               "inconclusive": f"INCONCLUSIVE (exit {d.exit_code})"}[d.status]
    lines.append(f"decision ({d.method}): {verdict}" + (f" - {'; '.join(d.reasons)}" if d.reasons else ""))
    lines += [f"warning: {w}" for w in d.warnings]
    return "\n".join(lines)
