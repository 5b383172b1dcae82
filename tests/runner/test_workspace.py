"""Trial folders are removed off the job slot's thread, all of them before the run's end."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rubricgate.runner import workspace
from rubricgate.runner.workspace import RunTree


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "a.md").write_text("a")
    return repo


def test_every_trial_folder_is_gone_when_the_run_tree_is_removed(tmp_path: Path) -> None:
    tree = RunTree(_repo(tmp_path), ["docs/a.md"], [])
    folders = []
    for _ in range(20):
        ws = tree.workspace({}, {}, ("changed.txt", []))
        (ws.root / "docs" / "written-by-agent.md").write_text("x")
        folders.extend(ws.folders)
        ws.remove()
    tree.remove()
    assert not tree.root.exists()
    assert not any(f.exists() for f in folders)


def test_kept_workspaces_are_not_queued_for_removal(tmp_path: Path) -> None:
    tree = RunTree(_repo(tmp_path), ["docs/a.md"], [])
    ws = tree.workspace({}, {}, ("changed.txt", []), keep=True)
    ws.remove()
    tree.remove(keep_trials=True)
    assert (ws.root / "docs" / "a.md").read_text() == "a"
    assert not (tree.root / "base").exists()


def test_kept_workspaces_keep_no_staged_etc_beside_them(tmp_path: Path) -> None:
    # One temp folder for both sides (TMPDIR set): the run's staged /etc is no trial's copy.
    from rubricgate.isolation.etc_folder import stage_etc

    tree = RunTree(_repo(tmp_path), ["docs/a.md"], [])
    assert tree.store == tree.root and stage_etc(tree.staging)
    ws = tree.workspace({}, {}, ("changed.txt", []), keep=True)
    ws.remove()
    tree.remove(keep_trials=True)
    assert ws.root.exists() and not tree.staging.exists()


def test_kept_workspaces_leave_nothing_on_the_private_side(tmp_path: Path) -> None:
    """--keep-workspaces keeps the copies it names (the shown side); the private side (in
    /dev/shm: memory until reboot) held the snapshot and each trial's raw stream, already parsed
    into the run's transcripts, and goes whole."""
    from rubricgate.isolation.scratch import Scratch

    (tmp_path / "shown").mkdir()
    (tmp_path / "private").mkdir()
    scratch = Scratch(shown=tmp_path / "shown", private=tmp_path / "private", reason="tmpfs")
    tree = RunTree(_repo(tmp_path), ["docs/a.md"], [], scratch=scratch)
    ws = tree.workspace({}, {}, ("changed.txt", []), keep=True)
    (ws.private / "stream.ndjson").write_text("{}\n")
    ws.remove()
    tree.remove(keep_trials=True)
    assert (ws.root / "docs" / "a.md").read_text() == "a"
    assert list((tmp_path / "private").iterdir()) == []


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


class _Listed:
    """A listing already made: these names, as git would have given them."""

    def __init__(self, names: list[str]) -> None:
        self._names = names

    def names(self) -> list[str]:
        return self._names


def test_a_listing_started_early_is_what_git_lists_then_filtered(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / ".gitignore").write_text("ignored.txt\n")
    (repo / "ignored.txt").write_text("x")
    (repo / "evals").mkdir()
    (repo / "evals" / "t1.yaml").write_text("id: t1")
    _git(repo, "init", "-q")
    _git(repo, "add", "docs/a.md")  # tracked; .gitignore and evals/ untracked, ignored.txt ignored
    listing = workspace.GitListing(repo)
    assert listing.names() == [".gitignore", "docs/a.md", "evals/t1.yaml"]
    assert workspace.list_tree(repo, {"evals"}, listing) == [".gitignore", "docs/a.md"]


def test_outside_a_repository_the_listing_is_none_and_the_tree_is_walked(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "m.pyc").write_bytes(b"")
    listing = workspace.GitListing(repo)
    assert listing.names() is None
    assert workspace.list_tree(repo, listing=listing) == ["docs/a.md"]


def test_only_files_inside_the_repository_are_listed_once_symlinks_are_followed(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("s")
    (outside / "dir" / "x.md").write_text("x")
    (repo / "link-in.md").symlink_to(repo / "docs" / "a.md")  # kept: a file inside
    (repo / "link-out.txt").symlink_to(outside / "secret.txt")  # dropped: points outside
    (repo / "dir-out").symlink_to(outside / "dir")  # a folder outside: nothing under it is kept
    (repo / "dangling.md").symlink_to(repo / "gone.md")
    (repo / "docs" / "sub").mkdir()
    (repo / "docs" / "sub" / "b.md").write_text("b")
    listed = _Listed(["dangling.md", "deleted.md", "dir-out/x.md", "docs", "docs/a.md", "docs/sub/b.md",
                      "link-in.md", "link-out.txt"])
    assert workspace.list_tree(repo, listing=listed) == ["docs/a.md", "docs/sub/b.md", "link-in.md"]
    # The same when the repository is named through a symlink of its own.
    (tmp_path / "alias").symlink_to(repo)
    assert workspace.list_tree(tmp_path / "alias", listing=listed) == ["docs/a.md", "docs/sub/b.md", "link-in.md"]


def test_a_link_to_an_excluded_file_is_left_out_of_the_snapshot(tmp_path: Path) -> None:
    # `docs/key.json -> ../baseline.json` copied the baseline (the answer key) into every workspace.
    repo = _repo(tmp_path)
    (repo / "baseline.json").write_text("{}")
    (repo / "fixtures" / "block" / "x").mkdir(parents=True)
    (repo / "fixtures" / "block" / "x" / "expect.yaml").write_text("tier: BLOCK\n")
    (repo / "docs" / "key.json").symlink_to("../baseline.json")
    (repo / "docs" / "tier.yaml").symlink_to("../fixtures/block/x/expect.yaml")
    (repo / "docs" / "again.md").symlink_to("a.md")  # a shown file by another name: kept
    listed = _Listed(["baseline.json", "docs/a.md", "docs/again.md", "docs/key.json", "docs/tier.yaml",
                      "fixtures/block/x/expect.yaml"])
    assert workspace.list_tree(repo, {"baseline.json", "fixtures"}, listing=listed) == ["docs/a.md", "docs/again.md"]


@pytest.mark.parametrize("cp", ["gnu", "missing", "failing"])
def test_the_snapshot_holds_the_listed_files_with_their_modes_and_links_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cp: str) -> None:
    repo = _repo(tmp_path)
    (repo / "bin").mkdir()
    (repo / "bin" / "tool.sh").write_text("#!/bin/sh\n")
    (repo / "bin" / "tool.sh").chmod(0o755)
    (repo / "docs" / "odd name\nwith newline.md").write_text("odd")
    (repo / "-dash.md").write_text("dash")
    (repo / "link.md").symlink_to(repo / "docs" / "a.md")
    (repo / "left-out.md").write_text("not listed")
    if cp == "missing":
        monkeypatch.setattr(workspace, "CP_PARENTS", ["rg-no-such-program"])
    elif cp == "failing":
        monkeypatch.setattr(workspace, "CP_PARENTS", ["false"])
    files = ["-dash.md", "bin/tool.sh", "docs/a.md", "docs/odd name\nwith newline.md", "link.md"]
    dest = tmp_path / "snapshot"
    workspace._copy_files(repo, dest, files)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert copied == sorted(files)
    assert (dest / "bin" / "tool.sh").stat().st_mode & 0o777 == 0o755
    assert not (dest / "link.md").is_symlink() and (dest / "link.md").read_text() == "a"
    assert (dest / "docs" / "a.md").stat().st_mtime_ns == (repo / "docs" / "a.md").stat().st_mtime_ns


def test_a_file_gone_since_it_was_listed_is_an_error_not_a_silent_gap(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    with pytest.raises(FileNotFoundError):
        workspace._copy_files(repo, tmp_path / "snapshot", ["docs/a.md", "docs/gone.md"])


def test_the_listing_sums_what_the_snapshot_will_hold(tmp_path: Path) -> None:
    """isolation/scratch.py decides where the snapshot goes by this size: the listed files only,
    a linked file by its target, nothing for a file gone since it was listed or left out."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a").write_bytes(b"x" * 10)
    (repo / "b").write_bytes(b"y" * 5)
    (repo / "big-excluded").write_bytes(b"z" * 1000)
    (repo / "link").symlink_to(repo / "a")
    files, size = workspace.list_tree_sized(repo, {"big-excluded"}, _Listed(["a", "b", "big-excluded", "gone", "link"]))
    assert files == ["a", "b", "link"] and size == 25


def test_a_snapshot_that_cannot_be_copied_leaves_nothing_behind(tmp_path: Path) -> None:
    from rubricgate.isolation.scratch import Scratch

    repo = _repo(tmp_path)
    shown, private = tmp_path / "shown", tmp_path / "private"
    shown.mkdir()
    private.mkdir()
    with pytest.raises(FileNotFoundError):
        RunTree(repo, ["docs/a.md", "docs/gone.md"], [], scratch=Scratch(shown, private, "tmpfs"))
    assert list(shown.iterdir()) == [] and list(private.iterdir()) == []


def test_an_in_process_reviewer_reads_its_layers_and_nothing_is_copied(tmp_path: Path) -> None:
    tree = RunTree(_repo(tmp_path), ["docs/a.md"], [])
    ws = tree.workspace({"skills/x/SKILL.md": "case"}, {}, ("changed.txt", ["skills/x/SKILL.md"]),
                        read_in_process=True)
    try:
        assert not ws.root.exists() and not any(ws.folders[0].rglob("a.md"))  # no copy of the snapshot
        assert ws.source("skills/x/SKILL.md").read_text() == "case" and ws.source("docs/a.md").read_text() == "a"
        assert ws.source("changed.txt").read_text() == "skills/x/SKILL.md\n" and ws.scratch_view is None
    finally:
        tree.remove()


@pytest.mark.parametrize("keep", [False, True])
def test_a_builtin_run_copies_the_snapshot_only_for_workspaces_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    keep: bool) -> None:
    from rubricgate.pipeline import RunOptions, run_suite
    from tests.conftest import make_repo

    copies: list[Path] = []
    clone = workspace.clone_tree
    monkeypatch.setattr(workspace, "clone_tree", lambda src, dest: (copies.append(dest), clone(src, dest)))
    outcome = run_suite(RunOptions(repo=make_repo(tmp_path / "repo"), keep_workspaces=keep))
    assert outcome.exit_code == 0
    assert len(copies) == (2 if keep else 0)


@pytest.mark.parametrize("mode", [{}, {"layered": True}, {"read_in_process": True}])
def test_the_files_a_case_removes_are_in_no_workspace_of_it(tmp_path: Path, mode: dict) -> None:
    # A recorded change that deleted app/old.py: the workspace (the current checkout) still held
    # it, in every kind of workspace, so the reviewer read the change's head with the file there.
    repo = _repo(tmp_path)
    (repo / "app").mkdir()
    (repo / "app" / "old.py").write_text("gone")
    (repo / "app" / "kept.py").write_text("kept")
    tree = RunTree(repo, ["docs/a.md", "app/old.py", "app/kept.py"], [])
    ws = tree.workspace({"changes/x.diff": "patch"}, {}, ("changed.txt", ["changes/x.diff"]),
                        removed=["app/old.py", "app/never-there.py"], **mode)
    try:
        assert ws.overlay is None and not ws.layers  # a layer cannot take a file away: a copy, without it
        assert not (ws.root / "app" / "old.py").exists() and (ws.root / "app" / "kept.py").read_text() == "kept"
        assert (ws.root / "changes" / "x.diff").read_text() == "patch"
    finally:
        tree.remove()


@pytest.mark.parametrize("rel", ["../outside.txt", "/abs/outside.txt", "link/outside.txt"])
def test_a_removed_path_never_reaches_outside_the_workspace(tmp_path: Path, rel: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host file")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    workspace.remove_inside(root / ".." / "ws", [rel, rel.replace("outside.txt", "../outside.txt")])
    assert outside.read_text() == "host file"
