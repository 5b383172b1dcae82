"""`rubricgate init`: a fresh repository gets a suite that validates and passes; nothing is overwritten."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.suite.config import load_config
from rubricgate.suite.load import load_all
from tests.conftest import ROOT, git

FOREIGN_RUBRIC = """# Our skill rubric

| id | severity | kind | rule |
| --- | --- | --- | --- |
| fm-description-required | critical | mechanical | The frontmatter has a description. |
| tone-friendly | suggestion | judgement | The skill reads kindly. |
"""


def fresh(tmp_path: Path) -> Path:
    repo = tmp_path / "fresh"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("our project\n")
    return repo


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_outside_a_git_repository_is_one_error_line_exit_2(tmp_path):
    got = cli("init", "--repo", str(tmp_path))
    assert got.exit_code == 2
    assert got.output.strip().splitlines() == [f"error: {tmp_path.resolve()}: not inside a git work tree "
                                               "(fix: run `git init` first, or pass --repo)"]


def test_a_given_reviewer_file_that_does_not_exist_is_exit_2(tmp_path):
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo), "--rubric", "review/rubric.md")
    assert got.exit_code == 2 and "--rubric: path: 'review/rubric.md' does not exist" in got.output
    assert not (repo / "rubricgate.yaml").exists()


def test_fresh_repository_then_baseline_validate_and_run_pass(tmp_path):
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo))
    assert got.exit_code == 0, got.output
    for rel in ("rubricgate.yaml", "evals/tasks/example-secret-in-skill.yaml", "fixtures/pass/example-tidy-skill/SKILL.md",
                "fixtures/warn/example-stub-skill/SKILL.md", "fixtures/block/example-no-description/SKILL.md",
                ".github/workflows/rubricgate-pr.yml", ".github/workflows/rubricgate-weekly.yml",
                "reviewer/evaluator/references/rubric.md"):
        assert f"wrote {rel}" in got.output
    assert got.output.rstrip().splitlines()[-3:][0] == "next:"
    assert "rubricgate baseline update --repo" in got.output and "rubricgate run --repo" in got.output
    assert cli("baseline", "update", "--repo", str(repo)).exit_code == 0
    valid = cli("validate", "--repo", str(repo))
    assert valid.exit_code == 0 and valid.output.startswith("ok: 4 cases (1 tasks, 3 fixtures)")
    ran = cli("run", "--repo", str(repo))
    assert ran.exit_code == 0, ran.output
    assert "decision: PASS" in ran.output


def test_second_init_skips_everything_and_keeps_edits(tmp_path):
    repo = fresh(tmp_path)
    cli("init", "--repo", str(repo))
    (repo / "rubricgate.yaml").write_text((repo / "rubricgate.yaml").read_text() + "# edited\n")
    gitignore = (repo / ".gitignore").read_text()
    again = cli("init", "--repo", str(repo), "--agent", "claude")
    assert again.exit_code == 0
    assert "wrote" not in again.output
    assert "skipped rubricgate.yaml (exists; not overwritten)" in again.output
    assert (repo / "rubricgate.yaml").read_text().endswith("# edited\n")
    assert (repo / ".gitignore").read_text() == gitignore  # lines already there are not appended twice


def test_finds_an_existing_reviewer_and_fits_the_examples_to_its_rubric(tmp_path):
    repo = fresh(tmp_path)
    (repo / "tools/review/skill-evaluator/references").mkdir(parents=True)
    (repo / "tools/review/prompts").mkdir(parents=True)
    (repo / "tools/review/skill-evaluator/references/rubric.md").write_text(FOREIGN_RUBRIC)
    (repo / "tools/review/skill-evaluator/SKILL.md").write_text("---\nname: skill-evaluator\n---\nReview.\n")
    (repo / "tools/review/prompts/review-skills.md").write_text("Review the changed skills.\n")
    (repo / "skills/other/SKILL.md").parent.mkdir(parents=True)
    (repo / "skills/other/SKILL.md").write_text("---\nname: other\n---\n")
    git(repo, "add", "-A")
    got = cli("init", "--repo", str(repo))
    assert got.exit_code == 0, got.output
    assert "reviewer rubric: tools/review/skill-evaluator/references/rubric.md (found in the repository)" in got.output
    assert "reviewer skill: tools/review/skill-evaluator/SKILL.md (found" in got.output
    assert "reviewer prompt: tools/review/prompts/review-skills.md (found" in got.output
    assert not (repo / "reviewer").exists()
    config = load_config(repo)
    assert config.reviewer.changed_files == "tools/review/.changed-skills.txt"
    # Only examples of rules the foreign rubric has, at the tier it derives; the rest are said.
    assert not (repo / "fixtures/warn/example-stub-skill").exists()
    assert not (repo / "evals/tasks/example-secret-in-skill.yaml").exists() and (repo / "evals/tasks").is_dir()
    assert "left out the example fixtures/warn/example-stub-skill" in got.output
    block = yaml.safe_load((repo / "fixtures/block/example-no-description/expect.yaml").read_text())
    assert block["rules"] == ["fm-description-required"]
    assert (repo / "fixtures/pass/example-tidy-skill/SKILL.md").is_file()
    assert cli("baseline", "update", "--repo", str(repo)).exit_code in (0, 1)
    assert cli("validate", "--repo", str(repo)).exit_code == 0


def test_agent_claude_writes_a_config_for_a_noisy_reviewer(tmp_path):
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo), "--agent", "claude")
    assert got.exit_code == 0
    config = load_config(repo)
    assert (config.agent.name, config.trials, config.gate.method) == ("claude", 3, "statistical")
    assert config.agent.secret_env == ["ANTHROPIC_API_KEY"]
    workflow = (repo / ".github/workflows/rubricgate-pr.yml").read_text()
    assert "@anthropic-ai/claude-code" in workflow and "rubricgate run --trials 3" in workflow
    assert "with the agent's API key in the environment" in got.output


def test_layout_files_is_written_for_an_agent_cli_too(tmp_path):
    """--layout files with --agent claude: the config says files (it said nothing, and the suite
    was read as skills), no SKILL.md example, and the ignored changed-files list is the config's."""
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo), "--agent", "claude", "--layout", "files")
    assert got.exit_code == 0, got.output
    config = load_config(repo)
    assert (config.suite.layout, config.suite.review_root) == ("files", "changes")
    assert config.reviewer.changed_files.endswith(".changed-files.txt")
    assert config.reviewer.changed_files in (repo / ".gitignore").read_text().splitlines()
    assert not list((repo / "fixtures").rglob("SKILL.md")) and (repo / "fixtures/block/.gitkeep").is_file()


def test_layout_files_starts_a_reviewer_of_a_code_change_with_its_verdict_format_shown(tmp_path):
    """--agent claude --layout files wrote the skill reviewer's starter (a JSON workflow for SKILL.md
    files) and no `verdict:` section: nothing a code-diff team could start from or see where its
    own answer's format goes. Now: a change reviewer reading the config's list, a code rubric, and
    a commented `verdict:` that, uncommented, validates against it."""
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo), "--agent", "claude", "--layout", "files")
    assert got.exit_code == 0, got.output
    config = load_config(repo)
    prompt, skill = (repo / config.reviewer.prompt).read_text(), (repo / config.reviewer.skill).read_text()
    for text in (prompt, skill):
        assert "SKILL.md" not in text.replace("reviewer/evaluator/SKILL.md", "") and "change" in text
        assert config.reviewer.changed_files in text and ".changed-skills.txt" not in text
    rubric = (repo / config.reviewer.rubric).read_text()
    assert "| sql-injection | critical |" in rubric and "fm-description-required" not in rubric
    text = (repo / "rubricgate.yaml").read_text()
    assert "\n# verdict:\n#   format: yaml\n" in text and config.verdict is None  # shown, commented out
    (repo / "fixtures/block/orders/").mkdir()
    (repo / "fixtures/block/orders/change.diff").write_text("+cur.execute('SELECT ' + order_id)\n")
    (repo / "fixtures/block/orders/expect.yaml").write_text("rules: [sql-injection]\n")
    loaded = load_all(repo, require_baseline=False)  # the suite as validate reads it (no claude here)
    assert [c.expect.rules for c in loaded.cases] == [["sql-injection"]] and loaded.rubric.ids_from.endswith("rubric.md")
    uncommented = text.replace("\n# verdict:", "\nverdict:").replace("\n#   ", "\n  ").replace("\n#              ", "\n    ")
    (repo / "rubricgate.yaml").write_text(uncommented)
    loaded = load_all(repo, require_baseline=False)
    assert loaded.config.verdict.format == "yaml" and loaded.config.verdict.rules[0].id == "sql-injection"


def test_layout_skills_writes_the_skill_reviewer_starter(tmp_path):
    repo = fresh(tmp_path)
    assert cli("init", "--repo", str(repo), "--agent", "claude").exit_code == 0
    for rel in ("reviewer/prompts/evaluate.md", "reviewer/evaluator/SKILL.md", "reviewer/evaluator/references/rubric.md"):
        assert (repo / rel).read_text() == (ROOT / rel).read_text(), rel
    assert "verdict:" not in (repo / "rubricgate.yaml").read_text()


def test_builtin_config_is_strict_with_one_trial(tmp_path):
    repo = fresh(tmp_path)
    cli("init", "--repo", str(repo))
    config = load_config(repo)
    assert (config.agent.name, config.trials, config.gate.method) == ("builtin", 1, "strict")
    assert config.suite.review_root == "skills"
    for rel in ("prompts/evaluate.md", "evaluator/SKILL.md", "evaluator/references/rubric.md"):
        assert (repo / "reviewer" / rel).read_text() == (ROOT / "reviewer" / rel).read_text()  # the starter is this reviewer


def test_agent_claude_allowlists_the_endpoint_proxy_and_ca_variables(tmp_path):
    repo = fresh(tmp_path)
    assert cli("init", "--repo", str(repo), "--agent", "claude").exit_code == 0
    allow = load_config(repo).agent.env_allowlist
    for name in ("PATH", "ANTHROPIC_BASE_URL", "HTTPS_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"):
        assert name in allow
    agent = load_config(repo).agent
    assert (agent.sandbox_network, agent.network_allow) == ("allowlist", [])
    assert "sandbox_network: allowlist" in (repo / "rubricgate.yaml").read_text()


@pytest.mark.parametrize("pip", ['rubricgate==1.0"\n  EVIL: "x', "rubricgate==1.0\nEVIL: 1", "rubricgate",
                                 "requests==2.0", "rubricgate==1.0 $(id)"])
def test_pip_with_a_quote_newline_or_no_pin_is_refused_before_anything_is_written(tmp_path, pip):
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo), "--pip", pip)
    assert got.exit_code == 2 and got.output.count("\n") == 1 and "--pip" in got.output, got.output
    assert not (repo / "rubricgate.yaml").exists()


@pytest.mark.parametrize("pip", ["rubricgate==0.1.0", "rubricgate @ git+https://github.com/o/r@0123abcd",
                                 "git+https://github.com/o/r@v1#egg=rubricgate"])
def test_pip_pins_are_written_by_the_yaml_emitter(tmp_path, pip):
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo), "--pip", pip)
    assert got.exit_code == 0, got.output
    for name in ("rubricgate-pr.yml", "rubricgate-weekly.yml"):
        data = yaml.safe_load((repo / ".github/workflows" / name).read_text())
        assert data["env"]["RUBRICGATE_PIP"] == pip
    assert f"workflows install {pip} (as given with --pip)" in got.output


def test_default_install_is_this_rubricgates_origin_never_bare(tmp_path):
    repo = fresh(tmp_path)
    got = cli("init", "--repo", str(repo))
    pip = yaml.safe_load((repo / ".github/workflows/rubricgate-pr.yml").read_text())["env"]["RUBRICGATE_PIP"]
    assert pip.startswith(("rubricgate==", "rubricgate @ ")), pip
    assert f"workflows install {pip} (" in got.output
    if pip.startswith("rubricgate=="):  # a checkout (this test's rubricgate): said, with the way out
        assert "--pip" in got.output


def test_reviewer_paths_with_yaml_syntax_stay_plain_values(tmp_path):
    repo = fresh(tmp_path)
    odd = "rev: #x/prompts/evaluate.md"
    (repo / odd).parent.mkdir(parents=True)
    (repo / odd).write_text("review\n")
    got = cli("init", "--repo", str(repo), "--prompt", odd)
    assert got.exit_code == 0, got.output
    assert load_config(repo).reviewer.prompt == odd


def test_validate_reports_a_missing_cli_and_a_broken_baseline_together(tmp_path, monkeypatch):
    repo = fresh(tmp_path)
    assert cli("init", "--repo", str(repo), "--agent", "codex").exit_code == 0
    (repo / "baseline.json").write_text("{")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    got = cli("validate", "--repo", str(repo))
    assert got.exit_code == 2
    assert "program 'codex' not found on PATH" in got.output and "baseline.json: line 1: invalid JSON" in got.output, got.output


def test_validate_before_the_first_baseline_checks_everything_else_and_says_what_comes_next(tmp_path):
    # The documented order is init, validate, baseline update: the first validate must not fail.
    repo = fresh(tmp_path)
    assert cli("init", "--repo", str(repo)).exit_code == 0
    got = cli("validate", "--repo", str(repo))
    assert got.exit_code == 0, got.output
    assert "note: no baseline.json yet: `rubricgate baseline update` measures it" in got.output
    assert "rule coverage:" in got.output  # the rest was checked and shown
    run = cli("run", "--repo", str(repo))
    assert run.exit_code == 2 and "baseline" in run.output  # a run still cannot judge without one


TEAM_RUBRIC = FOREIGN_RUBRIC.replace("| critical |", "| major |").replace("| suggestion |", "| minor |") + (
    "\n## Tiers\n\nAny major -> WARN.\n")


def test_a_rubric_init_cannot_read_is_named_and_no_example_claims_a_tier_it_cannot_produce(tmp_path):
    repo = fresh(tmp_path)
    (repo / ".github").mkdir()
    (repo / ".github/rubric.md").write_text(TEAM_RUBRIC)
    got = cli("init", "--repo", str(repo), "--rubric", ".github/rubric.md")
    assert got.exit_code == 0, got.output
    assert "note: .github/rubric.md: line 5: severity 'major'" in got.output and "tiers.severities" in got.output
    assert "design.md" not in got.output
    assert sorted(p.relative_to(repo).as_posix() for p in (repo / "fixtures").rglob("*") if p.is_file()) == [
        "fixtures/pass/example-tidy-skill/SKILL.md"]


def test_init_run_again_reads_the_rubric_with_the_tiers_its_note_asked_for(tmp_path):
    """The note says to declare the rubric's words under tiers:; done, and init run again, it
    read the rubric with the default words, repeated the note and wrote no example."""
    import yaml

    repo = fresh(tmp_path)
    (repo / ".github").mkdir()
    (repo / ".github/rubric.md").write_text(TEAM_RUBRIC)
    assert cli("init", "--repo", str(repo), "--rubric", ".github/rubric.md").exit_code == 0
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["tiers"] = {"severities": {"major": "warning", "minor": "suggestion"},
                       "rules": [{"severity": "major", "at_least": 1, "tier": "WARN"}]}
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    again = cli("init", "--repo", str(repo), "--rubric", ".github/rubric.md")
    assert again.exit_code == 0, again.output
    assert "severity 'major'" not in again.output, again.output
    assert (repo / "fixtures/warn/example-no-description/SKILL.md").is_file(), again.output


def test_examples_move_to_the_tier_the_rubric_derives(tmp_path):
    repo = fresh(tmp_path)
    (repo / ".github").mkdir()
    lowered = FOREIGN_RUBRIC.replace("| critical |", "| warning |") + (
        "\n## Tier derivation\n\n1. Three or more warning findings, tier is BLOCK.\n")
    (repo / ".github/rubric.md").write_text(lowered)
    assert cli("init", "--repo", str(repo), "--rubric", ".github/rubric.md").exit_code == 0
    assert (repo / "fixtures/warn/example-no-description/SKILL.md").is_file()  # one warning: WARN, not BLOCK
    assert not (repo / "fixtures/block").exists()


def test_an_example_left_out_of_a_rubric_init_cannot_read_is_not_said_to_lack_its_rules(tmp_path):
    """A rubric with fm-description-required, unreadable only for its tier section: each left-out
    example said "the rubric has none of the rules it shows", which its own rule table denies."""
    repo = fresh(tmp_path)
    (repo / ".github").mkdir()
    (repo / ".github/rubric.md").write_text(FOREIGN_RUBRIC + "\n## Tiers\n\nAny critical finding: BLOCK.\n")
    got = cli("init", "--repo", str(repo), "--rubric", ".github/rubric.md")
    assert got.exit_code == 0, got.output
    assert "is not the default derivation" in got.output
    assert "none of the rules it shows" not in got.output, got.output
    assert ("left out the example fixtures/block/example-no-description: the rubric could not be read "
            "(the note above)") in got.output


def test_a_folder_whose_workflow_name_another_folders_gate_holds_is_exit_2_and_writes_nothing(tmp_path):
    # teams/a and teams-a both make rubricgate-pr-teams-a.yml: the second init skipped it as
    # "exists", exit 0, and that folder's suite had no pull request gate at all.
    top = fresh(tmp_path)
    (top / "teams/a").mkdir(parents=True)
    (top / "teams-a").mkdir()
    assert cli("init", "--repo", str(top / "teams/a")).exit_code == 0
    got = cli("init", "--repo", str(top / "teams-a"))
    assert got.exit_code == 2, got.output
    assert ".github/workflows/rubricgate-pr-teams-a.yml: working-directory: the gate of folder 'teams/a'" in got.output
    assert not (top / "teams-a/rubricgate.yaml").exists()
    assert cli("init", "--repo", str(top / "teams/a")).exit_code == 0  # its own workflow: init twice is harmless


def test_in_a_monorepos_folder_the_workflows_go_where_github_reads_them_and_run_in_the_folder(tmp_path):
    # Written under teams/a/.github/workflows they never ran (GitHub reads the top's only), and
    # copied to the top they ran `rubricgate` where no rubricgate.yaml is.
    folder = fresh(tmp_path) / "teams" / "a"
    folder.mkdir(parents=True)
    got = cli("init", "--repo", str(folder))
    assert got.exit_code == 0, got.output
    assert "wrote ../../.github/workflows/rubricgate-pr-teams-a.yml" in got.output
    assert not (folder / ".github").exists()
    for name in ("rubricgate-pr-teams-a.yml", "rubricgate-weekly-teams-a.yml"):
        data = yaml.safe_load((tmp_path / "fresh/.github/workflows" / name).read_text())
        assert data["defaults"] == {"run": {"working-directory": "teams/a"}}
        uploads = [s for job in data["jobs"].values() for s in job["steps"] if "upload-artifact" in s.get("uses", "")]
        assert uploads and all(s["with"]["path"] == "teams/a/reports/" for s in uploads)
        assert "teams-a" in data["concurrency"]["group"]
