"""The GitHub Actions workflows `init` writes, and the CLI versions they install.

Templates live in rubricgate/adopt/templates/workflows/. Lines between `#<agent>` and `#</agent>`
are kept only for a model-backed agent (API key, three trials, the fork job); inside or beside
them, `#<cli>` (installing the CLI from npm) and `#<smoke>` (the fork job's run on the embedded
reviewer) only for an agent CLI, `#<command>` only for a `command` reviewer (your own program:
nothing to install, and a fork's suite is validated, not run); `@NAME@` placeholders are filled
from the agent's row below; a value that lands in a YAML scalar is
written by the YAML emitter (`yaml_scalar`), never pasted into the text. Run as
`python -m rubricgate.adopt.workflows tested-version claude` to print the version a workflow installs.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from rubricgate import __version__, boundary
from rubricgate.agents.registry import cli_specs
from rubricgate.errors import GateInputError

WORKFLOW_NAMES = ("rubricgate-pr.yml", "rubricgate-weekly.yml")
VERSIONS_FILE = "tested_versions.json"  # rubricgate/agents/tested_versions.json, kept by the e2e tests
_WORKING_DIRECTORY = re.compile(r"^ *working-directory: *(.+?) *$", re.M)
DEFAULT_PIP = f"rubricgate=={__version__}"  # never a bare name: init pins the running rubricgate's origin


@dataclass(frozen=True)
class AgentCli:
    """How a workflow installs and authenticates one agent CLI."""

    npm: str
    command: str
    secret: str
    endpoint_env: tuple[str, ...] = ()  # the CLI's documented endpoint variables (docs/agents.md)
    variables: tuple[str, ...] = ()  # passed from the repository's variables beside the key


# Proxy and CA variables every CLI honours (Node's and the system's): a team behind a proxy or a
# private CA sets them, and without them in agent.env_allowlist the CLI hangs on its retries.
NETWORK_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
               "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")
# Every CLI a workflow can install: from the npm registry, with a tested version (its CliSpec).
# Each passes its endpoint variables from the repository's variables (an unset one is an empty
# string there, which rubricgate's allowlist and each tested CLI read as unset: its public default).
AGENT_CLIS = {name: AgentCli(spec.package, spec.binary, spec.endpoint.key, spec.endpoint.variables,
                             spec.endpoint.workflow_vars or spec.endpoint.variables)
              for name, spec in cli_specs().items() if spec.package and spec.tested is not None}
COMMAND = "command"  # your own reviewer program (agents/command.py)
INIT_AGENTS = ("builtin", *AGENT_CLIS, COMMAND)
DEFAULT_COMMAND_SECRET = "OPENAI_API_KEY"


def render_workflow(name: str, agent: str, pip_spec: str = DEFAULT_PIP, secret: str | None = None,
                    folder: str = "") -> str:
    """One workflow's text for `agent` (builtin: no CLI, no secret, one trial; else three and the
    key: the CLI's, or `secret` for a command reviewer); `folder`: where rubricgate.yaml is
    below the top of the repository ('' at the top), which every step then runs in."""
    text = _render(name, agent, pip_spec, secret)
    return in_folder(text, name, folder) if folder else text


def in_folder(text: str, name: str, folder: str) -> str:
    """A workflow for the suite in `folder` of a monorepo: GitHub reads workflows only from the
    top's .github/workflows, where no rubricgate.yaml is found; so every `run:` works in the
    folder, the uploaded run folder is the folder's, and the concurrency group and the history
    branch name the folder (another folder's gate is not cancelled by this one's)."""
    slug = workflow_slug(folder)
    defaults = ("defaults:\n  run:\n"
                "    # rubricgate.yaml is in this folder of the repository: every command runs there.\n"
                f"    working-directory: {yaml_scalar(folder)}\n\n")
    text = text.replace("\njobs:\n", f"\n{defaults}jobs:\n", 1)
    text = text.replace("path: reports/\n", f"path: {yaml_scalar(folder + '/reports/')}\n")
    text = text.replace("group: rubricgate-pr-${{", f"group: rubricgate-pr-{slug}-${{{{", 1)
    text = text.replace("group: rubricgate-weekly\n", f"group: rubricgate-weekly-{slug}\n", 1)
    # Each folder's trend on a branch of its own: one branch would mix two suites' runs in one series.
    return text.replace("HISTORY_BRANCH: rubricgate-history\n", f"HISTORY_BRANCH: rubricgate-history-{slug}\n", 1)


def workflow_slug(folder: str) -> str:
    """`folder` as a piece of a file name and a concurrency group: `team/bots` -> `team-bots`."""
    return re.sub(r"[^A-Za-z0-9_.]+", "-", folder.strip("/")).strip("-.") or "folder"


def workflow_file(name: str, folder: str) -> str:
    """The workflow's file name: `rubricgate-pr.yml`, or `rubricgate-pr-team.yml` for a folder's
    suite (several folders' gates side by side in the top's .github/workflows)."""
    return name if not folder else name.replace(".yml", f"-{workflow_slug(folder)}.yml")


def refuse_shared_workflow(top: Path, workflows_dir: str, folder: str) -> None:
    """Raise when a workflow this folder's gate would be is another folder's: two folders whose
    names make one slug (`teams/a`, `teams-a`) share its file, and init, which never overwrites,
    skipped it as existing: the second folder's suite had no gate, its history branch was the
    other's, and each folder's pull request gate cancelled the other's (one concurrency group)."""
    for name in WORKFLOW_NAMES if folder else ():
        rel = f"{workflows_dir}/{workflow_file(name, folder)}"
        other = _gated_folder(top / rel)
        if other is not None and other.strip("/") != folder:
            raise GateInputError(rel, "working-directory", f"the gate of folder {other!r}, under the name the "
                                 f"gate of {folder!r} would have", "rename one of the two folders, or write this "
                                 "folder's workflows by hand under other names")


def _gated_folder(path: Path) -> str | None:
    """The folder an existing workflow runs in (its `working-directory:`), None when it names none."""
    try:
        found = _WORKING_DIRECTORY.search(path.read_text(encoding="utf-8"))
        value = yaml.safe_load(found.group(1)) if found else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return value if isinstance(value, str) else None


def _render(name: str, agent: str, pip_spec: str, secret: str | None) -> str:
    text = resources.files("rubricgate.adopt").joinpath("templates", "workflows", name).read_text(encoding="utf-8")
    cli = AGENT_CLIS.get(agent)
    if agent not in INIT_AGENTS:
        raise GateInputError("--agent", agent, "no workflow for this agent", f"use one of {', '.join(INIT_AGENTS)}")
    model_backed = cli is not None or agent == COMMAND
    values = {"AGENT": agent, "PIP": yaml_scalar(pip_spec), "TRIALS": "3" if model_backed else "1"}
    if cli:
        values |= {"NPM": cli.npm, "CLI": cli.command, "SECRET": cli.secret}
    elif agent == COMMAND:
        values |= {"SECRET": secret or DEFAULT_COMMAND_SECRET}
    blocks = {"agent", "cli", "smoke"} if cli else {"agent", "command"} if agent == COMMAND else set()
    text = _keep_blocks(text, keep=blocks)
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return _with_variables(text, cli) if cli else text


def _with_variables(text: str, cli: AgentCli) -> str:
    """Beside each line passing the key, one per variable the key is no use without, from the
    repository's variables (unset: empty, which the CLI reads as unset)."""
    key_line = re.compile(rf"^( *){re.escape(cli.secret)}: \$\{{\{{ secrets\.{re.escape(cli.secret)} \}}\}}$", re.M)
    return key_line.sub(lambda m: m.group(0) + "".join(f"\n{m.group(1)}{name}: ${{{{ vars.{name} }}}}"
                                                       for name in cli.variables), text)


def yaml_scalar(value: str) -> str:
    """`value` as one double-quoted YAML scalar, escaped by the emitter (quotes, newlines, colons)."""
    return (yaml.safe_dump(value, default_style='"', width=1 << 20, allow_unicode=False)
            .strip().removesuffix("...").strip())


_MARKER = re.compile(r"#<(/?)([a-z]+)>")


def _keep_blocks(text: str, keep: set[str]) -> str:
    """Drop the marker lines; drop what they enclose too unless every enclosing block is in `keep`."""
    out: list[str] = []
    open_blocks: list[str] = []
    for line in text.splitlines(keepends=True):
        marker = _MARKER.fullmatch(line.strip())
        if marker:
            if marker.group(1):
                open_blocks.pop()
            else:
                open_blocks.append(marker.group(2))
            continue
        if all(b in keep for b in open_blocks):
            out.append(line)
    return "".join(out)


def tested_version(agent: str, data: object | None = None) -> str:
    """The newest version of `agent`'s CLI the e2e suite passed with, from the versions file.

    Accepts a plain version, a list (newest last) or a mapping with `newest`/`latest`/`versions`,
    so the workflow does not break when the file grows more detail.
    """
    data = _versions() if data is None else data
    if isinstance(data, dict) and isinstance(data.get("agents"), dict):  # {"format_version", "agents": {...}}
        data = data["agents"]
    entry = data.get(agent) if isinstance(data, dict) else None
    if isinstance(entry, dict):
        entry = entry.get("newest") or entry.get("latest") or entry.get("versions") or entry.get("tested")
    if isinstance(entry, list):
        entry = entry[-1] if entry else None
    if not isinstance(entry, str) or not entry.strip():
        raise GateInputError(f"rubricgate/agents/{VERSIONS_FILE}", agent, "no tested version for this agent",
                             f"use an agent the e2e suite covers ({', '.join(AGENT_CLIS)})")
    return entry.strip()


def _versions() -> object:
    try:
        text = resources.files("rubricgate.agents").joinpath(VERSIONS_FILE).read_text(encoding="utf-8")
        return boundary.loads(text)
    except (OSError, ValueError) as exc:
        raise GateInputError(f"rubricgate/agents/{VERSIONS_FILE}", "", f"cannot read the versions file ({exc})",
                             "reinstall rubricgate") from exc


def main(argv: list[str]) -> int:
    """`tested-version AGENT`: print it (exit 0) or one error line (exit 2)."""
    if len(argv) != 2 or argv[0] != "tested-version":
        print("usage: python -m rubricgate.adopt.workflows tested-version AGENT", file=sys.stderr)
        return 2
    try:
        print(tested_version(argv[1]))
    except GateInputError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
