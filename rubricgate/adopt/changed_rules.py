"""`changed --base`: which rules named in rubricgate.yaml (`verdict.rules`) an edit of the
reviewer's files changed, so a pull request that rewords or deletes a rule of the prompt reads
as that rule's change, not only as "file changed".

Each rule's statement is located (suite/rule_table.py) in the files as they were at the merge
base and as they are in the working tree; a rubric table's rules show in its diff already.
"""

from __future__ import annotations

import re
from pathlib import Path

from rubricgate.models.config import Config
from rubricgate.suite.rule_table import locate, statement_texts
from rubricgate.suite.trees import CommitTree, WorkTree

SHOWN = 120  # characters of a statement in a line


def changed_rules(repo: Path, config: Config, merge_base: str) -> list[str]:
    """'rule X: ...' for every stated rule whose statement differs since the merge base."""
    verdict = config.verdict
    if verdict is None or not verdict.defines_rules():
        return []
    with CommitTree(repo, merge_base) as then_tree:
        then = statement_texts(then_tree, config)
    now = statement_texts(WorkTree(repo), config)
    out = []
    for row in verdict.rules:
        pattern = re.compile(row.statement_pattern(), re.M)
        before, after = locate(pattern, then)[2], locate(pattern, now)[2]
        if before == after:
            continue
        if not after:
            out.append(f"rule {row.id}: removed from the reviewer's files (was: {before[:SHOWN]!r})")
        elif not before:
            out.append(f"rule {row.id}: stated now ({after[:SHOWN]!r})")
        else:
            out.append(f"rule {row.id}: statement {before[:SHOWN]!r} -> {after[:SHOWN]!r}")
    return out

