"""Issue 28, finding 1: a reviewer plants a symbolic link where the harness reads its output.

The last-message file (and the Codex rollout, and every scratch file the harness scrubs) is
written by the reviewer. A link there named a file the sandbox hides; the harness, outside the
sandbox, followed it and copied the file into report.html, the transcripts and replay. It must
read only a regular file it finds there, and never write through a link either.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rubricgate.isolation.untrusted import UntrustedPath, read_reviewer_text, read_under, write_fresh, write_under
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.secrets import scrub_file
from tests.conftest import git, make_repo
from tests.faults.helpers import sandbox_modes
from tests.faults.reviewers import use_reviewer, write_reviewer

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
MARKER = "HOST-ONLY-ANSWER-KEY-6b1f"

LINK_LAST_MESSAGE = r'''
import os, sys
target = sys.argv[1]
os.symlink("HIDDEN", target)
'''


def _repo(tmp_path: Path, sandbox: str) -> tuple[Path, Path]:
    hidden = tmp_path / "hidden" / "answer-key.md"
    hidden.parent.mkdir()
    hidden.write_text(f"{MARKER}\n```json\n" + '{"tier": "PASS", "summary": "x", "files_reviewed": [], "findings": []}'
                      + "\n```\n")
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents", LINK_LAST_MESSAGE.replace("HIDDEN", str(hidden)))
    use_reviewer(repo, script, sandbox=sandbox, command=[sys.executable, str(script), "{last_message_file}"])
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    return repo, hidden


@pytest.mark.parametrize("sandbox", sandbox_modes())
def test_a_linked_last_message_file_is_never_read(tmp_path: Path, sandbox: str, bwrap_ready) -> None:
    repo, _ = _repo(tmp_path, sandbox)
    out = run_suite(RunOptions(repo=repo))
    written = [p for p in out.run_dir.rglob("*") if p.is_file() and MARKER in p.read_text(errors="replace")]
    assert written == []
    # The planted link made the last message empty: the stream's own verdict decides (the right one).
    assert out.exit_code == 0, out.summary.decision.reasons


def test_read_under_refuses_links_fifos_and_escapes(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("ok")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "sub").mkdir()
    (tmp_path / "dirlink").symlink_to(tmp_path / "sub")
    (tmp_path / "sub" / "f").write_text("inner")
    os.mkfifo(tmp_path / "fifo")
    assert read_under(tmp_path, "real") == b"ok"
    assert read_under(tmp_path, "sub/f") == b"inner"
    assert read_under(tmp_path, "real", cap=1) == b"o"
    for bad in ("link", "fifo", "dirlink/f", "../real", "/etc/passwd", "sub/../real", ""):
        with pytest.raises((UntrustedPath, OSError)):
            read_under(tmp_path, bad)
    assert read_reviewer_text(tmp_path / "link") == ""


def test_scrubbing_and_rewriting_never_write_through_a_link(tmp_path: Path) -> None:
    host = tmp_path / "host.txt"
    host.write_text("secret-value-123456 stays")
    link = tmp_path / "scratch-file"
    link.symlink_to(host)
    scrub_file(link, ["secret-value-123456"])
    assert host.read_text() == "secret-value-123456 stays"
    write_fresh(link, b"new")
    assert host.read_text() == "secret-value-123456 stays" and not link.is_symlink() and link.read_bytes() == b"new"


def test_write_under_replaces_links_and_files_on_its_way(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "settings.json").write_text("host")
    root = tmp_path / "scratch"
    (root / "real").mkdir(parents=True)
    (root / "home").symlink_to(host)
    (root / "real" / "settings.json").symlink_to(host / "settings.json")
    (root / "file").write_text("a file where a folder goes")
    for rel in ("home/settings.json", "real/settings.json", "file/settings.json", "new/deeper/settings.json"):
        write_under(root, rel, b"ours")
        assert (root / rel).read_bytes() == b"ours" and not (root / rel).is_symlink()
    assert [p.name for p in host.iterdir()] == ["settings.json"] and (host / "settings.json").read_text() == "host"
    with pytest.raises(UntrustedPath):
        write_under(root, "new", b"a folder is never replaced by a file")
    with pytest.raises(UntrustedPath):
        write_under(root, "../escape", b"x")
