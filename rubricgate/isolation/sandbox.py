"""The kernel-enforced sandbox around every agent process: bubblewrap.

A throwaway copy is not isolation when the reviewer runs as the same user with the whole file
system in reach: it can find the original repository through its parent, rewrite baseline.json,
plant a git hook or poison the cache. So every agent process runs inside bubblewrap with:

- its own PID namespace (`--unshare-pid`): `/proc` shows only the sandbox, and when the
  sandbox's init dies the kernel kills every process in it, whatever `setsid`, `env -i` or a
  double fork did; `--die-with-parent` ties that init to the harness;
- `/` read-only, a private `/tmp`, and tmpfs over what it must not see: the original
  repository, the reports folder, the cache, the run's own temp root and the user's real HOME;
- only the trial's workspace and its throwaway HOME / output folder writable;
- what it needs to run visible read-only again: its program and the install prefixes of the
  PATH entries that fall under a hidden folder (a CLI under ~/.local, a pyenv Python);
- no capabilities (`--cap-drop ALL`), so even a root agent cannot unmount what hides the repo;
- an environment built from the allowlist with `--clearenv`; the arguments, secrets among
  them, travel through a pipe (`--args FD`), never on a command line another process can read.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from rubricgate.isolation.overlay import Overlay, OverlayMount, probe_command, probe_overlay

SandboxSetting = Literal["auto", "bwrap", "none"]
Isolation = Literal["bwrap", "copy-only"]
# Its own user namespace, as an unprivileged uid even when the harness is root: the agent holds no
# privilege over the host, and a CLI that sandboxes its own tools (Codex runs bubblewrap itself)
# can create the nested namespace it needs, which a capability-less root cannot.
SANDBOX_UID = "1000"
AS_SANDBOX_UID = ["--uid", SANDBOX_UID, "--gid", SANDBOX_UID]
USER_NS = ["--unshare-user", *(AS_SANDBOX_UID if os.geteuid() == 0 else [])]


class SandboxUnavailable(RuntimeError):
    """bubblewrap was required (or CI demanded it) and cannot start here."""


@dataclass(frozen=True)
class SandboxPolicy:
    """How one run isolates its agent processes. `hidden` paths are covered by an empty tmpfs."""

    isolation: Isolation
    hidden: tuple[Path, ...] = ()  # never visible: repository, reports, cache, run temp root
    covered: tuple[Path, ...] = ()  # covered too, but install prefixes inside are shown: real HOME
    network: bool = True
    reason: str = ""  # why copy-only was chosen, for the loud warning
    bwrap: str = "bwrap"
    layers: bool = False  # overlay workspaces can be mounted here (runner/overlay.py)
    layers_reason: str = ""  # why not, when they cannot
    layers_by: OverlayMount = "unshare"  # who mounts them: bwrap itself (>= 0.11) or unshare + mount
    overlay: Overlay | None = None  # one trial's mount, set on that trial's copy of the policy

    @property
    def enforced(self) -> bool:
        return self.isolation == "bwrap"

    @property
    def bwrap_mounts_overlay(self) -> bool:
        """This trial's overlay is mounted by bwrap on the workspace (no `unshare` step)."""
        return self.overlay is not None and self.layers_by == "bwrap"


def probe_bwrap(bwrap: str | None = None) -> str:
    """'' when bubblewrap can start a sandbox like ours here; else why it cannot."""
    exe = bwrap or shutil.which("bwrap")
    if not exe:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *USER_NS,
            "--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "true"]
    problem = probe_command(argv)
    return f"bubblewrap cannot start a sandbox here: {problem}{_userns_hint(problem)}" if problem else ""


def probe_layers(scratch_parent: Path | None = None, bwrap: str = "bwrap") -> tuple[OverlayMount, str]:
    """(who mounts overlay workspaces here, '' or why neither can): bwrap itself when it has
    `--overlay` (>= 0.11), else `unshare` + `mount` in front of it."""
    def by_bwrap(overlay: Overlay) -> list[str]:
        return [bwrap, "--ro-bind", "/", "/", *USER_NS, *overlay.bwrap_args(overlay.target)]

    if not probe_overlay(scratch_parent, mount_with=by_bwrap):
        return "bwrap", ""
    return "unshare", probe_overlay(scratch_parent)


def _userns_hint(detail: str) -> str:
    if "namespace" in detail or "Operation not permitted" in detail or "setting up uid map" in detail:
        return (" (unprivileged user namespaces are blocked; on Ubuntu 24.04: "
                "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)")
    return ""


def resolve_isolation(setting: SandboxSetting, env: Mapping[str, str] | None = None,
                      probe=probe_bwrap) -> tuple[Isolation, str]:
    """(isolation, reason). `bwrap`, and `auto` under CI=true, raise SandboxUnavailable when it
    cannot start; `auto` elsewhere falls back to copy-only with the reason; `none` is explicit."""
    env = os.environ if env is None else env
    if setting == "none":
        return "copy-only", "agent.sandbox is none"
    problem = probe()
    if not problem:
        return "bwrap", ""
    if setting == "bwrap":
        raise SandboxUnavailable(f"{problem}; agent.sandbox is bwrap")
    if env.get("CI", "").lower() == "true":
        raise SandboxUnavailable(f"{problem}; under CI=true a sandbox is required "
                                 "(install bubblewrap, or set agent.sandbox: none to run copy-only on purpose)")
    return "copy-only", problem


# A gated agent waits inside its finished sandbox until the harness writes "go" on its stdin;
# end of file (the harness died, or discarded the trial) ends it without running the agent.
GATE = ["/bin/sh", "-c", 'read -r go && [ "$go" = go ] && exec "$@" </dev/null', "sh"]


Writable = Path | tuple[Path, Path]  # a folder, or (folder, where the agent sees it)


def wrap(policy: SandboxPolicy, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
         writable: Sequence[Writable] = (), args_fd: int = 3, gated: bool = False) -> tuple[list[str], bytes]:
    """(bwrap argv, NUL-separated arguments for `--args FD`) running argv inside the sandbox in
    `cwd`, its workspace: the trial's overlay (mounted there by bwrap, or by `unshare` at its own
    target and shown there) or the folder itself, writable; `writable`: the other folders the
    agent may write. `gated`: behind GATE, reading stdin."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    # Which folders exist is looked at on every trial, never remembered: a folder to hide that
    # appears between runs (a cache made by a later --cache run in the same process) must be
    # hidden at once. What mounts a given set of folders needs is the same every time.
    args += _mounts(_existing([*policy.covered, *policy.hidden]), _existing(needed_paths(argv, env, policy)))
    overlay = policy.overlay
    if overlay is not None and policy.bwrap_mounts_overlay:
        args += overlay.bwrap_args(cwd)
    else:
        writable = [(overlay.target, cwd) if overlay is not None else cwd, *writable]
    for item in writable:
        source, target = item if isinstance(item, tuple) else (item, item)
        args += ["--bind", str(source), str(target)]
    # Under the overlay's `unshare` the harness is root in a user namespace: drop to the uid.
    chained = overlay is not None and not policy.bwrap_mounts_overlay
    user_ns = ["--unshare-user", *AS_SANDBOX_UID] if chained else USER_NS
    args += [*user_ns, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", str(cwd), "--clearenv"]
    if not policy.network:
        args.append("--unshare-net")
    for key, value in env.items():
        args += ["--setenv", key, value]
    payload = ("\0".join(args) + "\0").encode("utf-8", "surrogateescape")
    mount = overlay.prefix() if overlay is not None and chained else []
    return [*mount, policy.bwrap, "--args", str(args_fd), "--", *(GATE if gated else ()), *argv], payload


def outermost(paths: Sequence[Path], also: Sequence[Path] = ()) -> list[Path]:
    """`paths` without those inside another one (or inside `also`): every mount costs the kernel
    work at the sandbox's start and end, and one over the outer folder already does the job.
    Safe for the hidden folders because no folder shown again ever holds a hidden one
    (`_shown_prefixes`), so what lies under a covered folder stays covered."""
    roots = [*also, *paths]
    return [p for p in dict.fromkeys(paths)
            if not any(r != p and _within(p, r) for r in roots) and p not in also]


def _existing(paths) -> tuple[Path, ...]:
    return tuple(p for p in dict.fromkeys(paths) if os.path.exists(p))


@lru_cache(maxsize=64)
def _mounts(hidden: tuple[Path, ...], shown: tuple[Path, ...]) -> tuple[str, ...]:
    """bwrap's mount arguments: tmpfs over the hidden folders, read-only binds of the shown ones."""
    args: list[str] = []
    for path in outermost(hidden, also=(Path("/tmp"),)):
        args += ["--tmpfs", str(path)]
    for path in outermost(shown):
        args += ["--ro-bind", str(path), str(path)]
    return tuple(args)


_FOUND: dict[tuple[str, str | None], str] = {}


def find_program(name: str, path: str | None) -> str | None:
    """shutil.which, remembered once found: every trial starts the same program from the same
    PATH, and each lookup costs a stat per PATH entry. A miss, or a name relative to the
    current folder, is never remembered."""
    key = (name, path if path is not None else os.environ.get("PATH", os.defpath))
    if key not in _FOUND:
        found = shutil.which(name, path=key[1])
        if found is None or not os.path.isabs(found):
            return found
        _FOUND[key] = found
    return _FOUND[key]


def needed_paths(argv: Sequence[str], env: Mapping[str, str], policy: SandboxPolicy) -> list[Path]:
    """What the agent needs to run that a covered folder (HOME, /tmp) would hide: the install
    prefixes of PATH entries and of the program, and files named in argv (a script it runs).
    Nothing inside a hidden folder (repository, reports, cache) is ever shown again."""
    program = find_program(argv[0], env.get("PATH")) if argv else None
    files = tuple(Path(a) for a in argv[1:] if a.startswith("/") and os.path.isfile(a))
    return [*_path_prefixes(env.get("PATH", ""), policy.covered, policy.hidden),
            *(_program_prefix(program, policy.covered, policy.hidden) if program else ()),
            *(_shown_prefixes(files, policy.covered, policy.hidden) if files else ())]


@lru_cache(maxsize=16)
def _program_prefix(program: str, covered: tuple[Path, ...], hidden: tuple[Path, ...]) -> tuple[Path, ...]:
    # The same program every trial: its install prefix (a resolve, a stat per component) once.
    return _shown_prefixes((Path(program),), covered, hidden)


@lru_cache(maxsize=64)
def _path_prefixes(path_var: str, covered: tuple[Path, ...], hidden: tuple[Path, ...]) -> tuple[Path, ...]:
    # The same for every trial of a run: computed once (it resolves every PATH entry).
    entries = tuple(Path(p) for p in path_var.split(os.pathsep) if p.startswith("/"))
    return _shown_prefixes(entries, covered, hidden)


def _shown_prefixes(candidates: tuple[Path, ...], covered: tuple[Path, ...],
                    hidden: tuple[Path, ...]) -> tuple[Path, ...]:
    roots = [*covered, Path("/tmp")]
    prefixes = [install_prefix(p) for p in candidates if _under_any(p, roots) and p.exists()]
    return tuple(p for p in prefixes if not _overlaps(p, hidden))


def install_prefix(path: Path) -> Path:
    """The folder that holds a program with what it loads: `<prefix>` for `<prefix>/bin/x`,
    the file itself otherwise (a script in a temp folder)."""
    real = path.resolve()
    for candidate in (real, path):
        parts = candidate.parts
        if "bin" in parts[2:]:
            idx = len(parts) - 1 - parts[::-1].index("bin")
            return Path(*parts[:idx])
    return real


def _within(path: Path, root: Path) -> bool:
    """path is root or lies under it (string test: Path.parents is slow on a per-trial path)."""
    p, r = str(path), str(root).rstrip("/")
    return p == r or p.startswith(r + "/") or r == ""


def _under_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(_within(path, r) for r in roots)


def _overlaps(path: Path, roots: Sequence[Path]) -> bool:
    return any(_within(path, r) or _within(r, path) for r in roots)


def hidden_paths(repo: Path, *others: Path | None) -> tuple[Path, ...]:
    """Folders a sandboxed agent must never see: the repository, the reports folder, the cache and
    the run's temp root (resolved, deduplicated)."""
    return tuple(dict.fromkeys(p.resolve() for p in (repo, *others) if p is not None and str(p) not in ("", "/")))


def real_home() -> tuple[Path, ...]:
    """The invoking user's real HOME, covered in the sandbox (its install prefixes shown again)."""
    home = os.environ.get("HOME", "")
    return (Path(home).resolve(),) if home not in ("", "/") else ()


def hidden_argument(argv: Sequence[str], hidden: Sequence[Path]) -> str:
    """'' or the first absolute argument the agent needs that lies inside a hidden folder.

    A program or script inside the repository would be invisible in the sandbox; failing at
    plan time with the fix beats an agent that dies with 'No such file'.
    """
    for arg in argv:
        if arg.startswith("/") and _under_any(Path(arg).resolve(), hidden):
            return arg
    return ""
