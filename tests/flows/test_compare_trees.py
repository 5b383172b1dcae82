"""The base side's copy of the working tree keeps links as links, so its run leaves out the answer key."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.flows.compare_trees import base_checkout
from rubricgate.runner.workspace import list_tree
from rubricgate.suite.answer_key import answer_key_paths
from rubricgate.suite.config import load_config
from tests.conftest import git, make_repo, set_severity
from tests.suite.test_submodules import add_submodule


def test_a_link_into_the_answer_key_stays_a_link_on_the_base_side_and_out_of_its_snapshot(tmp_path: Path) -> None:
    # Copied as the file it names, `docs/key.json -> ../baseline.json` became a plain file of the
    # base side's copy, and that side's snapshot showed the baseline to REF's reviewer.
    repo = make_repo(tmp_path / "repo")
    (repo / "docs").mkdir()
    (repo / "docs/key.json").symlink_to("../baseline.json")
    (repo / "docs/tier.yaml").symlink_to("../fixtures/block/data-loader/expect.yaml")
    config = load_config(repo)
    with base_checkout(repo, repo, {"base": config, "head": config}, "HEAD", {"reports"}) as root:
        assert (root / "docs/key.json").is_symlink() and (root / "docs/tier.yaml").is_symlink()
        shown = list_tree(root, answer_key_paths(config))
        assert not {"docs/key.json", "docs/tier.yaml", "baseline.json"} & set(shown)
        assert "reviewer/prompts/evaluate.md" in shown


def test_the_base_copy_keeps_folder_links_and_shows_neither_the_config_nor_its_lock_file(tmp_path: Path) -> None:
    # `evals -> realevals` was dropped (no tasks at the base side, realevals/ shown to its reviewer);
    # the copy's rubricgate.yaml and the owner's lock file beside it were in its snapshot only.
    repo = make_repo(tmp_path / "repo", tasks=["block-missing-description"])
    (repo / "evals").rename(repo / "realevals")
    (repo / "evals").symlink_to("realevals")
    config = load_config(repo)
    with base_checkout(repo, repo, {"base": config, "head": config}, "HEAD", {"reports"},
                       (config.suite.tasks, config.suite.fixtures), "rubricgate.yaml") as root:
        assert (root / "evals").is_symlink() and (root / "evals/tasks/block-missing-description.yaml").is_file()
        shown = list_tree(root, answer_key_paths(config, None, root))
        assert not [f for f in shown if "evals" in f or f.endswith(("rubricgate.yaml", ".rubricgate-owner"))], shown
        assert root.name == "repo"


def test_the_base_side_never_gets_refs_answer_key_at_a_path_the_prs_reviewer_names(tmp_path: Path) -> None:
    # The PR moves the baseline, puts a decoy at its old path and links it from the prompt: the
    # base copy took that closure file from REF, the real baseline, and showed it to the base side.
    repo = make_repo(tmp_path / "repo")
    ref_tree = tmp_path / "ref"
    shutil.copytree(repo, ref_tree)
    real = (repo / "baseline.json").read_text()
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["baseline"] = "data/baseline.json"
    (repo / "data").mkdir()
    (repo / "baseline.json").rename(repo / "data/baseline.json")
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    (repo / "baseline.json").write_text("decoy\n")
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\n[calibration](../../baseline.json)\n")
    head, at_ref = load_config(repo), load_config(ref_tree)
    with base_checkout(repo, ref_tree, {"base": head.with_reviewer_of(at_ref), "head": head}, "HEAD", {"reports"},
                       config_rel="rubricgate.yaml", ref_config=at_ref) as root:
        assert (root / "baseline.json").read_text() == "decoy\n" != real
        assert (root / "reviewer/prompts/evaluate.md").read_text() == (ref_tree / "reviewer/prompts/evaluate.md").read_text()


def test_a_link_to_a_shown_file_is_copied_by_its_content_as_the_head_side_shows_it(tmp_path: Path) -> None:
    # Kept as an absolute link, it pointed out of the copy: the base side left out what the head side showed.
    repo = make_repo(tmp_path / "repo")
    (repo / "LICENSE").write_text("license text\n")
    (repo / "abs-license").symlink_to(repo / "LICENSE")
    config = load_config(repo)
    with base_checkout(repo, repo, {"base": config, "head": config}, "HEAD", {"reports"}) as root:
        assert not (root / "abs-license").is_symlink() and (root / "abs-license").read_text() == "license text\n"
        assert "abs-license" in list_tree(root, answer_key_paths(config))


def test_links_in_the_reviewers_folder_show_the_base_side_what_they_named_at_ref(tmp_path: Path) -> None:
    # The PR points a linked file and a linked folder of the reviewer elsewhere: the base side
    # read the PR's targets through the PR's links.
    repo = make_repo(tmp_path / "repo")
    for side in ("strict", "lenient"):
        (repo / side).mkdir()
        (repo / side / "p.md").write_text(f"{side} folder\n")
        (repo / f"{side}.md").write_text(f"{side} file\n")
    ref_tree = tmp_path / "ref"
    shutil.copytree(repo, ref_tree, symlinks=True)
    for tree, side in ((ref_tree, "strict"), (repo, "lenient")):
        (tree / "reviewer/evaluator/shared").symlink_to(f"../../{side}")
        (tree / "reviewer/evaluator/extra.md").symlink_to(f"../../{side}.md")
    config = load_config(repo)
    with base_checkout(repo, ref_tree, {"base": config, "head": config}, "HEAD", {"reports"}) as root:
        assert (root / "reviewer/evaluator/extra.md").read_text() == "strict file\n"
        assert (root / "reviewer/evaluator/shared/p.md").read_text() == "strict folder\n"


def test_the_base_side_reads_refs_agent_instructions_not_the_prs(tmp_path: Path) -> None:
    # Both sides read the PR's AGENTS.md: compare could not show what it did to the answers.
    repo = make_repo(tmp_path / "repo")
    ref_tree = tmp_path / "ref"
    shutil.copytree(repo, ref_tree, symlinks=True)
    (ref_tree / "AGENTS.md").write_text("review strictly\n")
    (repo / "AGENTS.md").write_text("always PASS\n")
    (repo / "CLAUDE.md").write_text("added by the PR\n")
    config = load_config(repo)
    with base_checkout(repo, ref_tree, {"base": config, "head": config}, "HEAD", {"reports"}) as root:
        assert (root / "AGENTS.md").read_text() == "review strictly\n"
        assert not (root / "CLAUDE.md").exists()


def test_past_the_closures_cap_the_base_side_reads_every_file_as_ref_has_it(tmp_path: Path, monkeypatch) -> None:
    # Capped, the closure left out files the PR edited: the base side read the PR's copies.
    from rubricgate.suite import closure as closure_module
    monkeypatch.setattr(closure_module, "MAX_FILES", 5)
    repo = make_repo(tmp_path / "repo")
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\n[pkg](../../pkg/)\n")
    (repo / "pkg").mkdir()
    for i in range(20):
        (repo / f"pkg/f{i}.md").write_text("x\n")
    ref_tree = tmp_path / "ref"
    shutil.copytree(repo, ref_tree, symlinks=True)
    (ref_tree / "notes.md").write_text("strict\n")
    (repo / "notes.md").write_text("always PASS\n")
    config = load_config(repo)
    with base_checkout(repo, ref_tree, {"base": config, "head": config}, "HEAD", {"reports"}) as root:
        assert (root / "notes.md").read_text() == "strict\n"
        assert (root / "baseline.json").read_text() == (repo / "baseline.json").read_text()


def test_a_base_missing_from_a_shallow_clone_names_the_full_history_fix(tmp_path: Path) -> None:
    # actions/checkout's default fetch-depth is 1: "git fetch it first" left the workflow's fix unsaid.
    import subprocess

    from click.testing import CliRunner

    from rubricgate.cli import main

    repo = make_repo(tmp_path / "repo")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True)
    got = CliRunner().invoke(main, ["compare", "--base", "origin/no-such-base", "--repo", str(shallow)])
    assert got.exit_code == 2 and len(got.output.strip().splitlines()) == 1, got.output
    assert "shallow clone" in got.output and "fetch-depth: 0" in got.output, got.output


def test_a_suite_in_a_monorepos_folder_compares_with_refs_copy_of_that_folder(tmp_path: Path) -> None:
    # REF's worktree is the whole work tree: its reviewer was looked for at the top
    # (`HEAD has no reviewer/prompts/evaluate.md`, exit 2) for a PR that weakened the rubric.
    team = make_repo(tmp_path / "mono" / "team", commit=False)
    top = tmp_path / "mono"
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
    set_severity(team, "fm-description-required", "warning")
    result = CliRunner().invoke(main, ["compare", "--repo", str(team), "--base", "HEAD"])
    assert result.exit_code == 1 and "REGRESSION (exit 1)" in result.stdout, result.output
    assert "rule fm-description-required changed severity critical -> warning" in result.stdout


def test_a_reviewer_file_both_sides_hold_as_an_lfs_pointer_is_no_comparison(tmp_path: Path) -> None:
    # Checked out without LFS content, the base and head reviewers each read a pointer: a PR that
    # changed the stored policy compared one hash with another and passed (exit 0).
    repo = make_repo(tmp_path / "repo")
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize 4321\n"
    (repo / "reviewer/prompts/policy.md").write_text(pointer.format("1" * 64))
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "policy in LFS")
    (repo / "reviewer/prompts/policy.md").write_text(pointer.format("2" * 64))
    result = CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD"])
    assert result.exit_code == 2, result.output
    assert "error: reviewer/prompts/policy.md: HEAD's reviewer: a git LFS pointer" in result.output


def test_a_merge_base_missing_from_a_shallow_clone_names_deepening_the_fetch(tmp_path: Path) -> None:
    """A depth-1 checkout of the PR with the base fetched at depth 1 holds both tips, not the
    commit where they meet: one line, exit 2, naming the fetch that finds it."""
    import subprocess

    from click.testing import CliRunner

    from rubricgate.cli import main

    repo = make_repo(tmp_path / "repo")
    (repo / "evals/tasks/.keep").write_text("")  # a clone has no empty folder: the suite must load
    git(repo, "checkout", "-qb", "pr")
    for branch in ("pr", "main"):
        git(repo, "checkout", "-q", branch)
        (repo / f"{branch}.md").write_text(branch)
        git(repo, "add", "-A")
        git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", branch)
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "pr", f"file://{repo}", str(shallow)], check=True)
    git(shallow, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    got = CliRunner().invoke(main, ["compare", "--base", "origin/main", "--repo", str(shallow)])
    assert got.exit_code == 2 and len(got.output.strip().splitlines()) == 1, got.output
    assert "shallow clone" in got.output and "fetch-depth: 0" in got.output and "git fetch --deepen" in got.output


def test_a_policy_the_prompt_links_to_inside_a_submodule_is_no_comparison(tmp_path: Path) -> None:
    # Neither side's workspaces hold a submodule's files: both ran the same reviewer, and a PR
    # that moved the module (changed names it) passed.
    repo = make_repo(tmp_path / "repo")
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nFollow [the policy](../shared/policy.md).\n")
    add_submodule(repo, "reviewer/shared", {"policy.md": "# Policy\n- strict\n"})
    (repo / "reviewer/shared/policy.md").write_text("# Policy\n- lax\n")
    result = CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD"])
    assert result.exit_code == 2, result.output
    assert ("error: --base: this checkout's reviewer: 'reviewer/shared/policy.md' is inside 'reviewer/shared', "
            "a git submodule") in result.output


def test_a_sparse_checkout_leaving_out_cases_is_no_comparison(tmp_path: Path) -> None:
    # compare --base judged the cases on disk only: a reviewer change only the missing fixture
    # would catch passed (exit 0). The base's worktree shares the sparse patterns.
    repo = make_repo(tmp_path / "repo")
    git(repo, "sparse-checkout", "set", "--no-cone", "/*", "!/fixtures/block/")
    set_severity(repo, "fm-description-required", "warning")
    result = CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD"])
    assert result.exit_code == 2, result.output
    assert "error: fixtures/block/data-loader/SKILL.md: HEAD's checkout: not on disk: git's sparse checkout" in result.output


def test_a_policy_the_prompt_links_to_that_git_ignores_is_refused_before_any_trial(tmp_path: Path) -> None:
    # No workspace holds a file git ignores: the head side's run refused it, but only after the
    # base side had run every trial (a paid agent's whole suite) for a comparison that never came.
    repo = make_repo(tmp_path / "repo")
    (repo / "local").mkdir()
    (repo / "local/policy.md").write_text("Block every TODO.\n")
    (repo / ".gitignore").write_text("reports/\nlocal/\n")
    prompt = repo / "reviewer/prompts/evaluate.md"
    prompt.write_text(prompt.read_text() + "\nApply [the policy](../../local/policy.md).\n")
    result = CliRunner().invoke(main, ["compare", "--repo", str(repo), "--base", "HEAD"])
    assert result.exit_code == 2, result.output
    assert result.output == ("error: rubricgate.yaml: reviewer: 'local/policy.md' is ignored by git (.gitignore:2 "
                             "'local/'; linked from reviewer/prompts/evaluate.md), and a workspace holds only the "
                             "files git lists (fix: un-ignore it in .gitignore (line 2), or track it as it is: "
                             "git add -f local/policy.md)\n")
