"""Command: mutate (rubric mutation testing: does the suite notice plausible edits?)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rubricgate import exitcodes
from rubricgate.cli.app import main
from rubricgate.cli.options import FiniteFloatRange, config_option, fail_input, repo_option, repo_root
from rubricgate.errors import GateInputError, GateInputErrors


@main.command()
@repo_option
@config_option
@click.option("--agent", default=None,
              help="Reviewer each mutant's suite runs with (default: agent.name in rubricgate.yaml).")
@click.option("--jobs", type=click.IntRange(min=1), default=1,
              help="Mutants run at once (each run's trials at once: agent.jobs in rubricgate.yaml).")
@click.option("--cache", is_flag=True, help="Reuse stored answers of unchanged (reviewer, case, agent, model, trial).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder for --cache.")
@click.option("--max-cost", type=FiniteFloatRange(min=0), default=None, metavar="USD",
              help="Stop starting mutants once this much is spent over all of them (exit 2).")
@click.option("--shard", default=None, metavar="K/N", help="Run only every Nth mutant from the Kth.")
@click.option("--only-rules", multiple=True, metavar="RULE",
              help="Only mutants of these rules (repeatable or comma-separated; tier:warning-threshold, prompt).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for mutation.json and the skeletons (default: <reports>/mutate-<id>/).")
@click.option("--min-score", type=FiniteFloatRange(0, 1), default=None, help="Exit 1 when the score is below this.")
def mutate(repo, config_path, agent, jobs, cache, cache_dir, max_cost, shard, only_rules, out, min_score) -> None:
    """Mutate the rubric and prompt (delete a rule, move a severity or the threshold, drop a paragraph);
    report the mutation score and every surviving mutant with a fixture skeleton."""
    from rubricgate.mutate.flow import MutateRequest, report_lines
    from rubricgate.mutate.flow import mutate as run_mutate

    rules = [r.strip() for item in only_rules for r in item.split(",") if r.strip()]
    request = MutateRequest(repo=repo_root(repo), config_path=config_path, agent=agent, jobs=jobs, cache=cache,
                            cache_dir=cache_dir, max_cost=max_cost, shard=shard, only_rules=rules, out=out,
                            progress=lambda line: click.echo(line, err=True))
    try:
        report, folder = run_mutate(request)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    click.echo("\n".join(report_lines(report, folder)))
    if report.interrupted:
        ran = sum(m.status != "not_run" for m in report.mutants)
        fail_input(GateInputError("mutate", "", f"interrupted: {ran} of {len(report.mutants)} mutants finished "
                                  f"and are kept in {folder / 'mutation.json'}", "run mutate again for the rest"))
    if any(m.status in ("error", "not_run") for m in report.mutants):
        sys.exit(exitcodes.CANNOT_JUDGE)
    if min_score is not None:
        _gate_min_score(report, min_score)


def _gate_min_score(report, min_score: float) -> None:
    """Exit 1 below --min-score; exit 2 when the undecided mutants decide which side it is on."""
    from rubricgate.mutate.score import below_min_score, score_range

    statuses = [m.status for m in report.mutants]
    side = below_min_score(statuses, report.score, min_score)
    if side == "below":
        sys.exit(exitcodes.REGRESSION)
    if side == "open":
        low, high = score_range(statuses) or (0.0, 0.0)
        fail_input(GateInputError("mutate", "--min-score", f"{report.undecided} undecided mutant(s) leave the score "
                                  f"between {low:.0%} and {high:.0%}, around the {min_score:.0%} asked",
                                  "raise gate.max_trials_per_case, or add cases that exercise those edits"))
