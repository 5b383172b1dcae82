"""Copilot CLI's unpacked package: unpacked once per run, shown read-only to every sandboxed trial.

The native binary carries its JavaScript as an archive (69 MB unpacked for 1.0.40, 235 MB for
1.0.102) and unpacks it on its first start into `$XDG_CACHE_HOME/copilot/pkg/<platform>/<version>`,
a `.extraction-complete` file marking a whole copy; it runs a whole copy it finds there instead.
In a throwaway HOME that first start is every trial (1.1 to 6 s each, measured by
bench/copilot_package.py). So the first sandboxed trial of a run has the binary unpack it once
(its own `--version`, with a staging HOME), and every trial's sandbox shows that copy read-only at
that place in its HOME (SandboxPolicy.shared_read_only): the reviewer reads it and can never write
it. An unsandboxed (copy-only) trial unpacks its own, as nothing there would keep a reviewer from
writing a shared copy. The copy lives in a temp folder this process owns (isolation/leftovers.py:
a later run removes it if this one is killed) and goes when the adapter does or the run exits.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rubricgate.isolation.environment import isolated_env

if TYPE_CHECKING:
    from rubricgate.agents.base import AgentRequest

UNPACK_TIMEOUT_S = 300.0
MARKER = ".extraction-complete"


@dataclass(frozen=True)
class Unpacked:
    """One unpacked package: `folder` holds it, `place` is where under $XDG_CACHE_HOME the CLI
    looks for it (copilot/pkg/linux-x64/1.0.102)."""

    folder: Path
    place: Path


class SharedPackages:
    """The run's unpacked packages, one per native binary, made on first use (one at a time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: dict[str, Unpacked | None] = {}
        self._roots: list[Path] = []
        weakref.finalize(self, _remove_all, self._roots)

    def request_for(self, request: AgentRequest, program: str) -> AgentRequest:
        """`request` with the shared copy shown read-only in its sandbox, where `program` looks
        for its package; the request itself when its trial is not sandboxed or none can be made."""
        sandbox = request.sandbox
        if sandbox is None or not sandbox.enforced or not os.path.isabs(program):
            return request
        unpacked = self.unpacked(program)
        if unpacked is None:
            return request
        target = request.home / ".cache" / unpacked.place
        os.close(request.scratch_folder(target))  # the mount point, in the trial's writable HOME
        shown = (*sandbox.shared_read_only, (unpacked.folder, request.agent_view(target)))
        return replace(request, sandbox=replace(sandbox, shared_read_only=shown))

    def unpacked(self, program: str) -> Unpacked | None:
        """The unpacked package of `program`, made once; None when it cannot be made (the trial
        then unpacks its own, as without sharing)."""
        with self._lock:
            if program not in self._made:
                self._made[program] = self._unpack(program)
            return self._made[program]

    def _unpack(self, program: str) -> Unpacked | None:
        from rubricgate.isolation.leftovers import owned_folder
        from rubricgate.isolation.process import run_process

        root = owned_folder("rg-copilot-")
        self._roots.append(root)
        home = root / "home"
        env = {**isolated_env({"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, home), "COPILOT_AUTO_UPDATE": "false"}
        result = run_process([program, "--version"], cwd=root, env=env, timeout_s=UNPACK_TIMEOUT_S,
                             output_cap_bytes=65536, stdout_path=root / "version.txt")
        cache = home / ".cache"
        found = [m.parent for m in cache.glob(f"copilot/pkg/*/*/{MARKER}")] if result.exit_code == 0 else []
        if len(found) != 1:
            return None
        # Readable (never writable) by the sandbox user a root harness runs the agent as.
        for folder in (root, *found[0].relative_to(root).parents):
            os.chmod(root / folder, 0o755)
        return Unpacked(found[0], found[0].relative_to(cache))


def _remove_all(roots: list[Path]) -> None:
    from rubricgate.isolation.leftovers import release
    from rubricgate.isolation.overlay import remove_tree

    for root in roots:
        remove_tree(root)
        release(root)
