"""Commands: run, validate, baseline update, schema."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from pydantic import BaseModel

from rubricgate.agents.selection import check_agents
from rubricgate.boundary import printable
from rubricgate.cli.app import collector_paused, main, to_devnull
from rubricgate.cli.options import CASE_TEXT, TRIALS, FiniteFloatRange, config_option, fail_input, repo_option
from rubricgate.cli.options import repo_root as _repo
from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.models.baseline import Baseline
from rubricgate.models.config import Config
from rubricgate.models.task import FixtureExpect, TaskFile
from rubricgate.suite.load import load_all, unseen_case_rubrics

# `validate` (and `schema`) share this module with `run`: the terminal report, the progress line
# and the pipeline are imported inside the commands that use them (bench/startup.py).


def run_suite(options):
    """rubricgate.pipeline.run_suite, imported on use: the runner and the reports are not needed
    by `validate` or `schema`, which share this module (bench/startup.py)."""
    with collector_paused():
        from rubricgate.pipeline import run_suite as run_pipeline

    return run_pipeline(options)


def one_malloc_arena() -> None:
    """runner/malloc.py, imported on use (ctypes is not needed by `validate` or `schema`)."""
    from rubricgate.runner.malloc import one_malloc_arena as one_arena

    one_arena()


def _run_options(**fields):
    with collector_paused():
        from rubricgate.pipeline import RunOptions

    return RunOptions(**fields)


def _sigterm_as_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def interrupt_on_sigterm() -> None:
    """SIGTERM (a cancelled CI job) ends the command as Ctrl-C does: the partial report, exit 2.
    The console entry point has its own handler in place already (cli/console.py), which
    raises only once: it stays; a library caller (click's test runner) gets this one."""
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _sigterm_as_interrupt)


cache_option = click.option("--cache", is_flag=True,
                            help="Reuse stored answers of unchanged (reviewer, case, agent, model, trial).")
cache_dir_option = click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                                help="Cache folder for --cache (default: config cache_dir, else ~/.cache/rubricgate).")
max_cost_option = click.option("--max-cost", type=FiniteFloatRange(min=0), default=None, metavar="USD",
                               help="Stop starting trials once this much is spent; the rest are not run (exit 2).")


@main.command()
@repo_option
@config_option
@click.option("--agent", default=None, help="Agent adapter for every case (overrides tasks and config).")
@click.option("--trials", type=TRIALS, default=None,
              help="Trials per case (overrides tasks and config).")
@click.option("--only", multiple=True, type=CASE_TEXT, help="Run only cases whose id contains this text (repeatable).")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Trials run at once. Default: agent.jobs in rubricgate.yaml, "
                   "else 4 for a CLI reviewer, 1 for the builtin.")
@click.option("--keep-workspaces", is_flag=True, help="Keep each trial's throwaway copy for debugging.")
@cache_option
@cache_dir_option
@max_cost_option
@click.option("--shard", default=None, metavar="K/N",
              help="Run only shard K of N (deterministic, balanced); join the shards with `rubricgate merge`.")
@click.option("--shard-costs", type=click.Path(path_type=Path), default=None, metavar="RUN_DIR",
              help="Balance the shards by this earlier run's trial durations (give every shard the same one).")
@click.option("--continue", "continues", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="RUN_DIR", help="Continue this INCONCLUSIVE run: its trials count, the design's next budget "
                                      "runs, the errors still controlled (statistical gate).")
def run(repo, config_path, agent, trials, only, jobs, keep_workspaces, cache, cache_dir, max_cost, shard,
        shard_costs, continues) -> None:
    """Run the suite against the reviewer and gate the rates against baseline.json."""
    sharding = shard is not None or shard_costs is not None
    if sharding:  # the shard module and its models only when sharding: a run's start is its fixed cost
        from rubricgate.fleet.shard import run_shard, shard_exit_code, spec_from_flags

    interrupt_on_sigterm()
    one_malloc_arena()  # before the run's first thread, a shard's too: glibc reads the limit then
    try:
        options = _run_options(repo=_repo(repo), config_path=config_path, agent=agent, trials=trials,
                               exits_after=True, only=list(only), jobs=jobs, keep_workspaces=keep_workspaces,
                               listeners=_listeners(),
                               cache=cache or cache_dir is not None, cache_dir=cache_dir, max_cost=max_cost,
                               shard=spec_from_flags(shard, shard_costs) if sharding else None, continues=continues)
        outcome = run_shard(options) if shard else run_suite(options)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    from rubricgate.reports.terminal import render_terminal

    code = shard_exit_code(outcome.summary) if shard else outcome.exit_code
    with output_may_be_gone():  # the run is judged and recorded: its exit code is the decision's
        click.echo(render_terminal(outcome.summary, str(outcome.run_dir), (shard, code) if shard else None))
        _builtin_scope(outcome.summary)
        if outcome.workspaces is not None:
            click.echo(f"workspaces kept: {outcome.workspaces}/<trial>/ (the trial's folder is in events.jsonl)")
    sys.exit(code)


@contextlib.contextmanager
def output_may_be_gone() -> Iterator[None]:
    """Lines whose reader may have left (`rubricgate run | head -2`): once a write finds the pipe
    closed, stdout and stderr go to /dev/null and the command goes on to its exit code (a run's
    decision, not SIGPIPE's 141: its summary.json is written and its code is the gate's)."""
    try:
        yield
    except BrokenPipeError:
        to_devnull(sys.stdout, sys.stderr)


def _listeners(label: str | None = None) -> list:
    """Live progress on stderr (a TTY gets a status line, CI logs one line per case)."""
    from rubricgate.reports.progress import Progress

    return [Progress(sys.stderr, label=label)]


@main.command()
@repo_option
@config_option
@click.option("--list", "list_cases", is_flag=True, help="Also print every case id (what --only matches).")
def validate(repo, config_path, list_cases) -> None:
    """Load config, rubric, cases and baseline; report every problem; run nothing."""
    try:
        loaded = _load_checked(_repo(repo), config_path)
        notes, warnings = _gate_reach(loaded)
        warnings += loaded.config.verdict.doubts() if loaded.config.verdict else []
        warnings += unseen_case_rubrics(loaded.config, loaded.cases)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    tasks = sum(1 for c in loaded.cases if c.source == "task")
    click.echo(f"ok: {len(loaded.cases)} cases ({tasks} tasks, {len(loaded.cases) - tasks} fixtures), "
               f"{len(loaded.rubric.rules)} rules, "
               f"baseline {_rates(loaded.baseline.rates) if loaded.baseline else 'none'}")
    click.echo("\n".join(case_count_lines(loaded.cases)))
    if list_cases:
        click.echo("\n".join(case_list_lines(loaded.cases)))
    from rubricgate.suite.coverage import coverage_lines, rule_coverage

    click.echo("\n".join(coverage_lines(rule_coverage(loaded.rubric, loaded.cases, loaded.baseline))))
    from rubricgate.agents.builtin import scope_note

    if _uses_builtin(loaded) and (note := scope_note({r.id: r.kind for r in loaded.rubric.rules.values()})) is not None:
        click.echo(f"note: {note}")  # only where the builtin reviews: it says what the builtin leaves out
    click.echo("".join(f"note: {n}\n" for n in notes), nl=False)
    if loaded.baseline is None:
        click.echo(f"note: no {loaded.config.baseline} yet: `rubricgate baseline update` measures it; "
                   "until then `run` and `compare` cannot judge (exit 2)")
    click.echo("".join(f"warning: {w}\n" for w in warnings), nl=False, err=True)


def _gate_reach(loaded) -> tuple[list[str], list[str]]:
    """Under the statistical gate (notes, warnings): a margin no reviewer could show at this size
    is an input error; one the measured baseline's noise puts out of reach, a warning; the
    baseline trials per case a single collapsing case needs, a note (a warning when the baseline
    has fewer) (gating/planning.py)."""
    gate = loaded.config.gate
    if gate.method != "statistical":  # the plan's arithmetic only when it gates on it
        return [], []
    from rubricgate.gating.planning import check_margin, collapse_line, suite_plan

    ids, dims = [c.id for c in loaded.cases], loaded.config.graded_dimensions()
    plan = suite_plan(loaded.baseline, ids, gate, loaded.config.trials, dims=dims)
    margin = check_margin(plan, gate, len(ids), loaded.config.trials, dims)
    collapse, short = collapse_line(loaded.baseline, ids, gate, dims)
    return ([] if short else [collapse]), ([margin] if margin else []) + ([collapse] if short else [])


def _builtin_scope(summary) -> None:
    """After a builtin run: which of the rubric's rules its verdicts leave out (stderr)."""
    from rubricgate.agents.builtin import scope_note

    rules = summary.reviewer.rules if summary.reviewer else {}
    if ("builtin" in (summary.agent or "").split(",")
            and (note := scope_note({r: row.kind for r, row in rules.items()}))):
        click.echo(f"note: {note}", err=True)


def _uses_builtin(loaded) -> bool:
    """Does the builtin reviewer review any case (the configured agent, or a task's own)?"""
    return loaded.config.agent.name == "builtin" or any(c.agent == "builtin" for c in loaded.cases)


def _load_checked(root: Path, config_path: Path | None):
    """The suite with its agents and baseline checked together: a missing CLI and a missing
    baseline are both reported, not only the first found."""
    from dataclasses import replace

    from rubricgate.errors import collect
    from rubricgate.suite.baseline_file import load_baseline
    from rubricgate.suite.cases import unpassable_errors

    loaded = load_all(root, config_path, require_baseline=False)
    errors: list[GateInputError] = []
    collect(errors, lambda: check_agents(loaded.cases, loaded.config))
    if _uses_builtin(loaded):  # `run` stops here before any trial: so does validate
        from rubricgate.agents.builtin import check_can_review

        collect(errors, lambda: check_can_review(root, loaded.config))
    errors += unpassable_errors(loaded.cases, loaded.rubric)
    path = root / loaded.config.baseline
    # None before the first `baseline update` (the documented order: validate, then measure);
    # a baseline that is there but broken is an error like any other file.
    ids = [c.id for c in loaded.cases]
    present = path.exists() or path.is_symlink()
    baseline = collect(errors, lambda: load_baseline(path, loaded.config.baseline, case_ids=ids)) if present else None
    if errors:
        raise GateInputErrors(errors)
    return replace(loaded, baseline=baseline)


def case_count_lines(cases) -> list[str]:
    """Cases found, by source and expected tier: what `validate` loaded, so nothing hides."""
    lines = []
    for source in ("task", "fixture"):
        of = [c for c in cases if c.source == source]
        tiers = {t: sum(1 for c in of if (c.expect.tier or "any") == t) for t in ("PASS", "WARN", "BLOCK", "any")}
        shown = ", ".join(f"{t} {n}" for t, n in tiers.items() if n) or "none"
        lines.append(f"  {source}s: {len(of)} ({shown})")
    return lines


def case_list_lines(cases) -> list[str]:
    """One line per case: id, expected tier and the file it came from."""
    width = max((len(c.id) for c in cases), default=0)
    return [f"{c.id:<{width}}  {c.expect.tier or 'any':<5}  {c.origin}" for c in cases]


def _rates(rates: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0%}" for k, v in rates.items())


@main.group()
def baseline() -> None:
    """Inspect or update baseline.json."""


@baseline.command("update")
@repo_option
@config_option
@click.option("--reason", default=None,
              help="Why the baseline changes (needed to lower a rate; a lowering without it is refused once the "
                   "run shows it, and the run is kept for --from).")
@click.option("--from", "from_runs", type=click.Path(path_type=Path), multiple=True,
              help="Use this run's summary.json instead of running the suite (repeat it for each session's run).")
@click.option("--allow-partial", is_flag=True,
              help="Accept a run that left cases out (--only), was interrupted, or had errored trials.")
@click.option("--sessions", type=click.IntRange(min=1, max=20), default=None,
              help="Separate runs to measure in "
                   "(statistical gate default: 2, so within-run dependence can be checked).")
@click.option("--trials", type=TRIALS, default=None,
              help="Trials per case in all, split among the sessions (statistical gate default: at least 10, "
                   "and what a single collapsing case needs at this suite size).")
def baseline_update(repo, config_path, reason, from_runs, allow_partial, sessions, trials) -> None:
    """Set the baseline from a run: raise freely, lower only with --reason."""
    from rubricgate.flows.baseline_update import BaselineRequest, update_baseline  # runs the pipeline: on use

    interrupt_on_sigterm()
    one_malloc_arena()  # its sessions are runs: before their first thread
    request = BaselineRequest(repo=_repo(repo), config_path=config_path, reason=reason, from_runs=list(from_runs),
                              allow_partial=allow_partial, listeners=_listeners(), sessions=sessions, trials=trials)
    try:
        done = update_baseline(request)
    except (GateInputError, GateInputErrors) as exc:
        fail_input(exc)
    for warning in done.warnings:
        click.echo(f"warning: partial run accepted (--allow-partial): {warning}", err=True)
    lowered = f" (lowered {'; '.join(done.lowered[:5])}: {reason})" if done.lowered else ""
    pooled = " (same reviewer, agent and model: trials pooled with the baseline's)" if done.pooled else ""
    click.echo(printable(f"baseline updated from {done.source}: {_rates(done.baseline.rates)}{lowered}{pooled}"))


SCHEMAS: dict[str, type[BaseModel]] = {"task": TaskFile, "baseline": Baseline, "config": Config,
                                       "expect": FixtureExpect}


@main.command()
@click.argument("which", type=click.Choice(sorted(SCHEMAS)), default="task")
def schema(which: str) -> None:
    """Print the JSON Schema of a file format (task, baseline, config, fixture expect) for editors."""
    from rubricgate.models.field_docs import json_schema

    click.echo(json.dumps(json_schema(SCHEMAS[which]), indent=2))
