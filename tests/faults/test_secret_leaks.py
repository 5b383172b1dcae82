"""Fault: a reviewer echoes a secret everywhere it can; no form of it survives in any written file.

Attacks: a secret at the end of a long stderr line (a 300-character error cut can keep 22 of
its 24 characters), a secret with `"`, `\\` and `é` inside the verdict JSON (it can survive
double-escaped), three levels of JSON escaping, and a lone surrogate in a tool input (which can
crash scrubbing, blank the transcript and hide a Bash call from the grader).
"""

from __future__ import annotations

import json

import pytest
import yaml

from rubricgate.pipeline import RunOptions, run_suite
from rubricgate.reports.terminal import render_terminal
from rubricgate.runner.cache import default_cache_dir
from tests.faults.helpers import ISOLATION, PASS, RIGHT_BLOCK, SECRET_VAR, fake_repo, leaks, sandbox_modes, tree_bytes

SECRET = 'é"\\Zq9-fault-K2mP7vL4nR8tW'
PLAN = {
    "weekly-revenue-summary": {**PASS, "secret_in": ["stderr_cut"]},
    "data-loader": {**RIGHT_BLOCK, "secret_in": ["verdict", "tool", "text", "text3"]},
    "forecast-notebook-runner": {**RIGHT_BLOCK, "secret_in": ["verdict"], "bash_surrogate": True},
}


@pytest.fixture(scope="module", params=sandbox_modes())
def outcome(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """One run per isolation mode, shared by the tests below: (repo, its files before, the
    outcome, the cache folder)."""
    root = tmp_path_factory.mktemp(f"secret-leaks-{request.param}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SECRET_VAR, SECRET)
        mp.setenv("XDG_CACHE_HOME", str(root / "xdg"))
        repo = fake_repo(root, PLAN, sandbox=request.param)
        before = tree_bytes(repo, skip=("reports",))
        done = run_suite(RunOptions(repo=repo, cache=True))
        return repo, before, done, default_cache_dir()


def _trial(summary, name: str):
    return next(t for c in summary.cases if name in c.id for t in c.trials)


def test_no_form_of_the_secret_is_in_any_written_file(outcome) -> None:
    _, _, done, cache_dir = outcome
    # Sandboxed, the cache was written and is scanned too; copy-only uses none (test_copy_only.py).
    assert any(cache_dir.rglob("*.json")) == (done.summary.isolation == "bwrap")
    found = leaks([done.run_dir, cache_dir], SECRET)
    assert found == []
    assert SECRET not in render_terminal(done.summary, str(done.run_dir))


def test_exit_code_and_the_original_tree_is_untouched(outcome) -> None:
    repo, before, done, _ = outcome
    # The stderr trial crashed (no verdict) and the Bash call is forbidden: a regression, not a pass.
    assert done.exit_code == 1
    assert tree_bytes(repo, skip=("reports",)) == before
    sandbox = yaml.safe_load((repo / "rubricgate.yaml").read_text())["agent"]["sandbox"]
    assert done.summary.isolation == ISOLATION[sandbox]  # the mode under test really ran


def test_error_cut_after_scrubbing_keeps_the_marker_not_the_secret(outcome) -> None:
    _, _, done, _ = outcome
    trial = _trial(done.summary, "weekly-revenue-summary")
    transcript = json.loads((done.run_dir / trial.transcript).read_text())
    assert transcript["termination"] == "crashed" and transcript["error"].startswith("exit 1: fatal: xxx")
    # The secret was replaced before the cut, so the cut lands inside the marker.
    left = transcript["error"].rsplit("x", 1)[1]
    assert left and left != "[REDACTED]" and "[REDACTED]".startswith(left)


def test_lone_surrogate_neither_blanks_the_transcript_nor_hides_the_bash_call(outcome) -> None:
    _, _, done, _ = outcome
    trial = _trial(done.summary, "forecast-notebook-runner")
    assert "bash" in trial.tool_calls and "read" in trial.tool_calls
    assert trial.grades["tool_use"].category == "forbidden_tool"
    transcript = json.loads((done.run_dir / trial.transcript).read_text())
    bash = [c for c in transcript["tool_calls"] if c["name"] == "bash"]
    # Read at the boundary as its backslash escape (rubricgate/boundary.py): text every writer can encode.
    assert bash and bash[0]["input"]["command"] == "cat /etc/hostname \\ud800"


def test_verdict_with_the_secret_inside_is_still_graded(outcome) -> None:
    _, _, done, _ = outcome
    trial = _trial(done.summary, "data-loader")
    assert trial.outcome == "BLOCK" and all(g.passed for g in trial.grades.values())


@pytest.mark.parametrize("sandbox", sandbox_modes())
def test_an_allowlisted_secret_looking_value_is_scrubbed_in_every_mode(sandbox, tmp_path, monkeypatch) -> None:
    """A token passed through agent.env_allowlist (not declared in secret_env) reaches the
    reviewer, which prints it: no written file keeps it, sandboxed as copy-only."""
    from rubricgate.models.config import DEFAULT_ENV_ALLOWLIST
    from tests.conftest import make_repo
    from tests.faults.reviewers import use_reviewer, write_reviewer

    token = "ghp_Zq9fault7K2mP7vL4nR8tWx3Yb6Hc1Jd5Ks"
    monkeypatch.setenv("MY_TOKEN", token)
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    script = write_reviewer(tmp_path / "agents", "import os\nnote = 'token: ' + os.environ.get('MY_TOKEN', 'unset')")
    use_reviewer(repo, script, sandbox=sandbox, env_allowlist=[*DEFAULT_ENV_ALLOWLIST, "MY_TOKEN"])
    done = run_suite(RunOptions(repo=repo))
    assert done.summary.isolation == ISOLATION[sandbox] and done.exit_code == 0, done.summary.decision
    assert leaks([done.run_dir], token) == []
    written = [p.read_text() for p in (done.run_dir / "transcripts").glob("*.json")]
    assert written and all("token: [REDACTED]" in text for text in written)  # it did reach the reviewer


@pytest.mark.parametrize("sandbox", sandbox_modes())
def test_a_secret_base64_encoded_inside_a_longer_string_is_scrubbed(sandbox, tmp_path, monkeypatch) -> None:
    """A reviewer printing `Authorization: Basic $(printf 'user:%s' "$MY_API_KEY" | base64)`, or base64
    of `Bearer $MY_API_KEY`, to stderr and failing: the secret's base64 starts at an offset that is
    not a multiple of 3 and was written everywhere (terminal, comment, HTML, JUnit, summary, events,
    transcripts). No file keeps a decodable piece of it."""
    import base64

    from tests.conftest import make_repo
    from tests.faults.reviewers import use_reviewer, write_reviewer

    key = "sk-live-Zq9fault7K2mP7vL4nR8tW"
    monkeypatch.setenv("MY_API_KEY", key)
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    script = write_reviewer(tmp_path / "agents", """
        import base64, sys
        key = os.environ['MY_API_KEY'].encode()
        for whole in (b'user:' + key, b'Bearer ' + key, b'u' + key + b'\\n'):
            sys.stderr.write('Authorization: Basic ' + base64.b64encode(whole).decode() + '\\n')
            sys.stderr.write('url ' + base64.urlsafe_b64encode(whole).decode().rstrip('=') + '\\n')
        sys.stderr.write('Authorization: Basic ' + base64.b64encode(b'user:' + key).decode() + ' '
                         + base64.urlsafe_b64encode(b'Bearer ' + key).decode() + '\\n')  # the error line
        sys.exit(1)
    """)
    use_reviewer(repo, script, sandbox=sandbox, secret_env=["MY_API_KEY"])
    done = run_suite(RunOptions(repo=repo))
    # The trial crashed with no verdict: the run could not judge (exit 2).
    assert done.summary.isolation == ISOLATION[sandbox] and done.exit_code == 2, done.summary.decision
    texts = {str(p): p.read_text(errors="replace") for p in done.run_dir.rglob("*") if p.is_file()}
    texts["terminal"] = render_terminal(done.summary, str(done.run_dir))
    assert any("Authorization: Basic" in t for t in texts.values())  # it did reach what is written
    pieces = {base64.b64encode(bytes(shift) + key.encode()).decode()[4:-4] for shift in range(3)}
    pieces |= {p.replace("+", "-").replace("/", "_") for p in pieces}
    found = [f"{name}: {piece}" for name, text in texts.items() for piece in pieces if piece in text]
    assert found == [] and leaks([done.run_dir], key) == []
