"""Issue 28, finding 14: copy-only is a choice, never a fallback, and it trusts nothing.

`agent.sandbox: auto` without a usable bubblewrap silently ran copy-only outside CI. Copy-only,
the reviewer could read the cache's signing key (and forge entries) and the harness's whole
environment (GITHUB_TOKEN), which reached the reports. Now `auto` fails with the fix; a
copy-only run uses no cache and scrubs the secret-looking values of the parent environment from
what it writes (tests/faults/test_scrub_grading.py: and nothing else), and each trial's HOME and
TMPDIR are fresh folders of its own, removed when it ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rubricgate.isolation.sandbox import SandboxUnavailable, resolve_isolation
from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.runner.cache import remove_retired, signing_key
from rubricgate.runner.run_notes import retire_unsafe_cache
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
TOKEN = "ghp_parentEnvToken0123456789abcdef"
# A secret under a name that does not say so (a webhook URL with its token): found by its shape.
PLAIN = "hooks.example.com/services/T0123ABCD/B0456EFGH/Xk9fQ2mZr7LpW4tNb8Vc1sHd"

READ_PARENT_ENV = r'''
import os
environ = open(f"/proc/{os.getppid()}/environ", "rb").read().split(b"\0")
token = next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"GITHUB_TOKEN="))
plain = next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"DEPLOY_HOOK="))
note = f"found {token} and {plain} in the harness's environment"
'''


@pytest.mark.parametrize("ci", ["", "true"])
def test_auto_without_bubblewrap_fails_with_the_fix(ci: str) -> None:
    with pytest.raises(SandboxUnavailable) as err:
        resolve_isolation("auto", env={"CI": ci}, probe=lambda: "bubblewrap (bwrap) is not installed")
    assert "agent.sandbox: none" in str(err.value) and "install bubblewrap" in str(err.value)
    assert resolve_isolation("none", probe=lambda: "missing") == ("copy-only", "agent.sandbox is none")


def test_copy_only_scrubs_the_parent_environment_and_uses_no_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents", READ_PARENT_ENV)
    use_reviewer(repo, script, sandbox="none")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    # A harness started with the token, as a CI job is (its /proc entry shows its start environment).
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "DEPLOY_HOOK": PLAIN, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "rubricgate", "run", "--repo", str(repo), "--cache",
                           "--cache-dir", str(cache)], env=env, capture_output=True, text=True, timeout=300)
    assert TOKEN[:12] not in done.stdout + done.stderr and PLAIN[-12:] not in done.stdout + done.stderr
    [run_dir] = list((repo / "reports").iterdir())
    finals = [json.loads(p.read_text())["final_text"] for p in (run_dir / "transcripts").glob("*.json")]
    assert finals and all("found [REDACTED] and [REDACTED]" in f for f in finals), finals  # the reviewer did read it
    written = [p for p in run_dir.rglob("*") if p.is_file()
               and any(part in p.read_text(errors="replace") for part in (TOKEN[:12], PLAIN[:12], PLAIN[-12:]))]
    assert written == []
    assert not any(p.is_file() and p.name != "hmac-key" for p in cache.rglob("*"))  # no entry to forge or reuse
    summary = json.loads((run_dir / "summary.json").read_text())
    assert "the cache was not used" in summary["decision"]["warnings"][0]


WRITE_HOME_AND_TMP = r'''
import tempfile
home, tmp = Path(os.environ["HOME"]), Path(os.environ["TMPDIR"])
seen = sorted(str(p) for p in (*home.glob("persist-*"), *tmp.glob("persist-*")))
(home / f"persist-{os.getpid()}").write_text("left behind")
(tmp / f"persist-{os.getpid()}").write_text("left behind")
(Path(tempfile.gettempdir()) / f"persist-py-{os.getpid()}").write_text("left behind")
with open(LOG, "a") as log:
    log.write(json.dumps({"home": str(home), "tmp": str(tmp), "py_tmp": tempfile.gettempdir(), "seen": seen}) + "\n")
'''


def test_copy_only_trials_get_a_private_home_and_tmpdir_removed_afterwards(tmp_path: Path) -> None:
    log = tmp_path / "writes.jsonl"
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents", f"LOG = {str(log)!r}\n" + WRITE_HOME_AND_TMP)
    use_reviewer(repo, script, sandbox="none")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    outcome = run_suite(RunOptions(repo=repo, trials=2))
    assert outcome.exit_code == 0 and outcome.summary.isolation == "copy-only"
    writes = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(writes) == 4  # two cases, two trials each
    homes = {w["home"] for w in writes}
    assert len(homes) == 4 and len({w["tmp"] for w in writes}) == 4  # one of each per trial
    real_home, shared_tmp = Path.home().resolve(), Path(tempfile.gettempdir()).resolve()
    for w in writes:
        assert w["seen"] == []  # no trial saw another's writes
        assert w["py_tmp"] == w["tmp"]  # programs that honour TMPDIR write into the trial's folder
        for folder in (Path(w["home"]).resolve(), Path(w["tmp"]).resolve()):
            assert folder not in (real_home, shared_tmp) and real_home not in folder.parents
            assert not folder.exists(), f"{folder} outlived its trial"


FORGE_WITH_THE_KEY = r'''
cache = Path(CACHE)
key = (cache / "hmac-key").read_text()
slot = cache / "ab"
slot.mkdir(exist_ok=True)
(slot / ("ab" + "0" * 62 + ".json")).write_text(json.dumps({"signed_with": key}))
note = "read the cache key and left an entry signed with it"
'''


def test_a_copy_only_run_throws_away_the_cache_its_reviewer_could_sign_for(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    signing_key(cache)  # a cache some earlier sandboxed run made
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents", f"CACHE = {str(cache)!r}\n" + FORGE_WITH_THE_KEY)
    use_reviewer(repo, script, sandbox="none")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    outcome = run_suite(RunOptions(repo=repo, cache_dir=cache))
    finals = [json.loads(p.read_text())["final_text"] for p in (outcome.run_dir / "transcripts").glob("*.json")]
    assert finals and all("left an entry signed with it" in f for f in finals), finals  # the forgery happened
    assert not os.path.lexists(cache)  # key and forged entry gone: the next --cache run starts a fresh key
    assert not list(tmp_path.glob(".cache-retired-*"))
    assert "cache folder was cleared" in outcome.summary.decision.warnings[0]


PLANT_RENDERS = r'''
for name in ("templates", "charts"):
    folder = Path(DEFAULT) / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "planted").write_text("code jinja2 would run, or SVG a page would inline")
note = "planted in the default cache's rendering folders"
'''


def test_a_copy_only_run_with_its_own_cache_folder_throws_away_the_default_ones_rendering_folders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    default = tmp_path / "xdg" / "rubricgate"  # where report.html's templates and charts are kept
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    script = write_reviewer(tmp_path / "agents", f"DEFAULT = {str(default)!r}\n" + PLANT_RENDERS)
    use_reviewer(repo, script, sandbox="none")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "reviewer")
    outcome = run_suite(RunOptions(repo=repo, cache_dir=tmp_path / "own-cache"))
    finals = [json.loads(p.read_text())["final_text"] for p in (outcome.run_dir / "transcripts").glob("*.json")]
    assert finals and all("planted in the default" in f for f in finals), finals  # the planting happened
    assert not list(default.glob("*/planted"))  # neither is there for a later run or the viewer to use
    assert not list(default.glob(".*-retired-*"))


def test_clearing_the_cache_moves_a_planted_link_and_never_follows_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the cache's")
    cache = tmp_path / "cache"
    cache.symlink_to(elsewhere)  # what a copy-only reviewer could leave in place of the cache folder
    said, retired = retire_unsafe_cache(cache)
    assert said.startswith("the cache folder was cleared")
    remove_retired(retired)
    assert not os.path.lexists(retired)  # the moved link itself is gone
    assert not os.path.lexists(cache) and (elsewhere / "keep.txt").read_text() == "not the cache's"


def test_a_cache_that_cannot_be_cleared_is_named_in_the_warning(tmp_path: Path) -> None:
    parent = tmp_path / "locked"
    (parent / "cache").mkdir(parents=True)
    parent.chmod(0o500)  # no rename inside it
    try:
        if os.access(parent, os.W_OK):
            pytest.skip("running as root: permissions do not stop the rename")
        said, _ = retire_unsafe_cache(parent / "cache")
    finally:
        parent.chmod(0o700)
    assert f"the cache folder {parent / 'cache'} could not be cleared" in said and "delete it" in said


# The first trial rewrites baseline.json in place: same size, its mtime put back (only the ctime,
# which user space cannot set back, shows the write); later trials find it already rewritten.
REWRITE_IN_PLACE = r'''
target = Path("REPO/baseline.json")
text = target.read_text()
if '"verdict": 1.0' in text:
    st = target.stat()
    target.write_text(text.replace('"verdict": 1.0', '"verdict": 0.0'))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    note = "rewrote the baseline"
'''


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_copy_only_trial_that_rewrites_the_repository_fails_itself(tmp_path: Path, jobs: int) -> None:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    assert '"verdict": 1.0' in (repo / "baseline.json").read_text()
    script = write_reviewer(tmp_path / "agents", REWRITE_IN_PLACE.replace("REPO", str(repo)))
    use_reviewer(repo, script, sandbox="none")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "reviewer")
    out = run_suite(RunOptions(repo=repo, jobs=jobs))
    assert out.exit_code == 2 and "baseline.json" in " ".join(out.summary.decision.reasons)
    trials = [t for case in out.summary.cases for t in case.trials]
    failed = [t for t in trials if any(g.reason.startswith("the original repository changed during this trial: "
                                                               "baseline.json") for g in t.grades.values())]
    assert failed and all(t.outcome == "ERROR" for t in failed)
    if jobs == 1:  # one agent at a time: the trial that wrote, and only it
        finals = {(t.case_id, t.trial): json.loads((out.run_dir / t.transcript).read_text())["final_text"]
                  for t in trials}
        assert [(t.case_id, t.trial) for t in failed] == [k for k, text in finals.items() if "rewrote" in text]
