"""Shared fixtures: a small, real repository copied from this one into tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rubricgate.isolation.reaping import stop_adopting_orphans
from rubricgate.models.dimensions import DIMENSIONS
from tests.children import children, new_zombies

ROOT = Path(__file__).resolve().parents[1]
FULL = os.environ.get("RUBRICGATE_FULL_TESTS") == "1"  # .ci/run: every long test in full


def pytest_configure(config) -> None:
    """Ctrl-C as a terminal delivers it, however pytest was started: a background job (`pytest &`
    from a script, `nohup`) starts it with SIGINT ignored, and rubricgate rightly leaves an
    ignored SIGINT ignored, so the tests that interrupt a run in this process would wait for
    nothing. Each xdist worker configures itself too."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(optionalhook=True)  # pytest -p no:xdist has no such hook
def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (the README's test command): three workers per two cores. Many tests wait on
    processes (sandbox launches, git, agents that sleep or time out), so two workers left a 2-core
    machine idle part of the time: the whole suite took 263 s there with two, 231 s with three or
    four (CPU 1.86 of the 2 cores busy)."""
    return max(2, -(-3 * len(os.sched_getaffinity(0)) // 2))


def examples(full: int) -> int:
    """A property test's hypothesis examples: `full` under RUBRICGATE_FULL_TESTS=1 (.ci/run), a
    third of them (at least 30) in the README's command, as its `long` tests run a sample."""
    return full if FULL else max(30, full // 3)


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked `long` run in full under RUBRICGATE_FULL_TESTS=1 (.ci/run); otherwise (the
    README's test command) only their sample: a parametrized one's first case, an unparametrized
    one not at all. Each stays a test of its own, named in the skip reason."""
    if FULL:
        return
    skip = pytest.mark.skip(reason="long end-to-end test: run in full by .ci/run (RUBRICGATE_FULL_TESTS=1)")
    for item in items:
        if item.get_closest_marker("long") is None:
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is None or any(i for i in callspec.indices.values()):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def bwrap_ready() -> None:
    """Skip a test that starts bubblewrap where it cannot start (a newcomer's machine without it);
    under .ci/run (RUBRICGATE_REQUIRE_SANDBOX=1) its absence fails instead."""
    from rubricgate.isolation.sandbox import probe_bwrap

    problem = probe_bwrap()
    if problem and os.environ.get("RUBRICGATE_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"bubblewrap is required here: {problem}")
    if problem:
        pytest.skip(f"bubblewrap unavailable: {problem}")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(dest: Path, fixtures: list[str] | None = None, tasks: list[str] | None = None,
              baseline: dict | None = None, commit: bool = True) -> Path:
    """Copy the reviewer, config and the named fixtures/tasks; write a baseline; git-commit it."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "reviewer", dest / "reviewer", ignore=shutil.ignore_patterns(".changed-skills.txt"))
    shutil.copy(ROOT / "rubricgate.yaml", dest / "rubricgate.yaml")
    for rel in fixtures if fixtures is not None else ["pass/weekly-revenue-summary", "block/data-loader"]:
        shutil.copytree(ROOT / "fixtures" / rel, dest / "fixtures" / rel)
    (dest / "evals" / "tasks").mkdir(parents=True)
    (dest / "fixtures").mkdir(exist_ok=True)
    for name in tasks or []:
        shutil.copy(ROOT / "evals" / "tasks" / f"{name}.yaml", dest / "evals" / "tasks")
    rates = baseline or dict.fromkeys(DIMENSIONS, 1.0)
    ids = [f"fixture-{Path(rel).name}" for rel in fixtures if fixtures is not None] if fixtures is not None else [
        "fixture-weekly-revenue-summary", "fixture-data-loader"]
    ids += [yaml.safe_load((dest / "evals" / "tasks" / f"{name}.yaml").read_text())["id"] for name in tasks or []]
    write_baseline_cases(dest, ids, rates)
    (dest / ".gitignore").write_text("reports/\n")
    if commit:
        subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
        git(dest, "add", "-A")
        git(dest, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
    return dest


@pytest.fixture(autouse=True)
def _private_cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """--cache defaults to $XDG_CACHE_HOME/rubricgate: never let a test touch the real one.
    mkdtemp, not tmp_path_factory.mktemp: mktemp numbers a folder by listing every folder made so
    far, so one per test made the whole suite's set-up quadratic (25 s of 2,900 tests, serially)."""
    home = Path(tempfile.mkdtemp(prefix="xdg-cache-", dir=tmp_path_factory.getbasetemp()))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


_CHILDREN = pytest.StashKey[set[int]]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """This worker's children before the test's fixtures, a module's shared run among them."""
    item.stash[_CHILDREN] = set(children())


@pytest.fixture(autouse=True)
def _no_zombie_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves this worker a zombie child (a process ended and never waited on).
    No test runs with the worker adopting orphans unless it asks itself, nor leaves it so: from
    a copy-only run on (a module's shared one too) every sandbox a test started, in this process
    or in a `rubricgate` it ran, handed it its init, and workers ended holding hundreds."""
    stop_adopting_orphans()
    yield
    stop_adopting_orphans()
    if left := new_zombies(request.node.stash.get(_CHILDREN, set())):
        pytest.fail(f"the test left {len(left)} zombie children of this process: {', '.join(left)}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def write_baseline_cases(repo: Path, ids: list[str], rates: dict[str, float] | None = None) -> None:
    """A format 2 baseline.json holding every case id at the given rate (as n/4; 1.0 as 1/1),
    kept in step with the suite by write_task: a test's baseline knows every case it runs."""
    rates = rates or dict.fromkeys(DIMENSIONS, 1.0)
    counts = {d: {"passes": 1, "trials": 1} if r == 1.0 else {"passes": round(r * 4), "trials": 4}
              for d, r in rates.items()}
    (repo / "baseline.json").write_text(json.dumps({"format_version": 2, "rates": rates, "trials": 1, "history": [],
                                                    "cases": {i: counts for i in ids}}))


def write_task(repo: Path, data: dict, name: str | None = None) -> Path:
    path = repo / "evals" / "tasks" / f"{name or data.get('id', 'task')}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    baseline = repo / "baseline.json"
    if data.get("id") and baseline.is_file():
        stored = json.loads(baseline.read_text())
        if stored.get("format_version") == 2 and data["id"] not in stored["cases"]:
            stored["cases"][data["id"]] = next(iter(stored["cases"].values()), None) or {
                d: {"passes": 1, "trials": 1} for d in DIMENSIONS}
            baseline.write_text(json.dumps(stored))
    return path


def invoke_with_prompt_link(repo: Path, command: str, target: str):
    """`rubricgate COMMAND --repo REPO` after the shipped prompt links to `target` (named from the
    prompt's folder), as a maintainer adding "Also read [the policy](...)" would."""
    from click.testing import CliRunner

    from rubricgate.cli import main

    with (repo / "reviewer/prompts/evaluate.md").open("a") as prompt:
        prompt.write(f"\nAlso read [the policy]({target}).\n")
    return CliRunner().invoke(main, [command, "--repo", str(repo)])


def set_severity(repo: Path, rule: str, severity: str) -> None:
    """Edit the rubric table row of `rule` in place, as a maintainer would."""
    path = repo / "reviewer/evaluator/references/rubric.md"
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"| {rule} |"):
            cells = line.split("|")
            cells[2] = f" {severity} "
            lines[i] = "|".join(cells)
    path.write_text("\n".join(lines) + "\n")


def edit_expect(repo: Path, fixture: str, **fields) -> None:
    """Set fields of a fixture's expect.yaml (fixture: its folder under fixtures/), as a maintainer would."""
    path = repo / "fixtures" / fixture / "expect.yaml"
    data = yaml.safe_load(path.read_text()) if path.is_file() else {}
    path.write_text(yaml.safe_dump({**data, **fields}))


def reexpect_data_loader_as_warn(repo: Path) -> None:
    """The data-loader fixture and the task reviewing it re-expected as WARN (the fixture moved to
    warn/): what a change that regresses fm-description-required to a warning would want."""
    task = repo / "evals/tasks/block-missing-description.yaml"
    data = yaml.safe_load(task.read_text())
    data["expect"]["tier"], data["review"] = "WARN", ["fixtures/warn/data-loader/SKILL.md"]
    task.write_text(yaml.safe_dump(data))
    (repo / "fixtures/warn").mkdir(exist_ok=True)
    shutil.move(repo / "fixtures/block/data-loader", repo / "fixtures/warn/data-loader")


def confirming_repo(dest: Path) -> Path:
    """The statistical gate against a baseline of 10/10 a case, the data-loader fixture re-expected
    as WARN (the builtin says BLOCK): its first failure is re-tried with confirmation trials."""
    repo = make_repo(dest, fixtures=["pass/weekly-revenue-summary", "pass/ab-test-readout", "block/data-loader"],
                     commit=False)
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    baseline = json.loads((repo / "baseline.json").read_text())
    for counts in baseline["cases"].values():
        counts.update({d: {"passes": 10, "trials": 10} for d in counts})
    (repo / "baseline.json").write_text(json.dumps(baseline))
    (repo / "fixtures/warn").mkdir()
    (repo / "fixtures/block/data-loader").rename(repo / "fixtures/warn/data-loader")
    return repo


DATA_LOADER_TASK = {"id": "data-loader-needs-description", "why": "protects fm-description-required",
                    "review": ["fixtures/block/data-loader/SKILL.md"],
                    "expect": {"tier": "BLOCK", "rules": ["fm-description-required"]}}


def data_loader_run(tmp_path: Path) -> tuple[Path, Path]:
    """A real run of the builtin reviewer on a small repository with DATA_LOADER_TASK: (repo, run_dir)."""
    from rubricgate.pipeline import RunOptions, run_suite

    repo = make_repo(tmp_path / "repo", commit=False)
    write_task(repo, DATA_LOADER_TASK)
    outcome = run_suite(RunOptions(repo=repo))
    assert outcome.exit_code == 0, outcome.summary.decision
    return repo, outcome.run_dir


def lowered_rule_run(repo: Path) -> Path:
    """The statistical gate against a two-session baseline of 10/10 a case, fm-description-required
    lowered to a warning: the BLOCK fixture fails every trial and is re-tried with confirmation
    trials; the run (exit 1) and its folder."""
    from click.testing import CliRunner

    from rubricgate.cli import main

    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["gate"]["method"] = "statistical"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    stored = json.loads((repo / "baseline.json").read_text())
    for dims in stored["cases"].values():  # as baseline update measures: two sessions, none failing
        for d in dims:
            dims[d] = {"passes": 10, "trials": 10, "sessions": [[5, 5], [5, 5]]}
    (repo / "baseline.json").write_text(json.dumps(stored))
    rubric = repo / "reviewer/evaluator/references/rubric.md"
    rubric.write_text(rubric.read_text().replace("| fm-description-required | critical |",
                                                 "| fm-description-required | warning |"))
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 1, result.output
    return sorted(p for p in (repo / "reports").iterdir() if p.is_dir())[-1]


def tour_repo(dest: Path) -> Path:
    """This repository's default suite (reviewer, tasks, fixtures, config, baseline) in a fresh git repo."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "reviewer", "evals", "fixtures", "rubricgate.yaml",
                             "baseline.json"], capture_output=True, text=True, check=True).stdout.split()
    for rel in listed:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest
