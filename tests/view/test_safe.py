"""Reading below a folder: no `..`, no absolute path, no link anywhere on the way."""

from __future__ import annotations

import os

import pytest

from rubricgate.view import safe


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "ok.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "x.txt").write_text("outside too")
    os.symlink(tmp_path / "secret.txt", root / "sub" / "link.txt")
    os.symlink(tmp_path / "outdir", root / "linkdir")
    os.symlink("ok.txt", root / "sub" / "inner-link.txt")
    os.mkfifo(root / "fifo")
    return root


def test_reads_a_plain_file_below(tree):
    assert safe.read_text(tree, "sub/ok.txt") == "inside"


@pytest.mark.parametrize("rel", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "", "sub//ok.txt",
                                 "./sub/ok.txt", "sub\\ok.txt", "sub/ok.txt\x00"])
def test_refuses_paths_that_are_not_plain_and_below(tree, rel):
    with pytest.raises(safe.Refused):
        safe.read_text(tree, rel)


@pytest.mark.parametrize("rel", ["sub/link.txt", "linkdir/x.txt", "sub/inner-link.txt"])
def test_refuses_links_to_files_and_folders_even_inside(tree, rel):
    with pytest.raises(safe.Refused):
        safe.read_text(tree, rel)


def test_refuses_what_is_not_a_regular_file(tree):
    with pytest.raises(safe.Refused, match="not a regular file"):
        safe.read_text(tree, "fifo")
    with pytest.raises(safe.Refused):
        safe.read_text(tree, "sub")


def test_refuses_files_over_the_limit(tree):
    with pytest.raises(safe.Refused, match="larger than"):
        safe.read_bytes(tree, "sub/ok.txt", limit=3)


def test_stamp_is_none_for_links_and_absent_files(tree):
    assert safe.file_stamp(tree, "sub/link.txt") is None
    assert safe.file_stamp(tree, "nope") is None
    assert safe.file_stamp(tree, "sub/ok.txt").startswith("6:")


def test_refuses_a_folder_that_is_itself_a_link(tree, tmp_path):
    # A run folder found real and then swapped for a link while the viewer serves.
    os.symlink(tree, tmp_path / "linked-root")
    with pytest.raises(safe.Refused):
        safe.read_text(tmp_path / "linked-root", "sub/ok.txt")
    assert safe.file_stamp(tmp_path / "linked-root", "sub/ok.txt") is None
