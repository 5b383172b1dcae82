"""The sandbox's root, built from an allowlist (docs/isolation.md says what and why).

bubblewrap starts from an empty tmpfs root. Into it go, read-only: the system's program and
library folders as this system has them (a merged-/usr system's /bin, /lib, /sbin are links
into /usr, and stay links), the few /etc files a CLI needs (resolver, hosts, certificates,
dynamic linker cache, alternatives), a passwd and group naming only the sandbox user, and each
agent CLI's own install folder. Nothing else of the host exists in there: no /run and its
sockets, no /home, no /root, no other checkout, no /etc/shadow. The caller adds /dev, /proc,
a private /tmp, the trial's workspace and its scratch folder.

An agent folder that would show what the sandbox exists to hide is refused, in one line with
the fix (`AgentFolderRefused`): the real HOME or a folder holding it (its dot-folders hold
credentials), or one holding or inside the repository, the reports, the cache or the run's
temp folders.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from rubricgate.isolation.etc_folder import entry_binds
from rubricgate.isolation.sandbox_user import IDENTITY

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_BIN = "/usr/bin:/bin:/usr/sbin:/sbin"


@lru_cache(maxsize=8)
def system_program(name: str) -> str:
    """A program the sandbox runs in front of the agent (`prlimit`, `setpriv`), from the system's
    folders, which every sandbox shows. Not by the harness's PATH: a folder of links first on it
    (a Nix or Homebrew link farm) is not shown, and bwrap could not exec `/that/folder/prlimit`."""
    return shutil.which(name, path=SYSTEM_BIN) or f"/usr/bin/{name}"


class AgentFolderRefused(ValueError):
    """An agent's install folder would show the real HOME, the repository, the reports or the cache."""


@lru_cache(maxsize=4)
def system_mounts(etc: tuple[str, ...] = ()) -> tuple[str, ...]:
    """bwrap arguments for the system folders and /etc files, as this system lays them out;
    `etc`: the run's staged /etc (isolation/etc_folder.py), else a bind per /etc entry."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return (*args, *(etc or entry_binds()))


def identity_pipes() -> dict[str, int]:
    """{/etc file: read end of a pipe holding it}: passwd and group naming only the sandbox
    user, for bwrap's `--ro-bind-data` (nothing written to disk; the caller closes the ends)."""
    fds: dict[str, int] = {}
    for dest, text in IDENTITY.items():
        read, write = os.pipe()
        os.write(write, text.encode())  # a few bytes: far below a pipe's buffer
        os.close(write)
        fds[dest] = read
    return fds


def identity_args(fds: dict[str, int]) -> list[str]:
    return [arg for dest, fd in fds.items() for arg in ("--perms", "0644", "--ro-bind-data", str(fd), dest)]


def in_system(path: Path) -> bool:
    """path lies in a system folder shown anyway (no mount of its own needed)."""
    return _in_system_text(str(path))


def _in_system_text(path: str) -> bool:
    return any(_within(path, d) for d in SYSTEM_DIRS)


def agent_folders(program: str | None, files: Sequence[str], home: Sequence[Path],
                  hidden: Sequence[Path], temps: Sequence[Path] = ()) -> tuple[Path, ...]:
    """The folders and files to show for this argv: the program's install folder (as named and
    resolved), and the absolute files it names (a script). Raises AgentFolderRefused."""
    shown: list[Path] = []
    if program and os.path.isabs(program):
        shown += _program_folders(Path(program), home, hidden, temps)
    shown += [Path(f).resolve() for f in files if not in_system(Path(f).resolve())]
    for path in dict.fromkeys(shown):
        refuse_folder(path, home, hidden, temps)
    return tuple(dict.fromkeys(shown))


def _program_folders(program: Path, home: Sequence[Path], hidden: Sequence[Path],
                     temps: Sequence[Path]) -> list[Path]:
    """The install folder as named and as resolved; the named one is dropped when it may not be
    shown (`~/.local` for `~/.local/bin/x -> ~/.local/share/x/1.0/x`, or a link to a system
    program) and the resolved one may: the sandbox then starts the program by its resolved path
    (sandbox.visible_program)."""
    prefixes = install_prefixes(program)
    found = [p for p in prefixes if not in_system(p)]
    if len(prefixes) < 2 or in_system(prefixes[0]):
        return found
    named, resolved = prefixes
    try:
        refuse_folder(named, home, hidden, temps)
    except AgentFolderRefused:
        return [resolved] if not in_system(resolved) else []
    return found


def refuse_folder(path: Path, home: Sequence[Path], hidden: Sequence[Path], temps: Sequence[Path] = ()) -> None:
    """Raise AgentFolderRefused when showing `path` would show the real HOME (or a folder holding
    it), a hidden folder (or be inside one), or a folder holding the run's temp folders."""
    for h in home:
        if _within(str(h), str(path)) or (path.parent == h and path.name.startswith(".")):
            raise AgentFolderRefused(f"agent folder {path} is or holds the real HOME {h} or one of its dot-folders "
                                     "(they hold credentials); "
                                     "install the CLI in a prefix of its own (npm install -g --prefix /opt/<cli>) "
                                     "and put <prefix>/bin first on the agent's PATH")
    for h in hidden:
        if _within(str(h), str(path)) or _within(str(path), str(h)):
            raise AgentFolderRefused(f"agent folder {path} holds or lies in {h}, which the sandbox hides "
                                     "(repository, reports, cache); install the CLI outside them")
    for h in temps:
        if _within(str(h), str(path)):
            raise AgentFolderRefused(f"agent folder {path} holds the run's temp folder {h}; "
                                     "install the CLI outside it")


def install_prefixes(program: Path) -> tuple[Path, ...]:
    """The install folder of a program as named (`<prefix>/bin/x` -> `<prefix>`) and as resolved
    (an npm link into `lib/node_modules/<pkg>/bin`): both, since the package's native binaries
    sit beside the package, under the named prefix."""
    return tuple(dict.fromkeys(_prefix(p) for p in (program, program.resolve())))


def _prefix(path: Path) -> Path:
    parts = path.parts
    if "bin" in parts[2:]:
        idx = len(parts) - 1 - parts[::-1].index("bin")
        return Path(*parts[:idx])
    return path


def parent_dirs(paths: Iterable[Path]) -> list[str]:
    """bwrap arguments creating every missing parent of the given mount points as 0755 (bwrap
    would create them 0700 owned by root, which the sandbox user could not cross)."""
    parents: dict[str, None] = {}
    for path in paths:
        parents.update(dict.fromkeys(_made_parents(os.path.dirname(str(path)))
                                     if path.is_absolute() else _relative_parents(path)))
    return [arg for p in parents for arg in ("--perms", "0755", "--dir", p)]


_NOT_MADE = ("/tmp", "/dev", "/proc")  # the caller mounts these (and "/" is the root itself)


@lru_cache(maxsize=256)
def _made_parents(folder: str) -> tuple[str, ...]:
    # `folder` and the folders above it that bwrap must make, outermost first. By names alone and
    # remembered per folder: every trial's mount points share their parents (the run's temp
    # folder, the CLI's install prefix), and Path.parents with a system test per parent was half
    # of a trial's argument list.
    above = os.path.dirname(folder)
    if above == folder:  # a root
        return ()
    made = _made_parents(above)
    return made if folder in _NOT_MADE or _in_system_text(folder) else (*made, folder)


def _relative_parents(path: Path) -> list[str]:
    return [str(p) for p in reversed(path.parents) if str(p) not in ("/", *_NOT_MADE) and not in_system(p)]


def _within(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/") or root == ""
