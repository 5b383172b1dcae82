"""isolation/etc_folder.py: the sandbox's /etc as one staged folder shows what the binds showed."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from rubricgate.isolation import etc_folder
from rubricgate.isolation.etc_folder import entry_binds, stage_etc
from rubricgate.isolation.rootfs import system_mounts
from rubricgate.isolation.sandbox_user import IDENTITY


def test_a_parent_it_cannot_write_binds_every_entry_instead(tmp_path: Path) -> None:
    missing = tmp_path / "gone" / "deeper"
    assert stage_etc(missing) == ()
    assert system_mounts(stage_etc(missing))[-len(entry_binds()):] == entry_binds()


def test_a_second_stage_in_the_same_folder_fails_whole_and_leaves_the_first(tmp_path: Path) -> None:
    assert stage_etc(tmp_path)
    assert stage_etc(tmp_path) == ()  # etc exists: never a mix of two stagings
    assert (tmp_path / "etc" / "passwd").is_file()  # the first one's folder is not taken for half made


def test_a_temp_folder_too_full_for_the_copies_binds_every_entry_and_leaves_no_half(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    import errno

    calls = []

    def full(source, target):
        calls.append(source)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        Path(target).write_bytes(Path(source).read_bytes())

    monkeypatch.setattr(etc_folder.shutil, "copyfile", full)
    assert stage_etc(tmp_path) == ()
    assert len(calls) == 2 and not (tmp_path / "etc").exists()


def test_a_file_it_cannot_copy_is_bound_over_an_empty_mount_point(tmp_path: Path, monkeypatch) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "hosts").write_text("127.0.0.1 localhost\n")
    (host / "secret.conf").write_text("only root reads this\n")
    os.mkfifo(host / "pipe.conf")  # not a regular file: copying it would block
    (host / "certs").mkdir()
    monkeypatch.setattr(etc_folder, "ETC_FILES", tuple(str(host / n) for n in ("hosts", "secret.conf", "pipe.conf",
                                                                                "certs", "missing.conf")))
    real_copy = etc_folder.shutil.copyfile

    def refuse_secret(source, target):
        if source.endswith("secret.conf"):
            raise PermissionError(13, "Permission denied", source)
        return real_copy(source, target)

    monkeypatch.setattr(etc_folder.shutil, "copyfile", refuse_secret)
    (tmp_path / "run").mkdir()
    args = stage_etc(tmp_path / "run")
    etc = tmp_path / "run" / "etc"
    assert args[:3] == ("--ro-bind", str(etc), "/etc")
    bound = [args[i + 1] for i in range(3, len(args), 3)]
    assert bound == [str(host / n) for n in ("secret.conf", "pipe.conf", "certs")]
    assert (etc / "hosts").read_text() == "127.0.0.1 localhost\n"
    assert (etc / "secret.conf").read_text() == "" and (etc / "pipe.conf").read_text() == ""
    assert (etc / "certs").is_dir() and not any((etc / "certs").iterdir())
    assert not (etc / "missing.conf").exists()
    assert {n: (etc / n).read_text() for n in ("passwd", "group")} == \
        {"passwd": IDENTITY["/etc/passwd"], "group": IDENTITY["/etc/group"]}


def test_copies_keep_their_modes_and_the_folder_is_world_readable(tmp_path: Path, monkeypatch) -> None:
    host = tmp_path / "host"
    host.mkdir()
    for name, mode in (("a.conf", 0o644), ("b.conf", 0o600), ("c.sh", 0o755)):
        (host / name).write_text(name)
        os.chmod(host / name, mode)
    monkeypatch.setattr(etc_folder, "ETC_FILES", tuple(str(host / n) for n in ("a.conf", "b.conf", "c.sh")))
    (tmp_path / "run").mkdir()
    old = os.umask(0o077)
    try:
        stage_etc(tmp_path / "run")
    finally:
        os.umask(old)
    etc = tmp_path / "run" / "etc"
    assert stat.S_IMODE(etc.stat().st_mode) == 0o755
    assert {n: stat.S_IMODE((etc / n).stat().st_mode) for n in ("a.conf", "b.conf", "c.sh")} == \
        {"a.conf": 0o644, "b.conf": 0o600, "c.sh": 0o755}  # a root-only file stays root-only


# Every /etc entry's name, mode and type, each file's digest (or why it cannot be read), each
# folder's first names; then four ways of changing /etc, each expected to fail.
SHOW_ETC = r"""
for f in /etc/* /etc/.[!.]*; do
  [ -e "$f" ] || continue
  stat -L -c '%n %a %F' "$f"
  if [ -f "$f" ]; then sha256sum "$f" 2>&1 | cut -c1-64
  elif [ -r "$f" ]; then ls "$f" | head -50 | tr '\n' ' '; echo; fi
done
sh -c 'echo x >> /etc/hosts' 2>/dev/null && echo "WROTE hosts"
touch /etc/new.conf 2>/dev/null && echo "WROTE new.conf"
chmod 666 /etc/hosts 2>/dev/null && echo "WROTE mode"
mv /etc/hosts /etc/hosts2 2>/dev/null && echo "WROTE name"
exit 0
"""


def _etc_seen(tmp_path: Path, policy, script: str = SHOW_ETC) -> str:
    from rubricgate.isolation.process import run_process

    ws, out = tmp_path / "ws", tmp_path / "out.txt"
    ws.mkdir(exist_ok=True)
    res = run_process(["/bin/sh", "-c", script], cwd=ws, env={"PATH": "/usr/bin:/bin"}, timeout_s=60,
                      output_cap_bytes=1_000_000, stdout_path=out, sandbox=policy)
    assert res.exit_code == 0, res.stderr_tail
    return out.read_text()


@pytest.mark.usefixtures("bwrap_ready")
def test_the_sandbox_sees_the_same_etc_as_through_one_bind_per_entry_and_cannot_change_it(tmp_path: Path) -> None:
    from rubricgate.isolation.sandbox import SandboxPolicy

    bound = _etc_seen(tmp_path, SandboxPolicy("bwrap"))
    (tmp_path / "run").mkdir()
    staged_args = stage_etc(tmp_path / "run")
    assert staged_args, "the staged /etc could not be made"
    staged = _etc_seen(tmp_path, replace(SandboxPolicy("bwrap"), etc=staged_args))
    assert staged == bound
    # Neither way: an ordinary user's sandbox user owned bubblewrap's own /etc and could add a
    # file to it (an /etc/ld.so.preload for its own later programs) until wrap made it read-only.
    assert "WROTE" not in staged and "WROTE" not in bound
    names = [line.split()[0] for line in staged.splitlines() if line.startswith("/etc/")]
    assert "/etc/passwd" in names and "/etc/hosts" in names and "/etc/shadow" not in names
    empty = hashlib.sha256(b"").hexdigest()
    passwd = staged.splitlines()[staged.splitlines().index(next(x for x in staged.splitlines()
                                                                  if x.startswith("/etc/passwd "))) + 1]
    assert passwd == hashlib.sha256(IDENTITY["/etc/passwd"].encode()).hexdigest() != empty


# -- a file the agent's command names under /etc ---------------------------------------------------

def test_a_named_etc_file_the_staged_folder_lacks_makes_that_trial_bind_each_entry(tmp_path: Path) -> None:
    from rubricgate.isolation.etc_folder import etc_for

    staged = stage_etc(tmp_path)
    folder = tmp_path / "etc"
    assert etc_for((), [Path("/etc/debian_version")]) == ((), ())
    for fits in ([Path("/opt/cli/bin")], [Path("/etc/hosts")], [Path("/etc/ssl/openssl.cnf")] * ("/etc/ssl" in staged)):
        assert etc_for(staged, fits) == (staged, ())
    for lacks in ([Path("/etc/debian_version")], [Path("/etc/cli/config.json")], [Path("/etc")]):
        assert etc_for(staged, [Path("/usr/bin/x"), *lacks]) == \
            ((), ("--ro-bind", str(folder / "passwd"), "/etc/passwd", "--ro-bind", str(folder / "group"), "/etc/group"))


def _unlisted_etc_file() -> Path:
    """A readable regular file directly in the host's /etc that the allowlist does not name."""
    for entry in sorted(os.scandir("/etc"), key=lambda e: e.name):
        path = Path(entry.path)
        if (entry.is_file(follow_symlinks=False) and str(path) not in etc_folder.ETC_FILES
                and entry.stat().st_mode & 0o004 and entry.stat().st_size < 4096):
            return path
    pytest.skip("no readable unlisted file in /etc")


@pytest.mark.usefixtures("bwrap_ready")
@pytest.mark.parametrize("staged", [True, False], ids=["staged", "one-bind-per-entry"])
def test_a_command_naming_an_unlisted_etc_file_still_starts_and_etc_stays_read_only(tmp_path: Path,
                                                                                      staged: bool) -> None:
    # `[cat, /etc/debian_version]`: the file is shown, and its mount point is made before /etc is read-only.
    from rubricgate.isolation.process import run_process
    from rubricgate.isolation.sandbox import SandboxPolicy

    named = _unlisted_etc_file()
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = replace(SandboxPolicy("bwrap"), etc=stage_etc(tmp_path) if staged else ())
    script = f'cat {named}; cat /etc/passwd; touch /etc/new.conf 2>/dev/null && echo WROTE; exit 0'
    res = run_process(["/bin/sh", "-c", script, str(named)], cwd=ws, env={"PATH": "/usr/bin:/bin"}, timeout_s=60,
                      output_cap_bytes=100_000, stdout_path=tmp_path / "out.txt", sandbox=policy)
    assert res.exit_code == 0, res.stderr_tail
    assert (tmp_path / "out.txt").read_text() == named.read_text() + IDENTITY["/etc/passwd"]


# -- folders copied, not bound ---------------------------------------------------------------------

def _host_folder(tmp_path: Path, monkeypatch) -> Path:
    """A host folder like /etc/alternatives (links, a file, a subfolder), the only allowlisted entry."""
    folder = tmp_path / "host" / "alternatives"
    (folder / "sub").mkdir(parents=True)
    (folder / "editor").symlink_to("/usr/bin/vi")
    (folder / "sub" / "x.conf").write_text("x\n")
    os.chmod(folder / "sub", 0o750)
    monkeypatch.setattr(etc_folder, "ETC_FILES", (str(folder),))
    monkeypatch.setattr(etc_folder, "COPIED_FOLDERS", (str(folder),))
    return folder


def test_a_folder_of_links_and_files_is_copied_links_as_links_and_needs_no_bind(tmp_path: Path, monkeypatch) -> None:
    _host_folder(tmp_path, monkeypatch)
    args = stage_etc(tmp_path / "run")
    copy = tmp_path / "run" / "etc" / "alternatives"
    assert args == ("--ro-bind", str(tmp_path / "run" / "etc"), "/etc")  # the folder's bind is gone
    assert os.readlink(copy / "editor") == "/usr/bin/vi"
    assert (copy / "sub" / "x.conf").read_text() == "x\n" and stat.S_IMODE((copy / "sub").stat().st_mode) == 0o750


@pytest.mark.parametrize("spoiler", ["fifo", "too-many"])
def test_a_folder_it_cannot_copy_whole_is_bound_over_an_empty_mount_point(tmp_path: Path, monkeypatch,
                                                                          spoiler: str) -> None:
    folder = _host_folder(tmp_path, monkeypatch)
    if spoiler == "fifo":
        os.mkfifo(folder / "sub" / "pipe")  # copying it would block
    else:
        monkeypatch.setattr(etc_folder, "MAX_COPIED_ENTRIES", 2)  # it has 3
    args = stage_etc(tmp_path / "run")
    assert args[3:] == ("--ro-bind", str(folder), str(folder))
    assert list((tmp_path / "run" / "etc" / "alternatives").iterdir()) == []  # no half copy under the bind


SHOW_FOLDERS = r"""
for f in /etc/alternatives /etc/ld.so.conf.d /etc/ca-certificates; do
  [ -e "$f" ] || continue
  find "$f" -printf '%p %m %y %l\n' | sort
  find "$f" -type f -exec sha256sum {} + | sort
done
touch /etc/alternatives/new 2>/dev/null && echo "WROTE alternatives"
exit 0
"""


@pytest.mark.usefixtures("bwrap_ready")
def test_the_copied_folders_show_what_their_binds_showed_and_stay_read_only(tmp_path: Path) -> None:
    from rubricgate.isolation.sandbox import SandboxPolicy

    (tmp_path / "run").mkdir()
    staged_args = stage_etc(tmp_path / "run")
    assert not {"/etc/alternatives", "/etc/ld.so.conf.d", "/etc/ca-certificates"} & set(staged_args)
    staged = _etc_seen(tmp_path, replace(SandboxPolicy("bwrap"), etc=staged_args), SHOW_FOLDERS)
    assert staged == _etc_seen(tmp_path, SandboxPolicy("bwrap"), SHOW_FOLDERS) and "WROTE" not in staged
    assert os.path.isdir("/etc/alternatives") <= ("/etc/alternatives/" in staged)
