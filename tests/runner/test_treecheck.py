"""runner/treecheck.py: the run-end backstop reads again only what may have changed, and is
never fooled by a rewrite whose size and mtime were put back."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from rubricgate.runner import treecheck
from rubricgate.runner.treecheck import TreeGuard
from tests.fake_reviewer import install
from tests.timing import HANG_S


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git" / "hooks").mkdir(parents=True)
    (repo / "baseline.json").write_text('{"verdict": 1.0}')
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("a")
    return repo


def _aged(guard: TreeGuard) -> TreeGuard:
    """As if the files had been written long before the run started (none is racy)."""
    guard.started_ns = time.time_ns() + 10 * treecheck.RACY_NS
    return guard


def _reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = treecheck._sha256
    monkeypatch.setattr(treecheck, "_sha256", lambda p: reads.append(p) or real(p))
    return reads


# -- failure paths first ------------------------------------------------------------------------

def test_a_rewrite_with_size_and_mtime_put_back_is_caught(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    guard = _aged(TreeGuard.start(repo, set(), adopt=False, known=set()))
    target = repo / "baseline.json"
    st = target.stat()
    target.write_text('{"verdict": 0.0}')  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert guard.changes() == ["baseline.json"]


def test_a_planted_hook_and_a_removed_file_are_caught(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    guard = _aged(TreeGuard.start(repo, set(), adopt=False, known=set()))
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (repo / "docs" / "a.md").unlink()
    assert guard.changes() == [".git/hooks/pre-commit", "docs/a.md"]


def test_files_touched_just_before_the_run_are_read_again_whatever_their_lstat(tmp_path: Path, monkeypatch) -> None:
    repo = _repo(tmp_path)  # written a moment ago: within RACY_NS of the start
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    reads = _reads(monkeypatch)
    assert guard.changes() == []
    assert sorted(os.path.basename(p) for p in reads) == ["a.md", "baseline.json"]


def _release(fifo: Path) -> None:
    """Let go a reader blocked opening `fifo`, had the digest opened it (a test that fails must end)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader waiting: nothing to release
        pass


def test_a_fifo_in_the_tree_is_compared_by_kind_and_mode_never_opened(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    os.mkfifo(repo / "docs" / "pipe")
    done: list[TreeGuard] = []
    worker = threading.Thread(target=lambda: done.append(TreeGuard.start(repo, set(), adopt=False, known=set())),
                              daemon=True)
    worker.start()
    worker.join(HANG_S)
    _release(repo / "docs" / "pipe")
    assert done, "the start digest opened the FIFO and waited for a writer"
    assert done[0].before is not None and done[0].before["docs/pipe"][0] == "fifo"
    assert done[0].changes() == []


def test_a_fifo_replaced_by_a_regular_file_is_a_change(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    fifo = repo / "docs" / "pipe"
    os.mkfifo(fifo)
    done: list[TreeGuard] = []
    worker = threading.Thread(target=lambda: done.append(TreeGuard.start(repo, set(), adopt=False, known=set())),
                              daemon=True)
    worker.start()
    worker.join(HANG_S)
    _release(fifo)
    assert done, "the start digest opened the FIFO and waited for a writer"
    guard = _aged(done[0])
    fifo.unlink()
    fifo.write_text("")
    assert guard.changes() == ["docs/pipe"]


def test_a_file_replaced_by_a_fifo_after_its_lstat_is_not_opened_and_is_a_change(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    target = repo / "docs" / "a.md"
    target.unlink()
    os.mkfifo(target)  # what a file swapped for a FIFO between the walk's lstat and the read looks like
    done: list[str] = []
    worker = threading.Thread(target=lambda: done.append(treecheck._sha256(os.fspath(target))), daemon=True)
    worker.start()
    worker.join(HANG_S)
    _release(target)
    assert done == ["not a file: fifo"]


def test_a_run_finishes_with_a_fifo_in_the_repository(repo: Path) -> None:
    install(repo, ["answer"])  # a watched agent: the run digests the whole tree at its start and end
    os.mkfifo(repo / "pipe")
    os.mkfifo(repo / "reviewer" / "pipe")  # in the reviewer's closure too (its folder is copied and digested)
    try:
        done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo)],
                              capture_output=True, text=True, timeout=HANG_S)
    except subprocess.TimeoutExpired:
        raise AssertionError("rubricgate run hung on a FIFO in the repository") from None
    assert done.returncode == 0, done.stderr[-2000:]
    assert "decision: PASS" in done.stdout


# -- the cheap path -----------------------------------------------------------------------------

def test_an_untouched_tree_is_not_read_again_at_the_end(tmp_path: Path, monkeypatch) -> None:
    repo = _repo(tmp_path)
    guard = _aged(TreeGuard.start(repo, set(), adopt=False, known=set()))
    reads = _reads(monkeypatch)
    assert guard.changes() == [] and reads == []


def test_a_folder_that_cannot_be_listed_is_digested_as_a_folder_not_a_crash(tmp_path: Path, monkeypatch) -> None:
    repo = _repo(tmp_path)
    locked = repo / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "x.md").write_text("x")
    real_open = os.open

    def refuse(path, *args, **kwargs):  # as an unreadable folder would (root reads every folder, so refused here)
        if isinstance(path, str) and path.endswith("/locked"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(treecheck.os, "open", refuse)  # each folder is opened, then listed by its descriptor
    digest = treecheck.digest_tree(repo)
    assert digest["locked"][0] == "dir" and not any(rel.startswith("locked/") for rel in digest)


# -- git's object storage: compared by lstat, never read at the start ----------------------------

def _git_repo(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path]:
    """A real repository with one packed and one loose object; (repo, a loose object, the pack).
    RACY_NS 0: every file already there counts as written long before the run's start."""
    import subprocess

    monkeypatch.setattr(treecheck, "RACY_NS", 0)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    (repo / "a.md").write_text("packed\n")
    for args in (["init", "-q"], ["add", "a.md"], ["commit", "-qm", "one"], ["gc", "-q"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    (repo / "b.md").write_text("loose\n")
    blob = subprocess.run([*git, "hash-object", "-w", "b.md"], check=True, capture_output=True, text=True).stdout.strip()
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    pack = next((repo / ".git" / "objects" / "pack").glob("pack-*.pack"))
    return repo, loose, pack


def test_a_loose_object_rewritten_with_other_content_is_caught(tmp_path: Path, monkeypatch) -> None:
    import zlib

    repo, loose, _ = _git_repo(tmp_path, monkeypatch)
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob 6\0forged"))
    rel = str(loose.relative_to(repo))
    assert guard.changes() == [rel]


def test_a_pack_rewritten_with_its_size_and_mtime_put_back_is_caught(tmp_path: Path, monkeypatch) -> None:
    repo, _, pack = _git_repo(tmp_path, monkeypatch)
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    st, data = pack.stat(), bytearray(pack.read_bytes())
    data[20] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    os.chmod(pack, st.st_mode)
    os.utime(pack, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert guard.changes() == [str(pack.relative_to(repo))]


def _with_checksum(data: bytes, size: int = 20) -> bytes:
    """`data` (checksum included) altered in its first object and its trailing SHA-1 made to hold."""
    import hashlib

    body = bytearray(data[:-size])
    body[20] ^= 0xFF
    return bytes(body) + hashlib.sha1(body).digest()


def _put_back(path: Path, data: bytes) -> None:
    """Rewrite in place, mode, size and mtime as they were: only the ctime shows it."""
    st = path.stat()
    path.chmod(0o644)
    path.write_bytes(data)
    os.chmod(path, st.st_mode)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_pack_rewritten_with_a_checksum_that_holds_is_caught_by_its_name(tmp_path: Path, monkeypatch) -> None:
    repo, _, pack = _git_repo(tmp_path, monkeypatch)
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    _put_back(pack, _with_checksum(pack.read_bytes()))
    assert guard.changes() == [str(pack.relative_to(repo))]


def test_an_index_rewritten_with_its_checksum_made_to_hold_is_caught(tmp_path: Path, monkeypatch) -> None:
    # Its own checksum holds and it names its pack; only checking it against the pack shows it.
    repo, _, pack = _git_repo(tmp_path, monkeypatch)
    idx = pack.with_suffix(".idx")
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    data = bytearray(idx.read_bytes())
    body = data[:-20]
    body[8 + 255 * 4 + 4] ^= 0xFF  # the first object's name (after the header and fanout table)
    import hashlib

    _put_back(idx, bytes(body) + hashlib.sha1(body).digest())
    assert guard.changes() == [str(idx.relative_to(repo))]


def _packed_with_rev_and_bitmap(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    import subprocess

    repo, _, pack = _git_repo(tmp_path, monkeypatch)
    subprocess.run(["git", "-C", str(repo), "-c", "pack.writeReverseIndex=true", "repack", "-adq",
                    "--write-bitmap-index"], check=True, capture_output=True)
    return repo, next((repo / ".git/objects/pack").glob("pack-*.pack"))


def test_a_reverse_index_with_two_entries_swapped_and_its_checksum_made_to_hold_is_caught(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    import hashlib

    repo, pack = _packed_with_rev_and_bitmap(tmp_path, monkeypatch)
    rev = pack.with_suffix(".rev")
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    data = bytearray(rev.read_bytes())
    data[12:16], data[16:20] = data[16:20], data[12:16]
    body = bytes(data[:-20])
    _put_back(rev, body + hashlib.sha1(body).digest())
    assert guard.changes() == [str(rev.relative_to(repo))]


def test_a_moved_bitmap_is_a_change_and_an_untouched_reverse_index_is_not(tmp_path: Path, monkeypatch) -> None:
    import shutil
    import subprocess

    repo, pack = _packed_with_rev_and_bitmap(tmp_path, monkeypatch)
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    time.sleep(0.01)
    subprocess.run(["git", "clone", "-q", str(repo), str(tmp_path / "other")], check=True, capture_output=True)
    shutil.rmtree(tmp_path / "other")
    # Every pack file's ctime moved; the bitmap alone cannot be shown unchanged.
    assert guard.changes() == [str(pack.with_suffix(".bitmap").relative_to(repo))]


def test_a_local_clone_hardlinking_the_packs_during_the_run_is_no_change(tmp_path: Path, monkeypatch) -> None:
    """`git clone /path` hardlinks the packs: adding and dropping a link moves their ctime."""
    import shutil
    import subprocess

    repo, _, pack = _git_repo(tmp_path, monkeypatch)
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    ctime = pack.stat().st_ctime_ns
    time.sleep(0.01)  # a later ctime tick
    subprocess.run(["git", "clone", "-q", str(repo), str(tmp_path / "other")], check=True, capture_output=True)
    shutil.rmtree(tmp_path / "other")
    assert pack.stat().st_nlink == 1 and pack.stat().st_ctime_ns != ctime  # the clone hardlinked it
    assert guard.changes() == []


def test_git_storage_is_not_read_at_the_start_and_a_freshened_object_is_no_change(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    repo, loose, pack = _git_repo(tmp_path, monkeypatch)
    reads = _reads(monkeypatch)
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    read = {os.path.relpath(p, repo) for p in reads}
    assert "a.md" in read and ".git/config" in read  # the rest of the tree and of .git is read
    assert not any(treecheck.is_git_storage(r) for r in read), read
    os.utime(loose)  # what git does to an object it would write again
    assert guard.changes() == []
    again = TreeGuard.start(repo, set(), adopt=False, known=set())
    loose.chmod(0o755)  # its content still matches its name, but its mode is not what it was
    assert again.changes() == [str(loose.relative_to(repo))]


def test_the_start_digests_are_dropped_once_compared_and_a_later_call_answers_the_same(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    guard = TreeGuard.start(repo, set(), adopt=False, known=set())
    assert guard.before and guard.stats
    (repo / "baseline.json").write_text('{"verdict": 0.5}')
    assert guard.changes() == ["baseline.json"]
    assert guard.before is None and not guard.stats  # a 2,000-case suite's tree: ~2 MB no longer held
    (repo / "rubricgate.yaml").write_text("changed after the check\n")
    assert guard.changes() == ["baseline.json"]  # what the one comparison found, not a fresh one
    assert TreeGuard.unwatched(repo, known=set()).changes() == []


def test_git_storage_written_just_before_the_start_is_read_like_any_file(tmp_path: Path, monkeypatch) -> None:
    repo, loose, pack = _git_repo(tmp_path, monkeypatch)
    monkeypatch.setattr(treecheck, "RACY_NS", 10 * 10**9)  # everything is within the window
    reads = _reads(monkeypatch)
    TreeGuard.start(repo, set(), adopt=False, known=set())
    assert {str(loose), str(pack)} <= set(reads)


# -- the copy-only check between trials (fingerprint_tree) ---------------------------------------

def _rewritten_in_place(path: Path, text: str) -> None:
    """Same size, same mtime: only the ctime (which user space cannot set back) shows it."""
    st = path.stat()
    assert len(text.encode()) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_the_fingerprint_catches_a_rewrite_with_size_and_mtime_put_back(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = treecheck.fingerprint_tree(repo)
    time.sleep(0.01)  # a later ctime tick, however coarse the file system's clock
    _rewritten_in_place(repo / "baseline.json", '{"verdict": 0.0}')
    assert treecheck.tree_changes(before, treecheck.fingerprint_tree(repo)) == ["baseline.json"]


def test_the_fingerprint_skips_an_excluded_folder_and_nothing_beside_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    for rel in ("reports/run/summary.json", "reports-old/a.md", "reportsx", "docs/reports/b.md", "a/reports/c.md"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x")
    exclude = {"reports", "a/reports"}
    before = treecheck.fingerprint_tree(repo, exclude)
    assert not any(rel == "reports" or rel.startswith(("reports/", "a/reports")) for rel in before)
    time.sleep(0.01)
    for rel in ("reports/run/summary.json", "a/reports/c.md"):  # the run's own outputs: never a change
        (repo / rel).write_text("y")
    (repo / "reports" / "new.json").write_text("{}")
    assert treecheck.tree_changes(before, treecheck.fingerprint_tree(repo, exclude)) == []
    for rel in ("reports-old/a.md", "reportsx", "docs/reports/b.md"):  # names that only begin alike
        (repo / rel).write_text("y")
    assert treecheck.tree_changes(before, treecheck.fingerprint_tree(repo, exclude)) == [
        "docs/reports/b.md", "reports-old/a.md", "reportsx"]


def test_the_fingerprint_watches_git_but_its_index_locks_and_objects(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".git" / "objects" / "ab").mkdir(parents=True)
    before = treecheck.fingerprint_tree(repo)
    for rel in (".git/index", ".git/index.lock", ".git/refs/heads/main.lock", ".git/objects/ab/cdef"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x")
    changes = treecheck.tree_changes(before, treecheck.fingerprint_tree(repo))
    assert not any(c.startswith((".git/index", ".git/objects/")) or c.endswith(".lock") for c in changes), changes
    assert ".git/refs/heads" in changes  # the folder a lock was taken in still shows it
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (repo / "docs.lock").write_text("x")  # a lock's name outside .git is a file like any other
    changes = treecheck.tree_changes(before, treecheck.fingerprint_tree(repo))
    assert {".git/hooks/pre-commit", "docs.lock"} <= set(changes)
