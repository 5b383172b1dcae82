"""The CLI never shows a traceback: an internal error is one line and exit 2."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from rubricgate.cli import main


def test_internal_error_is_one_line_exit_2(repo, monkeypatch):
    def broken(options):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr("rubricgate.cli.core.run_suite", broken)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2
    assert "error: internal error: RuntimeError: disk on fire" in result.output
    assert "Traceback" not in result.output


def test_an_interrupt_the_interpreter_wrapped_is_an_interrupt(repo, monkeypatch):
    # Ctrl-C while a class is made: Python 3.11 raises RuntimeError("Error calling __set_name__")
    # from the KeyboardInterrupt (bench/early_signals.py once saw it as an "internal error").
    def interrupted_in_set_name(options):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'cached_property' instance 'value'") from exc
    monkeypatch.setattr("rubricgate.cli.core.run_suite", interrupted_in_set_name)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["error: interrupted: the run was stopped before it could judge "
                                                  "(fix: run it again; nothing was gated)"]


def test_debug_variable_shows_the_traceback(repo, monkeypatch):
    monkeypatch.setenv("RUBRICGATE_DEBUG", "1")
    monkeypatch.setattr("rubricgate.cli.core.run_suite", lambda o: 1 / 0)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert isinstance(result.exception, ZeroDivisionError)


def test_python_dash_m_entry_point(repo):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "rubricgate", "validate", "--repo", str(repo)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("ok:")


def test_keep_workspaces_says_where_they_are(repo):
    import shutil
    from pathlib import Path

    result = CliRunner().invoke(main, ["run", "--repo", str(repo), "--keep-workspaces"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("workspaces kept: "))
    root = Path(line.split(": ", 1)[1].split("/<trial>/", 1)[0])
    assert root.is_dir() and any(root.iterdir())
    shutil.rmtree(root)


def test_lazy_command_table_matches_what_the_modules_register():
    """`--help` lists commands from LAZY_COMMANDS without importing them: the table must not drift."""
    import importlib

    from rubricgate.cli.app import LAZY_COMMANDS
    for module in {m for m, _ in LAZY_COMMANDS.values()}:
        importlib.import_module(module)
    assert sorted(main.commands) == sorted(LAZY_COMMANDS)
    for name, (module, help_text) in LAZY_COMMANDS.items():
        command = main.commands[name]
        assert command.callback.__module__ == module, name
        assert command.get_short_help_str(limit=1000) == help_text, name


def test_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(main, ["no-such-command"])
    assert result.exit_code == 2 and "No such command" in result.output


def test_commands_that_draw_nothing_import_neither_pandas_nor_numpy(repo):
    """Lean start: a fresh interpreter running --help and validate never loads them."""
    import subprocess
    import sys
    probe = ("import sys; from rubricgate.cli import main\n"
             "codes = []\n"
             "for argv in (['--help'], ['validate', '--repo', sys.argv[1]], ['schema']):\n"
             "    try: main(argv)\n"
             "    except SystemExit as exit: codes.append(exit.code)\n"
             "print(codes, sorted(m for m in ('pandas', 'numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe, str(repo)], capture_output=True, text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[0, 0, 0] []", proc.stderr


# What the fast commands must never load: each is a start-up
# cost bench/startup.py measured on these paths before, so a regression fails here, not in a timing.
HEAVY = ["numpy", "pandas", "matplotlib", "rubricgate.pipeline", "rubricgate.gating.exact", "rubricgate.gating.gate",
         "rubricgate.gating.stats", "rubricgate.models.results", "rubricgate.reports.html", "rubricgate.reports.terminal",
         "rubricgate.reports.trend", "rubricgate.records.files",
         # typing_extensions < 4.16 (pyproject pins >= 4.16) imported it under pydantic-core.
         "asyncio"]
# Per command, on top of HEAVY: what it has no use for at all.
NOT_NEEDED = {
    "help": ["pydantic", "yaml", "rubricgate.models.base", "rubricgate.cli.core"],
    "validate": ["rubricgate.reports.progress", "rubricgate.isolation.sandbox"],
    "changed": ["rubricgate.agents", "rubricgate.suite.load", "rubricgate.suite.cases", "rubricgate.cli.core",
                "rubricgate.models.transcript"],
    "agents": ["rubricgate.models.config", "rubricgate.models.transcript", "rubricgate.suite.load", "rubricgate.cli.core"],
}
_PROBE = """import json, sys
from rubricgate.cli import main
argv, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
try:
    main(argv)
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": [m for m in names if m in sys.modules]}))
"""


def _fresh_run(argv: list[str], names: list[str], path: str | None = None) -> dict:
    """Run one command in a fresh interpreter; its exit code and which of `names` it imported."""
    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argv), json.dumps(names)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("command", sorted(NOT_NEEDED))
def test_fast_commands_do_not_import_heavy_modules(command, repo, tmp_path):
    """--help, validate, changed and agents each start without numpy, the pipeline or the run's models."""
    argv = {"help": ["--help"], "validate": ["validate", "--repo", str(repo)],
            "changed": ["changed", "--base", "main", "--repo", str(repo)], "agents": ["agents"]}[command]
    names = HEAVY + NOT_NEEDED[command]
    got = _fresh_run(argv, names, path=str(tmp_path / "no-clis") if command == "agents" else None)
    assert got == {"code": 0, "loaded": []}


def test_probe_sees_what_a_command_imports(repo):
    """The probe can fail: `compare`'s module loads the statistics, which the fast commands must not."""
    got = _fresh_run(["compare", "--help"], ["rubricgate.cli.compare_cmd", "pydantic"])
    assert got == {"code": 0, "loaded": ["rubricgate.cli.compare_cmd", "pydantic"]}


def test_agents_with_a_cli_found_still_skips_the_run_modules(tmp_path):
    """An installed CLI loads its adapter to ask its version, but not the runner's heavy modules."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text('#!/bin/sh\necho "2.1.112 (Claude Code)"\n')
    (bin_dir / "claude").chmod(0o755)
    got = _fresh_run(["agents"], HEAVY + ["rubricgate.agents.claude"], path=str(bin_dir))
    assert got == {"code": 0, "loaded": ["rubricgate.agents.claude"]}


def test_a_reader_that_leaves_early_is_no_internal_error(tmp_path):  # `rubricgate validate | head -1`
    import subprocess
    import sys

    from tests.conftest import ROOT

    with subprocess.Popen([sys.executable, "-m", "rubricgate", "validate", "--list", "--repo", str(ROOT)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path) as proc:
        proc.stdout.close()  # the reader is gone before the first line (`| head -0`): the write must fail
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141 and "internal error" not in stderr, stderr


def test_outside_a_repository_the_fix_is_init(tmp_path):
    from click.testing import CliRunner

    got = CliRunner().invoke(main, ["validate", "--repo", str(tmp_path)])
    assert got.exit_code == 2 and "run `rubricgate init`" in got.output, got.output


def test_a_run_whose_reader_leaves_still_judges_records_and_exits_with_its_decision(tmp_path):
    """`rubricgate run 2>&1 | head -2`: the first progress line into the closed pipe ended the run
    with SIGPIPE's 141 and a run folder holding only events.jsonl."""
    import os
    import subprocess
    import sys

    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo", fixtures=["block/data-loader", "pass/weekly-revenue-summary"])
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write fails
    try:
        proc = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)],
                              stdout=write, stderr=write, cwd=tmp_path, timeout=300)
    finally:
        os.close(write)
    assert proc.returncode == 0
    summaries = list((repo / "reports").glob("*/summary.json"))
    assert len(summaries) == 1 and (summaries[0].parent / "report.html").is_file()
