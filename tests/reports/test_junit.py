"""JUnit XML: one testcase per case and dimension, XML-safe text, golden file."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402

from rubricgate.models.results import Decision, Grade  # noqa: E402
from rubricgate.reports.junit import junit_pieces, render_junit, xml_safe  # noqa: E402


def _gate(summary) -> ET.Element:
    suite = ET.fromstring(render_junit(summary).encode()).find("testsuite")
    return suite.find("testcase[@classname='rubricgate.gate'][@name='decision']")


def test_an_inconclusive_run_whose_every_case_passed_is_no_green_test_tab():
    # A changed rule no case exercises: every case passed, the run exits 2, and junit.xml held
    # only passing testcases, so a CI test tab showed the run as all green.
    s = rf.passing_summary().model_copy(update={"decision": Decision(
        status="inconclusive", exit_code=2, reasons=["rule scope-single-purpose changed; no case exercises it"])})
    suite = ET.fromstring(render_junit(s).encode()).find("testsuite")
    error = _gate(s).find("error")
    assert error is not None and error.get("message").startswith("INCONCLUSIVE (exit 2): rule scope-single-purpose")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("7", "0", "1")


def test_the_gate_testcase_says_each_decision_as_ci_reads_it():
    could_not = Decision(status="error", exit_code=2, reasons=["run interrupted after 14 of 16 trials"])
    let_through = Decision(status="inconclusive", exit_code=0, reasons=["undecided"])  # gate.inconclusive: pass
    assert [child.tag for child in _gate(rf.passing_summary())] == []
    assert [child.tag for child in _gate(rf.summary())] == ["failure"]
    assert [child.tag for child in _gate(rf.summary(decision=could_not))] == ["error"]
    assert [child.tag for child in _gate(rf.summary(decision=let_through))] == ["skipped"]


def test_invalid_xml_characters_are_escaped_visibly():
    assert xml_safe("a\x00b\x07c\ud800d\ufffe") == "a\\x00b\\x07c\\ud800d\\ufffe"
    assert xml_safe("tab\tnl\n ok é 😀") == "tab\tnl\n ok é 😀"


def test_document_parses_despite_hostile_transcript_text():
    root = ET.fromstring(render_junit(rf.summary()).encode("utf-8"))
    failure = root.find(".//testcase[@name='verdict'][@classname='rubricgate.block-missing-description']/failure")
    assert failure is not None and "<script>" in failure.text and "\\x00\\x07" in failure.text


def test_one_testcase_per_case_and_dimension_with_counts():
    suite = ET.fromstring(render_junit(rf.summary()).encode()).find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 1 + 2 * 3  # the decision (a REGRESSION: a failure), then each case and dimension
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("7", "3", "0")


def test_infrastructure_errors_are_errors_and_the_reviewers_failures_are_failures():
    # A reviewer's timeout or missing verdict was an <error>, counted with the outages a CI test
    # tab shows as "could not run": the reviewer's own failure is a <failure>.
    s = rf.summary()
    for t in s.cases[0].trials:
        t.grades["verdict"] = Grade(passed=False, category="timeout", reason="killed after 300s")
    suite = ET.fromstring(render_junit(s).encode()).find("testsuite")
    assert (suite.get("errors"), suite.get("failures")) == ("0", "4")
    for t in s.cases[0].trials:
        t.errored = True
        t.grades["verdict"] = Grade(passed=False, category="errored", reason="endpoint: API 503")
    suite = ET.fromstring(render_junit(s).encode()).find("testsuite")
    assert (suite.get("errors"), suite.get("failures")) == ("1", "3")


def test_a_case_with_no_grade_on_a_dimension_is_skipped_and_counted():
    s = rf.summary()
    for t in s.cases[1].trials:
        t.grades.pop("tool_use")
    suite = ET.fromstring(render_junit(s).encode()).find("testsuite")
    skipped = [tc for tc in suite.findall("testcase") if tc.find("skipped") is not None]
    assert [(tc.get("classname"), tc.get("name")) for tc in skipped] == [(f"rubricgate.{s.cases[1].id}", "tool_use")]
    assert (suite.get("tests"), suite.get("skipped")) == ("7", "1")


def test_the_document_is_made_one_testcase_at_a_time():
    """The head, one piece per testcase (each a whole element), the tail: a writer never holds
    the whole tree of a big run."""
    s = rf.summary()
    head, *middle, tail = junit_pieces(s)
    assert head.endswith("</properties>") and tail == "\n  </testsuite>\n</testsuites>\n"
    assert len(middle) == 1 + 6 and all(ET.fromstring(p).tag == "testcase" for p in middle)
    assert head + "".join(middle) + tail == render_junit(s)


def test_junit_golden():
    rf.assert_golden("junit.xml", rf.scrub(render_junit(rf.summary())))


def test_credential_shaped_reasons_are_masked():
    token = "ghp_" + "Zk8abcdefghijklmnopqrstu0123"
    s = rf.summary()
    grades = s.cases[1].trials[0].grades
    grades["verdict"] = grades["verdict"].model_copy(update={"reason": f"the reviewer missed {token}"})
    xml = render_junit(s)
    assert "Zk8abcdefgh" not in xml and "&lt;masked:github-token&gt;" in xml


def test_xml_safe_leaves_out_exactly_what_xml_1_0_cannot_hold():
    """Every code point against the XML 1.0 Char production, written as the ranges it allows."""
    import re

    from rubricgate.reports.junit import _INVALID

    allowed = re.compile("[\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    every = "".join(map(chr, range(0x110000)))
    assert _INVALID.sub("", every) == "".join(allowed.findall(every))
    assert "".join(_INVALID.findall(every)) == allowed.sub("", every)


def test_a_case_s_message_counts_its_trials_as_the_other_reports_do():
    """Errored and confirmation trials were counted among the failed: '6 trial(s) failed: errored,
    wrong_tier' in junit.xml beside '4/10 trials failed (confirmation trials: 0/1 passed)' in the
    PR comment and '(4/10 trials, 1 confirmation)' on the terminal, and a <failure> typed errored."""
    wrong = Grade(passed=False, category="wrong_tier", reason="expected BLOCK, got PASS")
    outage = Grade(passed=False, category="errored", reason="endpoint: API 503")
    s = rf.summary()
    case = s.cases[1]
    trials = [rf.trial(case.id, n, "PASS", verdict=wrong) for n in (1, 2, 3, 4)]
    trials += [rf.trial(case.id, n) for n in range(6, 11)]
    lost = rf.trial(case.id, 5, "ERROR", **{d: outage for d in ("verdict", "tool_use", "trajectory")})
    lost.errored = True
    confirming = rf.trial(case.id, 11, "PASS", verdict=wrong)
    confirming.confirmation = True
    case.trials = [lost, *trials, confirming]
    suite = ET.fromstring(render_junit(s).encode()).find("testsuite")
    failure = suite.find(f"testcase[@classname='rubricgate.{case.id}'][@name='verdict']/failure")
    assert failure.get("message") == ("4/10 trial(s) failed: wrong_tier; 1/10 errored (infrastructure, in no rate); "
                                      "confirmation trials: 0/1 passed")
    assert failure.get("type") == "wrong_tier"
    assert "trial 11 (confirmation): wrong_tier" in failure.text and "trial 5: errored" in failure.text
    error = suite.find(f"testcase[@classname='rubricgate.{case.id}'][@name='tool_use']/error")
    assert error.get("message") == ("0/10 trial(s) failed; 1/10 errored (infrastructure, in no rate); "
                                    "confirmation trials: 1/1 passed")
