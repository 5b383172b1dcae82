"""Does a git pack file still hold what its name says? Read only when its lstat moved.

Another clone that hardlinks the same packs (`git clone` of a local path) moves their ctime as it
adds or drops a link, though not a byte changed; the run-end check (runner/treecheck.py) then asks
here instead of calling the repository modified:

- `.pack`: its trailing checksum is the hash of what precedes it, and that checksum is its name;
- `.idx`: its own checksum holds, it names the pack, and it matches the pack (`git verify-pack`:
  an index rewritten with its checksum made to hold could point objects at other objects' data);
- `.rev`: its own checksum holds, it names the pack, and its entries are the index's objects in
  pack order, as git writes them (checked against the verified index);
- `.bitmap`: never shown unchanged (what it holds can only be checked by writing it again).
"""

from __future__ import annotations

import functools
import hashlib
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

_CHUNK = 1 << 20


def pack_file_is_whole(path: Path) -> bool:
    """True when the pack file at `path` provably holds what its name says (module docstring)."""
    name, kind = path.name[len("pack-"):].split(".", 1)
    if kind == "pack":
        return _checksum_holds(path, name, tail_names_pack=False)
    if kind not in ("idx", "rev") or not _checksum_holds(path, name, tail_names_pack=True):
        return False
    idx = path.with_name(f"pack-{name}.idx")
    try:
        st = idx.stat()
    except OSError:
        return False
    if not _index_matches_pack(str(idx), (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)):
        return False
    return kind == "idx" or _rev_is_pack_order(path, idx, len(name) // 2)


def hash_for(name: str) -> Callable:
    """SHA-1 for a 40-digit name, SHA-256 for a 64-digit one."""
    return hashlib.sha1 if len(name) == 40 else hashlib.sha256


def _checksum_holds(path: Path, name: str, tail_names_pack: bool) -> bool:
    """The file ends with the hash of what precedes it; before that (`tail_names_pack`: an index)
    or as that (a `.pack`) stands the pack's checksum, its name. Read in chunks: a pack may be GBs."""
    size, digest = len(name) // 2, hash_for(name)()
    try:
        with path.open("rb") as f:
            body = f.seek(0, 2) - size
            if body < size:
                return False
            f.seek(0)
            for _ in range(body // _CHUNK):
                digest.update(f.read(_CHUNK))
            digest.update(f.read(body % _CHUNK))
            tail = f.read(size)
            f.seek(body - size)
            named = f.read(size)
    except OSError:
        return False
    expected = bytes.fromhex(name)
    return digest.digest() == tail and (named if tail_names_pack else tail) == expected


@functools.lru_cache(maxsize=64)
def _index_matches_pack(idx: str, signature: tuple) -> bool:
    """`git verify-pack`, once per index as it is now (`signature`): the `.rev` asks too. Run in
    the repository's git folder, so git reads the index with the repository's hash."""
    try:
        return subprocess.run(["git", "verify-pack", idx], stdin=subprocess.DEVNULL, capture_output=True,
                              cwd=Path(idx).parents[2], timeout=600).returncode == 0
    except (OSError, subprocess.TimeoutExpired):  # no git, or it did not finish: not shown unchanged
        return False


def _rev_is_pack_order(rev: Path, idx: Path, size: int) -> bool:
    """The `.rev` entries are the index positions of the pack's objects in pack order (format 1)."""
    try:
        rev_data, idx_data = rev.read_bytes(), idx.read_bytes()
    except OSError:
        return False
    offsets = _index_offsets(idx_data, size)
    if offsets is None or rev_data[:8] != b"RIDX\0\0\0\1":
        return False
    order = sorted(range(len(offsets)), key=offsets.__getitem__)
    return rev_data[12:-2 * size] == struct.pack(f">{len(order)}I", *order)


def _index_offsets(data: bytes, size: int) -> list[int] | None:
    """Each object's pack offset, in index order, from a version 2 index; None for another version."""
    if data[:8] != b"\377tOc\0\0\0\2":
        return None
    count = struct.unpack_from(">I", data, 8 + 255 * 4)[0]
    start = 8 + 256 * 4 + count * (size + 4)  # after the names and the CRCs
    small = struct.unpack_from(f">{count}I", data, start)
    large_at = start + 4 * count
    return [struct.unpack_from(">Q", data, large_at + 8 * (o & 0x7FFFFFFF))[0] if o & 0x80000000 else o
            for o in small]
