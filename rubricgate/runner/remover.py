"""Removing finished trials' folders off the trials' path: one background thread, full copies of
the tree batched into one `rm -rf` (runner/workspace.py makes the folders; RunTree hands them here)."""

from __future__ import annotations

import os
import queue
import sys
import threading
from pathlib import Path

from rubricgate.isolation.overlay import remove_tree, rm_rf


class Remover:
    """Deletes finished trials' folders on one background thread, so the job slot starts its
    next trial at once. Only called once every process of the trial is dead; the folders sit
    under the run's temp root, which every sandbox hides. At most `backlog` wait: past that the
    trial that finished waits (full copies must not pile up).

    A sandboxed trial's folder (case files, the overlay's layers, HOME) is a dozen entries: Python
    removes it in ~1 ms; so is the folder of a trial of the builtin reviewer (its case files: it
    reads them over the snapshot, agents/workspace_view.py). A full copy of the tree (copy-only,
    --keep-workspaces) is the whole tree: in Python the thread fell behind four trials at once
    (it needs the interpreter's lock the trials hold; 200 copy-only trials of a 50-file tree
    waited on it for most of their wall time). Copies therefore go in batches to one `rm -rf`
    each: the copies queued meanwhile (up to a backlog's worth, so at most twice the backlog
    exist at once), removed in C outside the interpreter."""

    BACKLOG = 8

    def __init__(self, backlog: int = BACKLOG) -> None:
        self._queue: queue.Queue[tuple[Path, bool] | None] = queue.Queue(maxsize=backlog)
        self._backlog = backlog
        self._closed = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __call__(self, folder: Path, bulk: bool = False) -> None:
        """Remove `folder` soon; `bulk`: it is a full copy (batched into one `rm -rf`). Once
        closed (a trial that ended after the run's end began), at once in the caller's thread."""
        with self._lock:
            if self._closed:
                late = True
            else:
                late = False
                if self._thread is None:
                    self._thread = threading.Thread(target=self._work, name="trial-remover", daemon=True)
                    self._thread.start()
        if not late:
            self._queue.put((folder, bulk))
        elif bulk:
            remove_trees([folder])
        else:
            remove_tree(folder)

    def copy(self, folder: Path) -> None:
        """Remove a full copy of the tree soon."""
        self(folder, bulk=True)

    def close(self) -> None:
        """Return once every queued folder is gone. A later call removes its folder itself: a
        second worker started then could take the end marker meant for this one, which would
        wait for it forever (an interrupt once left a trial running past the run's end)."""
        with self._lock:
            thread, self._thread, self._closed = self._thread, None, True
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _work(self) -> None:
        ahead: list[tuple[Path, bool] | None] = []  # taken from the queue, not yet handled
        while (item := ahead.pop() if ahead else self._queue.get()) is not None:
            folder, bulk = item
            if not bulk:
                _remove_one(folder)
                continue
            batch = [folder]  # and the copies queued meanwhile, up to a backlog's worth
            while len(batch) < self._backlog:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None or not more[1]:
                    ahead.append(more)
                    break
                batch.append(more[0])
            remove_trees(batch)


def _remove_one(folder: Path) -> None:
    """remove_tree on the worker: whatever a folder's removal raises leaves that folder (the next
    run's sweep takes it), never the thread ended, whose full queue would block the next
    trial's hand-off for good and hang the run past SIGTERM."""
    try:
        remove_tree(folder)
    except Exception as exc:  # noqa: BLE001 - a folder left beats a run that never ends
        print(f"rubricgate: note: {folder} was not removed ({type(exc).__name__}: {exc}); "
              "a later run's sweep of dead runs' folders removes it", file=sys.stderr)


def remove_trees(folders: list[Path]) -> None:
    """Remove whole folders with one `rm -rf` (never following a link, never crossing into
    another file system); what it left (no GNU rm, a folder it could not enter) goes by
    remove_tree, which never raises."""
    if folders and rm_rf(folders):
        folders = [f for f in folders if os.path.lexists(f)]
    for folder in folders:
        remove_tree(folder)


