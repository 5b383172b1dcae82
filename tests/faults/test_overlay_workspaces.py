"""isolation/overlay.py: sandboxed trials see the snapshot through an overlay, never a shared copy.

The reviewer writes, deletes and tries to remount inside its workspace; the next trial must see
the pristine tree, the snapshot must stay out of reach, and no mount may outlive the trial.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rubricgate.isolation.overlay import Overlay, layer_folders, probe_overlay
from rubricgate.isolation.netaccess import NetworkAccess
from rubricgate.isolation.sandbox import SandboxPolicy, probe_layers, wrap
from rubricgate.pipeline import RunOptions, run_suite
from tests.faults.test_sandbox_attacks import repo_for

# Seen at the start of each trial, then the workspace is vandalised.
VANDAL = r'''
import glob, subprocess
cwd = os.getcwd()
mounts = open("/proc/self/mountinfo").read().splitlines()
seen = {
    "planted_before": os.path.exists("planted.txt"),
    "rubric_before": os.path.exists("reviewer/evaluator/references/rubric.md"),
    "overlay_cwd": any(f" {cwd} " in m and " overlay " in m for m in mounts),
    "snapshots_visible": glob.glob("/tmp/rg-*/base") + glob.glob("/dev/shm/rg-*/base"),
}
Path("planted.txt").write_text("left by an earlier trial")
os.remove("reviewer/evaluator/references/rubric.md")
seen["remount"] = subprocess.run(["mount", "-t", "tmpfs", "none", cwd], capture_output=True).returncode
seen["umount"] = subprocess.run(["umount", "-l", cwd], capture_output=True).returncode
note = "SEEN:" + json.dumps(seen) + ":SEEN"
'''


def _seen(run_dir: Path) -> list[dict]:
    finals = [json.loads(p.read_text())["final_text"] for p in sorted((run_dir / "transcripts").glob("*.json"))]
    return [json.loads(t.split("SEEN:")[1].split(":SEEN")[0]) for t in finals]


# -- failure paths first ------------------------------------------------------------------------

def test_a_temp_folder_an_overlay_cannot_name_falls_back_to_copies(tmp_path: Path) -> None:
    odd = tmp_path / "a:b"
    odd.mkdir()
    assert "cannot name" in probe_overlay(odd)


def test_without_unshare_the_probe_says_so(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "unshare" in probe_overlay()


def test_the_option_string_names_every_layer_top_first(tmp_path: Path) -> None:
    case, upper, work, target = layer_folders(tmp_path / "t", tmp_path / "t" / "repo")
    overlay = Overlay((case, tmp_path / "base"), upper, work, target)
    assert overlay.options() == f"lowerdir={case}:{tmp_path / 'base'},upperdir={upper},workdir={work}"
    assert overlay.prefix()[-2:] == [overlay.options(), str(target)]


def test_bwraps_own_overlay_names_the_layers_bottom_first(tmp_path: Path) -> None:
    case, upper, work, target = layer_folders(tmp_path / "t", tmp_path / "t" / "repo")
    base, dest = tmp_path / "base", Path("/work/repo")
    assert Overlay((case, base), upper, work, target).bwrap_args(dest) == [
        "--overlay-src", str(base), "--overlay-src", str(case), "--overlay", str(upper), str(work), str(dest)]


def test_each_mount_has_its_own_argv(tmp_path: Path) -> None:
    """bwrap's own overlay: bwrap alone, the overlay on the agent's cwd; unshare's: the chain, its
    mount shown at the cwd; a copy: the cwd itself. The other writable folders after them."""
    overlay = Overlay((tmp_path / "case", tmp_path / "base"), tmp_path / "up", tmp_path / "wk", tmp_path / "m")
    cwd = tmp_path / "view" / "repo"
    for by in ("bwrap", "unshare"):
        policy = SandboxPolicy("bwrap", layers=True, layers_by=by, overlay=overlay, network=NetworkAccess("none"))
        argv, payload = wrap(policy, ["/bin/true"], cwd=cwd, env={}, writable=[tmp_path / "out"])
        args = payload.decode().split("\0")
        binds = [args[i + 1:i + 3] for i, a in enumerate(args) if a == "--bind"]
        if by == "bwrap":
            assert Path(argv[0]).name == "bwrap" and policy.bwrap_mounts_overlay  # by its absolute path
            at = args.index("--overlay")
            assert args[at - 4:at + 4] == overlay.bwrap_args(cwd)
            assert binds == [[str(tmp_path / "out")] * 2]  # nothing bound over the overlay
        else:
            at_bwrap = next(i for i, a in enumerate(argv) if Path(a).name == "bwrap")
            assert Path(argv[0]).name == "unshare" and argv[at_bwrap - 1] == str(overlay.target)
            assert "--overlay" not in args and not policy.bwrap_mounts_overlay
            assert binds == [[str(overlay.target), str(cwd)], [str(tmp_path / "out")] * 2]
        assert "--unshare-user" in args
    _, payload = wrap(SandboxPolicy("bwrap", network=NetworkAccess("none")), ["/bin/true"], cwd=cwd, env={})
    args = payload.decode().split("\0")
    assert [args[i + 1:i + 3] for i, a in enumerate(args) if a == "--bind"] == [[str(cwd)] * 2]  # a copy


@pytest.mark.usefixtures("bwrap_ready")
def test_a_bwrap_without_overlay_leaves_the_mount_to_unshare(tmp_path: Path) -> None:
    old = tmp_path / "bwrap"  # what bubblewrap 0.8 says to --overlay-src
    old.write_text("#!/bin/sh\necho 'bwrap: Unknown option --overlay-src' >&2\nexit 1\n")
    old.chmod(0o755)
    assert probe_layers(bwrap=str(old)) == ("unshare", "")


# -- in the sandbox -----------------------------------------------------------------------------

@pytest.mark.usefixtures("bwrap_ready")
def test_the_overlay_mounts_here() -> None:
    assert probe_overlay() == ""


def test_every_trial_sees_a_pristine_tree_whatever_the_last_one_did(tmp_path: Path, overlay_mount: str) -> None:
    repo = repo_for(tmp_path, VANDAL)
    mounts_before = Path("/proc/self/mountinfo").read_text()
    out = run_suite(RunOptions(repo=repo, trials=2))
    seen = _seen(out.run_dir)
    assert out.exit_code == 0 and out.summary.isolation == "bwrap" and len(seen) == 4
    for trial in seen:
        assert trial["overlay_cwd"], trial  # no copy: the workspace is the overlay
        assert not trial["planted_before"] and trial["rubric_before"], trial
        assert trial["snapshots_visible"] == [], trial  # the lower layer is out of reach
        assert trial["remount"] != 0 and trial["umount"] != 0, trial  # no capability to remount
    assert Path("/proc/self/mountinfo").read_text() == mounts_before
    started = json.loads((out.run_dir / "events.jsonl").read_text().splitlines()[0])
    assert started["workspaces"] == f"overlay (mounted by {overlay_mount})"


@pytest.mark.usefixtures("bwrap_ready")
def test_keep_workspaces_keeps_full_copies(tmp_path: Path) -> None:
    repo = repo_for(tmp_path, VANDAL)
    out = run_suite(RunOptions(repo=repo, keep_workspaces=True))
    started = json.loads((out.run_dir / "events.jsonl").read_text().splitlines()[0])
    assert started["workspaces"].startswith("copy")
    try:
        assert all(not trial["overlay_cwd"] for trial in _seen(out.run_dir))
        kept = [p for p in out.workspaces.rglob("planted.txt")]
        assert kept and all((p.parent / "reviewer").is_dir() for p in kept)  # the whole tree is there
    finally:
        shutil.rmtree(out.workspaces)
