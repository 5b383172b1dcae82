"""The reviewer's own answer -> a verdict, as rubricgate.yaml's `verdict:` describes it.

The answer is read into the contract's shape (a tier, findings with a rule and a severity) and
then cross-checked exactly as a JSON verdict is (graders/contract.py `cross_check`): the tier is
recomputed from the findings with the rubric's severities and escalated, never lowered. Without
`tier:` the answer states no tier of its own and the derived tier is the verdict.

Four outcomes, as for the contract: ok; missing (an empty answer, no block, a hook returning
None); malformed (unreadable YAML/JSON, a key given twice, a hook raising ValueError); invalid
(the shape does not match `verdict:`: no findings at `findings.path`, the findings are not a
list, no tier or one not in `tier.map`, two stated tiers that disagree, two fenced blocks that
state different verdicts). A hook that fails in any other way is `extractor_error`: rubricgate's
failure, not the reviewer's, so the trial is errored (out of every rate, exit 2 past
gate.max_errored), never graded.

Ambiguity is never resolved in the reviewer's favour: a YAML/JSON answer with a key given twice
is malformed (which one did the reviewer mean?), a stated tier the pattern finds twice with two
values is invalid, so are two blocks whose verdicts differ (the real one, then the rubric's
example repeated: the last block winning graded it PASS), and in markdown what sits in a fenced
code block (a file the reviewer quotes) is neither a finding nor the verdict.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from rubricgate import boundary
from rubricgate.graders.contract import cross_check, parse_verdict
from rubricgate.graders.finding_names import spelled
from rubricgate.models.base import Tier
from rubricgate.models.verdict import Finding, ParsedVerdict, Verdict
from rubricgate.models.verdict_config import FindingFields, VerdictConfig, verdict_word
from rubricgate.suite.rubric import RubricSpec
from rubricgate.suite.yaml_json import safe_load_yaml

_FENCES = {"yaml": r"ya?ml", "json": r"json"}
HOOK_FIELDS = FindingFields(path="findings", rule="rule", severity="severity", quote="quote", fix="fix")
BUILTIN = "builtin"  # rubricgate's own reviewer always answers in the contract


def read_verdict(text: str, rubric: RubricSpec, config: VerdictConfig | None, agent: str = "") -> ParsedVerdict:
    """The verdict in a reviewer's final answer, read the configured way (default: the contract)."""
    if config is None or config.format == "contract" or agent == BUILTIN:
        return parse_verdict(text, rubric, config is None or agent == BUILTIN or config.escalate)
    if not (text or "").strip():
        return ParsedVerdict(status="missing", error="the reviewer's answer is empty")
    text = text.replace("\r\n", "\n")  # a Windows answer: `[ \t]*$` in a line pattern never met its \r
    if config.format == "hook":
        return _from_hook(text, rubric, config)
    if config.format == "markdown":
        return _invalid_or(lambda: _finish(_markdown_findings(text, config), _tier(None, text, config),
                                           rubric, config))
    *earlier, last = [_block_verdict(body, text, rubric, config) for body in _bodies(text, config.format)]
    return _agreed(earlier, last, config.format)


def _block_verdict(body: str, text: str, rubric: RubricSpec, config: VerdictConfig) -> ParsedVerdict:
    """The verdict one YAML/JSON block (or the whole answer) states."""
    data = _structured(body, config.format)
    if isinstance(data, ParsedVerdict):
        return data
    return _invalid_or(lambda: _from_data(data, text, rubric, config))


def _agreed(earlier: list[ParsedVerdict], last: ParsedVerdict, fmt: str) -> ParsedVerdict:
    """The last block's verdict, unless an earlier block reads as a different one: an answer that
    repeats the rubric's example (approve, no findings) after its own verdict states two, and
    which is the reviewer's is ambiguous (as two stated tiers are). A block of another shape (a
    file of the change the reviewer quotes) states none."""
    stated = [(p.reported_tier, p.effective_tier) for p in [*earlier, last] if p.status == "ok"]
    if last.status != "ok" or len(set(stated)) < 2:
        return last
    return ParsedVerdict(status="invalid", error=f"the answer's {len(stated)} ```{fmt} blocks state different "
                                                 f"verdicts ({', '.join(str(t) for _, t in stated)}): which is "
                                                 "the reviewer's is ambiguous")


def _invalid_or(read: Callable[[], ParsedVerdict]) -> ParsedVerdict:
    """The verdict `read` gives, or an invalid one when the answer does not match `verdict:`."""
    try:
        return read()
    except _Invalid as exc:
        return ParsedVerdict(status="invalid", error=f"the answer does not match verdict: ({exc})")


def _from_data(data: Any, text: str, rubric: RubricSpec, config: VerdictConfig) -> ParsedVerdict:
    """A parsed YAML/JSON answer's findings (at `findings.path`, which must be there) and tier."""
    tier = _tier(data, text, config)
    raw = _at(data, config.findings.path, default=_ABSENT)
    if raw is _ABSENT and config.findings.absent == "none":
        raw = []  # the stated verdict (tier, required with absent: none) showed the answer's shape
    if raw is _ABSENT:  # an answer of another shape (an error message read as YAML) is no "no findings"
        raise _Invalid(f"no findings at {config.findings.path!r}")
    if not isinstance(raw, list):
        raise _Invalid(f"{config.findings.path or 'the answer'} is not a list of findings")
    items = [_item(f, i, config.findings) for i, f in enumerate(raw)]
    return _finish(items, tier, rubric, config)


_ABSENT = object()


class _Invalid(ValueError):
    """The answer's shape does not match rubricgate.yaml's `verdict:`."""


def _bodies(text: str, fmt: str) -> list[str]:
    """The closed fenced blocks of the format, else the whole answer as one."""
    # Closed as CommonMark closes it: a line of the answer's YAML that opens a code block of its own
    # (an issue's ```python example) ended the block there, and the findings after it went unread.
    blocks = [f.body for f in fenced_blocks(text) if f.closed and re.fullmatch(_FENCES[fmt], f.info, re.I)]
    return blocks or [text]


def _structured(body: str, fmt: str) -> Any:
    """One block's YAML/JSON, parsed (or a ParsedVerdict: malformed)."""
    try:
        # Bounded (issue 37): an answer nested past boundary.MAX_DEPTH, or YAML whose aliases expand
        # to a billion values, is malformed, never RecursionError or a hang.
        # A key given twice is malformed, as in the contract: the last value winning would let a
        # second `verdict: approve` overrule the first.
        data = safe_load_yaml(body) if fmt == "yaml" else boundary.loads(body, unique_keys=True)
    except (yaml.YAMLError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ParsedVerdict(status="malformed", error=f"the answer is not valid {fmt.upper()}: {first}")
    if not isinstance(data, dict | list):
        return ParsedVerdict(status="malformed", error=f"the answer's {fmt.upper()} is a {type(data).__name__}, "
                                                       "not a mapping or a list")
    return data


def _at(data: Any, path: str, default: Any = None) -> Any:
    """The value at a dotted path ("" is the data itself); a missing key gives `default`."""
    for key in [k for k in path.split(".") if k]:
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and key.isdigit() and int(key) < len(data):
            data = data[int(key)]
        else:
            return default
    return data


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _item(raw: Any, index: int, fields: FindingFields) -> dict[str, Any]:
    """One finding's fields by role (title, rule, severity, file, line, issue, quote, fix)."""
    if isinstance(raw, str):
        return {"title": raw.strip()}
    if not isinstance(raw, dict):
        raise _Invalid(f"finding {index + 1} is a {type(raw).__name__}, not a mapping")
    roles = ("title", "rule", "severity", "file", "line", "issue", "quote", "fix")
    return {role: raw.get(getattr(fields, role)) for role in roles if getattr(fields, role)}


def _markdown_findings(text: str, config: VerdictConfig) -> list[dict[str, Any]]:
    """Every header matching `headers` outside fenced code is a finding: its text the title, what
    follows it (code included) the issue."""
    pattern = re.compile(config.headers, re.M)
    heads = _outside(pattern.finditer(text), fenced_spans(text))
    out = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        title = head.group(1) if pattern.groups else head.group(0)
        out.append({"title": title.strip(), "issue": text[head.end():end].strip()})
    return out


def _tier(data: Any, text: str, config: VerdictConfig) -> Tier | None:
    """The answer's own tier through `tier.map`, or None when the config names no tier."""
    spec = config.tier
    if spec is None:
        return None
    values = [_at(data, spec.path)] if spec.path is not None else _stated(text, spec.pattern or "", config)
    values = [v for v in values if v is not None]
    if not values:
        raise _Invalid(f"no verdict at {spec.path or spec.pattern!r}")
    tiers = {_mapped(v, spec.map) for v in values}
    if len(tiers) > 1:
        raise _Invalid(f"the answer states {len(tiers)} different verdicts at {spec.pattern!r} "
                       f"({', '.join(repr(_text(v)[:40]) for v in values[:4])})")
    return tiers.pop()


def _stated(text: str, pattern: str, config: VerdictConfig) -> list[Any]:
    """Every value the tier pattern finds (in markdown, outside fenced code)."""
    matches = re.compile(pattern, re.M).finditer(text)
    found = _outside(matches, fenced_spans(text)) if config.format == "markdown" else list(matches)
    return [m.group(1) if m.re.groups else m.group(0) for m in found]


def _mapped(value: Any, table: dict[str, Tier]) -> Tier:
    mapped = {verdict_word(k): t for k, t in table.items()}.get(verdict_word(_text(value)))
    if mapped is None:
        raise _Invalid(f"verdict {_text(value)[:80]!r} is not in verdict.tier.map ({', '.join(table)})")
    return mapped


# A fence may stand inside a list item or a block quote, at any indentation: `1. ```yaml`,
# four spaces in under a list item, `> ```yaml`. Read at up to three spaces alone, such an answer's
# block went unread and the reviewer's every answer was malformed.
_FENCE = re.compile(r"^((?:[ \t]*(?:>|[-*+]|\d{1,9}[.)])(?=[ \t]|$))*[ \t]*)(`{3,}|~{3,})")
_QUOTE = re.compile(r"^[ \t]*>[ \t]?")


@dataclass(frozen=True)
class Fenced:
    """One fenced code block of a markdown text: its offsets, info string, body, and whether a
    closing fence ended it (an unclosed one runs to the end)."""

    start: int
    end: int
    info: str
    body: str
    closed: bool


def fenced_blocks(text: str) -> list[Fenced]:
    """The fenced code blocks of a markdown text, as CommonMark reads them: a fence closes on a
    line of the same character at least as long with nothing after it (```python opens no close);
    a line of backticks followed by a backtick later on is inline code, no fence."""
    found, opened, offset = [], None, 0
    for line in text.splitlines(keepends=True):
        fence = _FENCE.match(line)
        marks = fence.group(2) if fence else ""
        rest = line[fence.end():] if fence else ""
        if opened is None and fence and not (marks[0] == "`" and "`" in rest):
            opened = (offset, marks, rest.strip(), offset + len(line), fence.group(1).count(">"),
                      len(fence.group(1).expandtabs()))  # ```x``` is code
        elif opened is not None and fence and marks[0] == opened[1][0] and len(marks) >= len(opened[1]) \
                and not rest.strip() and len(fence.group(1).expandtabs()) <= opened[5] + 3:
            # indented past the opening fence's own indent by more than 3: text of the block (a
            # fix's ```python example in an issue), never its close
            body = _unquoted(text[opened[3]:offset], opened[4])
            found.append(Fenced(opened[0], offset + len(line), opened[2], body, True))
            opened = None
        offset += len(line)
    if opened is not None:
        found.append(Fenced(opened[0], len(text), opened[2], _unquoted(text[opened[3]:], opened[4]), False))
    return found


def _unquoted(body: str, depth: int) -> str:
    """A block quote's fenced body without its `>` marks (`depth` of them a line)."""
    if not depth:
        return body
    lines = body.splitlines(keepends=True)
    for _ in range(depth):
        lines = [_QUOTE.sub("", ln, count=1) for ln in lines]
    return "".join(lines)


def fenced_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the fenced code blocks of a markdown text (fenced_blocks)."""
    return [(f.start, f.end) for f in fenced_blocks(text)]


def _outside(matches: Iterable[re.Match[str]], spans: list[tuple[int, int]]) -> list[re.Match[str]]:
    return [m for m in matches if not any(a <= m.start() < b for a, b in spans)]


def _finish(items: list[dict[str, Any]], tier: Tier | None, rubric: RubricSpec, config: VerdictConfig) -> ParsedVerdict:
    """Findings named by the rules, the tier (stated, or derived), cross-checked like a JSON verdict."""
    warnings: list[str] = []
    findings = [_finding(item, rubric, config, warnings) for item in items]
    derived = rubric.derive_tier(f.severity for f in findings)
    verdict = Verdict(tier=tier or derived, findings=findings)
    parsed = cross_check(verdict, rubric, config.escalate)
    unknown = {f"finding cites unknown rule {f.rule!r} ({f.file}:{f.line})" for f in findings if not f.rule}
    parsed.warnings = [w for w in parsed.warnings if w not in unknown] + warnings
    return parsed


def _finding(item: dict[str, Any], rubric: RubricSpec, config: VerdictConfig, warnings: list[str]) -> Finding:
    title = _text(item.get("title"))
    rule = _text(item.get("rule")) or _named(title, config)
    if not rule and config.unmatched == "warn":
        warnings.append(f"finding {title[:80]!r} matches no rule of verdict.rules")
    rule, said = spelled(rule, _text(item.get("severity")), rubric, warnings)
    severity = rubric.rules[rule].severity if rule in rubric.rules else said
    if severity and severity not in rubric.vocabulary.meanings:  # "high": said, or it counts silently as nothing
        warnings.append(f"finding {title[:80]!r}: severity {severity!r} is none of the rubric's "
                        f"({', '.join(rubric.severities)}) and raises no tier (tiers.severities maps your own words)")
    line = item.get("line")
    return Finding(severity=severity or rubric.severities[-1], rule=rule, file=_text(item.get("file")),
                   line=line if isinstance(line, int) and not isinstance(line, bool) else None,
                   quote=_text(item.get("quote")), issue=_text(item.get("issue")) or title, fix=_text(item.get("fix")))


def _named(title: str, config: VerdictConfig) -> str:
    """The first rule whose title pattern matches the finding's title ("" for none)."""
    return next((r.id for r in config.rules if re.search(r.match, title)), "")


def _from_hook(text: str, rubric: RubricSpec, config: VerdictConfig) -> ParsedVerdict:
    """The hook's dict ({tier?, findings: [{title|rule, severity?, file?, line?, issue?}]}), read
    like a structured answer with the default field names; ValueError from the hook: malformed."""
    from rubricgate.suite.verdict_hook import load_hook

    try:
        data = load_hook(config.hook or "")(text)
    except ValueError as exc:
        return ParsedVerdict(status="malformed", error=f"the verdict hook could not read the answer: {exc}")
    except Exception as exc:  # the hook's bug, not the reviewer's: the trial is errored (module docstring)
        return ParsedVerdict(status="extractor_error", error=f"the verdict hook failed: {type(exc).__name__}: {exc}")
    except (SystemExit, GeneratorExit) as exc:  # sys.exit(0) in a hook ended the run with exit 0, no report
        said = f"tried to exit ({exc.code!r})" if isinstance(exc, SystemExit) else "raised GeneratorExit"
        return ParsedVerdict(status="extractor_error", error=f"the verdict hook {said}")
    if data is None:
        return ParsedVerdict(status="missing", error="the verdict hook found no verdict in the answer")
    if not isinstance(data, dict) or not isinstance(data.get("findings", []), list):
        return ParsedVerdict(status="extractor_error",
                             error="the verdict hook returned no {findings: [...]} mapping (fix the hook)")
    try:
        items = [_item(f, i, HOOK_FIELDS) for i, f in enumerate(data.get("findings", []))]
        tier = data.get("tier")
        if tier is not None and tier not in ("PASS", "WARN", "BLOCK"):
            raise _Invalid(f"tier {tier!r} is not PASS, WARN or BLOCK")
        return _finish(items, tier, rubric, config)
    except _Invalid as exc:
        return ParsedVerdict(status="invalid", error=f"the verdict hook's answer: {exc}")
