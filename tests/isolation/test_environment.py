"""Agent environment: allowlist only, throwaway HOME, secrets scrubbed from outputs."""

from __future__ import annotations

from pathlib import Path

from rubricgate.models.transcript import Transcript
from rubricgate.isolation.environment import (REDACTED, build_env, isolated_env, scrub, scrub_file,
                                           scrub_model, secret_values)


def test_build_env_passes_only_allowlist_and_secrets() -> None:
    src = {"PATH": "/bin", "AWS_SECRET": "x", "ANTHROPIC_API_KEY": "sk-123456789", "HOME": "/root"}
    assert build_env(["PATH"], ["ANTHROPIC_API_KEY"], src) == {"PATH": "/bin", "ANTHROPIC_API_KEY": "sk-123456789"}


def test_short_secret_values_are_not_scrubbed() -> None:
    assert secret_values({"A": "abc", "B": "long-secret-value"}, ["A", "B", "C"]) == ["long-secret-value"]


def test_isolated_env_creates_throwaway_dirs(tmp_path: Path) -> None:
    env = isolated_env({"PATH": "/bin", "HOME": "/root"}, tmp_path / "home")
    assert env["HOME"] == str(tmp_path / "home") and env["PATH"] == "/bin"
    for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "TMPDIR"):
        assert Path(env[key]).is_dir() and env[key].startswith(str(tmp_path / "home"))


def test_a_throwaway_dir_left_a_link_is_replaced_not_made_through(tmp_path: Path) -> None:
    """A retry runs in the same HOME: `.local -> outside` left by the failed attempt had the
    harness make outside/share and outside/state."""
    outside, home = tmp_path / "outside", tmp_path / "scratch" / "home"
    outside.mkdir()
    home.mkdir(parents=True)
    (home / ".local").symlink_to(outside)
    (home / "tmp").symlink_to(outside)
    env = isolated_env({}, home)
    assert list(outside.iterdir()) == []
    assert not (home / ".local").is_symlink() and Path(env["XDG_DATA_HOME"]).is_dir()
    assert not (home / "tmp").is_symlink() and Path(env["TMPDIR"]).is_dir()


def test_a_home_left_a_link_and_a_file_where_a_folder_goes_are_replaced(tmp_path: Path) -> None:
    """The folders are made in one walk from HOME's folder (each shared folder entered once):
    HOME itself a link, `.cache` a file and `.local/share` a link are each replaced, never followed."""
    outside, scratch = tmp_path / "outside", tmp_path / "scratch"
    (outside / "x").mkdir(parents=True)
    scratch.mkdir()
    (scratch / "home").symlink_to(outside)
    env = isolated_env({}, scratch / "home")
    assert sorted(p.name for p in outside.iterdir()) == ["x"]
    home = scratch / "home"
    assert not home.is_symlink() and home.is_dir()
    (home / ".cache").rmdir()
    (home / ".cache").write_text("left by the reviewer")
    (home / ".local" / "share").rmdir()
    (home / ".local" / "share").symlink_to(outside)
    env = isolated_env({}, home)
    assert sorted(p.name for p in outside.iterdir()) == ["x"]
    for key in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "TMPDIR"):
        assert Path(env[key]).is_dir() and not Path(env[key]).is_symlink()


def test_scrub_file_and_model(tmp_path: Path) -> None:
    secret = 'sk-"quoted"\\value'
    f = tmp_path / "s.ndjson"
    f.write_text(f'{{"t": "key {secret}"}}\n')
    scrub_file(f, [secret])
    assert secret not in f.read_text() and REDACTED in f.read_text()
    t = scrub_model(Transcript(agent="a", final_text=f"the key is {secret}!", error=secret), [secret])
    assert t.final_text == f"the key is {REDACTED}!" and t.error == REDACTED
    assert scrub(f"x{secret}y", [secret]) == f"x{REDACTED}y"


def test_secret_is_scrubbed_inside_json_escapes_everywhere(tmp_path):
    import json
    secret = 'p@ss"wörd\\123'
    as_json = json.dumps({"k": f"x {secret} y"})  # quotes, backslash and non-ASCII escaped
    assert "REDACTED" in scrub(as_json, [secret]) and "123" not in scrub(as_json, [secret])
    f = tmp_path / "stream.ndjson"
    f.write_bytes(as_json.encode() + b"\n\xff tail " + secret.encode() + b"\n")
    scrub_file(f, [secret])
    assert b"123" not in f.read_bytes() and f.read_bytes().endswith(b"[REDACTED]\n")
    t = scrub_model(Transcript(agent="a", final_text=f"key {secret}"), [secret])
    assert t.final_text == "key [REDACTED]"
