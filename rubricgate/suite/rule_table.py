"""The rules of a reviewer whose rubricgate.yaml names them (`verdict.rules` with severities),
as the same RubricSpec a rubric's markdown table gives.

Each rule is located in the reviewer's files by its `statement` pattern (default: its title
pattern): the first matching line of the rubric file, else of the prompt, else of the rest of
the reviewer's closure (suite/closure.py: a template's included rules file). That line is the rule
as the reviewer reads it: recorded in the baseline, compared by change-aware decisions (an edit
to it is a named rule change; a statement no longer found is a removed rule) and deleted by
`mutate`. A rule whose statement is not found stays a rule (cases still name it) with no text.
"""

from __future__ import annotations

import re
from pathlib import Path

from rubricgate.errors import GateInputError
from rubricgate.models.config import Config
from rubricgate.models.verdict_config import VerdictConfig
from rubricgate.suite.closure import MAX_SCANNED_BYTES, reviewer_closure
from rubricgate.suite.rubric import RubricSpec, Rule, Vocabulary, parse_threshold
from rubricgate.suite.trees import Tree, WorkTree

MAX_STATEMENT_CHARS = 500
_CONFIG = "rubricgate.yaml"


def statement_texts(tree: Tree, config: Config) -> dict[str, str]:
    """The reviewer's files in the order statements are looked for: the rubric file, the prompt,
    then the rest of its closure (sorted); unreadable or binary files left out."""
    first = [config.reviewer.rubric, config.reviewer.prompt]
    out = {}
    for rel in dict.fromkeys([*first, *reviewer_closure(tree, config).files]):
        real = tree.real(rel)
        data = tree.read(real[0], MAX_SCANNED_BYTES) if real and real[1] == "file" else None
        if data is not None and b"\0" not in data:
            out[rel] = data.decode("utf-8", errors="replace")
    return out


def table_rubric(repo: Path, config: Config, vocabulary: Vocabulary) -> RubricSpec:
    """The RubricSpec of `verdict.rules` (every row with a severity), statements located."""
    verdict = config.verdict
    if verdict is None or not verdict.defines_rules():
        raise ValueError("table_rubric needs verdict.rules with severities")
    texts = statement_texts(WorkTree(repo), config)
    rules = {}
    for i, row in enumerate(verdict.rules):
        if row.severity not in vocabulary.meanings:
            raise GateInputError(_CONFIG, f"verdict.rules[{i}].severity", f"severity {row.severity!r} of {row.id}",
                                 f"use one of {', '.join(vocabulary.meanings)} "
                                 "(or map your words in `tiers.severities`)")
        file, line, text = locate(re.compile(row.statement_pattern(), re.M), texts)
        rules[row.id] = Rule(row.id, row.severity, row.kind, text, line, file)
    threshold = parse_threshold(texts.get(config.reviewer.rubric, ""))
    return RubricSpec(config.reviewer.rubric, rules, threshold, vocabulary, declared_in=f"verdict.rules in {_CONFIG}")


def locate(pattern: re.Pattern[str], texts: dict[str, str]) -> tuple[str, int, str]:
    """(file, 1-based line, the line's text) of the first match, or ("", 0, "")."""
    for rel, text in texts.items():
        match = pattern.search(text)
        if match:
            number = text.count("\n", 0, match.start()) + 1
            return rel, number, text.splitlines()[number - 1].strip()[:MAX_STATEMENT_CHARS]
    return "", 0, ""


def check_rule_map(verdict: VerdictConfig, rubric: RubricSpec) -> None:
    """`verdict.rules` without severities map titles to the rubric table's ids: each must exist."""
    for i, row in enumerate(verdict.rules):
        if row.id not in rubric.rules:
            raise GateInputError(_CONFIG, f"verdict.rules[{i}].id", f"unknown rule id {row.id!r}",
                                 f"use an id from {rubric.path}, or give every row its severity")

