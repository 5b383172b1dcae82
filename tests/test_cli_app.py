"""The CLI never shows a traceback: an internal error is one line and exit 2."""

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
    """Lean start (issue 13): a fresh interpreter running --help and validate never loads them."""
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
