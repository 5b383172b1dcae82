"""Mutants of the reviewer files: each one plausible edit a maintainer could make by mistake.

Generated through the rubric model (rubricgate/suite/rubric.py), so they follow the team's
rubric: a rule row deleted, a severity moved one step down and one step up the rubric's own
severity scale, the warning threshold of the tier derivation moved by one, a paragraph of the
prompt dropped. An edit the rubric's vocabulary cannot express (a step above its highest
severity, a threshold it does not state) is skipped with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.suite.rubric import (
    DEFAULT_VOCABULARY,
    SEVERITIES,
    RubricSpec,
    parse_rules,
    parse_threshold,
    table_columns,
    threshold_span,
)

_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


@dataclass(frozen=True)
class Mutant:
    """One edit: `file` (repo-relative) gets `text` instead of its current content."""

    id: str
    kind: str  # delete-rule | severity-down | severity-up | threshold-down | threshold-up | drop-paragraph
    rule: str  # the rule it touches: a rule id, tier:warning-threshold, or "prompt"
    description: str
    file: str
    text: str


@dataclass(frozen=True)
class Skipped:
    id: str
    rule: str
    reason: str


def rule_mutants(rubric: RubricSpec, text: str, path: str) -> tuple[list[Mutant], list[Skipped]]:
    """Delete each rule row, and move each severity one step down and one step up."""
    lines = text.splitlines(keepends=True)
    _, cols = table_columns(text)
    scale = list(getattr(rubric, "severities", SEVERITIES))  # most to least severe
    made, skipped = [], []
    for rule in rubric.rules.values():
        row = rule.line - 1
        made.append(Mutant(f"delete-rule:{rule.id}", "delete-rule", rule.id, f"delete the row of {rule.id}", path,
                           "".join(lines[:row] + lines[row + 1:])))
        at = scale.index(rule.severity)
        for kind, step in (("severity-down", 1), ("severity-up", -1)):
            mid = f"{kind}:{rule.id}"
            if not 0 <= at + step < len(scale):
                skipped.append(Skipped(mid, rule.id, f"{rule.severity} has no step {kind[9:]} in the rubric's "
                                                     f"severities ({', '.join(scale)})"))
                continue
            new = scale[at + step]
            edited = _set_cell(lines[row], cols["severity"], new)
            made.append(Mutant(mid, kind, rule.id, f"{rule.id}: {rule.severity} -> {new}", path,
                               "".join(lines[:row] + [edited] + lines[row + 1:])))
    return [m for m in made if _parses(m, path, rubric)], skipped


def _set_cell(line: str, index: int, value: str) -> str:
    """The table row with cell `index` (0-based, as the rubric parser counts) replaced."""
    parts = line.split("|")
    offset = 1 if line.lstrip().startswith("|") else 0
    old = parts[index + offset]
    parts[index + offset] = re.sub(r"\S.*\S|\S", value, old, count=1)
    return "|".join(parts)


def _parses(mutant: Mutant, path: str, rubric: RubricSpec) -> bool:
    try:
        parse_rules(mutant.text, path, getattr(rubric, "vocabulary", DEFAULT_VOCABULARY))  # the team's words (tiers:)
    except GateInputError:
        return False  # e.g. the last rule deleted: a rubric the gate rejects is no plausible edit
    return True


def threshold_mutants(rubric: RubricSpec, text: str, path: str) -> tuple[list[Mutant], list[Skipped]]:
    """The warning threshold one lower and one higher, written as the rubric writes it."""
    span = threshold_span(text)
    rid = "tier:warning-threshold"
    if span is None:
        return [], [Skipped(f"threshold:{rid}", rid, "the rubric states no warning threshold (the default applies)")]
    now, word = rubric.warning_block_threshold, text[span[0]:span[1]]
    made, skipped = [], []
    for kind, value in (("threshold-down", now - 1), ("threshold-up", now + 1)):
        written = _number_like(word, value)
        edited = text[:span[0]] + written + text[span[1]:] if written else ""
        if value < 1 or not written or parse_threshold(edited) != value:
            skipped.append(Skipped(f"{kind}:{rid}", rid,
                                   f"a threshold of {value} cannot be written in the rubric's words"))
            continue
        made.append(Mutant(f"{kind}:{rid}", kind, rid, f"warning threshold {now} -> {value}", path, edited))
    return made, skipped


def _number_like(word: str, value: int) -> str:
    if word.isdigit():
        return str(value)
    if not 0 <= value < len(_WORDS):
        return ""
    out = _WORDS[value]
    return out.capitalize() if word[:1].isupper() else out


def prompt_mutants(text: str, path: str) -> list[Mutant]:
    """Drop each paragraph of the prompt that is not a heading on its own."""
    blocks = re.split(r"\n[ \t]*\n", text)
    made = []
    for i, block in enumerate(blocks):
        if not block.strip() or all(line.startswith("#") for line in block.strip().splitlines()):
            continue
        first = block.strip().splitlines()[0][:60]
        made.append(Mutant(f"drop-paragraph:{i + 1}", "drop-paragraph", "prompt",
                           f"drop prompt paragraph {i + 1} ({first!r})", path,
                           "\n\n".join(blocks[:i] + blocks[i + 1:])))
    return made


def statement_mutants(rubric: RubricSpec, repo: Path) -> tuple[list[Mutant], list[Skipped]]:
    """Rules named in rubricgate.yaml (suite/rule_table.py): delete the line of the reviewer's
    files that states each one. Their severities live in rubricgate.yaml, which the reviewer
    never reads, so no severity mutant of them is plausible."""
    made, skipped = [], []
    for rule in (r for r in rubric.rules.values() if not r.file and not r.line):
        skipped.append(Skipped(f"delete-rule:{rule.id}", rule.id, "its statement is not found in the reviewer's "
                               "files (verdict.rules[].statement)"))
    for rule in (r for r in rubric.rules.values() if r.file):
        lines = (repo / rule.file).read_text(encoding="utf-8").splitlines(keepends=True)
        row = rule.line - 1
        made.append(Mutant(f"delete-rule:{rule.id}", "delete-rule", rule.id,
                           f"delete the statement of {rule.id} ({rule.file}:{rule.line})", rule.file,
                           "".join(lines[:row] + lines[row + 1:])))
    return made, skipped


def all_mutants(repo: Path, rubric: RubricSpec, rubric_path: str,
                prompt_path: str) -> tuple[list[Mutant], list[Skipped]]:
    """Every mutant of the rubric and the prompt, and those skipped with a reason."""
    if any(r.file or not r.line for r in rubric.rules.values()):  # the rules are named in rubricgate.yaml
        rules, skipped = statement_mutants(rubric, repo)
        paragraphs = prompt_mutants((repo / prompt_path).read_text(encoding="utf-8"), prompt_path)
        return rules + paragraphs, skipped
    text = (repo / rubric_path).read_text(encoding="utf-8")
    rules, skipped = rule_mutants(rubric, text, rubric_path)
    tiers, skipped_tiers = threshold_mutants(rubric, text, rubric_path)
    prompt = repo / prompt_path
    paragraphs = prompt_mutants(prompt.read_text(encoding="utf-8"), prompt_path) if prompt.is_file() else []
    return rules + tiers + paragraphs, skipped + skipped_tiers


def select(mutants: list[Mutant], only_rules: list[str], shard: tuple[int, int] | None) -> list[Mutant]:
    """--only-rules (rule ids, tier:warning-threshold or prompt) and --shard K/N (every Nth from K)."""
    chosen = [m for m in mutants if not only_rules or m.rule in only_rules]
    if shard is not None:
        k, n = shard
        chosen = [m for i, m in enumerate(chosen) if i % n == k - 1]
    return chosen
