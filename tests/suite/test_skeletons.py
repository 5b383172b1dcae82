"""Fixture skeletons violate exactly their rule, and are never written into the suite."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.agents.skill_checks import CHECKS, parse_skill, scan_secrets
from rubricgate.cli.app import main
from rubricgate.errors import GateInputError
from rubricgate.suite.rubric import load_rubric
from rubricgate.suite.skeletons import VIOLATION_MARKER, skeleton, write_skeletons

ROOT = Path(__file__).resolve().parents[2]
RUBRIC = load_rubric(ROOT / "reviewer/evaluator/references/rubric.md")


@pytest.mark.parametrize("rid", sorted(r for r in RUBRIC.rules if RUBRIC.rules[r].kind == "mechanical"))
def test_a_mechanical_skeleton_breaks_its_rule_and_no_other(rid, tmp_path):
    sk = skeleton(RUBRIC.rules[rid], RUBRIC)
    folder = tmp_path / sk.name
    folder.mkdir()
    text = sk.files["SKILL.md"]
    skill = parse_skill(f"skills/{sk.name}/SKILL.md", text, folder)
    hits = [h.rule for check in CHECKS.values() for h in check(skill)] + [h.rule for h in scan_secrets(text.splitlines())]
    assert hits == [rid] and sk.written_out
    assert yaml.safe_load(sk.files["expect.yaml"])["rules"] == [rid]
    assert sk.tier == RUBRIC.derive_tier([RUBRIC.rules[rid].severity]).lower()


def test_a_judgement_skeleton_marks_where_the_violation_goes():
    sk = skeleton(RUBRIC.rules["scope-single-purpose"], RUBRIC)
    assert not sk.written_out and VIOLATION_MARKER in sk.files["SKILL.md"] and sk.tier == "pass"


def test_skeletons_are_refused_inside_the_suite(tmp_path):
    suite = tmp_path / "fixtures"
    with pytest.raises(GateInputError, match="inside the suite or the reviewer"):
        write_skeletons(suite / "new", [skeleton(RUBRIC.rules["body-present"], RUBRIC)], [suite])
    assert not (suite / "new").exists()


def test_suggest_writes_one_folder_per_uncovered_rule(repo, tmp_path):
    out = tmp_path / "suggested"
    result = CliRunner().invoke(main, ["coverage", "--repo", str(repo), "--suggest", str(out)])
    assert result.exit_code == 0, result.output
    folders = sorted(p.parent.name for p in out.glob("*/*/SKILL.md"))
    assert "scope-single-purpose-example" in folders and "wrote" in result.output
    assert not list((repo / "fixtures").glob("*/*-example"))
    bad = CliRunner().invoke(main, ["coverage", "--repo", str(repo), "--suggest", str(repo / "fixtures" / "x")])
    assert bad.exit_code == 2 and "inside the suite or the reviewer" in bad.output


def test_a_skeleton_moved_into_the_suite_before_its_violation_is_written_is_refused(repo, tmp_path):
    out = tmp_path / "suggested"
    assert CliRunner().invoke(main, ["coverage", "--repo", str(repo), "--suggest", str(out)]).exit_code == 0
    [unwritten] = [p.parent for p in out.glob("*/scope-single-purpose-example/SKILL.md")]
    target = repo / "fixtures" / unwritten.parent.name / unwritten.name
    unwritten.rename(target)
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    assert result.exit_code == 2, result.output
    line = next(n for n, text in enumerate((target / "SKILL.md").read_text().splitlines(), 1) if VIOLATION_MARKER in text)
    assert f"SKILL.md:{line}" in result.output and "violation is not written yet" in result.output
    text = (target / "SKILL.md").read_text()
    (target / "SKILL.md").write_text("\n".join(t for t in text.splitlines() if VIOLATION_MARKER not in t) + "\n")
    assert "violation is not written yet" not in CliRunner().invoke(main, ["validate", "--repo", str(repo)]).output


def test_suggest_again_never_overwrites_a_skeleton_edited_since(repo, tmp_path):
    out = tmp_path / "suggested"
    assert CliRunner().invoke(main, ["coverage", "--repo", str(repo), "--suggest", str(out)]).exit_code == 0
    [skill] = out.glob("*/scope-single-purpose-example/SKILL.md")
    skill.write_text(skill.read_text() + "\nthe violation, written by hand\n")
    edited = skill.read_text()
    again = CliRunner().invoke(main, ["coverage", "--repo", str(repo), "--suggest", str(out)])
    assert again.exit_code == 2 and f"{skill}" in again.output and len(again.output.strip().splitlines()) == 1
    assert skill.read_text() == edited


def test_suggest_again_into_the_same_untouched_folder_is_fine(repo, tmp_path):
    out = tmp_path / "suggested"
    for _ in range(2):
        result = CliRunner().invoke(main, ["coverage", "--repo", str(repo), "--suggest", str(out)])
        assert result.exit_code == 0, result.output


def test_keep_edited_writes_the_rest_and_leaves_an_edited_skeleton_file_as_it_is(tmp_path):
    sk = skeleton(RUBRIC.rules["scope-single-purpose"], RUBRIC)
    [folder] = write_skeletons(tmp_path, [sk], [])
    (folder / "SKILL.md").write_text("written by hand\n")
    (folder / "expect.yaml").unlink()
    assert write_skeletons(tmp_path, [sk], [], keep_edited=True) == [folder]
    assert (folder / "SKILL.md").read_text() == "written by hand\n" and (folder / "expect.yaml").is_file()
