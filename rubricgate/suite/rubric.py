"""rubric.md -> rules (id, severity, kind) and the tier derivation.

The rubric is prose for the agent and the single source of truth for the harness: the
rule table and the warning threshold are parsed from it, never restated in code. A team whose
rubric speaks its own words (major/minor, "Any major -> WARN") states them once in
rubricgate.yaml's `tiers:`; RubricSpec carries them, so graders, the builtin and reports all
derive tiers from this one model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from rubricgate.errors import GateInputError
from rubricgate.models.base import Meaning, Tier
from rubricgate.suite.yaml_json import utf8_text

SEVERITIES = ("critical", "warning", "suggestion")
KINDS = ("mechanical", "judgement")
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10}
# The number word is bounded: unbounded, a 200,000-letter line made the search quadratic (minutes).
_THRESHOLD = re.compile(r"\b(\d{1,4}|[a-z]{1,12}) or more warning findings?,? (?:the )?tier is block", re.I)
_TIER_HEADING = re.compile(r"^#{1,6}\s.*\btiers?\b", re.I)
_FIX_TIERS = ("state it as 'Three or more warning findings, tier is BLOCK', or give the rubric's own words "
              "and rules in rubricgate.yaml `tiers:` (docs/agents.md)")


@dataclass(frozen=True)
class TierRule:
    """`at_least` findings of `severity` (a rubric word) give `tier`."""

    severity: str
    at_least: int
    tier: Tier


@dataclass(frozen=True)
class Vocabulary:
    """The rubric's severity words -> their meaning (critical|warning|suggestion); explicit rules or None."""

    meanings: dict[str, str]
    rules: tuple[TierRule, ...] | None = None

    @property
    def custom(self) -> bool:
        return self.rules is not None or set(self.meanings) != set(SEVERITIES)


DEFAULT_VOCABULARY = Vocabulary({s: s for s in SEVERITIES})


def meaning_of(severity: str, vocabulary: Vocabulary) -> Meaning:
    """What a severity word means under `tiers:` (critical, warning or suggestion), or "" when
    that is the word itself: what the baseline records beside the word (RuleRecord.means)."""
    means = vocabulary.meanings.get(severity, severity)
    return "" if means == severity or means not in SEVERITIES else cast(Meaning, means)


def vocabulary_from(tiers) -> Vocabulary:
    """rubricgate.yaml's `tiers:` (a TiersConfig, or None for the default words) as a Vocabulary."""
    if tiers is None:
        return DEFAULT_VOCABULARY
    rules = None if tiers.rules is None else tuple(TierRule(r.severity, r.at_least, r.tier) for r in tiers.rules)
    unknown = sorted({r.severity for r in rules or ()} - set(tiers.severities))
    if unknown:
        raise GateInputError("rubricgate.yaml", "tiers.rules", f"severity {unknown[0]!r} is not in tiers.severities",
                             f"use one of {', '.join(tiers.severities)}")
    return Vocabulary(dict(tiers.severities), rules)


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    kind: str
    text: str  # the rule as the reviewer's files state it ("": not stated there, suite/rule_table.py)
    line: int  # 1-based, in `file` (0: not stated)
    file: str = ""  # where it is stated, when not in the rubric's table (suite/rule_table.py)


@dataclass(frozen=True)
class RubricSpec:
    path: str
    rules: dict[str, Rule]
    warning_block_threshold: int = 3
    vocabulary: Vocabulary = DEFAULT_VOCABULARY
    # Where the rule ids are declared, as an error tells the user to look ("": the file at `path`;
    # rubricgate.yaml's `verdict.rules` when they carry the severities, suite/rule_table.py).
    declared_in: str = ""

    @property
    def ids_from(self) -> str:
        """Where to find the rule ids: the rubric file, or the config section that declares them."""
        return self.declared_in or self.path

    @property
    def severities(self) -> tuple[str, ...]:
        """The rubric's severity words, most severe first."""
        return tuple(sorted(self.vocabulary.meanings, key=self.rank))

    def rank(self, severity: str) -> int:
        """0 for a critical word, 1 warning, 2 suggestion, 3 a word the rubric does not have."""
        meaning = self.vocabulary.meanings.get(severity, "")
        return SEVERITIES.index(meaning) if meaning in SEVERITIES else len(SEVERITIES)

    def derive_tier(self, severities: Iterable[str]) -> Tier:
        """The explicit rules (first match wins, none is PASS), else the default derivation:
        critical -> BLOCK; >=N warnings -> BLOCK; warnings -> WARN."""
        sev = list(severities)
        if self.vocabulary.rules is not None:
            return next((r.tier for r in self.vocabulary.rules if sev.count(r.severity) >= r.at_least), "PASS")
        meanings = [self.vocabulary.meanings.get(s) for s in sev]
        warnings = meanings.count("warning")
        if "critical" in meanings or warnings >= self.warning_block_threshold:
            return "BLOCK"
        return "WARN" if warnings else "PASS"


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`") for c in line.strip().strip("|").split("|")]


def _table_header(lines: list[str]) -> tuple[int, dict[str, int]]:
    for i, line in enumerate(lines):
        cells = [c.lower() for c in _cells(line)] if line.lstrip().startswith("|") else []
        if {"id", "severity", "kind"} <= set(cells):
            return i, {name: cells.index(name) for name in cells}
    return -1, {}


def parse_rules(text: str, path: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> dict[str, Rule]:
    """Parse the first markdown table with id/severity/kind columns; severities in `vocabulary`."""
    lines = text.splitlines()
    start, cols = _table_header(lines)
    if start < 0:
        raise GateInputError(path, "rules table", "no markdown table with id | severity | kind columns",
                             "add a markdown table whose header row is | id | severity | kind | rule |, or name the "
                             "rules in rubricgate.yaml verdict.rules with their severities (docs/code-review.md)")
    rules: dict[str, Rule] = {}
    for lineno in range(start + 2, len(lines)):
        if not lines[lineno].lstrip().startswith("|"):
            break
        rule = _parse_row(_cells(lines[lineno]), cols, path, lineno + 1, vocabulary)
        if rule.id in rules:
            raise GateInputError(path, f"line {lineno + 1}", f"duplicate rule id {rule.id!r}", "give each rule one row")
        rules[rule.id] = rule
    if not rules:
        raise GateInputError(path, "rules table", "the table has no rows", "add at least one rule")
    return rules


def _parse_row(cells: list[str], cols: dict[str, int], path: str, lineno: int, vocabulary: Vocabulary) -> Rule:
    def cell(name: str) -> str:
        idx = cols.get(name, -1)
        return cells[idx] if 0 <= idx < len(cells) else ""

    rid, severity, kind = cell("id"), cell("severity").lower(), cell("kind").lower()
    text = cell("rule") or cell("description")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", rid):
        raise GateInputError(path, f"line {lineno}", f"rule id {rid!r} is not kebab-case",
                             "use ids like fm-name-required")
    if severity not in vocabulary.meanings:
        words = ", ".join(vocabulary.meanings)
        hint = "" if vocabulary.custom else " (or map the rubric's own words in rubricgate.yaml `tiers.severities`)"
        raise GateInputError(path, f"line {lineno}", f"severity {severity!r} of {rid}", f"use one of {words}{hint}")
    if kind not in KINDS:
        raise GateInputError(path, f"line {lineno}", f"kind {kind!r} of {rid}", f"use one of {', '.join(KINDS)}")
    return Rule(rid, severity, kind, text, lineno)


def parse_threshold(text: str) -> int:
    """'Three or more warning findings, tier is BLOCK' -> 3 (default 3 when not stated)."""
    match = _THRESHOLD.search(text)
    if not match:
        return 3
    word = match.group(1).lower()
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word, 3)


def check_tier_section(text: str, path: str) -> None:
    """A rubric with a tier section the default derivation cannot read is an error naming its line
    (never a silent "3 warnings -> BLOCK" for a rubric that says something else)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _TIER_HEADING.match(line)), None)
    if start is None:
        return
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    if not _THRESHOLD.search(" ".join(lines[start + 1:end])):
        raise GateInputError(path, f"line {start + 1}", f"the tier section {lines[start].strip()!r} is not the default "
                             "derivation rubricgate reads", _FIX_TIERS)


def parse_rubric(text: str, path: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> RubricSpec:
    """The rubric's rules and tier derivation; the default words need a readable tier section."""
    rules = parse_rules(text, path, vocabulary)
    if not vocabulary.custom:
        check_tier_section(text, path)
    return RubricSpec(path, rules, parse_threshold(text), vocabulary)


def load_rubric(path: Path, display: str | None = None, vocabulary: Vocabulary = DEFAULT_VOCABULARY) -> RubricSpec:
    """Read and parse rubric.md; errors name the file."""
    shown = display or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GateInputError(shown, "", f"cannot read rubric ({exc.strerror})",
                             "check reviewer.rubric in rubricgate.yaml") from exc
    return parse_rubric(utf8_text(data, shown), shown, vocabulary)


def table_columns(text: str) -> tuple[int, dict[str, int]]:
    """(0-based line of the rule table's header, {column name: index}); (-1, {}) when there is none."""
    return _table_header(text.splitlines())


def threshold_span(text: str) -> tuple[int, int] | None:
    """Where the warning threshold is written ("Three" in "Three or more warning findings, ..."), if it is."""
    match = _THRESHOLD.search(text)
    return match.span(1) if match else None
