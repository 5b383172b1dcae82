"""`init --agent command`: rubricgate set up around your own reviewer program.

The program (`--command`, placeholders allowed) reviews one case: it reads the reviewed-files
list, calls its model and prints its answer. The config says which files are the reviewer (the
prompt, the program, the file that states the rules: `--rubric`, by default the prompt), reads
its stdout as the answer (`format: text`: graded on the verdict alone), passes the key and the
endpoint variables, and uses the `files` layout (a fixture holds any files, a change.diff say).
How the answer becomes a verdict is `verdict:`, written commented for you to fill in
(docs/code-review.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rubricgate.adopt.workflows import DEFAULT_COMMAND_SECRET, NETWORK_ENV, yaml_scalar
from rubricgate.errors import GateInputError
from rubricgate.models.config import DEFAULT_ENV_ALLOWLIST
from rubricgate.suite.paths import safe_relpath

VERDICT_EXAMPLE = """\
# How your reviewer's answer becomes a verdict (docs/code-review.md). Unset: rubricgate's JSON
# verdict contract (the answer's last ```json block). For a YAML answer with free-text headers:
# verdict:
#   format: yaml
#   findings: {path: review.key_issues_to_review, title: issue_header, file: relevant_file,
#              line: start_line, issue: issue_content}
#   rules:                       # each header -> a rule; `statement` finds the rule in your files
#     - {id: sql-injection, severity: critical, match: "(?i)sql injection"}
#     - {id: missing-tests, severity: warning, match: "(?i)missing tests?"}
"""

# `init --agent CLI --layout files`: a reviewer of code answers in a format of its own as often as
# in the contract (rubricgate.yaml's comment, beside the starter that asks for the contract).
AGENT_VERDICT_EXAMPLE = """\
# How the reviewer's answer becomes a verdict (docs/code-review.md). Unset: rubricgate's JSON
# verdict contract (the answer's last ```json block), the starter prompt's format. A reviewer that
# answers in a format of its own declares it here; for a YAML answer with free-text headers:
# verdict:
#   format: yaml
#   findings: {path: review.key_issues_to_review, title: issue_header, file: relevant_file,
#              line: start_line, issue: issue_content}
#   rules:                       # each header -> a rule id of reviewer.rubric's table (its severity)
#     - {id: sql-injection, match: "(?i)sql injection"}
#     - {id: missing-tests, match: "(?i)missing tests?"}

"""


def command_reviewer(repo: Path, prompt: str | None, skill: str | None, rubric: str | None,
                     argv: list[str]) -> dict[str, str]:
    """The reviewer's files: --prompt (required), the program (--skill, else the command's first
    repository file), the rules' file (--rubric, else the prompt)."""
    if not prompt:
        raise GateInputError("--prompt", "", "--agent command needs the reviewer's prompt file",
                             "pass --prompt PATH (your prompt or prompt template)")
    program = skill or _program(repo, argv)
    roles = {"prompt": prompt, "skill": program.replace("{workspace}/", ""), "rubric": rubric or prompt}
    for role, path in roles.items():
        safe_relpath(repo, path, "--" + role, "path")
        if not (repo / path).is_file():
            raise GateInputError("--" + role, "path", f"{path!r} does not exist", "give an existing file")
    return roles


def _program(repo: Path, argv: list[str]) -> str:
    """The command's first repository file, a word of a shell's `-c` line too (the closure reads
    it so: suite/closure.py command_words). None is an error, not the prompt standing in for it:
    the program would not be the reviewer, and a pull request editing only it would pass
    `changed` unseen (`python -m bot` names no file)."""
    from rubricgate.suite.closure import command_words

    found = next((a for a in command_words(argv) if _repo_file(repo, a.replace("{workspace}/", ""))), None)
    if found is None:
        raise GateInputError("--skill", "", "the command names no file of the repository, so the program that "
                             "reviews would not be gated", "pass --skill with its main file (python -m bot: "
                             "bot/__main__.py), or --skill with the prompt when the program is installed, not here")
    return found


def _repo_file(repo: Path, arg: str) -> bool:
    try:
        return bool(arg) and not arg.startswith(("-", "/")) and (repo / arg).is_file()
    except OSError:
        return False


def command_config_text(reviewer: dict[str, str], argv: list[str], options, layout: str) -> str:
    """rubricgate.yaml for a command reviewer: three trials, the statistical gate, the verdict alone."""
    from rubricgate.adopt.init import changed_files_path

    secret = options.secret or DEFAULT_COMMAND_SECRET
    allow = list(dict.fromkeys([*DEFAULT_ENV_ALLOWLIST, *options.endpoint_env, *NETWORK_ENV]))
    command = ", ".join(yaml_scalar(a) for a in argv)
    return (f"# rubricgate: ties the suite, the reviewer under test, the agent and the gate together.\n"
            f"# Written by `rubricgate init --agent command`. Schema: `rubricgate schema config`.\n"
            f"format_version: 1\n\nsuite:\n  tasks: evals/tasks\n  fixtures: fixtures\n"
            f"  layout: {layout}   # files: a fixture folder holds any files (a change.diff); "
            f"all but expect.yaml are reviewed\n"
            f"  review_root: changes   # where reviewed files appear in the reviewer's workspace\n\n"
            f"reviewer:   # the files that are your reviewer: an edit to any of them is what the gate judges\n"
            f"  prompt: {yaml_scalar(reviewer['prompt'])}\n"
            f"  skill: {yaml_scalar(reviewer['skill'])}   # the program that runs the review\n"
            f"  rubric: {yaml_scalar(reviewer['rubric'])}   # where the rules are stated\n"
            f"  changed_files: {yaml_scalar(changed_files_path(reviewer, layout))}"
            f"   # the reviewed files, one a line\n\n"
            f"agent:\n  name: command\n"
            f"  # Runs your reviewer once per trial in the sandbox. Placeholders: {{workspace}} {{changed_files}}\n"
            f"  # {{prompt_file}} {{last_message_file}} {{model}}; its stdout is the answer.\n"
            f"  command: [{command}]\n"
            f"  format: text   # no tool calls or turns to see: graded on the verdict alone\n"
            f"  timeout_s: 300\n"
            f"  secret_env: [{secret}]   # passed to the reviewer, scrubbed from every report\n"
            f"  # Your endpoint, proxy and CA variables reach the reviewer only when listed here.\n"
            f"  env_allowlist: [{', '.join(allow)}]\n\n"
            f"{VERDICT_EXAMPLE}\n"
            f"trials: 3\n\n"
            f"gate:\n  method: statistical   # a model-backed reviewer is noisy: strict would flap\n"
            f"  confidence: 0.95\n  max_trials_per_case: 10\n\n"
            f"baseline: baseline.json\nreports: reports\n")


def write_empty_suite(repo: Path, result, write: Callable) -> None:
    """The suite's folders, kept by git; the cases are yours (fixtures/<tier>/<name>/change.diff)."""
    write(repo, "evals/tasks/.gitkeep", "", result)
    for tier in ("pass", "warn", "block"):
        write(repo, f"fixtures/{tier}/.gitkeep", "", result)
    result.notes.append("add cases: fixtures/<pass|warn|block>/<name>/ holding what your reviewer reviews (a "
                        "change.diff), or `rubricgate record --base REF --head REF` / `--diff FILE`")
