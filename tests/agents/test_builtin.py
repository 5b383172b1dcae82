"""The builtin reviewer: real reads, real lines, and verdicts that follow the rubric."""

import shutil
from pathlib import Path

import pytest
import yaml

from rubricgate.agents.base import AgentRequest
from rubricgate.agents.builtin import BuiltinAgent
from rubricgate.suite.rubric import DEFAULT_VOCABULARY, load_rubric, vocabulary_from
from rubricgate.models.config import Config
from rubricgate.models.transcript import MAX_RESULT_CHARS
from rubricgate.runner.workspace import RunTree, list_tree
from rubricgate.suite.cases import neutral_layout
from rubricgate.graders.contract import parse_verdict
from tests.conftest import ROOT, make_repo, set_severity

FIXTURES = sorted(p.parent for p in (ROOT / "fixtures").glob("*/*/SKILL.md"))
CHANGED = "reviewer/.changed-skills.txt"


def review(repo: Path, paths: list[str], overlay: dict | None = None, grade_with: Path | None = None,
           vocabulary=None, copy: bool = False):
    """Review `paths` as a run would: fixtures at their neutral paths, no suite in the workspace,
    read in layers (`copy`: in a full copy of the snapshot, as --keep-workspaces gives it)."""
    layout = neutral_layout(repo, Config(), paths, overlay or {}, "test")
    keep_out = {"fixtures", "evals", "tests", "bench", "reports", "baseline.json", "rubricgate.yaml"}
    tree = RunTree(repo, list_tree(repo, keep_out), sorted(layout["workspace_paths"].values()))
    ws = tree.workspace(layout["files"], layout["workspace_paths"], (CHANGED, layout["workspace_review"]),
                        keep=copy, read_in_process=True)
    assert ws.root.is_dir() == copy and bool(ws.layers) != copy
    try:
        request = AgentRequest(case_id="c", trial=1, workspace=ws.root, prompt_file=ws.root / "reviewer/prompts/evaluate.md",
                               rubric_file=ws.root / "reviewer/evaluator/references/rubric.md",
                               changed_files_file=ws.root / CHANGED, scratch=ws.scratch, vocabulary=vocabulary,
                               layers=ws.layers)
        transcript = BuiltinAgent().run(request)
    finally:
        tree.remove()
    rubric = load_rubric((grade_with or repo) / "reviewer/evaluator/references/rubric.md",
                         vocabulary=vocabulary or DEFAULT_VOCABULARY)
    return transcript, parse_verdict(transcript.final_text, rubric)


def test_there_are_enough_fixtures_per_tier():
    for tier in ("pass", "warn", "block"):
        assert len([f for f in FIXTURES if f.parent.name == tier]) >= 3


@pytest.fixture(scope="module")
def every_fixture_repo(tmp_path_factory) -> Path:
    """A repository of the reviewer and every fixture: a full copy of it is quick to make, where
    one of this checkout (its caches too) took most of each review below."""
    return make_repo(tmp_path_factory.mktemp("every-fixture") / "repo", commit=False,
                     fixtures=[f.relative_to(ROOT / "fixtures").as_posix() for f in FIXTURES])


@pytest.mark.parametrize("folder", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_gets_its_folder_tier(folder, every_fixture_repo):
    rel = folder.relative_to(ROOT).as_posix() + "/SKILL.md"
    transcript, parsed = review(every_fixture_repo, [rel])
    assert parsed.status == "ok" and not parsed.escalated
    assert parsed.effective_tier == folder.parent.name.upper(), transcript.final_text
    expect_file = folder / "expect.yaml"
    expected = yaml.safe_load(expect_file.read_text()) if expect_file.exists() else {}
    found = {f.rule for f in parsed.verdict.findings}
    assert set(expected.get("rules", [])) <= found
    assert not set(expected.get("absent_rules", [])) & found


@pytest.mark.parametrize("folder", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_read_in_layers_the_review_is_the_one_a_full_copy_gets(folder, every_fixture_repo):
    # A run reads the builtin's workspace in layers, never copied; --keep-workspaces copies it.
    paths = [f"{folder.relative_to(ROOT)}/SKILL.md"]
    layered, copied = review(every_fixture_repo, paths)[0], review(every_fixture_repo, paths, copy=True)[0]
    assert layered.final_text == copied.final_text
    assert [(c.name, c.input, c.result, c.status) for c in layered.tool_calls] == \
        [(c.name, c.input, c.result, c.status) for c in copied.tool_calls]


def test_findings_quote_the_real_line():
    _, parsed = review(ROOT, ["fixtures/block/data-loader/SKILL.md"])
    lines = (ROOT / "fixtures/block/data-loader/SKILL.md").read_text().splitlines()
    for f in parsed.verdict.findings:
        assert f.quote.strip() and f.quote.strip() in lines[f.line - 1], f


def test_lowering_a_critical_rule_changes_the_verdict(tmp_path):
    repo = make_repo(tmp_path / "r")
    set_severity(repo, "fm-description-required", "warning")
    _, parsed = review(repo, ["fixtures/block/data-loader/SKILL.md"])
    f = next(f for f in parsed.verdict.findings if f.rule == "fm-description-required")
    assert f.severity == "warning" and parsed.effective_tier != "BLOCK"


def test_transcript_records_reads_globs_and_greps_per_phase():
    transcript, _ = review(ROOT, ["fixtures/pass/weekly-revenue-summary/SKILL.md"])
    names = [c.name for c in transcript.tool_calls]
    assert names[:2] == ["read", "read"] and "glob" in names and "grep" in names
    assert set(names) <= {"read", "glob", "grep"}
    assert transcript.steps == 6 and transcript.termination == "completed"
    assert max(c.step for c in transcript.tool_calls) == transcript.steps - 1


def test_when_no_listed_file_can_be_read_there_is_no_verdict():
    # It said "No mechanical rule is violated in 1 file(s)": a PASS on a file it never read.
    transcript, parsed = review(ROOT, ["fixtures/pass/nope/SKILL.md"])
    missing = [c for c in transcript.tool_calls if c.status == "error"]
    assert [c.result for c in missing] == [f"{missing[0].input['file_path']}: no such file"]
    assert transcript.termination == "crashed" and "1 of the files to review could not be read" in transcript.error
    assert parsed.status != "ok" and parsed.effective_tier is None


def test_a_missing_listed_file_beside_a_read_one_leaves_no_verdict_either():
    # A PASS from the file it read said nothing of the one it could not.
    transcript, parsed = review(ROOT, ["fixtures/pass/weekly-revenue-summary/SKILL.md", "fixtures/pass/nope/SKILL.md"])
    assert [c.status for c in transcript.tool_calls if c.name == "read"].count("error") == 1
    assert transcript.termination == "crashed" and parsed.effective_tier is None


def test_overlay_skill_is_reviewed():
    skill = "---\nname: Tmp_Skill\ndescription: Does a thing. Use when asked.\n---\n\n1. a\n2. b\n3. c\n"
    _, parsed = review(ROOT, ["skills/tmp-skill/SKILL.md"], {"skills/tmp-skill/SKILL.md": skill})
    assert {f.rule for f in parsed.verdict.findings} >= {"fm-name-format"} and parsed.effective_tier == "BLOCK"


def test_a_secret_in_a_bundled_file_whose_name_holds_a_backslash_is_found(tmp_path):
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    refs = repo / "fixtures/pass/weekly-revenue-summary/references"
    refs.mkdir(exist_ok=True)
    (refs / "notes\\prod.md").write_text("token: FAKE-snowflake-pat-0000-DoNotUse-0000\n")
    _, parsed = review(repo, ["fixtures/pass/weekly-revenue-summary/SKILL.md"])
    assert parsed.effective_tier == "BLOCK" and "secret-in-file" in {f.rule for f in parsed.verdict.findings}


def test_a_skill_folder_named_like_a_glob_pattern_is_scanned_for_secrets(tmp_path):
    repo = make_repo(tmp_path / "repo", fixtures=[])
    folder = repo / "fixtures/pass/gl[1]"
    shutil.copytree(ROOT / "fixtures/pass/weekly-revenue-summary", folder)
    (folder / "references").mkdir(exist_ok=True)
    (folder / "references/env.md").write_text("token: FAKE-snowflake-pat-0000-DoNotUse-0000\n")
    transcript, parsed = review(repo, ["fixtures/pass/gl[1]/SKILL.md"])
    assert "secret-in-file" in {f.rule for f in parsed.verdict.findings}, transcript.final_text


SECRET = "token: FAKE-snowflake-pat-0000-DoNotUse-0000\n"


@pytest.mark.parametrize(("name", "data"), [("key.pem", SECRET.encode()), ("notes.md ", SECRET.encode()),
                                            ("id_rsa", SECRET.encode()), ("a.md", b"\x00\n" + SECRET.encode()),
                                            ("b.md", SECRET.encode("utf-16")), ("logo.png", b"\x89PNG\x00\n" + SECRET.encode())])
def test_a_secret_in_any_bundled_file_is_found_whatever_its_name_or_bytes(tmp_path, name, data):
    # A suffix list passed over key.pem and `notes.md `; skipping a file with a NUL hid the line after it.
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    refs = repo / "fixtures/pass/weekly-revenue-summary/references"
    refs.mkdir(exist_ok=True)
    (refs / name).write_bytes(data)
    transcript, parsed = review(repo, ["fixtures/pass/weekly-revenue-summary/SKILL.md"])
    assert parsed.effective_tier == "BLOCK" and "secret-in-file" in {f.rule for f in parsed.verdict.findings}


def test_each_bundled_file_is_scanned_up_to_a_bound(tmp_path, monkeypatch):
    # The builtin runs in rubricgate's own process: a 30 MB asset was read whole (6 s, 150 MB).
    import rubricgate.agents.builtin as builtin

    monkeypatch.setattr(builtin, "SCANNED_BYTES", 4096)
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    refs = repo / "fixtures/pass/weekly-revenue-summary/references"
    refs.mkdir(exist_ok=True)
    (refs / "early.md").write_bytes(SECRET.encode() + b"x" * 100_000)
    (refs / "late.md").write_bytes(b"y\n" * 4000 + SECRET.encode())
    transcript, parsed = review(repo, ["fixtures/pass/weekly-revenue-summary/SKILL.md"])
    assert {f.file.rsplit("/", 1)[-1] for f in parsed.verdict.findings if f.rule == "secret-in-file"} == {"early.md"}
    greps = {c.input["path"].rsplit("/", 1)[-1]: c.result for c in transcript.tool_calls if c.name == "grep"}
    assert greps["late.md"].endswith("(scanned the first 0 MB of it)") and "scanned" not in greps["SKILL.md"]


def test_unparseable_rubric_ends_in_crash_not_verdict(tmp_path):
    repo = make_repo(tmp_path / "r")
    (repo / "reviewer/evaluator/references/rubric.md").write_text("no table\n")
    transcript, parsed = review(repo, ["fixtures/block/data-loader/SKILL.md"], grade_with=ROOT)
    assert transcript.termination == "crashed" and parsed.status == "missing"


def test_root_level_skill_bundles_only_its_own_folders():
    skill = "---\nname: root\ndescription: Does a thing. Use when asked.\n---\n\n1. a\n2. b\n3. c\n"
    transcript, parsed = review(ROOT, ["SKILL.md"], {"SKILL.md": skill})
    grepped = [c.input["path"] for c in transcript.tool_calls if c.name == "grep"]
    assert grepped == ["SKILL.md"] and parsed.effective_tier == "PASS"


def test_the_builtin_speaks_the_teams_vocabulary_and_applies_its_tier_rules(tmp_path):
    from rubricgate.models.config import TiersConfig

    repo = make_repo(tmp_path / "r")
    rubric = repo / "reviewer/evaluator/references/rubric.md"
    text = rubric.read_text()
    for old, new in (("| critical |", "| major |"), ("| warning |", "| minor |"), ("| suggestion |", "| minor |")):
        text = text.replace(old, new)
    rubric.write_text(text)
    vocabulary = vocabulary_from(TiersConfig.model_validate(
        {"severities": {"major": "warning", "minor": "suggestion"}, "rules": [{"severity": "major", "tier": "WARN"}]}))
    transcript, parsed = review(repo, ["fixtures/block/data-loader/SKILL.md"], vocabulary=vocabulary)
    assert transcript.termination == "completed", transcript.error
    assert {f.severity for f in parsed.verdict.findings} == {"major"}
    assert (parsed.verdict.tier, parsed.effective_tier) == ("WARN", "WARN")  # "Any major -> WARN", never BLOCK


def test_each_call_keeps_what_it_returned_the_file_the_listing_and_the_matching_lines():
    fixture = ROOT / "fixtures/block/support-ticket-classifier/SKILL.md"
    transcript, _ = review(ROOT, ["fixtures/block/support-ticket-classifier/SKILL.md"])
    skill = transcript.tool_calls[0].result.strip()  # the changed-files list: the skill's path in the workspace
    read = next(c for c in transcript.tool_calls if c.input.get("file_path") == skill)
    assert read.result == fixture.read_text()[:MAX_RESULT_CHARS]
    assert skill in next(c for c in transcript.tool_calls if c.name == "glob").result.splitlines()
    grep = next(c for c in transcript.tool_calls if c.name == "grep" and c.input["path"] == skill)
    hit = next(n for n, line in enumerate(fixture.read_text().splitlines(), 1) if "sk-" in line or "AKIA" in line)
    assert grep.result.startswith(f"{skill}:{hit}:")


def test_a_repository_whose_rubric_has_no_rule_table_is_refused_for_the_builtin_before_any_trial(repo):
    from rubricgate.agents.builtin import check_can_review
    from rubricgate.errors import GateInputError
    from rubricgate.suite.config import load_config

    config = load_config(repo)
    check_can_review(repo, config)  # this repository's own rubric: a table the builtin reads
    (repo / config.reviewer.rubric).write_text("Flag SQL built by string formatting.\nFlag debug prints.\n")
    with pytest.raises(GateInputError) as err:
        check_can_review(repo, config)
    line = err.value.one_line()
    assert line.startswith(f"{config.reviewer.rubric}: the builtin reviewer cannot read its rule table"), line
    assert "not --agent builtin" in line
