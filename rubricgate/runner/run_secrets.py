"""The values a run scrubs from everything it writes, and the case names they refuse.

A case is never named by a secret: a run refuses, before its first trial, a case id or tag
that scrubbing would change.

Everything a run writes is scrubbed of its secrets (docs/isolation.md), case ids and tags
included. An id that holds a secret is then written as `k-[REDACTED]`: two such cases become
one name (one transcript file written over the other, summary.json with the key twice), and
every command that maps a written id back to the suite (`regrade`, `merge`, `--continue`,
`baseline update`) no longer finds the case; `regrade` dropped it and turned a REGRESSION into
PASS. The error names the variable and the case's file as written, never the value.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from rubricgate.errors import GateInputError, GateInputErrors
from rubricgate.isolation.environment import build_env, secret_values
from rubricgate.models.config import Config
from rubricgate.models.results import CaseSpec
from rubricgate.secret_env import parent_env_secrets
from rubricgate.secrets import scrub

FIX = "rename it, or keep that value out of the environment: every file of the run would name it [REDACTED]"


def run_secrets(config: Config, copy_only: bool) -> tuple[dict[str, str], list[str]]:
    """(the agents' environment, the values the run scrubs from everything it writes): the
    environment's secrets, and in copy-only mode the parent environment's too (a reviewer outside
    a sandbox can read the harness's whole environment)."""
    env = build_env(config.agent.env_allowlist, config.agent.secret_env)
    secrets = secret_values(env, config.agent.secret_env)
    return env, parent_env_secrets(os.environ, secrets) if copy_only else secrets


def refuse_secret_names(cases: Iterable[CaseSpec], planned: Mapping[str, int], baseline_ids: Iterable[str],
                        baseline_file: str, config: Config, copy_only: bool) -> None:
    """Raise GateInputErrors for each name the run writes that holds a value it scrubs: the id
    and tags of every case of the suite (a case not run is still named in the summary), the
    file name of each planned trial (`planned`: case id -> its last trial number), and every
    case id of the baseline; naming the variable that holds the value, never the value."""
    secrets, holders = _secrets_and_holders(config, copy_only)
    if not secrets:
        return
    found = []
    for case in cases:
        names = _names(case.id, case.tags, planned.get(case.id, 0))
        if _any_scrubbed([value for _, _, value in names], secrets):
            found += [(scrub(case.origin, secrets), field, what, value) for field, what, value in names]
    ids = list(baseline_ids)
    if _any_scrubbed(ids, secrets):
        found += [(baseline_file, f"cases.{scrub(case_id, secrets)}", "a case id", case_id) for case_id in ids]
    _refuse(found, secrets, holders)


def _any_scrubbed(names: list[str], secrets: list[str]) -> bool:
    """Would scrubbing change any of `names`? One scan of them joined by newlines (a newline cuts
    a secret's piece as a name's end does; the names of what it flags are then checked one by
    one): a 2,000-case suite with ten trials a case is 22,000 names."""
    text = "\n".join(names)
    return scrub(text, secrets) != text


def refuse_secret_task(task_id: str, tags: list[str], config: Config) -> None:
    """`record`'s new task, before its file is written: the same refusal for its id, tags and
    first trial's file name (the file would be named by the secret, and the run that follows
    refuses it)."""
    secrets, holders = _secrets_and_holders(config, config.agent.sandbox == "none")
    if secrets:
        _refuse([("record", "--id" if field == "id" else field, what, value)
                 for field, what, value in _names(task_id, tags, 1)], secrets, holders)


def _secrets_and_holders(config: Config, copy_only: bool) -> tuple[list[str], Mapping[str, str]]:
    """The run's secrets, and the environment an error names their variables from (copy-only:
    the parent's too, where some of them come from)."""
    env, secrets = run_secrets(config, copy_only)
    return secrets, {**os.environ, **env} if copy_only else env


def _refuse(found: list[tuple[str, str, str, str]], secrets: list[str], holders: Mapping[str, str]) -> None:
    """GateInputErrors for each (file, field, what, name) whose name scrubbing would change."""
    errors = [GateInputError(where, field, f"{what} holds the value of {_variable(value, secrets, holders)}, a secret "
                                           "the run scrubs from what it writes", FIX)
              for where, field, what, value in found if scrub(value, secrets) != value]
    if errors:
        raise GateInputErrors(errors)


def _names(case_id: str, tags: list[str], trials: int) -> list[tuple[str, str, str]]:
    """(field, what it is, value) of every name the run writes a case under: its id, its tags,
    and the file names of its trials' transcripts and replays (`<id>-<trial>.json`)."""
    return [("id", "the case id", case_id), *((f"tags[{i}]", "a tag", tag) for i, tag in enumerate(tags)),
            *(("id", f"trial {n}'s file name", f"{case_id}-{n}.json") for n in range(1, trials + 1))]


def _variable(name: str, secrets: list[str], env: Mapping[str, str]) -> str:
    """The environment variable(s) whose secret value `name` holds, or what it is when none is found."""
    holders = sorted(k for k, v in env.items() if v in secrets and scrub(name, [v]) != name)
    return ", ".join(holders) if holders else "an environment variable"
