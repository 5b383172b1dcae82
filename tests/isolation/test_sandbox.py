"""find_program: remembered per (name, PATH) once found, never a stale answer across PATHs."""

from __future__ import annotations

from pathlib import Path

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
