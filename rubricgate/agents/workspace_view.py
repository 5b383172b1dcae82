"""A trial's workspace as an agent running in this process reads it.

A process agent sees its workspace through the sandbox's overlay mount (isolation/overlay.py): the
case's files over the run's snapshot, never copied. An agent that runs in this process (the
builtin reviewer) has no mount namespace, so it used to get a full copy of the snapshot per trial:
on a 1,900-file tree that copy was most of a builtin run's system time. It now reads the same
layers directly, with the overlay's rules: the topmost layer holding a path answers for it, a file
hides whatever lower layers hold at or below its path, folders of several layers merge.

Reading only: an in-process agent writes nothing into its workspace (a reviewer that must write
runs as a process, in the sandbox or in a full copy).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _parts(rel: str) -> list[str] | None:
    """`rel`'s components as written ('..' kept: it climbs only out of a folder that exists, as
    the file system resolves it), or None for an absolute path. A backslash is a character of a
    name here, as on Linux (mapping it to '/' made a file `notes\\prod` unreadable)."""
    if rel.startswith("/"):
        return None
    return [p for p in rel.split("/") if p not in ("", ".")]


@dataclass(frozen=True)
class WorkspaceView:
    """`root` as the agent names it; `layers` (topmost first) where it is read. No layers: the
    workspace is a real folder at `root`."""

    root: Path
    layers: tuple[Path, ...] = ()
    # folder -> its layers (_folder); the view is read while its trial runs, which writes nothing
    _entered: dict[tuple[str, ...], list[Path] | None] = field(default_factory=dict, init=False, compare=False,
                                                               repr=False)

    def file(self, rel: str) -> Path | None:
        """Where the regular file at workspace path `rel` is read; None when there is none, or
        when `rel` climbs out of the workspace (`references/../../../etc/passwd`)."""
        parts = _parts(rel)
        if not parts or parts[-1] == "..":
            return None
        walked: list[str] = []  # the folders entered so far, each one that exists in the view
        for name in parts[:-1]:
            if name != "..":
                walked.append(name)
                if self._folder(walked) is None:
                    return None  # missing, or a file: nothing lies below it
            elif not walked:
                return None  # up out of the workspace
            else:
                walked.pop()
        holding = self._folder(walked)
        top = next((layer.joinpath(*walked, parts[-1]) for layer in holding or ()
                    if os.path.lexists(layer.joinpath(*walked, parts[-1]))), None)
        if top is None or top.is_symlink():  # a link may point at the host
            return None
        return top if top.is_file() else None

    def _folder(self, parts: list[str]) -> list[Path] | None:
        """The layers that hold the folder `parts` and merge there (topmost first); None when it
        is not a folder in the view: missing, or hidden by a file or link of a higher layer.
        Each folder is entered once per view (a review asks `file` for every file of a skill,
        and each asked for every folder above it again)."""
        live = list(self.layers or (self.root,))
        for depth in range(1, len(parts) + 1):
            key = tuple(parts[:depth])
            if key not in self._entered:
                self._entered[key] = self._enter(live, key)
            entered = self._entered[key]
            if entered is None:
                return None
            live = entered
        return live

    @staticmethod
    def _enter(live: list[Path], key: tuple[str, ...]) -> list[Path] | None:
        """The folder `key` in the layers `live` holding its parent (see _folder)."""
        holding = [layer for layer in live if os.path.lexists(layer.joinpath(*key))]
        top = holding[0].joinpath(*key) if holding else None
        if top is None or top.is_symlink() or not top.is_dir():
            return None  # a file (or link) hides everything the layers below hold under its path
        return [layer for layer in holding if layer.joinpath(*key).is_dir()]

    def has_file(self, rel: str) -> bool:
        return self.file(rel) is not None

    def glob(self, pattern: str) -> list[str]:
        """Workspace paths of the regular files matching `pattern`, sorted."""
        found = {p.relative_to(layer).as_posix() for layer in self.layers or (self.root,)
                 for p in layer.glob(pattern)}
        return sorted(rel for rel in found if self.file(rel) is not None)

    def read_text(self, rel: str) -> str | None:
        """The file's text (undecodable bytes replaced), or None when there is no such file."""
        path = self.file(rel)
        return path.read_text(encoding="utf-8", errors="replace") if path is not None else None
