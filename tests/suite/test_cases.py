"""Bad input: each a one-line error naming file and field, and exit code 2."""

import os

import pytest
import yaml
from pydantic import ValidationError
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import make_repo, write_task

GOOD = {"id": "t1", "why": "w", "review": ["fixtures/block/data-loader/SKILL.md"],
        "expect": {"tier": "BLOCK"}, "tags": ["x"]}


def validate(repo):
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    return result.exit_code, result.output


def one_error(repo, *needles):
    code, out = validate(repo)
    assert code == 2, out
    assert "Traceback" not in out
    line = next(l for l in out.splitlines() if l.startswith("error:"))
    for needle in needles:
        assert needle in line, line
    return line


@pytest.mark.parametrize("name", ["zz-evil\ndecision (strict): PASS (exit 0)", "zz\x1b[2Kevil", "zz\u2028evil"])
def test_a_fixture_folder_name_that_could_print_lines_of_its_own_is_refused(repo, name):
    """Its case id is printed on lines of its own: a line break in it forged a PASS decision line."""
    src = repo / "fixtures" / "block" / "data-loader"
    (src.parent / name).mkdir()
    (src.parent / name / "SKILL.md").write_text((src / "SKILL.md").read_text())
    code, out = validate(repo)
    assert code == 2 and "Traceback" not in out, out
    assert not any(line.startswith("decision") for line in out.splitlines()), out  # no forged line
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "holds a line break or another control character" in errors[0], out
    assert all(ch.isprintable() for line in out.splitlines() for ch in line), out  # named escaped


def test_broken_yaml(repo):
    (repo / "evals/tasks/broken.yaml").write_text("id: broken\nreview: [a\n")
    one_error(repo, "evals/tasks/broken.yaml", "invalid YAML")


def test_unknown_key(repo):
    write_task(repo, {**GOOD, "expectt": {"tier": "PASS"}})
    one_error(repo, "evals/tasks/t1.yaml", "expectt", "unknown key")


def test_missing_expect(repo):
    write_task(repo, {k: v for k, v in GOOD.items() if k != "expect"})
    one_error(repo, "evals/tasks/t1.yaml", "expect", "add it")


def test_empty_expect(repo):
    write_task(repo, {**GOOD, "expect": {}})
    one_error(repo, "evals/tasks/t1.yaml", "at least one of tier")


def test_missing_rubric_without_defaults(repo):
    (repo / "rubricgate.yaml").write_text(_drop_rubric((repo / "rubricgate.yaml").read_text()))
    write_task(repo, GOOD)
    one_error(repo, "rubric.tool_use", "no tool-use rubric")


def _drop_rubric(cfg: str) -> str:
    import yaml
    data = yaml.safe_load(cfg)
    data.pop("rubric", None)
    return yaml.safe_dump(data)


@pytest.mark.parametrize("path,needle", [("../outside/SKILL.md", "contains '..'"),
                                         ("/etc/passwd", "absolute path"),
                                         ("fixtures/../../x", "contains '..'")])
def test_review_path_escape(repo, path, needle):
    write_task(repo, {**GOOD, "review": [path]})
    one_error(repo, "evals/tasks/t1.yaml", "review[0]", needle)


def test_files_overlay_escape(repo):
    write_task(repo, {**GOOD, "files": {"../evil.md": "x"}})
    one_error(repo, "files.../evil.md", "contains '..'")


@pytest.mark.parametrize("name", ["app/new\nline.py", "app/zz\x1b[2Kevil.py", "app/zz\u2028evil.py"])
def test_a_task_path_the_changed_files_list_cannot_hold_on_one_line_is_refused(repo, name):
    # `record` of a change adding app/new<LF>line.py wrote it to the task and validate took it:
    # the changed-files list, one path a line, named app/new and line.py, and the reviewer never
    # saw the file (a fixture's file of that name is refused).
    write_task(repo, {**GOOD, "review": [name], "files": {name: "x = 1\n"}})
    line = one_error(repo, "evals/tasks/t1.yaml", "review[0]", "is no printable UTF-8 name")
    assert "\n" not in line and "\x1b" not in line and "\u2028" not in line
    write_task(repo, {**GOOD, "files": {name: "x = 1\n"}})
    one_error(repo, "evals/tasks/t1.yaml", "files.app/", "is no printable UTF-8 name")


def test_symlink_escape(repo, tmp_path):
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\nname: x\n---\n")
    os.symlink(outside, repo / "linked")  # outside the suite folders: only the review path is wrong
    write_task(repo, {**GOOD, "review": ["linked/SKILL.md"]})
    one_error(repo, "review[0]", "outside the repository")


def test_a_linked_task_file_is_refused_and_never_read(repo, tmp_path):
    """A task file linked to a host file was refused, then read too: its parse error quoted what it
    named into the log (a line of /etc/shadow, as root)."""
    host_file = tmp_path / "host-secret"
    host_file.write_text("root-secret-line: [unclosed\n")
    (repo / "evals/tasks/evil.yaml").symlink_to(host_file)
    code, out = validate(repo)
    assert code == 2 and "evals/tasks/evil.yaml: a task file that is a symbolic link" in out, out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "root-secret-line" not in out and "unclosed" not in out, out


def test_review_file_must_exist(repo):
    write_task(repo, {**GOOD, "review": ["fixtures/none/SKILL.md"]})
    one_error(repo, "review[0]", "does not exist")


def test_empty_suite(tmp_path):
    repo = make_repo(tmp_path / "r", fixtures=[])
    one_error(repo, "evals/tasks", "no cases")


def test_duplicate_ids(repo):
    write_task(repo, GOOD)
    (repo / "evals/tasks/t1.json").write_text('{"id": "t1", "review": ["fixtures/block/data-loader/SKILL.md"], "expect": {"tier": "BLOCK"}}')
    one_error(repo, "duplicate case id 't1'")


def test_id_must_equal_stem(repo):
    write_task(repo, GOOD, name="other")
    one_error(repo, "evals/tasks/other.yaml", "id", "differs from the file stem")


def test_unknown_rule_in_expect(repo):
    write_task(repo, {**GOOD, "expect": {"tier": "BLOCK", "rules": ["no-such-rule"]}})
    one_error(repo, "expect.rules", "unknown rule id 'no-such-rule'")


def test_unreadable_baseline(repo):
    (repo / "baseline.json").write_text("{not json")
    one_error(repo, "baseline.json", "invalid JSON")


def test_missing_config(tmp_path):
    code, out = validate(tmp_path)
    assert code == 2 and "config file not found" in out


def test_every_problem_is_reported(repo):
    write_task(repo, {**GOOD, "review": ["/abs"]}, name="t1")
    write_task(repo, {**GOOD, "id": "t2", "bogus": 1}, name="t2")
    code, out = validate(repo)
    assert code == 2 and out.count("error:") == 2


def test_valid_suite(repo):
    write_task(repo, GOOD)
    code, out = validate(repo)
    assert code == 0 and "3 cases (1 tasks, 2 fixtures)" in out


@pytest.mark.parametrize("field,value,needle", [
    ("reviewer.prompt", "/etc/passwd", "absolute path"),
    ("reviewer.rubric", "../rubric.md", "contains '..'"),
    ("suite.tasks", "evals/taskz", "dir 'evals/taskz' does not exist"),
    ("reviewer.skill", "reviewer/none/SKILL.md", "does not exist"),
])
def test_config_paths_are_checked(repo, field, value, needle):
    import yaml
    data = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    section, key = field.split(".")
    data[section][key] = value
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(data))
    one_error(repo, "rubricgate.yaml", field, needle)


def test_config_unknown_key(repo):
    (repo / "rubricgate.yaml").write_text((repo / "rubricgate.yaml").read_text() + "\nagnet: {name: claude}\n")
    one_error(repo, "rubricgate.yaml", "agnet", "unknown key")


def test_ignore_agent_exit_is_rejected_not_silently_ignored(repo) -> None:
    from tests.conftest import write_task
    from rubricgate.pipeline import load_all
    from rubricgate.errors import GateInputErrors

    write_task(repo, {"id": "t", "review": ["fixtures/block/data-loader/SKILL.md"],
                      "expect": {"tier": "BLOCK", "ignore_agent_exit": True}})
    with pytest.raises(GateInputErrors) as err:
        load_all(repo)
    assert "expect.ignore_agent_exit" in str(err.value)


def test_fixture_tags_are_not_repeated(tmp_path):
    repo = make_repo(tmp_path / "r", fixtures=["block/data-loader"])
    (repo / "fixtures/block/data-loader/expect.yaml").write_text("tags: [block, fixture, loaders]\n")
    from rubricgate.suite.cases import load_suite
    from rubricgate.suite.config import load_config

    case = next(c for c in load_suite(repo, load_config(repo)) if c.source == "fixture")
    assert case.tags == ["fixture", "block", "loaders"]


def test_a_rule_both_expected_and_forbidden_can_never_pass(repo):
    write_task(repo, {**GOOD, "expect": {"tier": "BLOCK", "rules": ["secret-in-file"],
                                         "absent_rules": ["secret-in-file"]}})
    one_error(repo, "evals/tasks/t1.yaml", "expect.absent_rules", "secret-in-file also in expect.rules")


@pytest.mark.parametrize("tier, rule, least", [("PASS", "secret-in-file", "BLOCK"), ("PASS", "body-length", "WARN"),
                                               ("WARN", "fm-name-required", "BLOCK")])
def test_expected_rules_that_raise_the_tier_above_the_expected_one_can_never_pass(repo, tier, rule, least):
    write_task(repo, {**GOOD, "expect": {"tier": tier, "rules": [rule]}})
    one_error(repo, "evals/tasks/t1.yaml", "expect.rules", f"make the tier at least {least}", f"not {tier}")


def test_a_fixture_whose_expect_yaml_asks_more_than_its_folder_tier_is_refused(repo):
    (repo / "fixtures/pass/weekly-revenue-summary/expect.yaml").write_text("rules: [secret-in-file]\n")
    one_error(repo, "fixtures/pass/weekly-revenue-summary", "expect.rules", "at least BLOCK")


def test_a_fixture_linked_out_of_the_repository_is_one_line_per_link(repo, tmp_path):
    """A fixture folder linked to /etc gave one error per file under it (757), and a linked file two."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    for i in range(30):
        (outside / "sub" / f"f{i}.md").write_text("x\n")
    (repo / "fixtures/pass/linked").symlink_to(outside)
    (repo / "fixtures/pass/weekly-revenue-summary/passwd.txt").symlink_to(outside / "sub" / "f0.md")
    (repo / "fixtures/block/data-loader/more").symlink_to(outside)  # a linked folder inside: not walked
    code, out = validate(repo)
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 3, out
    assert all("resolves outside the repository (symlink)" in line for line in errors), out


@pytest.mark.parametrize("target", ["../../../../baseline.json", "../../../../rubricgate.yaml", "../expect.yaml",
                                    "../../../block/data-loader/SKILL.md", "../../../block/data-loader/expect.yaml"])
def test_a_fixture_file_linked_to_the_answer_key_is_refused(repo, target):
    # The link's target is copied into the case's workspace: baseline.json was shown to the reviewer.
    refs = repo / "fixtures/pass/weekly-revenue-summary/references"
    refs.mkdir(exist_ok=True)
    (refs / "key.json").symlink_to(target)
    assert (refs / "key.json").is_file()
    one_error(repo, "fixtures/pass/weekly-revenue-summary/references/key.json", "the reviewer must not see")


def test_a_fixture_file_linked_to_what_workspace_exclude_or_the_config_in_use_names_is_refused(repo):
    (repo / "README.md").write_text("fixture-data-loader is BLOCK\n")  # suite.workspace_exclude names it
    refs = repo / "fixtures/pass/weekly-revenue-summary/references"
    refs.mkdir(exist_ok=True)
    (refs / "readme.md").symlink_to("../../../../README.md")
    one_error(repo, "references/readme.md", "links to README.md, which the reviewer must not see")
    (refs / "readme.md").unlink()
    (repo / "alt.yaml").write_text((repo / "rubricgate.yaml").read_text())
    (refs / "cfg.yaml").symlink_to("../../../../alt.yaml")
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo), "--config", str(repo / "alt.yaml")])
    assert result.exit_code == 2 and "links to alt.yaml, which the reviewer must not see" in result.output


@pytest.mark.parametrize("again", ["fixtures/block/data-loader/SKILL.md", "./fixtures/block/data-loader/SKILL.md",
                                   "fixtures//block/data-loader/SKILL.md"])
def test_a_file_reviewed_twice_in_any_spelling_is_refused(repo, again):
    # Each listing reviewed it again: one warning counted three times made a WARN case BLOCK.
    write_task(repo, {**GOOD, "review": [GOOD["review"][0], again]})
    one_error(repo, "evals/tasks/t1.yaml", "review[1]", "is listed twice")


def test_a_fixture_file_and_its_workspace_path_reviewed_together_are_refused(repo):
    write_task(repo, {**GOOD, "review": [GOOD["review"][0], "skills/data-loader/SKILL.md"],
                      "files": {"skills/data-loader/SKILL.md": "hello"}})
    one_error(repo, "evals/tasks/t1.yaml", "are one file in the workspace (skills/data-loader/SKILL.md)")


def test_a_fixture_that_lists_a_file_twice_or_a_name_with_a_space_is_refused(repo):
    folder = repo / "fixtures/pass/weekly-revenue-summary"
    (folder / "expect.yaml").write_text("review: [SKILL.md, ./SKILL.md]\n")
    one_error(repo, "fixtures/pass/weekly-revenue-summary", "review[1]", "is listed twice")
    (folder / "notes.txt ").write_text("x\n")
    (folder / "expect.yaml").write_text("review: [SKILL.md, 'notes.txt ']\n")
    one_error(repo, "fixtures/pass/weekly-revenue-summary", "begins or ends with a space")


def test_a_task_reviewing_a_link_into_the_fixtures_is_refused(repo):
    # Reviewed by a path that is no fixture's, the link is left out of the snapshot: nothing to review.
    (repo / "team/oh").mkdir(parents=True)
    (repo / "team/oh/SKILL.md").symlink_to("../../fixtures/block/data-loader/SKILL.md")
    write_task(repo, {**GOOD, "review": ["team/oh/SKILL.md"]})
    one_error(repo, "evals/tasks/t1.yaml", "review[0]", "which no workspace holds")


def test_a_suite_folder_reached_through_a_link_keeps_its_real_folder_out_of_the_workspace(repo):
    # `evals/tasks -> real-tasks`: the paths left out were the names as written, so the real
    # folder, every task file, was in the snapshot; so was a fixture link into it.
    from rubricgate.runner.workspace import list_tree
    from rubricgate.suite.answer_key import answer_key_paths
    from rubricgate.suite.config import load_config

    write_task(repo, GOOD)
    (repo / "evals/tasks").rename(repo / "evals/real-tasks")
    (repo / "evals/tasks").symlink_to("real-tasks")
    kept_out = answer_key_paths(load_config(repo), repo=repo)
    assert "evals/real-tasks" in kept_out and not [f for f in list_tree(repo, kept_out) if "real-tasks" in f]
    (repo / "fixtures/pass/weekly-revenue-summary/t1.yaml").symlink_to("../../../evals/real-tasks/t1.yaml")
    one_error(repo, "weekly-revenue-summary/t1.yaml", "links to evals/real-tasks/t1.yaml")


@pytest.mark.parametrize("kept_out", ["README.md", "docs/k/SKILL.md"])
def test_a_task_reviewing_a_file_no_workspace_holds_is_refused(repo, kept_out):
    # README.md: suite.workspace_exclude; docs/k/SKILL.md: a link to the baseline, left out of the snapshot.
    (repo / "README.md").write_text("# readme\n")
    (repo / "docs/k").mkdir(parents=True)
    (repo / "docs/k/SKILL.md").symlink_to("../../baseline.json")
    write_task(repo, {**GOOD, "review": [GOOD["review"][0], kept_out]})
    one_error(repo, "evals/tasks/t1.yaml", "review[1]", "which no workspace holds")


def test_a_fixture_file_linked_to_its_own_file_or_a_shown_file_of_the_repository_is_fine(repo):
    folder = repo / "fixtures/pass/weekly-revenue-summary"
    (folder / "references").mkdir(exist_ok=True)
    (folder / "references/again.md").symlink_to("../SKILL.md")
    (repo / "docs").mkdir()
    (repo / "docs/shared.md").write_text("shared\n")
    (folder / "references/shared.md").symlink_to("../../../../docs/shared.md")
    code, out = validate(repo)
    assert code == 0, out


def test_a_file_where_the_review_root_goes_is_one_line_not_an_internal_error(repo):
    # `skills` as a file at the top: --keep-workspaces (a full copy) ended in NotADirectoryError.
    (repo / "skills").write_text("x\n")
    line = one_error(repo, "rubricgate.yaml: suite.review_root:", "skills is a file in the repository")
    assert validate(repo)[1].count("where the cases' folders go") == 1, line  # once, not once a case


def test_a_changed_files_list_under_the_review_root_is_refused(repo):
    # Written in every workspace over a case's own SKILL.md: the case passed unreviewed.
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["reviewer"]["changed_files"] = "skills/data-loader/SKILL.md"
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    one_error(repo, "reviewer.changed_files:", "lies under suite.review_root")


@pytest.mark.parametrize("entry", ["README.md ", "tests/*", "docs/[ab].md"])
def test_a_workspace_exclude_entry_that_names_no_path_is_refused(repo, entry):
    # Compared as written, a pattern or a trailing space left out nothing.
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["suite"]["workspace_exclude"] = [entry]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    one_error(repo, "suite.workspace_exclude[0]", "is no path of the repository")


@pytest.mark.parametrize("target", ["../../../../evals", "../../../..", "../../../../fixtures/block"])
def test_a_fixture_link_to_a_folder_holding_the_answer_key_is_refused(repo, target):
    refs = repo / "fixtures/pass/weekly-revenue-summary/references"
    refs.mkdir(exist_ok=True)
    (refs / "up").symlink_to(target)
    one_error(repo, "references/up", "the reviewer must not see")


@pytest.mark.parametrize("which", ["expect.yaml", "task file", "tier folder"])
def test_an_answer_key_file_that_is_a_link_out_of_the_suite_is_refused(repo, which):
    # Kept out by its path, its content reached every workspace under the name it links to.
    (repo / "notes").mkdir()
    if which == "expect.yaml":
        (repo / "fixtures/block/data-loader/expect.yaml").rename(repo / "notes/answers.yaml")
        (repo / "fixtures/block/data-loader/expect.yaml").symlink_to("../../../notes/answers.yaml")
        where = "fixtures/block/data-loader/expect.yaml"
    elif which == "task file":
        write_task(repo, GOOD)
        (repo / "evals/tasks/t1.yaml").rename(repo / "notes/t1.yaml")
        (repo / "evals/tasks/t1.yaml").symlink_to("../../notes/t1.yaml")
        where = "evals/tasks/t1.yaml"
    else:
        (repo / "fixtures/block").rename(repo / "notes/block")
        (repo / "fixtures/block").symlink_to("../notes/block")
        where = "fixtures/block"
    one_error(repo, where, "is a symbolic link: what it names would reach the reviewer")


@pytest.mark.parametrize("layout", ["skills", "files"])
@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_an_expect_yaml_that_is_not_a_file_is_refused_by_validate_and_run(repo, layout, kind):
    # A folder named expect.yaml was read as no expectations, and its files reached the workspace.
    if layout == "files":
        config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
        config["suite"]["layout"] = "files"
        (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    expect = repo / "fixtures/block/data-loader/expect.yaml"
    expect.unlink()
    if kind == "folder":
        expect.mkdir()
        (expect / "x.yaml").write_text("tier: PASS\n")
    else:
        os.mkfifo(expect)
    what = "a folder" if kind == "folder" else "not a regular file"
    line = one_error(repo, "fixtures/block/data-loader/expect.yaml", what, "must be a file")
    run = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert run.exit_code == 2 and line in run.output and "Traceback" not in run.output, run.output


@pytest.mark.parametrize("layout", ["skills", "files"])
@pytest.mark.parametrize("kind", ["file", "folder"])
@pytest.mark.parametrize("name", ["expect.yml", "expect.json", "Expect.yaml"])
def test_an_expectations_file_under_another_name_is_refused(repo, layout, kind, name):
    # Not read as the answer key: its expectations were lost and, in the files layout, it was
    # reviewed as one of the fixture's files (the answer key shown to the reviewer).
    if layout == "files":
        config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
        config["suite"]["layout"] = "files"
        (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    odd = repo / "fixtures/block/data-loader" / name
    if kind == "folder":
        odd.mkdir()
        (odd / "x.yaml").write_text("tier: PASS\n")
    else:
        odd.write_text("tier: PASS\n")
    one_error(repo, f"fixtures/block/data-loader/{name}", "not read", "rename it to expect.yaml")


@pytest.mark.parametrize("name", ["bad\udcff.md", "a\nb.md", "/".join(["x" * 250] * 15) + "/" + "y" * 150 + ".md"])
def test_a_fixture_file_name_no_workspace_can_hold_or_list_is_one_line(repo, name):
    # Not UTF-8: an internal error writing the changed-files list; a line break: every trial unread.
    folder = repo / "fixtures/pass/weekly-revenue-summary/references"
    path = folder / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    except OSError:
        pytest.skip("this file system refuses the name")
    line = one_error(repo, "fixtures/pass/weekly-revenue-summary", "file name")
    assert len(line) < 1200


def test_a_link_to_a_folder_inside_a_fixture_is_refused_not_dropped(repo):
    (repo / "shared/refs").mkdir(parents=True)
    (repo / "shared/refs/guide.md").write_text("guide\n")
    (repo / "fixtures/pass/weekly-revenue-summary/refs").symlink_to("../../../shared/refs")
    one_error(repo, "weekly-revenue-summary/refs", "a link to a folder: its files would not reach the reviewer")


def test_a_task_reviewing_a_fixtures_expect_yaml_is_refused(repo):
    # No workspace holds it: every trial failed as unread (exit 1) instead of this input error.
    write_task(repo, {**GOOD, "review": ["fixtures/block/data-loader/expect.yaml"]})
    one_error(repo, "evals/tasks/t1.yaml", "review[0]", "is a fixture's expect.yaml")


def test_a_fixture_folder_named_with_a_bidirectional_control_is_refused(repo):
    # U+202E shows a name reordered in a terminal or a PR comment ("Trojan Source").
    (repo / "fixtures/pass/weekly-revenue-summary").rename(repo / "fixtures/pass/ab-test\u202edaer")
    one_error(repo, "\\u202e", "printable")


def test_a_review_root_at_the_changed_files_list_is_refused(repo):
    # Every trial then found its files unreadable: exit 1 as a regression, not the input error it is.
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["suite"]["review_root"] = config["reviewer"]["changed_files"]
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))
    one_error(repo, "suite.review_root:", "is the changed-files list")


def test_a_folder_of_the_repository_where_a_case_goes_is_refused(repo):
    (repo / "skills/weekly-revenue-summary").mkdir(parents=True)
    one_error(repo, "fixtures/pass/weekly-revenue-summary", "skills/weekly-revenue-summary/, which already exists")


def test_a_rubric_that_makes_an_expectation_unpassable_is_judged_by_run_and_refused_by_validate(repo):
    """compare's base side and a severity-up mutant load the suite with another rubric: there the
    case must fail (a caught mutant), not stop the run as an input error."""
    from tests.conftest import set_severity

    write_task(repo, {**GOOD, "review": ["fixtures/pass/weekly-revenue-summary/SKILL.md"],
                      "expect": {"tier": "WARN", "rules": ["body-length"]}})
    set_severity(repo, "body-length", "critical")
    run = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert run.exit_code == 1 and "error:" not in run.output, run.output
    one_error(repo, "evals/tasks/t1.yaml", "expect.rules", "at least BLOCK")


def test_cases_that_keep_the_configs_rubric_share_it_and_a_tasks_own_part_is_kept(repo):
    """A 2,000-case suite held 2,000 equal copies of the config's rubric: one object now."""
    from rubricgate.suite.cases import load_suite
    from rubricgate.suite.config import load_config

    write_task(repo, GOOD)
    write_task(repo, {**GOOD, "id": "t2"})
    write_task(repo, {**GOOD, "id": "t3", "rubric": {"trajectory": {"max_steps": 5}}})
    config = load_config(repo)
    cases = {c.id: c for c in load_suite(repo, config)}
    assert cases["t1"].rubric is cases["t2"].rubric is config.rubric
    assert cases["fixture-data-loader"].rubric is config.rubric
    own = cases["t3"].rubric
    assert own.trajectory.max_steps == 5 and own.tool_use == config.rubric.tool_use
    assert config.rubric.trajectory.max_steps == 20  # the shared one is not changed by a task's own
    with pytest.raises(ValidationError):  # nor can any code set one of its fields for every case
        cases["t1"].rubric.trajectory = None
