"""The system folders every sandbox shows, and the programs it runs in front of the agent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rubricgate.isolation import identity, limits, rootfs


@pytest.fixture
def link_farm_first(tmp_path: Path, monkeypatch):
    """PATH as a Nix or Homebrew machine has it: a folder of links to system programs first."""
    farm = tmp_path / "farm"
    farm.mkdir()
    for name in ("prlimit", "setpriv"):
        (farm / name).symlink_to(f"/usr/bin/{name}")
    monkeypatch.setenv("PATH", f"{farm}:{os.environ['PATH']}")
    for cached in (rootfs.system_program, limits.limit_prefix, identity.drop_to_sandbox_user):
        cached.cache_clear()
    yield farm
    for cached in (rootfs.system_program, limits.limit_prefix, identity.drop_to_sandbox_user):
        cached.cache_clear()


def _shown(program: str) -> bool:
    return any(program.startswith(folder + "/") for folder in rootfs.SYSTEM_DIRS)


def test_prlimit_and_setpriv_come_from_a_folder_the_sandbox_shows(link_farm_first):
    """bwrap failed with 'execvp /farm/prlimit: No such file or directory', and its one-line error
    advised turning the sandbox off: the harness's PATH found them in a folder no sandbox shows."""
    prlimit = limits.limit_prefix(limits.Limits())[0]
    setpriv = identity.drop_to_sandbox_user()[0]
    assert _shown(prlimit) and _shown(setpriv), (prlimit, setpriv)
    assert os.access(prlimit, os.X_OK) and os.access(setpriv, os.X_OK)


def test_a_program_missing_from_the_system_folders_is_named_where_the_sandbox_would_look(monkeypatch):
    rootfs.system_program.cache_clear()
    try:
        assert rootfs.system_program("no-such-program-here") == "/usr/bin/no-such-program-here"
    finally:
        rootfs.system_program.cache_clear()


def _dirs(args: list[str]) -> list[str]:
    assert args[0::4] == ["--perms"] * (len(args) // 4) and args[2::4] == ["--dir"] * (len(args) // 4)
    return args[3::4]


def test_parent_dirs_skip_what_exists_in_the_sandbox_anyway():
    # The root, /tmp, /dev and /proc are mounted by the caller; system folders are shown whole.
    assert rootfs.parent_dirs([Path("/"), Path("/a"), Path("/tmp/x"), Path("/usr/lib/x/y"), Path("/proc/1")]) == []
    assert _dirs(rootfs.parent_dirs([Path("/usrx/a/b"), Path("/dev/shm/a")])) == ["/usrx", "/usrx/a", "/dev/shm"]


def test_parent_dirs_made_outermost_first_and_once():
    paths = [Path("/opt/cli/bin"), Path("/tmp/rg-1/ab/repo"), Path("/tmp/rg-1/ab/out"), Path("/opt/cli/lib")]
    assert _dirs(rootfs.parent_dirs(paths)) == ["/opt", "/opt/cli", "/tmp/rg-1", "/tmp/rg-1/ab"]


@pytest.mark.parametrize("path", ["/home/u/.local/x", "/tmp/../etc/x/y", "/srv/a b/c", "rel/a/b", "x"])
def test_parent_dirs_name_the_folders_pathlib_does(path: str):
    # Worked out by names and remembered per folder: the same folders as Path.parents gives.
    expected = [str(p) for p in reversed(Path(path).parents)
                if str(p) not in ("/", "/tmp", "/dev", "/proc") and not rootfs.in_system(p)]
    assert _dirs(rootfs.parent_dirs([Path(path)])) == expected
