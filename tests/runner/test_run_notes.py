"""runner/run_notes.py: this user's run notes and marks across a copy-only run's retired cache folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.runner import cache
from rubricgate.runner.run_notes import read_notes, restore_notes

RUN_A, RUN_B = "20260101T000000Z-aaaaaa", "20260101T000001Z-bbbbbb"
MARK = b"continued by 20260101T000001Z-bbbbbb\n"


def _retired_after_reading(cache_dir: Path) -> tuple[dict[str, bytes], Path]:
    """Two run notes and a mark, read as a copy-only run's start reads them, then the folder
    retired as its end retires it (the reviewer's turn to tamper with `retired` comes between)."""
    cache.remember_run(cache_dir, RUN_A)
    cache.remember_run(cache_dir, RUN_B)
    (cache_dir / cache.MARKS_DIR).mkdir(mode=0o700)
    (cache_dir / cache.MARKS_DIR / "m1").write_bytes(MARK)
    notes = read_notes(cache_dir)
    retired = cache.retire_cache(cache_dir)
    assert retired is not None
    return notes, retired


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("tamper", [
    lambda r: (r / cache.RUNS_DIR / "20990101T000000Z-planted").touch(),  # a note of a run never started here
    lambda r: (r / cache.MARKS_DIR / "m1").write_bytes(MARK.upper()),  # a mark rewritten, same size
    lambda r: os.link(r / cache.MARKS_DIR / "m1", r / "elsewhere"),  # a second name: written through later
    lambda r: (r / cache.RUNS_DIR).chmod(0o777),  # open to every user
], ids=["planted", "rewritten", "hard-linked", "opened-up"])
def test_a_notes_folder_the_reviewer_touched_is_written_afresh_with_what_was_read(tmp_path: Path, tamper) -> None:
    cache_dir = tmp_path / "cache"
    notes, retired = _retired_after_reading(cache_dir)
    tamper(retired)
    restore_notes(cache_dir, notes, retired)
    assert _listing(cache_dir / cache.RUNS_DIR) == {RUN_A: b"", RUN_B: b""}
    assert _listing(cache_dir / cache.MARKS_DIR) == {"m1": MARK}
    for note in (*(cache_dir / cache.RUNS_DIR).iterdir(), *(cache_dir / cache.MARKS_DIR).iterdir()):
        info = os.lstat(note)
        assert info.st_nlink == 1 and not info.st_mode & 0o022  # files of ours alone
    assert not (cache_dir / cache.RUNS_DIR).stat().st_mode & 0o077


def test_a_note_made_a_link_is_neither_followed_nor_kept_as_a_link(tmp_path: Path) -> None:
    cache_dir, target = tmp_path / "cache", tmp_path / "target"
    target.write_bytes(b"")
    notes, retired = _retired_after_reading(cache_dir)
    (retired / cache.RUNS_DIR / RUN_A).unlink()
    (retired / cache.RUNS_DIR / RUN_A).symlink_to(target)
    restore_notes(cache_dir, notes, retired)
    assert not (cache_dir / cache.RUNS_DIR / RUN_A).is_symlink() and (cache_dir / cache.RUNS_DIR / RUN_A).is_file()
    assert target.read_bytes() == b""


def test_notes_folders_holding_what_was_read_go_back_whole(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    notes, retired = _retired_after_reading(cache_dir)
    folders = {name: os.stat(retired / name).st_ino for name in (cache.RUNS_DIR, cache.MARKS_DIR)}
    restore_notes(cache_dir, notes, retired)
    assert {name: os.stat(cache_dir / name).st_ino for name in folders} == folders  # renamed, not rewritten
    assert _listing(cache_dir / cache.RUNS_DIR) == {RUN_A: b"", RUN_B: b""}
    assert _listing(cache_dir / cache.MARKS_DIR) == {"m1": MARK}


def test_a_notes_folder_that_gained_other_notes_goes_back_whole_without_them(tmp_path: Path) -> None:
    """Another run of this user's noted itself (or the reviewer planted a note, or a folder)
    while this one ran: the folder still goes back by a rename, without what it gained. Written
    afresh instead, every note this user ever made was created again (0.2 s of CPU at 5,000)."""
    cache_dir = tmp_path / "cache"
    notes, retired = _retired_after_reading(cache_dir)
    (retired / cache.RUNS_DIR / "20990101T000000Z-other").touch()
    (retired / cache.RUNS_DIR / "20990101T000001Z-link").symlink_to(tmp_path / "target")
    folder = os.stat(retired / cache.RUNS_DIR).st_ino
    restore_notes(cache_dir, notes, retired)
    assert os.stat(cache_dir / cache.RUNS_DIR).st_ino == folder  # renamed, not rewritten
    assert _listing(cache_dir / cache.RUNS_DIR) == {RUN_A: b"", RUN_B: b""}
    assert not (tmp_path / "target").exists()


def test_a_notes_folder_that_gained_a_folder_is_written_afresh(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    notes, retired = _retired_after_reading(cache_dir)
    (retired / cache.RUNS_DIR / "20990101T000000Z-folder").mkdir()
    folder = os.stat(retired / cache.RUNS_DIR).st_ino
    restore_notes(cache_dir, notes, retired)
    assert os.stat(cache_dir / cache.RUNS_DIR).st_ino != folder
    assert _listing(cache_dir / cache.RUNS_DIR) == {RUN_A: b"", RUN_B: b""}


def test_a_copy_only_run_moves_the_notes_back_with_its_own_and_rewrites_none(repo: Path) -> None:
    """Each copy-only run wrote every note this user ever made afresh (one a run, never pruned):
    2,800 notes were 0.4-1.8 s of CPU at its end, the next run's start freeing as many inodes."""
    from tests.fake_reviewer import install

    install(repo, ["answer"])  # copy-only
    cache_dir = cache.default_cache_dir()
    for i in range(50):
        cache.remember_run(cache_dir, f"20260101T0000{i:02}Z-aaaaaa")
    runs = os.stat(cache_dir / cache.RUNS_DIR).st_ino
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert "the cache folder was cleared" in result.output, result.output
    assert os.stat(cache_dir / cache.RUNS_DIR).st_ino == runs
    names = {p.name for p in (cache_dir / cache.RUNS_DIR).iterdir()}
    run_id = next(p.name for p in (repo / "reports").iterdir() if p.is_dir())
    assert names == {f"20260101T0000{i:02}Z-aaaaaa" for i in range(50)} | {run_id}


def test_notes_vanishing_while_read_are_left_out_not_an_internal_error(tmp_path: Path, monkeypatch) -> None:
    # A second copy-only run of the same user retires the cache folder (rename) at any moment: a
    # note listed before that and gone when it is looked at is simply not kept.
    cache.remember_run(tmp_path, RUN_A)
    cache.remember_run(tmp_path, RUN_B)
    listed = os.scandir

    def listed_then_retired(path):
        entries = list(listed(path))
        (tmp_path / cache.RUNS_DIR / RUN_A).unlink()
        return iter(entries)

    monkeypatch.setattr(os, "scandir", listed_then_retired)
    assert read_notes(tmp_path) == {f"{cache.RUNS_DIR}/{RUN_B}": b""}


def test_a_link_standing_at_a_note_in_the_fresh_folder_is_replaced_not_written_through(tmp_path: Path) -> None:
    cache_dir, target = tmp_path / "cache", tmp_path / "target"
    target.write_bytes(b"keep")
    notes, retired = _retired_after_reading(cache_dir)
    (cache_dir / cache.RUNS_DIR).mkdir(parents=True)  # made meanwhile by another run: no rename over it
    (cache_dir / cache.RUNS_DIR / "20990101T000000Z-other").touch()
    (cache_dir / cache.RUNS_DIR / RUN_A).symlink_to(target)
    restore_notes(cache_dir, notes, retired)
    assert not (cache_dir / cache.RUNS_DIR / RUN_A).is_symlink() and target.read_bytes() == b"keep"
    assert {p.name for p in (cache_dir / cache.RUNS_DIR).iterdir()} == {RUN_A, RUN_B, "20990101T000000Z-other"}


def test_compiled_templates_planted_or_rewritten_during_the_run_are_not_carried_over(tmp_path: Path) -> None:
    """report.html's compiled templates are code the next sandboxed run's harness executes: only
    what the folder held before the first agent goes back."""
    cache_dir = tmp_path / "cache"
    (cache_dir / cache.TEMPLATES).mkdir(parents=True, mode=0o700)
    (cache_dir / cache.TEMPLATES / "__jinja2_page.cache").write_bytes(b"compiled page")
    notes, retired = _retired_after_reading(cache_dir)
    (retired / cache.TEMPLATES / "__jinja2_page.cache").write_bytes(b"planted page!")
    (retired / cache.TEMPLATES / "__jinja2_parts.cache").write_bytes(b"planted parts")
    restore_notes(cache_dir, notes, retired)
    assert _listing(cache_dir / cache.TEMPLATES) == {"__jinja2_page.cache": b"compiled page"}


def test_a_copy_only_run_after_another_compiles_no_report_page(repo: Path, monkeypatch) -> None:
    """Its report page was compiled after its cache folder was retired, so every copy-only run
    compiled it afresh (47-61 ms of CPU): the next finds it compiled."""
    import jinja2

    from rubricgate.reports import html
    from tests.fake_reviewer import install

    install(repo, ["answer"])  # copy-only
    html._environment.cache_clear()  # each run a new process: nothing compiled in memory, this test's cache
    assert "the cache folder was cleared" in CliRunner().invoke(main, ["run", "--repo", str(repo)]).output
    html._environment.cache_clear()
    compiled: list[str | None] = []
    real = jinja2.Environment.compile

    def counted(self, source, name=None, *args, **kwargs):
        compiled.append(name)
        return real(self, source, name, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert "the cache folder was cleared" in result.output, result.output
    assert "report.html.j2" not in compiled
