"""runner/packfiles.py: a pack file whose lstat moved is shown unchanged only when it provably
holds what its name says."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rubricgate.runner.packfiles import pack_file_is_whole


def _repo(tmp_path: Path, object_format: str) -> Path:
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run(["git", "init", "-q", f"--object-format={object_format}", str(repo)], check=True)
    (repo / "a.md").write_text("a\n" * 100)
    for args in (["add", "a.md"], ["commit", "-qm", "one"],
                 ["-c", "pack.writeReverseIndex=true", "repack", "-adq"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return repo


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_every_pack_file_git_wrote_is_whole_from_any_working_folder(tmp_path: Path, monkeypatch,
                                                                     object_format: str) -> None:
    """`git verify-pack` read a SHA-256 index as SHA-1 when run outside the repository."""
    repo = _repo(tmp_path, object_format)
    monkeypatch.chdir(tmp_path)
    files = sorted((repo / ".git/objects/pack").glob("pack-*"))
    assert {f.suffix for f in files} == {".pack", ".idx", ".rev"}
    assert [f.name for f in files if not pack_file_is_whole(f)] == []


@pytest.mark.parametrize("suffix", [".pack", ".idx", ".rev"])
def test_a_flipped_byte_anywhere_is_caught(tmp_path: Path, suffix: str) -> None:
    repo = _repo(tmp_path, "sha1")
    path = next((repo / ".git/objects/pack").glob(f"pack-*{suffix}"))
    data = bytearray(path.read_bytes())
    path.chmod(0o644)
    for at in (0, len(data) // 2, len(data) - 1):
        changed = bytearray(data)
        changed[at] ^= 0x01
        path.write_bytes(bytes(changed))
        assert not pack_file_is_whole(path), (suffix, at)


def test_a_pack_file_of_another_name_is_caught(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "sha1")
    pack = next((repo / ".git/objects/pack").glob("pack-*.pack"))
    renamed = pack.with_name("pack-" + "0" * 40 + ".pack")
    pack.rename(renamed)
    assert not pack_file_is_whole(renamed)
