"""The `rubricgate` command (bin/rubricgate): sh, then the interpreter with SIGINT and SIGTERM
blocked until rubricgate's handlers are set. Each test checks what happened, never how long."""

import ast
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rubricgate.cli.console import interrupted_line

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "bin" / "rubricgate"


def _install(folder: Path, python: str) -> Path:
    """The launcher as pip installs it: in a bin folder, beside that environment's `python`."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(LAUNCHER, folder / "rubricgate")
    (folder / "python").write_text(python)
    (folder / "python").chmod(0o755)
    return folder / "rubricgate"


def _env(path: str) -> dict[str, str]:
    return {"PATH": path, "PYTHONPATH": str(ROOT), "HOME": os.environ.get("HOME", "/tmp")}


def _forward(*before: str) -> str:
    """A `python` that runs `before` (sh lines), then execs the real interpreter."""
    return "#!/bin/sh\n" + "\n".join(before) + f'\nexec "{sys.executable}" "$@"\n'


def test_a_signal_sent_during_the_interpreters_start_waits_for_the_handlers(tmp_path):
    # The `python` sends itself the signal after env blocked it and before the interpreter runs:
    # without the block it would die by it; with it, rubricgate reports the one line.
    for sig in ("INT", "TERM"):
        command = _install(tmp_path / sig, _forward(f"kill -{sig} $$"))
        proc = subprocess.run([str(command), "--version"], capture_output=True, text=True,
                              env=_env(os.environ["PATH"]), timeout=600,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert (proc.returncode, proc.stderr.strip()) == (2, interrupted_line(None)), sig
        assert proc.stdout == ""


def test_an_ignored_sigint_stays_ignored_through_the_launcher(tmp_path):
    command = _install(tmp_path / "bin", _forward("kill -INT $$"))
    proc = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=600,
                          env=_env(os.environ["PATH"]),
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.returncode == 0 and proc.stdout.startswith("rubricgate, version"), proc.stderr


def test_the_handlers_unblock_what_the_launcher_blocked():
    # Every process rubricgate starts inherits the mask: an agent deaf to SIGTERM would outlive
    # its timeout's polite stop.
    script = ("import signal\nfrom rubricgate.cli.console import install_interrupt_handlers\n"
              "signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))\n"
              "install_interrupt_handlers()\n"
              "print(sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_an_env_that_cannot_block_signals_still_runs_the_command(tmp_path):
    # busybox and BSD env have no --block-signal: the launcher starts the interpreter directly.
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "env").write_text('#!/bin/sh\necho "env: unrecognized option" >&2\nexit 125\n')
    (shims / "env").chmod(0o755)
    command = _install(tmp_path / "bin", _forward())
    proc = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=600,
                          env=_env(f"{shims}:{os.environ['PATH']}"))
    assert proc.returncode == 0 and proc.stdout.startswith("rubricgate, version"), proc.stderr


def test_a_linked_command_finds_the_python_of_the_environment_it_was_installed_into(tmp_path):
    # pipx links the command from ~/.local/bin; the python on PATH there is not the environment's.
    command = _install(tmp_path / "venv" / "bin", _forward())
    shims = tmp_path / "local-bin"
    shims.mkdir()
    (shims / "rubricgate").symlink_to(command)
    (shims / "python3").write_text("#!/bin/sh\necho wrong python >&2\nexit 97\n")
    (shims / "python3").chmod(0o755)
    proc = subprocess.run([str(shims / "rubricgate"), "--version"], capture_output=True, text=True,
                          timeout=600, env=_env(f"{shims}:{os.environ['PATH']}"))
    assert proc.returncode == 0 and proc.stdout.startswith("rubricgate, version"), proc.stderr


def test_no_python_anywhere_is_one_line_and_exit_2(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    shutil.copy(LAUNCHER, folder / "rubricgate")
    empty = tmp_path / "empty-path"
    empty.mkdir()
    for tool in ("env", "readlink"):
        (empty / tool).symlink_to(shutil.which(tool))
    proc = subprocess.run(["/bin/sh", str(folder / "rubricgate"), "--version"], capture_output=True,
                          text=True, timeout=600, env={"PATH": str(empty)})
    assert proc.returncode == 2
    assert re.fullmatch(r"error: rubricgate: no python beside .* \(fix: reinstall rubricgate with pip\)",
                        proc.stderr.strip()), proc.stderr


def test_the_file_is_both_sh_and_python_and_sh_sets_no_trap():
    # dash runs a trap only between commands: a signal it caught while the `exec` line ran was
    # lost with the shell, and the run went on to its end (one in ~100 early signals).
    assert subprocess.run(["sh", "-n", str(LAUNCHER)], capture_output=True).returncode == 0
    tree = ast.parse(LAUNCHER.read_text())
    sh_part = tree.body[0].value.value  # type: ignore[attr-defined]
    commands = [line.split("#")[0] for line in sh_part.splitlines()]
    assert any("exec env --block-signal=INT --block-signal=TERM" in c for c in commands)
    assert not any(re.search(r"\btrap\b", c) for c in commands)
    assert ast.unparse(tree.body[-1]) == "console_main()"
    assert os.access(LAUNCHER, os.X_OK)


def test_a_python_path_holding_an_equals_sign_is_run_not_read_as_a_variable(tmp_path):
    # GNU env reads NAME=VALUE before its command: the environment was printed (secrets and all).
    command = _install(tmp_path / "a=b" / "bin", _forward())
    proc = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=600,
                          env=_env(os.environ["PATH"]))
    assert proc.returncode == 0 and proc.stdout.startswith("rubricgate, version"), proc.stdout[:200] + proc.stderr


def test_a_python3_beside_the_command_is_used_before_the_one_on_path(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    shutil.copy(LAUNCHER, folder / "rubricgate")
    (folder / "python3").write_text(_forward())
    (folder / "python3").chmod(0o755)
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").write_text("#!/bin/sh\necho wrong python >&2\nexit 97\n")
    (shims / "python3").chmod(0o755)
    proc = subprocess.run([str(folder / "rubricgate"), "--version"], capture_output=True, text=True, timeout=600,
                          env=_env(f"{shims}:{os.environ['PATH']}"))
    assert proc.returncode == 0 and proc.stdout.startswith("rubricgate, version"), proc.stderr


@pytest.mark.parametrize("broken", ["folder", "empty file"])
def test_a_folder_or_an_empty_file_named_python_beside_the_command_is_passed_over(tmp_path, broken):
    # `-x` holds for a folder too: exec'ing it failed with "Permission denied", exit 126. An empty
    # executable file is run by sh as an empty script: `--version` printed nothing and exited 0.
    folder = tmp_path / "bin"
    folder.mkdir()
    if broken == "folder":
        (folder / "python").mkdir()
    else:
        (folder / "python").touch(mode=0o755)
    shutil.copy(LAUNCHER, folder / "rubricgate")
    (folder / "python3").write_text(_forward())
    (folder / "python3").chmod(0o755)
    proc = subprocess.run([str(folder / "rubricgate"), "--version"], capture_output=True, text=True, timeout=600,
                          env=_env(os.environ["PATH"]))
    assert proc.returncode == 0 and proc.stdout.startswith("rubricgate, version"), proc.stderr


def test_a_python_that_cannot_import_rubricgate_is_one_line_and_exit_2(tmp_path):
    # `pip install --user` puts the command beside no python: the one on PATH may be another.
    command = _install(tmp_path / "bin", f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    proc = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert re.fullmatch(r"error: rubricgate: .* cannot import rubricgate \(fix: install rubricgate into a venv, "
                        r"or run `python -m rubricgate` with the python it was installed for\)", proc.stderr.strip())


def test_the_process_is_named_rubricgate_for_ps_and_pgrep(tmp_path):
    fake = tmp_path / "fake" / "rubricgate" / "cli"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "console.py").write_text("def console_main():\n    print(open('/proc/self/comm').read().strip())\n")
    command = _install(tmp_path / "bin", _forward())
    proc = subprocess.run([str(command)], capture_output=True, text=True, timeout=600,
                          env={**_env(os.environ["PATH"]), "PYTHONPATH": str(tmp_path / "fake")})
    assert proc.stdout.strip() == "rubricgate", proc.stderr


def test_file_names_are_read_as_utf_8_whatever_the_locale(tmp_path):
    from tests.cli.test_console import ASCII_LOCALE, non_ascii_repo

    repo = non_ascii_repo(tmp_path)
    command = _install(tmp_path / "bin", _forward())
    proc = subprocess.run([str(command), "validate", "--list", "--repo", str(repo)], capture_output=True,
                          env={**_env(os.environ["PATH"]), **ASCII_LOCALE}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "fixture-wéekly".encode() in proc.stdout
