"""The kernel-enforced sandbox around every agent process: bubblewrap.

A throwaway copy is not isolation when the reviewer runs as the same user with the whole file
system in reach: it can find the original repository through its parent, rewrite baseline.json,
plant a git hook or poison the cache. So every agent process runs inside bubblewrap with:

- its own PID namespace (`--unshare-pid`): `/proc` shows only the sandbox, and when the
  sandbox's init dies the kernel kills every process in it, whatever `setsid`, `env -i` or a
  double fork did; `--die-with-parent` ties that init to the harness;
- a root built from an allowlist (isolation/rootfs.py): the system's program and library
  folders, a few /etc files, the agent CLI's own install folder, read-only; a private,
  size-capped `/tmp`; nothing else of the host (no /run, no HOME, no other checkout);
- only the trial's workspace and its throwaway HOME / output folder writable;
- an unprivileged sandbox user that is no host user owning files, even under a root harness
  (isolation/identity.py), no capabilities, and per-trial limits (isolation/limits.py);
- an environment built from the allowlist with `--clearenv`; the arguments, secrets among
  them, travel through a pipe (`--args FD`), never on a command line another process can read;
- a network namespace of its own, the model endpoints reached only through the harness's
  allowlisting proxy (isolation/netaccess.py, proxy.py), unless `agent.sandbox_network` says
  otherwise.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from rubricgate.isolation.etc_folder import etc_for
from rubricgate.isolation.identity import CAPS_FOR_DROP, drop_to_sandbox_user, enter_namespace
from rubricgate.isolation.limits import SHELL, Limits, limit_prefix, ulimit_script
from rubricgate.isolation.netaccess import CLEARED_VARS, PROXY_VARS, NetworkAccess
from rubricgate.isolation.overlay import Overlay, OverlayMount, probe_command, probe_overlay
from rubricgate.isolation.rootfs import (
    AgentFolderRefused,
    agent_folders,
    identity_args,
    in_system,
    install_prefixes,
    parent_dirs,
    system_mounts,
)
from rubricgate.isolation.sandbox_user import SANDBOX_UID

SandboxSetting = Literal["auto", "bwrap", "none"]
Isolation = Literal["bwrap", "copy-only"]
# Its own user namespace as the unprivileged sandbox uid: the agent holds no privilege over the
# host, and a CLI that sandboxes its own tools (Codex runs bubblewrap itself) can create the
# nested namespace it needs. A root harness maps that uid onto no host user (isolation/identity.py).
AS_SANDBOX_UID = ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
USER_NS = ["--unshare-user", *AS_SANDBOX_UID]
__all__ = ["AgentFolderRefused"]


class SandboxUnavailable(RuntimeError):
    """bubblewrap was required (or CI demanded it) and cannot start here."""


@dataclass(frozen=True)
class SandboxPolicy:
    """How one run isolates its agent processes. `hidden` paths are covered by an empty tmpfs."""

    isolation: Isolation
    hidden: tuple[Path, ...] = ()  # never visible: repository, reports, cache, run temp root
    covered: tuple[Path, ...] = ()  # the run's temp roots: no agent folder may hold them
    home: tuple[Path, ...] = ()  # the real HOME: never shown, nor any agent folder holding it
    network: NetworkAccess = NetworkAccess()  # allowlist (through the proxy), none, or shared
    seccomp: bool = True  # the agent's seccomp filter (isolation/seccomp.py), where the architecture has one
    reason: str = ""  # why copy-only was chosen, for the loud warning
    bwrap: str = "bwrap"
    layers: bool = False  # overlay workspaces can be mounted here (isolation/overlay.py)
    layers_reason: str = ""  # why not, when they cannot
    layers_by: OverlayMount = "unshare"  # who mounts them: bwrap itself (>= 0.11) or unshare + mount
    overlay: Overlay | None = None  # one trial's mount, set on that trial's copy of the policy
    # Folders shown read-only where one trial's agent looks for them, (folder, where it sees it):
    # a CLI's unpacked package every trial of a run shares (agents/copilot.py), mounted over a
    # folder of the agent's writable scratch. Set on that trial's copy of the policy.
    shared_read_only: tuple[tuple[Path, Path], ...] = ()
    limits: Limits = Limits()  # per-trial bounds inside the sandbox (agent.limits)
    etc: tuple[str, ...] = ()  # bwrap arguments showing the run's staged /etc (isolation/etc_folder.py)

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
    argv = [exe, *system_mounts(), "--dev", "/dev", "--proc", "/proc", "--perms", "1777",
            "--size", str(Limits().tmp_bytes), "--tmpfs", "/tmp", *USER_NS, "--unshare-pid", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL",
            *agent_start(Limits(), gated=False), "true"]
    problem = probe_command(argv)
    return f"bubblewrap cannot start a sandbox here: {problem}{_userns_hint(problem)}" if problem else ""


def probe_layers(scratch_parent: Path | None = None, bwrap: str = "bwrap") -> tuple[OverlayMount, str]:
    """(who mounts overlay workspaces here, '' or why neither can): bwrap itself when it has
    `--overlay` (>= 0.11), else `unshare` + `mount` in front of it."""
    def by_bwrap(overlay: Overlay) -> list[str]:
        return [bwrap, *system_mounts(), *USER_NS, *parent_dirs([overlay.target]), *overlay.bwrap_args(overlay.target)]

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
    """(isolation, reason). Copy-only is a choice (`none`), never a fallback: `auto` and `bwrap`
    raise SandboxUnavailable with the fix when bubblewrap cannot start. `env` is kept for
    callers that pass one; CI or not, the answer is the same."""
    if setting == "none":
        return "copy-only", "agent.sandbox is none"
    problem = probe()
    if not problem:
        return "bwrap", ""
    raise SandboxUnavailable(f"{problem}; agent.sandbox is {setting} (install bubblewrap, or set "
                             "agent.sandbox: none to run copy-only on purpose: no cache, parent environment scrubbed)")


# A gated agent waits inside its finished sandbox until the harness writes "go" on its stdin;
# end of file (the harness died, or discarded the trial) ends it without running the agent.
GATE_LINE = 'read -r go && [ "$go" = go ] && exec "$@" </dev/null'
EXEC_LINE = 'exec "$@"'
GATE = [SHELL, "-c", GATE_LINE, "sh"]  # behind prlimit, where the shell cannot set the limits itself


def agent_start(limits: Limits, gated: bool) -> tuple[str, ...]:
    """What starts the agent inside the sandbox: its limits set, and (`gated`) the wait at the
    gate. One shell does both where its `ulimit` sets the limits exactly (limits.ulimit_script),
    as it is always there for the gate: no `prlimit` exec a trial; else prlimit, then the gate."""
    script = ulimit_script(limits)
    if not script:
        return (*limit_prefix(limits), *(GATE if gated else ()))
    return (SHELL, "-c", f"{script} && {GATE_LINE if gated else EXEC_LINE}", "sh")


Writable = Path | tuple[Path, Path]  # a folder, or (folder, where the agent sees it)


def wrap(policy: SandboxPolicy, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
         writable: Sequence[Writable] = (), args_fd: int = 3, gated: bool = False,
         userns: str | None = None, identity: dict[str, int] | None = None,
         info_fd: int | None = None, seccomp_fd: int | None = None) -> tuple[list[str], bytes]:
    """(bwrap argv, NUL-separated arguments for `--args FD`) running argv inside the sandbox in
    `cwd`, its workspace: the trial's overlay (mounted there by bwrap, or by `unshare` at its own
    target and shown there) or the folder itself, writable; `writable`: the other folders the
    agent may write. `gated`: behind GATE, reading stdin. `userns`: the path of the user
    namespace a root harness lends the trial (isolation/identity.py), entered by `nsenter`;
    None for an ordinary user.
    `identity`: pipes holding /etc/passwd and /etc/group (rootfs.identity_pipes). `info_fd`:
    where bwrap writes its sandbox process's pid (the proxy listens in that process's network
    namespace before the gate opens: a sandbox whose network is by allowlist is always gated).
    `seccomp_fd`: a pipe holding the seccomp filter (isolation/seccomp.py). The agent sees a
    PATH of what the sandbox shows."""
    overlay = policy.overlay
    if overlay is None or not policy.bwrap_mounts_overlay:
        writable = [(overlay.target, cwd) if overlay is not None else cwd, *writable]
    binds = [(item if isinstance(item, tuple) else (item, item)) for item in writable]
    shown = shown_folders(argv, policy)
    argv = [visible_program(argv[0], shown), *argv[1:]] if argv else argv
    etc, staged_identity = etc_for(policy.etc, shown)
    args = [*system_mounts(etc), "--dev", "/dev", "--proc", "/proc", "--perms", "1777",
            "--size", str(policy.limits.tmp_bytes), "--tmpfs", "/tmp", *identity_args(identity or {}),
            *staged_identity, *parent_dirs([*shown, cwd, *(target for _, target in binds)])]
    for path in outermost(list(shown)):
        args += ["--ro-bind", str(path), str(path)]
    # Which hidden folders exist is looked at on every trial, never remembered: one that appears
    # between runs (a cache made by a later --cache run) must be hidden at once.
    args += _hide_inside(_existing(policy.hidden), shown)
    if overlay is not None and policy.bwrap_mounts_overlay:
        args += overlay.bwrap_args(cwd)
    for source, target in binds:
        args += ["--bind", str(source), str(target)]
    for source, target in policy.shared_read_only:  # after the binds: over a folder of one of them
        args += ["--ro-bind", str(source), str(target)]
    # One bind per /etc entry (no staged folder): bubblewrap's own /etc, writable by an ordinary
    # user's sandbox user, is made read-only once every mount point in it is made.
    args += [] if etc else ["--remount-ro", "/etc"]
    chained = overlay is not None and not policy.bwrap_mounts_overlay
    args += _identity_args(userns is not None)
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--die-with-parent", "--new-session", "--chdir", str(cwd), "--clearenv"]
    args += network_args(policy.network, info_fd)
    args += ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    for key, value in sandbox_env(policy.network, {**env, "PATH": sandbox_path(env.get("PATH"), shown)}).items():
        args += ["--setenv", key, value]
    payload = ("\0".join(args) + "\0").encode("utf-8", "surrogateescape")
    enter = overlay.prefix(userns) if chained else enter_namespace(userns)  # type: ignore[union-attr]
    inner = [*(drop_to_sandbox_user() if userns is not None else ()),
             *agent_start(policy.limits, gated or policy.network.proxied)]
    # By its absolute path: bwrap's own PATH is LAUNCH_PATH, which need not hold it (a bubblewrap
    # in /opt, first on the harness's PATH).
    bwrap = find_program(policy.bwrap, None) or policy.bwrap
    return [*enter, bwrap, "--args", str(args_fd), "--", *inner, *argv], payload


SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
# The PATH of bwrap and of the steps in front of it (nsenter, unshare and the overlay's mount),
# never the harness's: the sandbox's init is a fork of bwrap, and under an ordinary user's
# harness the agent reads its /proc/1/environ, where the harness's PATH named its HOME and user.
LAUNCH_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def sandbox_path(path: str | None, shown: Sequence[Path]) -> str:
    """The agent's PATH inside: the entries of its PATH the sandbox shows (system folders, its
    CLI's install folder), in order, then the system's own; never a folder the sandbox lacks, so
    the value names nothing of the host (a HOME, a user name) the reviewer could not see."""
    return _sandbox_path(path or "", tuple(shown))


@lru_cache(maxsize=64)
def _sandbox_path(path: str, shown: tuple[Path, ...]) -> str:
    # The same PATH and folders every trial of a run: a pure function of both (names only, no
    # look at the disk), worked out once. Building a Path per PATH entry was ~5% of a trial's Python.
    # An entry is judged as the folder it names: /usr/../home/me/bin is no system folder.
    named = [os.path.normpath(e) for e in path.split(os.pathsep) if os.path.isabs(e)]
    entries = [e for e in named if in_system(Path(e)) or _under_any(Path(e), shown)]
    return os.pathsep.join(dict.fromkeys([*entries, *SYSTEM_PATH]))


def network_args(access: NetworkAccess, info_fd: int | None) -> list[str]:
    """bwrap arguments for the sandbox's network: its own namespace unless shared, and (by
    allowlist) the pipe its sandbox process's pid is written to, for the proxy's listeners."""
    if access.mode == "shared":
        return []
    if not access.proxied:
        return ["--unshare-net"]
    if info_fd is None:
        raise ValueError("a sandbox whose network is by allowlist needs bwrap's --info-fd")
    return ["--unshare-net", "--info-fd", str(info_fd)]


def sandbox_env(access: NetworkAccess, env: Mapping[str, str]) -> Mapping[str, str]:
    """The agent's environment inside: by allowlist, the proxy variables name the sandbox's
    forwarder (the user's own proxy is the harness's upstream, never the reviewer's)."""
    if not access.proxied:
        return env
    return {**{k: v for k, v in env.items() if k not in PROXY_VARS and k not in CLEARED_VARS}, **access.sandbox_env()}


def _identity_args(lent: bool) -> list[str]:
    """Who bwrap makes the agent. An ordinary user: its own new user namespace with the sandbox
    uid mapped onto that user. A root harness: the namespace it lent the trial, entered by
    `nsenter` before bwrap starts, and the agent drops to the sandbox user itself (`setpriv`),
    so it keeps only what that needs until then."""
    if not lent:
        return ["--unshare-user", *AS_SANDBOX_UID, "--cap-drop", "ALL"]
    return list(CAPS_FOR_DROP)


def outermost(paths: Sequence[Path], also: Sequence[Path] = ()) -> list[Path]:
    """`paths` without those inside another one (or inside `also`): every mount costs the kernel
    work at the sandbox's start and end, and one over the outer folder already does the job."""
    roots = [*also, *paths]
    return [p for p in dict.fromkeys(paths)
            if not any(r != p and _within(p, r) for r in roots) and p not in also]


def _existing(paths) -> tuple[Path, ...]:
    return tuple(p for p in dict.fromkeys(paths) if os.path.exists(p))


def _hide_inside(hidden: tuple[Path, ...], shown: tuple[Path, ...]) -> list[str]:
    """tmpfs over a hidden folder that lies inside something shown (a repository under /usr/src);
    everything else hidden is simply never mounted."""
    return [arg for h in hidden if in_system(h) or any(_within(h, s) for s in shown) for arg in ("--tmpfs", str(h))]


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


def shown_folders(argv: Sequence[str], policy: SandboxPolicy) -> tuple[Path, ...]:
    """What the agent needs beyond the system folders: its program's install folder and the
    files argv names (a script). Raises AgentFolderRefused for one that would show the real
    HOME, the repository, the reports or the cache (checked at plan time: `check_agent_folders`)."""
    files = tuple(a for a in argv[1:] if a.startswith("/") and os.path.isfile(a))
    return _shown(argv[0] if argv else None, files, policy.home, policy.hidden, policy.covered)


@lru_cache(maxsize=64)
def _shown(program: str | None, files: tuple[str, ...], home: tuple[Path, ...],
           hidden: tuple[Path, ...], temps: tuple[Path, ...]) -> tuple[Path, ...]:
    # The same program and script every trial: resolved and checked once.
    return agent_folders(program, files, home, hidden, temps)


def visible_program(program: str, shown: Sequence[Path]) -> str:
    """The path the sandbox can start `program` by: as named when the sandbox shows it there,
    else the file it resolves to. A CLI linked from a folder that may not be shown
    (`~/.local/bin/claude -> ~/.local/share/claude/versions/X`: the dot-folder holds credentials)
    is shown only where it really lives; started by its link it would not exist (exit 127)."""
    if not os.path.isabs(program) or in_system(Path(program)) or _under_any(Path(program), shown):
        return program
    real = os.path.realpath(program)
    return real if in_system(Path(real)) or _under_any(Path(real), shown) else program


def install_prefix(path: Path) -> Path:
    """The folder that holds a program with what it loads: `<prefix>` for `<prefix>/bin/x`,
    the file itself otherwise (a script in a temp folder)."""
    return install_prefixes(path)[-1]


def _within(path: Path, root: Path) -> bool:
    """path is root or lies under it (string test: Path.parents is slow on a per-trial path)."""
    p, r = str(path), str(root).rstrip("/")
    return p == r or p.startswith(r + "/") or r == ""


def _under_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(_within(path, r) for r in roots)


def hidden_paths(repo: Path, *others: Path | None) -> tuple[Path, ...]:
    """Folders a sandboxed agent must never see: the repository, the reports folder, the cache and
    the run's temp root (resolved, deduplicated)."""
    return tuple(dict.fromkeys(p.resolve() for p in (repo, *others) if p is not None and str(p) not in ("", "/")))


def real_home() -> tuple[Path, ...]:
    """The invoking user's real HOME: never shown, nor any agent folder holding it."""
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
