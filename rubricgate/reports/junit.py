"""JUnit XML for CI test tabs: the run's decision, then one testcase per case and dimension.

Reasons come from transcripts and may hold characters XML 1.0 cannot carry at all (NUL, bell,
lone surrogates). ElementTree escapes markup but writes those raw, producing a file CI parsers
reject, so every string is made XML-safe first.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator

from rubricgate.credentials import mask_credentials
from rubricgate.models.base import DIMENSIONS
from rubricgate.models.results import CaseSummary, Summary, TrialResult
from rubricgate.reports.story import LET_THROUGH_WORDS

# Everything outside the XML 1.0 Char production, written as the five ranges it leaves out: the
# negated class of the ranges it allows took ~20 ms to compile, on every run's report (this takes 0.3).
_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# JUnit's <error> is "could not be tested": a trial the infrastructure failed (errored, never
# graded) or never ran. A reviewer's timeout, crash or missing verdict is its failure to answer,
# a <failure> as the terminal and summary.json call it (models/failures.py).
_ERROR_CATEGORIES = {"not_run", "errored"}


def xml_safe(text: str) -> str:
    """Replace characters XML cannot represent with a visible \\xNN / \\uNNNN escape."""
    return _INVALID.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256
                        else f"\\u{ord(m.group()):04x}", str(text))


def _dimensions(summary: Summary) -> list[str]:
    """The summary's dimensions in their canonical order, then any others."""
    known = [d for d in DIMENSIONS if d in summary.rates]
    return known + sorted(d for d in summary.rates if d not in DIMENSIONS)


def _failed(case: CaseSummary, dim: str) -> list[TrialResult]:
    return [t for t in case.trials if dim in t.grades and not t.grades[dim].passed]


def _outcome(case: CaseSummary, dim: str) -> str | None:
    """The child the case's testcase for `dim` gets, one rule for the element and the suite's
    counts: <error> when every failed trial is the infrastructure's (errored or not run),
    <failure> when the reviewer failed one (a wrong answer, none, a timeout), <skipped> when no
    trial was graded on it, none when it passed."""
    failed = _failed(case, dim)
    if failed:
        return "error" if all(_infrastructure(t, dim) for t in failed) else "failure"
    return None if any(dim in t.grades for t in case.trials) else "skipped"


def _category(t: TrialResult, dim: str) -> str:
    return t.grades[dim].category or "uncategorized"


def _infrastructure(t: TrialResult, dim: str) -> bool:
    return t.errored or _category(t, dim) in _ERROR_CATEGORIES


def _message(case: CaseSummary, failed: list[TrialResult], dim: str) -> str:
    """'4/10 trial(s) failed: wrong_tier; 1/10 errored (...); confirmation trials: 0/1 passed', as
    the terminal and the PR comment count them: the design trials that graded the case's rate,
    errored ones apart (in no rate), an adaptive run's confirmation trials apart (in no rate)."""
    design = sum(1 for t in case.trials if not t.confirmation and dim in t.grades)
    judged = [t for t in failed if not t.confirmation and not _infrastructure(t, dim)]
    lost = [t for t in failed if not t.confirmation and _infrastructure(t, dim)]
    parts = [f"{len(judged)}/{design} trial(s) failed"
             + (": " + ", ".join(sorted({_category(t, dim) for t in judged})) if judged else "")]
    parts += [f"{len(lost)}/{design} errored (infrastructure, in no rate)"] if lost else []
    extra = [t for t in case.trials if t.confirmation and dim in t.grades]
    if extra:
        passed = sum(t.grades[dim].passed for t in extra)
        parts.append(f"confirmation trials: {passed}/{len(extra)} passed")
    return "; ".join(parts)


def _failure_element(tag: str, case: CaseSummary, dim: str) -> ET.Element:
    failed = _failed(case, dim)
    # A <failure> is typed by the reviewer's own failure, never by an outage beside it.
    kinds = [_category(t, dim) for t in failed if tag == "error" or not _infrastructure(t, dim)]
    el = ET.Element(tag, message=xml_safe(_message(case, failed, dim)), type=xml_safe(kinds[0]))
    el.text = xml_safe(mask_credentials("\n".join(
        f"trial {t.trial}{' (confirmation)' if t.confirmation else ''}: {_category(t, dim)}: {t.grades[dim].reason}"
        for t in failed)))
    return el


def _testcase(case: CaseSummary, dim: str) -> ET.Element:
    el = ET.Element("testcase", classname=xml_safe(f"rubricgate.{case.id}"), name=xml_safe(dim),
                    time=f"{sum(t.duration_s for t in case.trials):.3f}")
    outcome = _outcome(case, dim)
    if outcome == "skipped":
        ET.SubElement(el, "skipped", message="no trial was graded on this dimension")
    elif outcome:
        el.append(_failure_element(outcome, case, dim))
    run_errors = [f"trial {t.trial}: run error after a graded verdict: {t.run_error}"
                  for t in case.trials if t.run_error]
    if run_errors:
        ET.SubElement(el, "system-out").text = xml_safe(mask_credentials("\n".join(run_errors)))
    return el


_DECISION_WORDS = {"regression": "REGRESSION", "inconclusive": "INCONCLUSIVE", "error": "COULD NOT JUDGE"}


def _gate_testcase(summary: Summary) -> ET.Element:
    """The run's decision as a testcase of its own: a CI test tab counts testcases, and a run
    whose every case passed can still be INCONCLUSIVE (a changed rule no case exercises, a drop
    the suite cannot rule out) or could not be judged. REGRESSION is a <failure>, could not judge
    an <error>, INCONCLUSIVE let through by `gate.inconclusive: pass` <skipped> (not shown)."""
    decision = summary.decision
    el = ET.Element("testcase", classname="rubricgate.gate", name="decision", time="0.000")
    word = _DECISION_WORDS.get(decision.status)
    if word is None:  # pass, baseline
        return el
    tag = "failure" if decision.status == "regression" else ("skipped" if decision.exit_code == 0 else "error")
    let_through = f", {LET_THROUGH_WORDS}" if tag == "skipped" else ""  # the headline's words
    first = f": {decision.reasons[0]}" if decision.reasons else ""
    message = f"{word} (exit {decision.exit_code}{let_through}){first}"
    child = ET.SubElement(el, tag, message=xml_safe(mask_credentials(message)), type=decision.status)
    child.text = xml_safe(mask_credentials("\n".join(decision.reasons)))
    return el


def _properties(summary: Summary) -> ET.Element:
    props = ET.Element("properties")
    for name, value in (("run_id", summary.run_id), ("agent", summary.agent),
                        ("agent_version", summary.agent_version or ""), ("model", summary.model or ""),
                        ("decision", summary.decision.status)):
        ET.SubElement(props, "property", name=name, value=xml_safe(value))
    return props


def render_junit(summary: Summary) -> str:
    """The whole JUnit document as a string (UTF-8, with declaration)."""
    return "".join(junit_pieces(summary))


def junit_pieces(summary: Summary) -> Iterator[str]:
    """`render_junit` in pieces: the head, then one testcase at a time, each made, written and
    dropped (a 2,000-case run's 6,000 testcase elements were held at once). Pieces end between
    elements, so a writer that scrubs piece by piece sees every text whole."""
    dims = _dimensions(summary)
    gate = _gate_testcase(summary)
    tally = Counter(_outcome(case, dim) for case in summary.cases for dim in dims)
    tally.update(child.tag for child in gate)
    suite = ET.Element("testsuite", name="rubricgate", timestamp=xml_safe(summary.started_at),
                       tests=str(len(summary.cases) * len(dims) + 1),
                       failures=str(tally["failure"]), errors=str(tally["error"]), skipped=str(tally["skipped"]),
                       time=f"{sum(t.duration_s for c in summary.cases for t in c.trials):.3f}")
    suite.append(_properties(summary))
    root = ET.Element("testsuites", name="rubricgate")
    root.append(suite)
    ET.indent(root)
    # The document with no testcase, split after </properties>: each testcase goes there, with the
    # indentation ET.indent gives a testcase in the whole tree (two levels, one more inside).
    whole = ET.tostring(root, encoding="unicode")
    cut = whole.index("</properties>") + len("</properties>")
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' + whole[:cut]
    ET.indent(gate, level=2)
    yield "\n    " + ET.tostring(gate, encoding="unicode")
    for case in summary.cases:
        for dim in dims:
            testcase = _testcase(case, dim)
            ET.indent(testcase, level=2)
            yield "\n    " + ET.tostring(testcase, encoding="unicode")
    yield whole[cut:] + "\n"

