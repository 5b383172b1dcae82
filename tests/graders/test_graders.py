"""Each grade category, failure paths first."""

from rubricgate.graders import grade_tool_use, grade_trajectory, grade_trial, grade_verdict
from rubricgate.models.results import CaseSpec
from rubricgate.models.task import Expect, Rubric, ToolUseRubric, TrajectoryRubric
from rubricgate.models.transcript import ToolCall, Transcript
from rubricgate.models.verdict import Finding, ParsedVerdict, Verdict

TOOLS = ToolUseRubric(allowed=["read", "grep", "glob"], forbidden=["write|edit|bash"], required=["read"])


def case(tier="BLOCK", rules=(), absent=()):
    return CaseSpec(id="c", source="task", origin="t.yaml", review=["a/SKILL.md"],
                    expect=Expect(tier=tier, rules=list(rules), absent_rules=list(absent)),
                    rubric=Rubric(tool_use=TOOLS, trajectory=TrajectoryRubric(max_steps=5)))


def transcript(calls=(), steps=3, **kw):
    return Transcript(agent="t", steps=steps, tool_calls=[ToolCall(raw_name=r, name=n, status=s) for r, n, s in calls], **kw)


def ok(tier, rules=(), reported=None):
    findings = [Finding(severity="critical", rule=r) for r in rules]
    return ParsedVerdict(status="ok", reported_tier=reported or tier, effective_tier=tier,
                         escalated=reported is not None, verdict=Verdict(tier=reported or tier, findings=findings))


def test_missing_verdict_clean_exit_is_no_verdict():
    g = grade_verdict(case(), transcript(), ParsedVerdict(status="missing", error="no block"))
    assert (g.passed, g.category) == (False, "no_verdict")


def test_malformed_verdict():
    g = grade_verdict(case(), transcript(), ParsedVerdict(status="malformed", error="bad json"))
    assert (g.passed, g.category, g.reason) == (False, "malformed_verdict", "bad json")


def test_agent_crash_without_verdict_is_agent_error():
    g = grade_verdict(case(), transcript(exit_code=1, termination="crashed", error="boom"), ParsedVerdict(status="missing"))
    assert (g.passed, g.category) == (False, "agent_error") and "boom" in g.reason


def test_turn_limit_without_verdict_is_no_verdict_for_every_cli():
    for exit_code in (1, None):  # the CLI stopped itself, or the harness stopped it
        g = grade_verdict(case(), transcript(steps=7, exit_code=exit_code, termination="max_turns"), ParsedVerdict(status="missing"))
        assert g.category == "no_verdict" and "turn limit" in g.reason


def test_timeout_without_verdict():
    g = grade_verdict(case(), transcript(termination="timeout", exit_code=None), ParsedVerdict(status="missing"))
    assert g.category == "timeout"


def test_error_exit_with_a_verdict_is_graded_on_the_verdict():
    t = transcript(exit_code=1, termination="max_turns")
    assert grade_verdict(case("BLOCK"), t, ok("BLOCK")).passed


def test_wrong_tier_mentions_escalation():
    g = grade_verdict(case("PASS"), transcript(), ok("BLOCK", reported="PASS"))
    assert g.category == "wrong_tier" and "escalated" in g.reason


def test_missed_and_unexpected_rules():
    assert grade_verdict(case(rules=["secret-in-file"]), transcript(), ok("BLOCK", ["fm-name-required"])).category == "missed_rule"
    assert grade_verdict(case(absent=["fm-name-required"]), transcript(), ok("BLOCK", ["fm-name-required"])).category == "unexpected_rule"


def test_forbidden_tool_even_when_denied():
    g = grade_tool_use(TOOLS, transcript([("Read", "read", "ok"), ("Write", "write", "denied")]))
    assert (g.passed, g.category) == (False, "forbidden_tool") and "(denied)" in g.reason


def test_forbidden_regex_is_anchored_and_case_insensitive():
    rubric = ToolUseRubric(forbidden=["BASH"], required=[])
    assert not grade_tool_use(rubric, transcript([("Bash", "bash", "ok")])).passed
    assert grade_tool_use(rubric, transcript([("bash_history_reader", "bash_history_reader", "ok")])).passed


def test_tool_outside_allowlist_is_a_violation():
    g = grade_tool_use(TOOLS, transcript([("Read", "read", "ok"), ("WebFetch", "webfetch", "ok")]))
    assert g.category == "forbidden_tool" and "allowlist" in g.reason


def test_missing_required_tool():
    g = grade_tool_use(TOOLS, transcript([("Grep", "grep", "ok")]))
    assert g.category == "missing_tool"


def test_too_many_steps_and_turn_limit():
    assert grade_trajectory(TrajectoryRubric(max_steps=5), transcript(steps=6)).category == "too_many_steps"
    assert grade_trajectory(TrajectoryRubric(max_steps=5), transcript(steps=5, termination="max_turns")).category == "too_many_steps"
    assert grade_trajectory(TrajectoryRubric(max_steps=5), transcript(steps=5)).passed


def test_all_dimensions_pass_on_a_good_trial():
    grades = grade_trial(case("BLOCK", ["fm-name-required"]), transcript([("Read", "read", "ok")]), ok("BLOCK", ["fm-name-required"]))
    assert all(g.passed for g in grades.values())
