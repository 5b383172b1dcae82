"""find_program: remembered per (name, PATH) once found, never a stale answer across PATHs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rubricgate.isolation.sandbox import find_program


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_different_path_finds_a_different_program(tmp_path: Path, monkeypatch) -> None:
    first, second = _program(tmp_path / "a", "rg-fake-cli"), _program(tmp_path / "b", "rg-fake-cli")
    assert find_program("rg-fake-cli", str(tmp_path / "a")) == str(first)
    assert find_program("rg-fake-cli", str(tmp_path / "b")) == str(second)
    monkeypatch.setenv("PATH", str(tmp_path / "b"))  # no explicit path: the process's PATH counts
    assert find_program("rg-fake-cli", None) == str(second)
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    assert find_program("rg-fake-cli", None) == str(first)


def test_a_miss_is_not_remembered(tmp_path: Path) -> None:
    folder = str(tmp_path / "bin")
    assert find_program("rg-late-cli", folder) is None
    late = _program(tmp_path / "bin", "rg-late-cli")  # installed after the first look
    assert find_program("rg-late-cli", folder) == str(late)


def test_a_folder_inside_another_hidden_one_costs_no_mount_of_its_own() -> None:
    from rubricgate.isolation.sandbox import outermost

    paths = [Path("/home/u"), Path("/home/u/repo"), Path("/tmp/x/repo"), Path("/srv/cache"), Path("/home/u")]
    assert outermost(paths, also=(Path("/tmp"),)) == [Path("/home/u"), Path("/srv/cache")]
    assert outermost([Path("/tmp"), Path("/opt/a")], also=(Path("/tmp"),)) == [Path("/opt/a")]
    assert outermost([Path("/opt/ab"), Path("/opt/a")]) == [Path("/opt/ab"), Path("/opt/a")]  # a prefix, not a parent


# -- a CLI linked from a folder the sandbox may not show ------------------------------------------

def _linked_cli(home: Path, target: Path) -> Path:
    """~/.local/bin/tool -> target, as Claude Code's native installer links itself."""
    link = home / ".local" / "bin" / "tool"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


def _run_in_sandbox(tmp_path: Path, home: Path):
    from rubricgate.isolation.process import run_process
    from rubricgate.isolation.sandbox import SandboxPolicy

    ws, out = tmp_path / "ws", tmp_path / "out.txt"
    ws.mkdir()
    res = run_process(["tool"], cwd=ws, env={"PATH": f"{home}/.local/bin:/usr/bin:/bin"}, timeout_s=30,
                      output_cap_bytes=10_000, stdout_path=out, sandbox=SandboxPolicy("bwrap", home=(home,)))
    return res, out.read_text()


@pytest.mark.usefixtures("bwrap_ready")
def test_a_cli_linked_from_a_home_dot_folder_starts_by_its_real_path(tmp_path: Path) -> None:
    # Its link's folder (~/.local, which holds credentials) is never shown; where it lives is.
    home = tmp_path / "home"
    real = _program(home / ".local" / "share" / "tool" / "1.0", "tool")
    real.write_text("#!/bin/sh\necho \"started as $0\"\n")
    _linked_cli(home, real)
    res, out = _run_in_sandbox(tmp_path, home)
    assert res.exit_code == 0, res.stderr_tail  # was 127: "failed to execute .../.local/bin/tool"
    assert out == f"started as {real}\n"


@pytest.mark.usefixtures("bwrap_ready")
def test_a_cli_linked_from_a_home_dot_folder_to_a_system_program_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _linked_cli(home, Path("/bin/true").resolve())
    res, _ = _run_in_sandbox(tmp_path, home)  # was refused: it showed nothing but the dot-folder
    assert res.exit_code == 0, res.stderr_tail


def test_visible_program_keeps_a_shown_or_system_path_and_resolves_a_hidden_link(tmp_path: Path) -> None:
    from rubricgate.isolation.sandbox import visible_program

    real = _program(tmp_path / "opt" / "tool" / "bin", "tool")
    link = tmp_path / "links" / "tool"
    link.parent.mkdir()
    link.symlink_to(real)
    shown = [tmp_path / "opt" / "tool"]
    assert visible_program(str(link), shown) == str(real)
    assert visible_program(str(real), shown) == str(real)
    assert visible_program("/usr/bin/env", shown) == "/usr/bin/env"
    assert visible_program("tool", shown) == "tool"  # relative: resolved in the workspace
    assert visible_program(str(link), []) == str(link)  # nowhere shown: the preflight says so (exit 127)


# -- a folder every trial shares, shown read-only inside a trial's writable scratch ---------------

@pytest.mark.usefixtures("bwrap_ready")
def test_a_shared_folder_is_shown_read_only_inside_the_writable_scratch(tmp_path: Path) -> None:
    """Copilot CLI's unpacked package, one per run (agents/copilot_package.py): the agent reads it
    where it looks for it, in its HOME, and can neither write into it nor remount it writable;
    the rest of its scratch stays writable."""
    from dataclasses import replace

    from rubricgate.isolation.process import run_process
    from rubricgate.isolation.sandbox import SandboxPolicy

    shared, scratch, ws = tmp_path / "shared", tmp_path / "scratch", tmp_path / "ws"
    shared.mkdir()
    (shared / "index.js").write_text("the package\n")
    target = scratch / "home" / ".cache" / "pkg"
    target.mkdir(parents=True)
    ws.mkdir()
    script = (f'cat {target}/index.js; echo poisoned > {target}/index.js || echo refused; '
              f'touch {target}/new || echo refused; mount -o remount,rw {target} 2>/dev/null || echo refused; '
              f'echo mine > {scratch}/note && echo wrote')
    policy = replace(SandboxPolicy("bwrap"), shared_read_only=((shared, target),))
    res = run_process(["/bin/sh", "-c", script], cwd=ws, env={"PATH": "/usr/bin:/bin"}, timeout_s=30,
                      output_cap_bytes=10_000, stdout_path=tmp_path / "out.txt", sandbox=policy, writable=[scratch])
    assert res.exit_code == 0, res.stderr_tail
    assert (tmp_path / "out.txt").read_text() == "the package\nrefused\nrefused\nrefused\nwrote\n"
    assert (shared / "index.js").read_text() == "the package\n" and sorted(p.name for p in shared.iterdir()) == ["index.js"]


def test_the_sandboxs_path_keeps_system_and_shown_folders_and_names_no_other_host_folder() -> None:
    from rubricgate.isolation.sandbox import sandbox_path

    shown = (Path("/opt/tool"),)
    path = ":".join(["/usr/../home/me/.secret", "/opt/tool/bin", "relative/bin", "/home/me/bin", "/usr/local/bin/",
                     "/opt/tool/../other"])
    assert sandbox_path(path, shown) == "/opt/tool/bin:/usr/local/bin:/usr/bin:/bin"
    assert sandbox_path(path, ()) == "/usr/local/bin:/usr/bin:/bin"  # the same PATH, other folders shown
    assert sandbox_path(None, shown) == "/usr/local/bin:/usr/bin:/bin"
