"""Verdicts from the reviewer's own answer (graders/extract.py): failure paths first."""

from __future__ import annotations

import textwrap

import pytest

from rubricgate.graders import grade_trial
from rubricgate.graders.extract import read_verdict
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric
from rubricgate.models.transcript import Transcript
from rubricgate.models.verdict_config import VerdictConfig
from rubricgate.suite.rubric import DEFAULT_VOCABULARY, RubricSpec, Rule

RUBRIC = RubricSpec("reviewer/rules.md", {
    "sql-injection": Rule("sql-injection", "critical", "judgement", "", 0),
    "missing-tests": Rule("missing-tests", "warning", "judgement", "", 0),
    "naming": Rule("naming", "suggestion", "judgement", "", 0),
}, 3, DEFAULT_VOCABULARY)
RULES = [{"id": "sql-injection", "match": "(?i)sql injection|unsafe query"},
         {"id": "missing-tests", "match": "(?i)tests?"}, {"id": "naming", "match": "(?i)naming"}]
PR_AGENT = {"format": "yaml", "rules": RULES,
            "findings": {"path": "review.key_issues_to_review", "title": "issue_header", "file": "relevant_file",
                         "line": "start_line", "issue": "issue_content"}}


def config(**overrides) -> VerdictConfig:
    return VerdictConfig.model_validate({**PR_AGENT, **overrides})


def answer(issues: str) -> str:
    return "Here is my review.\n```yaml\nreview:\n  estimated_effort_to_review_[1-5]: 2\n" + textwrap.indent(
        textwrap.dedent(issues), "  ") + "```\n"


SQL = """key_issues_to_review:
  - relevant_file: app/db.py
    issue_header: Possible SQL Injection
    issue_content: the query is built by string concatenation
    start_line: 12
"""


@pytest.mark.parametrize(("text", "status", "needle"), [
    ("", "missing", "empty"),
    ("```yaml\nreview: [unclosed\n```", "malformed", "not valid YAML"),
    ("just prose, no structure", "malformed", "a str, not a mapping"),
    (answer("key_issues_to_review: not-a-list\n"), "invalid", "review.key_issues_to_review is not a list"),
    (answer("key_issues_to_review:\n  - 42\n"), "invalid", "finding 1 is a int"),
])
def test_an_unreadable_answer_is_never_a_verdict(text, status, needle):
    got = read_verdict(text, RUBRIC, config())
    assert got.status == status and needle in got.error and got.effective_tier is None


def test_a_code_block_inside_an_issue_does_not_end_the_yaml_block():
    """An issue whose text shows a fix in its own ```python block: the answer's YAML goes on past it,
    and the SQL injection after it is read (it ended the block there, and the answer was a PASS)."""
    text = ("```yaml\nreview:\n  key_issues_to_review:\n    - issue_header: Naming\n      issue_content: |\n"
            "        rename it:\n        ```python\n        total = 0\n        ```\n"
            + textwrap.indent(SQL.split("\n", 1)[1], "  ") + "```\n")
    got = read_verdict(text, RUBRIC, config())
    assert got.status == "ok" and got.effective_tier == "BLOCK", got
    assert [f.rule for f in got.verdict.findings] == ["naming", "sql-injection"]


def test_only_a_closed_yaml_block_is_the_answer():
    """An answer cut off inside its block is not read as the YAML it had so far."""
    got = read_verdict("prose\n```yaml\nreview:\n  key_issues_to_review: []\n", RUBRIC, config())
    assert got.status != "ok", got


def test_a_tier_value_outside_the_map_or_absent_is_invalid():
    tiered = config(tier={"path": "review.verdict", "map": {"approve": "PASS", "request changes": "BLOCK"}})
    assert "'maybe' is not in verdict.tier.map" in read_verdict(answer("verdict: maybe\n"), RUBRIC, tiered).error
    assert read_verdict(answer("key_issues_to_review: []\n"), RUBRIC, tiered).status == "invalid"


MARKDOWN = {"format": "markdown",
            "tier": {"pattern": r"(?im)^verdict:\s*(.+)$", "map": {"approve": "PASS", "request changes": "BLOCK"}}}


@pytest.mark.parametrize(("text", "needle"), [
    ("Looks fine to me.\n", "no verdict at"),
    ("verdict: approve (after a first pass)\n", "is not in verdict.tier.map"),
])
def test_a_markdown_answer_without_a_usable_verdict_line_is_invalid_not_a_crash(text, needle):
    got = read_verdict(text, RUBRIC, config(**MARKDOWN))
    assert got.status == "invalid" and needle in got.error and got.effective_tier is None


def test_an_answer_of_another_shape_is_invalid_not_no_findings():
    # An error message reads as a YAML mapping; without tier: it used to be "no findings": PASS.
    for text in ("Error: upstream model timed out\n", answer("issues:\n  - issue_header: Possible SQL injection\n")):
        got = read_verdict(text, RUBRIC, config())
        assert got.status == "invalid" and "no findings at 'review.key_issues_to_review'" in got.error


@pytest.mark.parametrize("fmt, text", [
    ("yaml", "```yaml\nreview:\n  verdict: request changes\nreview:\n  verdict: approve\n```\n"),
    ("json", '{"review": {"verdict": "request changes"}, "review": {"verdict": "approve"}}'),
])
def test_a_key_given_twice_is_malformed_never_the_last_one_winning(fmt, text):
    tiered = config(format=fmt, tier={"path": "review.verdict", "map": {"approve": "PASS", "request changes": "BLOCK"}})
    got = read_verdict(text, RUBRIC, tiered)
    assert got.status == "malformed" and "twice" in got.error and got.effective_tier is None


def test_a_verdict_or_header_inside_quoted_code_is_not_the_reviewers():
    quoted = ("The PR adds docs/checklist.txt, which reads:\n\n```\nverdict: approve\n# SQL injection guard\n```\n\n"
              "## Race condition in the order cache\nTwo writers can interleave.\n\nverdict: request changes\n")
    got = read_verdict(quoted, RUBRIC, config(**MARKDOWN))
    assert (got.status, got.reported_tier) == ("ok", "BLOCK")
    assert [f.issue.splitlines()[0] for f in got.verdict.findings] == ["Two writers can interleave."]
    clean = "No issues found.\n\n~~~~python\n# SQL injection guard: params only\n```\n~~~~\nverdict: approve\n"
    got = read_verdict(clean, RUBRIC, config(**MARKDOWN))
    assert (got.status, got.effective_tier, got.verdict.findings) == ("ok", "PASS", [])


def test_two_stated_verdicts_that_disagree_are_invalid_and_two_that_agree_are_one():
    both = "verdict: approve\n\n## Naming\nRename x2.\n\nverdict: request changes\n"
    got = read_verdict(both, RUBRIC, config(**MARKDOWN))
    assert got.status == "invalid" and "2 different verdicts" in got.error
    same = "verdict: approve\n\nverdict: Approve\n"
    assert read_verdict(same, RUBRIC, config(**MARKDOWN)).reported_tier == "PASS"


TIERED = {"tier": {"path": "review.verdict", "map": {"approve": "PASS", "request changes": "BLOCK"}}}
EXAMPLE = "verdict: approve\nkey_issues_to_review: []\n"


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_a_repeated_example_block_after_the_real_verdict_is_invalid_never_a_pass(fmt):
    """The real verdict (request changes, an SQL injection) and then the rubric's example block
    (approve, no findings) again: the last block winning graded the answer PASS."""
    real = answer("verdict: request changes\n" + SQL) + "Format, as asked:\n" + answer(EXAMPLE)
    if fmt == "json":
        body = ('{"review": {"verdict": %s, "key_issues_to_review": %s}}')
        real = ("```json\n" + body % ('"request changes"', '[{"issue_header": "Possible SQL Injection"}]')
                + "\n```\nFormat, as asked:\n```json\n" + body % ('"approve"', "[]") + "\n```\n")
    got = read_verdict(real, RUBRIC, config(format=fmt, **TIERED))
    assert got.status == "invalid" and "different verdicts" in got.error and got.effective_tier is None, got


def test_repeated_blocks_with_one_verdict_are_one_and_a_quoted_block_of_another_shape_is_not_a_verdict():
    twice = answer("verdict: request changes\n" + SQL) + "Again:\n" + answer("verdict: request changes\n" + SQL)
    got = read_verdict(twice, RUBRIC, config(**TIERED))
    assert (got.status, got.effective_tier) == ("ok", "BLOCK"), got
    quoted = "The PR's config reads:\n```yaml\nverdict: approve\n```\n" + answer("verdict: request changes\n" + SQL)
    got = read_verdict(quoted, RUBRIC, config(**TIERED))
    assert (got.status, got.effective_tier) == ("ok", "BLOCK"), got


def test_a_block_of_another_shape_after_the_verdict_is_the_answer_and_invalid():
    """The last block is the answer (docs/code-review.md): read past, a misspelt verdict block after
    the rubric's example repeated would read as that example's approve."""
    after = answer("verdict: request changes\n" + SQL) + "The PR's config reads:\n```yaml\nretries: 3\n```\n"
    got = read_verdict(after, RUBRIC, config(**TIERED))
    assert got.status == "invalid" and got.effective_tier is None, got
    misspelt = answer("verdict: approve\n" + "findings: []\n") + "Mine:\n```yaml\nverdcit: request changes\n```\n"
    got = read_verdict(misspelt, RUBRIC, config(**TIERED))
    assert got.status == "invalid" and got.effective_tier is None, got


def test_inline_code_at_the_start_of_a_line_opens_no_fence():
    # "```foo()``` looks fine" is inline code: read as an unclosed fence it hid the verdict after it
    text = "```foo()``` looks fine\n\n## Missing tests\nNone for x.\n\nverdict: request changes\n"
    got = read_verdict(text, RUBRIC, config(**MARKDOWN))
    assert (got.status, got.reported_tier, [f.rule for f in got.verdict.findings]) == ("ok", "BLOCK", ["missing-tests"])


def test_fenced_spans_close_as_commonmark_says():
    from rubricgate.graders.extract import fenced_spans

    text = "a\n````\n```\nin\n````\nb\n~~~\nopen to the end\n"
    spans = fenced_spans(text)
    assert [text[a:b].splitlines()[0] for a, b in spans] == ["````", "~~~"]
    assert spans[0][1] == text.index("b\n") and spans[1][1] == len(text)


def test_free_text_headers_become_rule_findings_and_the_tier_is_derived():
    got = read_verdict(answer(SQL), RUBRIC, config())
    assert got.status == "ok" and got.effective_tier == "BLOCK" and not got.escalated
    f = got.verdict.findings[0]
    assert (f.rule, f.severity, f.file, f.line) == ("sql-injection", "critical", "app/db.py", 12)
    assert "string concatenation" in f.issue
    clean = read_verdict(answer("key_issues_to_review: []\n"), RUBRIC, config())
    assert (clean.status, clean.effective_tier) == ("ok", "PASS")


def test_an_under_reported_tier_is_escalated_never_lowered():
    tiered = config(tier={"path": "review.verdict", "map": {"Approve": "PASS", "Block": "BLOCK"}})
    up = read_verdict(answer("verdict: approve\n" + SQL), RUBRIC, tiered)
    assert (up.reported_tier, up.effective_tier, up.escalated) == ("PASS", "BLOCK", True)
    kept = read_verdict(answer("verdict: block\nkey_issues_to_review: []\n"), RUBRIC, tiered)
    assert (kept.reported_tier, kept.effective_tier) == ("BLOCK", "BLOCK")


def test_with_escalate_false_an_approve_beside_a_critical_finding_is_graded_as_the_approve_it_is():
    """A bot whose pipeline acts on its own decision: graded BLOCK, its approve passed every case
    expecting BLOCK although it approved the SQL injection."""
    stated = config(tier={"path": "review.verdict", "map": {"Approve": "PASS", "Block": "BLOCK"}}, escalate=False)
    got = read_verdict(answer("verdict: approve\n" + SQL), RUBRIC, stated)
    assert (got.reported_tier, got.effective_tier, got.escalated) == ("PASS", "PASS", False)
    assert any(w.endswith("PASS is graded (verdict.escalate: false)") and "derive BLOCK" in w for w in got.warnings)
    kept = read_verdict(answer("verdict: block\n" + SQL), RUBRIC, stated)
    assert (kept.effective_tier, kept.warnings) == ("BLOCK", [])


def test_escalate_false_holds_for_the_contract_too_and_escalation_stays_the_default():
    block = '```json\n{"tier": "PASS", "findings": [{"severity": "critical", "rule": "sql-injection", ' \
            '"file": "a.py", "line": 1, "quote": "q", "issue": "i", "fix": "f"}]}\n```'
    assert read_verdict(block, RUBRIC, None).effective_tier == "BLOCK"
    assert read_verdict(block, RUBRIC, VerdictConfig()).effective_tier == "BLOCK"
    assert read_verdict(block, RUBRIC, VerdictConfig(escalate=False)).effective_tier == "PASS"


def test_a_severity_the_rubric_does_not_know_is_a_verdict_warning_not_a_silent_nothing():
    """A bot's own word ("high") for a finding no rule names raised no tier and said nothing."""
    data = config(findings={"path": "comments", "severity": "level"}, unmatched="ignore", format="json")
    got = read_verdict('```json\n{"comments": [{"title": "Hard-coded password", "level": "high"}]}\n```',
                       RUBRIC, data)
    assert got.effective_tier == "PASS"
    assert got.warnings == ["finding 'Hard-coded password': severity 'high' is none of the rubric's (critical, "
                            "warning, suggestion) and raises no tier (tiers.severities maps your own words)"]


def test_a_header_no_rule_names_is_kept_with_a_warning_and_changes_no_tier():
    got = read_verdict(answer("key_issues_to_review:\n  - issue_header: Typo in docstring\n"), RUBRIC, config())
    assert got.effective_tier == "PASS" and got.verdict.findings[0].rule == ""
    assert got.warnings == ["finding 'Typo in docstring' matches no rule of verdict.rules"]
    quiet = read_verdict(answer("key_issues_to_review:\n  - issue_header: Typo\n"), RUBRIC, config(unmatched="ignore"))
    assert quiet.warnings == []


def test_markdown_headers_and_a_tier_pattern():
    md = config(format="markdown", tier={"pattern": r"(?im)^verdict:\s*(\w+)", "map": {"ok": "PASS", "no": "BLOCK"}})
    text = "## Missing tests for parse()\nNothing covers the new branch.\n\n### naming: `x2`\nRename.\n\nVerdict: ok\n"
    got = read_verdict(text, RUBRIC, md)
    assert [f.rule for f in got.verdict.findings] == ["missing-tests", "naming"]
    assert (got.reported_tier, got.effective_tier, got.escalated) == ("PASS", "WARN", True)
    assert "Nothing covers the new branch." in got.verdict.findings[0].issue


def test_json_of_another_shape_with_rule_ids():
    shaped = config(format="json", findings={"path": "result.problems", "rule": "code", "title": "title"})
    text = '{"result": {"problems": [{"code": "missing-tests", "title": "x"}, {"code": "naming"}]}}'
    got = read_verdict(text, RUBRIC, shaped)
    assert [f.rule for f in got.verdict.findings] == ["missing-tests", "naming"] and got.effective_tier == "WARN"


def test_the_contract_stays_the_default_and_the_builtin_always_speaks_it():
    contract = '```json\n{"tier": "PASS", "findings": []}\n```'
    assert read_verdict(contract, RUBRIC, None).effective_tier == "PASS"
    assert read_verdict(contract, RUBRIC, config(), agent="builtin").effective_tier == "PASS"
    assert read_verdict(contract, RUBRIC, config()).status == "malformed"  # not the reviewer's YAML


def _hook(tmp_path, body: str) -> VerdictConfig:
    path = tmp_path / "hook.py"
    path.write_text(textwrap.dedent(body))
    return VerdictConfig.model_validate({"format": "hook", "hook": f"{path}:extract", "rules": RULES})


def test_a_hook_that_cannot_read_the_answer_is_malformed_and_a_buggy_hook_errors_the_trial(tmp_path):
    reader = _hook(tmp_path, "def extract(text):\n    raise ValueError('no verdict section')\n")
    assert read_verdict("anything", RUBRIC, reader).status == "malformed"
    buggy = _hook(tmp_path, "def extract(text):\n    return text['x']\n")
    got = read_verdict("anything", RUBRIC, buggy)
    assert got.status == "extractor_error" and "TypeError" in got.error
    case = CaseSpec(id="c", source="task", origin="t", review=["a"], expect=Expect(tier="PASS"), rubric=Rubric())
    grades = grade_trial(case, Transcript(agent="command", steps=1, final_text="anything"), got, ["verdict"])
    assert grades["verdict"].category == "errored" and "TypeError" in grades["verdict"].reason


def test_a_hook_that_calls_sys_exit_errors_the_trial_and_never_ends_the_run(tmp_path):
    for code in ("0", "1", "None"):
        exiting = _hook(tmp_path, f"import sys\ndef extract(text):\n    sys.exit({code})\n")
        got = read_verdict("anything", RUBRIC, exiting)
        assert got.status == "extractor_error" and "tried to exit" in got.error, got
    closing = _hook(tmp_path, "def extract(text):\n    raise GeneratorExit\n")
    got = read_verdict("anything", RUBRIC, closing)
    assert got.status == "extractor_error" and "GeneratorExit" in got.error, got


def test_a_hook_maps_the_answer_through_the_same_rules(tmp_path):
    hook = _hook(tmp_path, """
        def extract(text):
            if "LGTM" in text:
                return {"findings": []}
            return {"findings": [{"title": line[2:]} for line in text.splitlines() if line.startswith("- ")]}
        """)
    assert read_verdict("LGTM", RUBRIC, hook).effective_tier == "PASS"
    got = read_verdict("- unsafe query in db.py\n- naming", RUBRIC, hook)
    assert [f.rule for f in got.verdict.findings] == ["sql-injection", "naming"] and got.effective_tier == "BLOCK"
    assert read_verdict("x", RUBRIC, _hook(tmp_path, "def extract(text):\n    return None\n")).status == "missing"


def test_a_windows_answer_is_read_as_its_lines_say():
    """CRLF line ends: the documented `[ \\t]*$` line pattern never met its \\r, and every answer was
    invalid."""
    config = VerdictConfig.model_validate({"format": "markdown", "headers": "(?m)^### (.+)$",
                                           "tier": {"pattern": "(?m)^(LGTM|NEEDS WORK)[ \t]*$",
                                                    "map": {"LGTM": "PASS", "NEEDS WORK": "BLOCK"}}})
    got = read_verdict("Looked at it.\r\n\r\nNEEDS WORK\r\n", RUBRIC, config)
    assert got.status == "ok" and got.effective_tier == "BLOCK", got


def test_a_verdict_word_is_read_whatever_the_spaces_between_its_words():
    config = VerdictConfig.model_validate({"format": "yaml", "tier": {"path": "decision",
                                                                      "map": {"request changes": "BLOCK"}}})
    got = read_verdict("```yaml\ndecision: Request   changes\nfindings: []\n```\n", RUBRIC, config)
    assert got.status == "ok" and got.effective_tier == "BLOCK", got


@pytest.mark.parametrize("answer", [
    "1. My review:\n\n    ```yaml\n    decision: request changes\n    findings: []\n    ```\n",
    "- ```yaml\n  decision: request changes\n  findings: []\n  ```\n",
    "> ```yaml\n> decision: request changes\n> findings: []\n> ```\n",
])
def test_a_block_inside_a_list_item_or_a_quote_is_the_answer(answer):
    """A fence four spaces in under a list item, after a list marker or in a block quote went unread
    once fences were read as CommonMark's top level: every such answer was malformed."""
    config = VerdictConfig.model_validate({"format": "yaml", "tier": {"path": "decision",
                                                                      "map": {"request changes": "BLOCK"}}})
    got = read_verdict(answer, RUBRIC, config)
    assert got.status == "ok" and got.effective_tier == "BLOCK", got


DECISION = {"format": "json", "rules": RULES, "findings": {"path": "comments", "absent": "none"},
            "tier": {"path": "decision", "map": {"approve": "PASS", "request_changes": "BLOCK", "comment": "WARN"}}}


def test_findings_absent_none_needs_a_stated_verdict_to_show_the_answers_shape():
    with pytest.raises(ValueError, match="findings.absent: none needs tier"):
        VerdictConfig.model_validate({**DECISION, "tier": None})
    decided = VerdictConfig.model_validate(DECISION)
    for text in ('{"error": "upstream model timed out"}', '{"comments": []}'):  # no verdict: never "no findings"
        assert read_verdict(text, RUBRIC, decided).status == "invalid"
    got = read_verdict('{"decision": "approve", "comments": "none"}', RUBRIC, decided)
    assert got.status == "invalid" and "comments is not a list" in got.error  # there, but not a list


def test_a_decision_alone_states_no_findings_when_findings_absent_is_none():
    # {"decision": "approve"}, a reviewer answering in a decision alone (or leaving an empty list
    # out): read as no findings, where by default it is an answer of another shape
    decided = VerdictConfig.model_validate(DECISION)
    got = read_verdict('```json\n{"decision": "approve"}\n```', RUBRIC, decided)
    assert got.status == "ok" and got.effective_tier == "PASS" and got.verdict.findings == []
    assert read_verdict('{"decision": "Request_Changes"}', RUBRIC, decided).effective_tier == "BLOCK"
    listed = read_verdict('{"decision": "approve", "comments": [{"title": "unsafe query"}]}', RUBRIC, decided)
    assert listed.effective_tier == "BLOCK" and listed.escalated  # findings still read, and cross-checked
    strict = VerdictConfig.model_validate({**DECISION, "findings": {"path": "comments"}})
    assert read_verdict('{"decision": "approve"}', RUBRIC, strict).status == "invalid"


def _documented_lgtm() -> VerdictConfig:
    """The LGTM / NEEDS WORK reviewer's `verdict:` as docs/code-review.md gives it."""
    import re
    from pathlib import Path

    import yaml

    doc = (Path(__file__).resolve().parents[2] / "docs" / "code-review.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", doc, re.S) if "LGTM" in b)
    return VerdictConfig.model_validate({**yaml.safe_load(textwrap.dedent(block))["verdict"], "rules": RULES})


@pytest.mark.parametrize("line", ["NEEDS WORK", "Needs work", "**NEEDS WORK**", "NEEDS  WORK ", "  needs work"])
def test_the_documented_verdict_line_pattern_reads_the_word_however_it_is_cased_spaced_or_bolded(line):
    # The map reads its words case-insensitively, spaces not counted; the pattern the docs gave
    # was case- and space-exact, so a reviewer's "Needs work" was an invalid answer, its failure.
    got = read_verdict(f"## unsafe query in find()\nbuilt by concatenation\n\n{line}\n", RUBRIC, _documented_lgtm())
    assert (got.status, got.reported_tier) == ("ok", "BLOCK"), got.error


def test_the_documented_verdict_line_pattern_reads_no_word_inside_a_sentence():
    got = read_verdict("Not LGTM yet: the query is unsafe.\n\nNEEDS WORK\n", RUBRIC, _documented_lgtm())
    assert (got.status, got.reported_tier) == ("ok", "BLOCK")
