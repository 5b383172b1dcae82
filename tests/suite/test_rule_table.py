"""Rules named in rubricgate.yaml (`verdict.rules`) and the verdict hook, as the load stage reads
them: every problem one line naming the file, field and fix; the rules located in the reviewer's files."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from rubricgate.cli import main
from rubricgate.suite.load import load_all
from tests.conftest import make_repo

RULES = [{"id": "sql-injection", "severity": "critical", "match": "(?i)sql injection"},
         {"id": "missing-tests", "severity": "warning", "match": "(?i)missing tests", "statement": "(?i)new code without tests"}]
PROMPT = "# Review\n\nReport under headers.\n\n- Flag SQL injection: queries built from strings.\n- Flag new code without tests.\n"


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path / "repo", fixtures=["pass/weekly-revenue-summary"])
    (repo / "fixtures/pass/weekly-revenue-summary/expect.yaml").unlink(missing_ok=True)
    (repo / "reviewer/prompts/evaluate.md").write_text(PROMPT)
    return repo


def configure(repo, verdict: dict, **reviewer) -> None:
    config = yaml.safe_load((repo / "rubricgate.yaml").read_text())
    config["verdict"] = verdict
    config["reviewer"].update(reviewer)
    (repo / "rubricgate.yaml").write_text(yaml.safe_dump(config))


def validate(repo) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", "--repo", str(repo)])
    return result.exit_code, result.output


@pytest.mark.parametrize(("verdict", "needle"), [
    ({"format": "yaml", "rules": [{**RULES[0], "severity": "major"}]},
     "rubricgate.yaml: verdict.rules[0].severity: severity 'major' of sql-injection"),
    ({"format": "yaml", "rules": [{**RULES[0], "match": "(unclosed"}]}, "is not a regular expression"),
    ({"format": "yaml", "rules": [RULES[0], {"id": "x", "match": "x"}]}, "some rules give a severity and some do not"),
    ({"format": "yaml", "rules": [{"id": "no-such-rule", "match": "x"}]}, "verdict.rules[0].id: unknown rule id 'no-such-rule'"),
    ({"format": "hook"}, "format: hook goes with hook: FILE.py:FUNCTION"),
    ({"format": "hook", "hook": "../outside.py:extract"}, "verdict.hook: path '../outside.py' contains '..'"),
    ({"format": "hook", "hook": "reviewer/nope.py:extract"}, "'reviewer/nope.py' is not a file in the repository"),
    ({"format": "yaml", "tier": {"map": {"ok": "PASS"}}}, "give exactly one of path and pattern"),
    # read from neither: every markdown answer was "no verdict at 'decision'", the hook's tier used unseen
    ({"format": "markdown", "tier": {"path": "decision", "map": {"ok": "PASS"}}},
     "verdict: tier.path names a key of a yaml or json answer; a markdown answer has none"),
    ({"format": "hook", "hook": "reviewer/verdict.py:extract", "tier": {"pattern": "(ok)", "map": {"ok": "PASS"}}},
     "verdict: tier: is not read under format: hook"),
    # the map is read case-insensitively, spaces ignored: two spellings of one word were one entry,
    # the last silently winning (approve -> BLOCK turned into approve -> PASS by a later "Approve")
    ({"format": "yaml", "tier": {"path": "decision", "map": {"approve": "BLOCK", "Approve": "PASS"}}},
     "verdict.tier.map: 'Approve' and 'approve' are one verdict word"),  # the file's order
    ({"format": "yaml", "tier": {"path": "decision", "map": {"lgtm": "PASS", " LGTM ": "PASS"}}},
     "verdict.tier.map: ' LGTM ' and 'lgtm' are one verdict word"),
    # `yes: PASS` unquoted: YAML's boolean True, "Input should be a valid string" at map.0.[key]
    ({"format": "yaml", "tier": {"path": "decision", "map": {True: "PASS"}}},
     "verdict.tier.map: the key True is a boolean (YAML reads yes, no, on and off unquoted so)"),
    ({"format": "yaml", "tier": {"path": "decision", "map": {1: "PASS"}}}, "the key 1 is a number"),
    # spaces between the words do not count either: `request  changes` was an invalid answer
    ({"format": "yaml", "tier": {"path": "decision", "map": {"request changes": "BLOCK", "Request  changes": "PASS"}}},
     "'Request  changes' and 'request changes' are one verdict word"),
    # a title pattern matching an empty text names every finding: each became this rule
    ({"format": "yaml", "rules": [{**RULES[0], "match": "sql injection|"}]}, "matches an empty text"),
    ({"format": "yaml", "rules": [{**RULES[0], "match": ".*"}]}, "matches an empty text"),
])
def test_a_bad_verdict_section_is_one_line_exit_2(repo, verdict, needle):
    configure(repo, verdict)
    code, out = validate(repo)
    assert code == 2 and needle in out and "Traceback" not in out, out


def test_an_unknown_rule_id_names_verdict_rules_where_the_ids_are_declared(repo):
    """With the severities in rubricgate.yaml the ids live in `verdict.rules`: the error sent the user
    to reviewer.rubric, a prompt that has no rule table ("use an id from reviewer/prompts/evaluate.md")."""
    configure(repo, {"format": "yaml", "findings": {"path": "issues", "title": "title"}, "rules": RULES},
              rubric="reviewer/prompts/evaluate.md")
    (repo / "fixtures/pass/weekly-revenue-summary/expect.yaml").write_text("rules: [sql-injectoin]\n")
    code, out = validate(repo)
    assert code == 2 and "expect.rules: unknown rule id 'sql-injectoin'" in out, out
    assert "(fix: use an id from verdict.rules in rubricgate.yaml)" in out and "use an id from reviewer/" not in out


def test_a_tier_map_sending_every_word_to_one_tier_is_a_validate_warning(repo):
    """`request_changes: PASS` (meant BLOCK) validated without a word: no stated verdict told one
    answer from another."""
    configure(repo, {"format": "yaml", "rules": RULES,
                     "tier": {"path": "decision", "map": {"approve": "PASS", "request_changes": "PASS"}}})
    code, out = validate(repo)
    assert code == 0 and "warning: verdict.tier.map sends every word to PASS" in out, out
    configure(repo, {"format": "yaml", "rules": RULES,
                     "tier": {"path": "decision", "map": {"approve": "PASS", "request_changes": "BLOCK"}}})
    assert "verdict.tier.map sends" not in validate(repo)[1]


@pytest.mark.parametrize(("body", "needle"), [
    ("def extract(text:\n", "the verdict hook failed to load: SyntaxError"),
    ("raise RuntimeError('at import')\n", "the verdict hook failed to load: RuntimeError: at import"),
    ("def other(text):\n    return None\n", "extract: no such function in the verdict hook"),
    ("def extract():\n    return None\n", "does not take one argument"),
])
def test_a_hook_that_cannot_be_loaded_is_exit_2_before_anything_runs(repo, body, needle):
    (repo / "reviewer/verdict_hook.py").write_text(body)
    configure(repo, {"format": "hook", "hook": "reviewer/verdict_hook.py:extract"})
    code, out = validate(repo)
    assert code == 2 and needle in out and "Traceback" not in out, out


def test_rules_named_in_the_config_are_located_in_the_reviewer_files(repo):
    configure(repo, {"format": "yaml", "rules": [*RULES, {"id": "naming", "severity": "suggestion", "match": "naming",
                                                          "statement": "(?im)^- flag naming"}]})
    rubric = load_all(repo, require_baseline=False).rubric
    sql, tests, naming = (rubric.rules[r] for r in ("sql-injection", "missing-tests", "naming"))
    assert (sql.file, sql.line, sql.text) == ("reviewer/prompts/evaluate.md", 5, "- Flag SQL injection: queries built from strings.")
    assert (tests.file, tests.line, tests.severity) == ("reviewer/prompts/evaluate.md", 6, "warning")
    assert (naming.file, naming.line, naming.text) == ("", 0, "")  # not stated: still a rule cases may name
    assert rubric.derive_tier(["warning"]) == "WARN" and rubric.derive_tier(["critical"]) == "BLOCK"
    assert validate(repo)[0] == 0


def test_rules_mapped_onto_the_rubric_table_take_its_severities(repo):
    configure(repo, {"format": "yaml", "rules": [{"id": "fm-description-required", "match": "(?i)description"}]})
    rubric = load_all(repo, require_baseline=False).rubric
    assert rubric.rules["fm-description-required"].severity == "critical" and len(rubric.rules) > 1


def test_a_rule_stated_in_a_file_the_prompt_includes_is_found_there(repo):
    """The closure: a TOML/Jinja prompt that includes its rules from elsewhere in the repository."""
    (repo / "reviewer/prompts/evaluate.md").write_text("# Review\n\n{% include '.github/review-policy.j2' %}\n")
    (repo / ".github").mkdir()
    (repo / ".github/review-policy.j2").write_text("Policy:\n- Flag SQL injection: queries built from strings.\n")
    configure(repo, {"format": "yaml", "rules": [RULES[0]]})
    rule = load_all(repo, require_baseline=False).rubric.rules["sql-injection"]
    assert (rule.file, rule.line, rule.text) == (".github/review-policy.j2", 2, "- Flag SQL injection: queries built from strings.")
