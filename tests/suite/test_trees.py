"""rubricgate.suite.trees: WorkTree.real answers what the kernel resolves, and nothing outside."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rubricgate.suite.trees import AUTOCRLF_NOTE, WorkTree, autocrlf_note


def _tree(tmp_path):
    repo = tmp_path / "repo"
    (repo / "docs" / "deep").mkdir(parents=True)
    (repo / "docs" / "deep" / "a.md").write_text("a")
    (repo / "docs" / "top.md").write_text("t")
    (repo / "link").symlink_to("docs/deep")  # a symlinked folder
    (repo / "dangling").symlink_to("docs/nowhere")
    (repo / "loop").symlink_to("loop")
    (tmp_path / "secret.md").write_text("s")
    (repo / "out").symlink_to(tmp_path)  # leaves the repository once resolved
    return repo


def test_names_that_are_missing_dangling_looping_or_outside_are_nothing(tmp_path) -> None:
    tree = WorkTree(_tree(tmp_path))
    for rel in ("missing.md", "docs/missing/a.md", "dangling", "dangling/x", "loop", "loop/x",
                "out/secret.md", "out", "../secret.md", "link/../../../secret.md", ".git/config"):
        assert tree.real(rel) is None, rel


def test_a_name_through_a_symlinked_folder_resolves_as_the_kernel_resolves_it(tmp_path) -> None:
    repo = _tree(tmp_path)
    tree = WorkTree(repo)
    assert tree.real("link/a.md") == ("docs/deep/a.md", "file")
    # `..` after a symlink is the parent of its target (the kernel's answer), not of the link
    assert tree.real("link/../top.md") == ("docs/top.md", "file")
    assert os.path.isfile(repo / "link/../top.md")
    assert tree.real("link") == ("docs/deep", "dir") and tree.real("docs/./deep/") == ("docs/deep", "dir")


def test_an_answer_is_asked_of_the_disk_once_per_tree(tmp_path) -> None:
    repo = _tree(tmp_path)
    tree = WorkTree(repo)
    assert tree.real("docs/top.md") == ("docs/top.md", "file")
    (repo / "docs" / "top.md").unlink()  # a closure is one instant of the tree: the answer is kept
    assert tree.real("docs/top.md") == ("docs/top.md", "file")
    assert WorkTree(repo).real("docs/top.md") is None


def crlf_checkout(repo: Path) -> None:
    """Check `repo`'s commit out again as git does with core.autocrlf=true (Git for Windows'
    default): every text file with CRLF line ends, unchanged in git."""
    for args in (["config", "core.autocrlf", "true"], ["rm", "-q", "--cached", "-r", "."], ["reset", "-q", "--hard"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    assert b"\r\n" in (repo / "rubricgate.yaml").read_bytes() and not subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, check=True).stdout


def test_the_line_end_note_is_for_core_autocrlf_true_only(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert autocrlf_note(tmp_path) == "" and autocrlf_note(tmp_path / "no-such-folder") == ""
    for value, note in (("input", ""), ("false", ""), ("true", AUTOCRLF_NOTE)):
        subprocess.run(["git", "-C", str(tmp_path), "config", "core.autocrlf", value], check=True)
        assert autocrlf_note(tmp_path) == note
