"""rubric.md -> rules (id, severity, kind) and the tier derivation.

The rubric is prose for the agent and the single source of truth for the harness: the
rule table and the warning threshold are parsed from it, never restated in code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError

SEVERITIES = ("critical", "warning", "suggestion")
KINDS = ("mechanical", "judgement")
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_THRESHOLD = re.compile(r"(\d+|[a-z]+) or more warning findings?,? (?:the )?tier is block", re.I)


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    kind: str
    text: str
    line: int


@dataclass(frozen=True)
class RubricSpec:
    path: str
    rules: dict[str, Rule]
    warning_block_threshold: int = 3

    def derive_tier(self, severities: Iterable[str]) -> str:
        """Tier derivation, first match wins: critical -> BLOCK; >=N warnings -> BLOCK; warnings -> WARN."""
        sev = list(severities)
        warnings = sev.count("warning")
        if "critical" in sev or warnings >= self.warning_block_threshold:
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


def parse_rules(text: str, path: str) -> dict[str, Rule]:
    """Parse the first markdown table with id/severity/kind columns."""
    lines = text.splitlines()
    start, cols = _table_header(lines)
    if start < 0:
        raise GateInputError(path, "rules table", "no markdown table with id | severity | kind columns",
                             "add the rule table described in design.md")
    rules: dict[str, Rule] = {}
    for lineno in range(start + 2, len(lines)):
        if not lines[lineno].lstrip().startswith("|"):
            break
        rule = _parse_row(_cells(lines[lineno]), cols, path, lineno + 1)
        if rule.id in rules:
            raise GateInputError(path, f"line {lineno + 1}", f"duplicate rule id {rule.id!r}", "give each rule one row")
        rules[rule.id] = rule
    if not rules:
        raise GateInputError(path, "rules table", "the table has no rows", "add at least one rule")
    return rules


def _parse_row(cells: list[str], cols: dict[str, int], path: str, lineno: int) -> Rule:
    def cell(name: str) -> str:
        idx = cols.get(name, -1)
        return cells[idx] if 0 <= idx < len(cells) else ""

    rid, severity, kind = cell("id"), cell("severity").lower(), cell("kind").lower()
    text = cell("rule") or cell("description")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", rid):
        raise GateInputError(path, f"line {lineno}", f"rule id {rid!r} is not kebab-case", "use ids like fm-name-required")
    if severity not in SEVERITIES:
        raise GateInputError(path, f"line {lineno}", f"severity {severity!r} of {rid}", f"use one of {', '.join(SEVERITIES)}")
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


def load_rubric(path: Path, display: str | None = None) -> RubricSpec:
    """Read and parse rubric.md; errors name the file."""
    shown = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GateInputError(shown, "", f"cannot read rubric ({exc.strerror})", "check reviewer.rubric in rubricgate.yaml") from exc
    return RubricSpec(shown, parse_rules(text, shown), parse_threshold(text))


def table_columns(text: str) -> tuple[int, dict[str, int]]:
    """(0-based line of the rule table's header, {column name: index}); (-1, {}) when there is none."""
    return _table_header(text.splitlines())


def threshold_span(text: str) -> tuple[int, int] | None:
    """Where the warning threshold is written ("Three" in "Three or more warning findings, ..."), if it is."""
    match = _THRESHOLD.search(text)
    return match.span(1) if match else None
