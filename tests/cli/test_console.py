"""The console entry (cli/console.py): the command's status and output, then a quick exit."""

import os
import signal
import subprocess
import sys

import pytest

from rubricgate.cli import console
from rubricgate.cli.console import (
    FLUSH_FAILED,
    INTERRUPTED,
    interrupted_line,
    PLUGIN_LOADER,
    exit_status,
    flush_streams,
    skip_plugin_loader,
)


def _rubricgate(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rubricgate", *args], capture_output=True, text=True, **kwargs)


def test_bad_input_still_exits_2_with_its_one_line_error(tmp_path):
    (tmp_path / "rubricgate.yaml").write_text("format_version: 1\nsuite: [not, a, mapping]\n")
    proc = _rubricgate("validate", "--repo", str(tmp_path))
    assert proc.returncode == 2
    assert "rubricgate.yaml" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(("args", "names"), [
    (["run", "--trials", "0"], ["rubricgate run: ", "'--trials'", "0 is not in the range"]),
    (["run", "--no-such-flag"], ["rubricgate run: ", "'--no-such-flag'"]),
    (["no-such-command"], ["rubricgate: ", "'no-such-command'"]),
    (["record"], ["rubricgate record: ", "'--expect'", "Choose from: pass, warn, block"]),
    (["run", "--only", ""], ["rubricgate run: ", "'--only'", "part of every case id"]),
    (["plan", "--only", " "], ["rubricgate plan: ", "'--only'"]),
    # a missing value is raised before the command's context exists: still named from the arguments
    (["run", "--trials"], ["rubricgate run: ", "'--trials' requires an argument"]),
    (["baseline", "update", "--trials"], ["rubricgate baseline update: ", "'--trials' requires an argument"]),
])
def test_a_bad_flag_or_command_is_one_line_naming_it_and_exit_2(args, names):
    proc = _rubricgate(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    line, = proc.stderr.splitlines()  # not click's usage text: one line, as every input error
    assert line.startswith("error: ") and all(n in line for n in names) and "--help` lists" in line, line
    assert "\\x0a" not in line and "\\x09" not in line  # nothing escaped: one readable line


@pytest.mark.parametrize("args", [[], ["baseline"]])
def test_a_group_without_its_command_shows_its_help(args):
    proc = _rubricgate(*args)
    assert proc.returncode == 2 and proc.stderr == ""
    assert proc.stdout.startswith("Usage: ") and "Commands:" in proc.stdout


def test_output_written_to_a_pipe_arrives_whole_before_the_exit(repo):
    """stdout to a pipe is block-buffered: only the flush before os._exit gets it out."""
    proc = _rubricgate("validate", "--repo", str(repo), "--list")
    assert proc.returncode == 0, proc.stderr
    listed = proc.stdout.splitlines()
    assert len(listed) >= 3 and all(line.strip() for line in listed)


def test_a_stdout_nobody_reads_any_more_exits_1_quietly_as_before():
    """click turns the broken pipe into exit 1 (as it did before this entry); no traceback."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "rubricgate", "--version"], stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (1, b"")


def test_interpreter_shutdown_is_skipped_after_the_command():
    """What the entry is for: exit handlers (interpreter teardown) do not run."""
    script = ("import atexit, sys\n"
              "atexit.register(lambda: print('torn down', flush=True))\n"
              "sys.argv = ['rubricgate', '--version']\n"
              "from rubricgate.cli.console import console_main\n"
              "console_main()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "rubricgate" in proc.stdout and "torn down" not in proc.stdout


@pytest.mark.parametrize(("code", "status", "printed"), [(None, 0, ""), (0, 0, ""), (2, 2, ""), ("no repo", 1, "no repo")])
def test_exit_status_follows_sys_exit(code, status, printed, capsys):
    assert exit_status(code) == status
    assert capsys.readouterr().err.strip() == printed


def test_a_failed_flush_keeps_a_failing_status(monkeypatch):
    class Broken:
        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Broken())
    assert flush_streams(0) == FLUSH_FAILED
    assert flush_streams(2) == 2


def _spy_plugin(folder):
    """A pydantic plugin, installed as a package's entry point, that records what it is shown."""
    dist = folder / "spy_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pydantic]\nspy = spy_plugin:plugin\n")
    seen = folder / "seen.txt"
    (folder / "spy_plugin.py").write_text(
        "class Plugin:\n"
        "    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):\n"
        f"        open({str(seen)!r}, 'a').write(str(schema_type) + '\\n')\n"
        "        return None, None, None\n"
        "plugin = Plugin()\n")
    return seen


@pytest.mark.parametrize(("setting", "shown"), [(None, False), ("", True)])
def test_pydantic_plugins_see_nothing_unless_the_user_turns_them_on(repo, tmp_path, setting, shown):
    seen = _spy_plugin(tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "site"), env.get("PYTHONPATH")]))
    if setting is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = setting  # the user's own choice: plugins on
    proc = _rubricgate("validate", "--repo", str(repo), env=env)
    assert proc.returncode == 0, proc.stderr
    assert seen.exists() == shown


@pytest.mark.parametrize(("setting", "skipped"), [(None, True), ("1", True), ("", False), ("spy", False)])
def test_the_plugin_loader_and_its_package_metadata_are_imported_only_where_a_plugin_may_run(repo, setting, skipped):
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if setting is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = setting
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "rubricgate", "validate", "--repo", str(repo)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "pydantic.plugin._schema_validator" in imported  # models were built
    assert ("importlib.metadata" in imported) != skipped


STAND_IN = """
import importlib.util, os, sys, threading
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from rubricgate.cli import console
console.skip_plugin_loader()
console.skip_plugin_loader()  # twice: one finder
import rubricgate.models.config, rubricgate.models.transcript
rubricgate.models.config.Config.model_json_schema()  # pydantic imports its loader here
import pydantic.plugin._loader as loader
print("finders", sum(f is console.PluginLoaderStandIn for f in sys.meta_path))
print("metadata", "importlib.metadata" in sys.modules)
print("bound", sys.modules["pydantic.plugin"]._loader is loader is sys.modules["pydantic.plugin._loader"])
print("spec", importlib.util.find_spec("pydantic.plugin._loader").origin.startswith("rubricgate"))
print("plugins", tuple(loader.get_plugins()), tuple(loader.get_plugins(None, kind="x")))
print("dunder", hasattr(loader, "__path__"))
seen, barrier = [], threading.Barrier(8)
def ask():
    barrier.wait()
    seen.append(console._real_plugin_loader())
threads = [threading.Thread(target=ask) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print("real", len({id(m) for m in seen}), len(console._REAL_PLUGIN_LOADER), loader.PYDANTIC_ENTRY_POINT_GROUP)
try:
    loader.no_such_name
except AttributeError:
    print("missing AttributeError")
"""


def test_the_plugin_loaders_stand_in_is_imported_as_a_module_answers_no_plugins_and_any_other_name_from_the_real_one():
    """In a fresh interpreter: the stand-in is bound on its package with a spec (as `import
    pydantic.plugin._loader` and find_spec expect), answers () to any call, and the real loader,
    asked for by eight threads at once, is loaded once."""
    proc = subprocess.run([sys.executable, "-c", STAND_IN], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["finders 1", "metadata False", "bound True", "spec True", "plugins () ()",
                                        "dunder False", "real 1 1 pydantic", "missing AttributeError"]


def test_the_plugin_loader_is_left_alone_when_a_plugin_may_run_or_it_is_already_loaded(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, PLUGIN_LOADER, raising=False)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "spy")  # one plugin off, the others on
    skip_plugin_loader()
    loaded = object()
    monkeypatch.setitem(sys.modules, PLUGIN_LOADER, loaded)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "__all__")
    skip_plugin_loader()
    assert sys.modules[PLUGIN_LOADER] is loaded
    assert console.PluginLoaderStandIn not in sys.meta_path


# -- an interrupt at an instant where raising would lose it (bench/early_signals.py) -------------

HANDLED = """
import _imp, os, signal, sys, time, weakref
from rubricgate.cli.console import install_interrupt_handlers
install_interrupt_handlers()  # as console_main does first
"""

# The main thread holds importlib's lock as the signal arrives (as in the lock's weakref callback,
# between its acquire and its try): raised there, the lock would stay held and every later import
# wait forever. The interrupt must come once the lock is free.
UNDER_THE_IMPORT_LOCK = HANDLED + """
where = "never"
_imp.acquire_lock()
try:
    os.kill(os.getpid(), SIG)
    sum(range(100_000))  # bytecodes: a handler that raises does so here
    where = "after"
except KeyboardInterrupt:
    where = "under the import lock"
finally:
    _imp.release_lock()
try:
    time.sleep(120)  # ends at once when the interrupt comes
except KeyboardInterrupt:
    print(where, "interrupted once the lock was free")
"""

# The interrupt lands in a weakref callback, where Python prints "Exception ignored in" and goes
# on: it must still end the program (the handler raises only once, so it was lost).
IN_A_WEAKREF_CALLBACK = HANDLED + """
class Thing:
    pass

def callback(_ref):
    os.kill(os.getpid(), SIG)
    sum(range(100_000))  # the KeyboardInterrupt lands here, and is swallowed

thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing
    time.sleep(120)  # ends at once when the interrupt is delivered again
    print("lost")
except KeyboardInterrupt:
    print("delivered")
"""


def _interrupted(sig: str, script: str) -> subprocess.CompletedProcess:
    """`script` with SIG bound, started as a terminal starts it: SIGINT at its default even when
    this test runs in a background job (`pytest &` from a script starts its children with SIGINT
    ignored, a process keeps that across exec, and the handlers rightly leave an ignored SIGINT
    ignored)."""
    return subprocess.run([sys.executable, "-c", f"import signal; SIG = signal.{sig}\n" + script],
                          capture_output=True, text=True, timeout=600,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


LEFT_IGNORED = """
import os, signal, time
from rubricgate.cli.console import install_interrupt_handlers
install_interrupt_handlers()
os.kill(os.getpid(), signal.SIGINT)  # ignored, as under nohup or a background job: nothing happens
time.sleep(0.2)
print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL,
      signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)
"""


def test_an_ignored_sigint_stays_ignored_and_sigterm_still_stops_the_run():
    """A run started with SIGINT ignored (nohup, `cmd &` from a script) is not stopped by one;
    SIGTERM still is. (tests/conftest.py gives the pytest process SIGINT at its default, so the
    child is started with it ignored here on purpose.)"""
    def ignored() -> None:  # as nohup starts it: SIGHUP ignored too, and it stays so
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc = subprocess.run([sys.executable, "-c", LEFT_IGNORED], capture_output=True, text=True, timeout=600,
                          preexec_fn=ignored)
    assert proc.returncode == 0 and proc.stdout.split() == ["True", "True", "True"], proc.stdout + proc.stderr


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupt_under_the_import_lock_waits_for_it(sig):
    proc = _interrupted(sig, UNDER_THE_IMPORT_LOCK)
    assert proc.stdout.strip() == "after interrupted once the lock was free", proc.stdout + proc.stderr


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupt_swallowed_in_a_weakref_callback_is_delivered_again(sig):
    proc = _interrupted(sig, IN_A_WEAKREF_CALLBACK)
    assert proc.stdout.strip() == "delivered", proc.stdout + proc.stderr


# Importing click raises what Python 3.11 makes of a KeyboardInterrupt landing in __set_name__
# (found by bench/early_signals.py: a traceback and exit 1), or an error of its own.
WRAPPED_AT_IMPORT = """
import sys

class Wrap:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            sys.meta_path.remove(self)
            try:
                raise KeyboardInterrupt if INTERRUPTED else OSError("disk")
            except BaseException as exc:
                raise RuntimeError("Error calling __set_name__ on 'cached_property' instance 'processor'") from exc
        return None

sys.meta_path.insert(0, Wrap())
sys.argv = ["rubricgate", "--version"]
from rubricgate.cli.console import console_main
console_main()
"""


def test_an_interrupt_wrapped_while_click_imports_is_the_one_line():
    proc = subprocess.run([sys.executable, "-c", "INTERRUPTED = True\n" + WRAPPED_AT_IMPORT],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and proc.stderr.strip() == interrupted_line(None), proc.stderr
    other = subprocess.run([sys.executable, "-c", "INTERRUPTED = False\n" + WRAPPED_AT_IMPORT],
                           capture_output=True, text=True, timeout=600)
    assert other.returncode != 0 and "interrupted" not in other.stderr and "OSError: disk" in other.stderr


@pytest.mark.parametrize("args", [["--version"], ["validate", "--list"]])
def test_output_into_a_full_disk_is_one_line_and_exit_2(repo, args):
    where = ["--repo", str(repo)] if len(args) > 1 else []
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "rubricgate", *args, *where], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=600)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stderr.strip() == ("error: rubricgate: its output could not be written (No space left on device) "
                                   "(fix: write it where there is room: another file system, or a pipe that reads it)")


def test_a_standard_output_closed_before_the_start_is_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "rubricgate", "--version"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=600, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 0 and proc.stderr == ""


def test_an_error_that_reaches_the_top_after_our_interrupt_was_raised_is_the_interrupt(monkeypatch):
    """A SIGTERM landing while pydantic-core built a model's schema came back as a SchemaError
    whose message alone named the KeyboardInterrupt: 'internal error' instead of 'interrupted'."""
    from rubricgate.cli import console

    wrapped = RuntimeError('Error building "model" validator:\n  KeyboardInterrupt: ')
    assert not console.caused_by_interrupt(wrapped)
    monkeypatch.setattr(console, "_RAISED", [(signal.SIGTERM, 1)])
    assert console.caused_by_interrupt(wrapped)


ASCII_LOCALE = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}  # file names read as ASCII


def non_ascii_repo(tmp_path):
    """A repository whose one case is fixture-wéekly (a folder named in UTF-8), in its baseline."""
    import shutil

    from tests.conftest import ROOT, make_repo, write_baseline_cases

    repo = make_repo(tmp_path / "repo", fixtures=[])
    shutil.copytree(ROOT / "fixtures" / "pass" / "weekly-revenue-summary", repo / "fixtures" / "pass" / "wéekly")
    write_baseline_cases(repo, ["fixture-wéekly"])
    return repo


def test_an_interpreter_reading_file_names_as_ascii_is_refused_before_the_baseline_is_rewritten(tmp_path):
    repo = non_ascii_repo(tmp_path)
    before = (repo / "baseline.json").read_bytes()
    proc = _rubricgate("baseline", "update", "--repo", str(repo), env={**os.environ, **ASCII_LOCALE})
    line, = proc.stderr.splitlines()
    assert proc.returncode == 2 and "not UTF-8" in line and "PYTHONUTF8=1" in line, proc.stderr
    assert (repo / "baseline.json").read_bytes() == before


def test_an_interrupt_of_a_command_that_judges_nothing_says_it_was_stopped_not_that_a_run_could_not_judge():
    """`view --build` and `export` stopped by Ctrl-C said "the run was stopped before it could
    judge ... nothing was gated": no run, nothing to gate."""
    assert interrupted_line("view") == "error: interrupted: rubricgate view was stopped (fix: run it again)"
    assert interrupted_line(None) == "error: interrupted: rubricgate was stopped (fix: run it again)"
    for judging in ("run", "compare", "merge", "mutate", "regrade", "baseline"):
        assert interrupted_line(judging) == INTERRUPTED


@pytest.mark.parametrize("command", ["export", "run"])
def test_an_interrupt_inside_a_command_names_that_command(command, monkeypatch, tmp_path):
    from click.testing import CliRunner

    from rubricgate.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr("rubricgate.cli.core.run_suite", interrupted)
    monkeypatch.setattr("rubricgate.analysis.run_folders", interrupted)
    args = {"export": ["export", str(tmp_path), "--out", str(tmp_path / "x")], "run": ["run", "--repo", str(tmp_path)]}
    result = CliRunner().invoke(main, args[command])
    assert result.exit_code == 2 and result.output.strip().splitlines()[-1] == interrupted_line(command), result.output
