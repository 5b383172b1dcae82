"""agents/shell_commands.py: a command graded as a read, grep or glob cannot write or execute.

Codex runs every action as a shell command; a write or an execution graded as a read would pass
the tool-use allowlist (read, grep, glob) for a reviewer that broke it: a false pass.
"""

from __future__ import annotations

import pytest

from rubricgate.agents.shell_commands import classify_command

# Each of these writes a file or runs another program, dressed as a listed reading tool.
WRITES_OR_RUNS = [
    "cat a.md\nrm -rf x",                      # a newline is a command separator to the shell
    "/bin/bash -lc 'cat a.md\nrm -rf x'",
    "cat a.md\r\nrm -rf x",
    "sed -n '1e id' a.md",                      # GNU sed runs a command with `e`
    "sed -n 'w /tmp/out' a.md",                 # ... and writes a file with `w`
    "sed -n '1,5p;w /tmp/out' a.md",
    "sed -n -f script.sed a.md",                # a script file we cannot see
    "sed -n -i '1p' a.md",
    "sed --in-place=.bak -n '1p' a.md",
    "sed '1,5p' a.md",                          # without -n it is still only printing, but not our shape
    "rg --pre sh pattern .",                    # a preprocessor program run on every file
    "rg --pre=./x pattern .",
    "rg --pre-glob '*' --pre sh x .",
    "find . -name '*.md' -fprint /tmp/list",
    "find . -ok rm {} ;",
    "find . -okdir rm {} +",
    "find . -fls /tmp/x",
    "fd -x rm",
    "fd -HIx rm",                               # combined short flags
    "fd --exec rm {}",
    "fd --exec-batch=rm",
    "fd -X rm",
    "ag --pager rm x",
    "ack --noenv --pager=rm x",
    "ack --noenv --output='$0' x",
    "ack TODO .",                               # an .ackrc in the reviewed tree can set a pager
    "ack -- --noenv TODO",                      # after `--` it is a pattern, not the option
    "rg --hostname-bin ./x --hyperlink-format default pattern .",
    "tree -o /tmp/tree.txt",
    "tree -aR -H . ",
    "file -C -m magic",
    "less +!id a.md",                           # less and more run commands interactively: not reads
    "more a.md",
    # A program named like a reader but taken from a path: the reviewed tree's own `cat` script.
    "./cat a.md",
    "skills/bin/grep -rn TODO .",
    "../../tmp/x/rg TODO .",
    "/tmp/x/ls -la",
    "/usr/bin/../../tmp/x/cat a.md",
    # getopt_long and Perl's Getopt::Long take any unambiguous prefix of a long option.
    "ag --pag rm x",
    "ag --page=rm x",
    "ack --noenv --pag=rm x",
    "ack --noenv --outp='$0' x",
    "file --comp -m magic",
    "rg -z TODO .",                              # runs a decompressor program on compressed files
    "rg -nz TODO .",
    "rg --search-zip TODO .",
    # shlex ends a command at a `#` inside a word; the shell reads `a#b` as a word and goes on.
    "cat a#b; rm x",
    "cat a#|sh",
    # Pipelines: every stage must be a listed command, and only a real `|` cuts one.
    "cat a.md | sh",
    "rg --files | xargs rm",
    "cat a.md | tee b.md",
    "cat a.md | sed -n 'w out'",
    "cat a.md | ./grep x",
    "cat a.md || rm x",
    "cat a.md && rm x",
    "cat a.md |& sh",
    "cat a.md |",
    "| cat a.md",
    "fd x '|' cat -x sh -c 'touch pwn'",        # a quoted `|` is an argument: this is fd -x
    "fd x \\| cat -x sh -c 'touch pwn'",         # ... and so is an escaped one
    "fd x \"|\" cat -x sh",
    "fd x $'\\'|' cat -x sh",                  # bash's $'...': not followed, so bash
    "fd x ${u:-a|cat -x sh}",                   # the | is the default value's: fd x a|cat -x sh
    "cat $[1|2]",
    "/bin/bash -lc 'cat a.md | sh'",
]


@pytest.mark.parametrize("command", WRITES_OR_RUNS)
def test_a_command_that_writes_or_runs_something_is_bash(command: str) -> None:
    assert classify_command(command) == "bash"


READS = {
    "cat a.md": "read", "sed -n '1,200p' a.md": "read", "sed -n 1,20p a.md b.md": "read",
    "sed -n '$p' a.md": "read", "sed -ne '10,20p' a.md": "read", "sed -n -e '5p' -e '/name:/p' a.md": "read",
    "sed -n '/description/p' SKILL.md": "read", "head -n 50 a.md": "read", "wc -l a.md": "read",
    "rg -n 'sk-|AKIA' skills": "grep", "rg --files skills": "glob", "grep -rn TODO .": "grep",
    "find . -name '*.md'": "glob", "fd -e md": "glob", "fd -H SKILL": "glob", "ls -la": "glob",
    "tree -a skills": "glob", "file a.md": "read", "ack --noenv TODO .": "grep", "ag TODO .": "grep",
    "/usr/bin/cat a.md": "read", "/bin/grep -rn TODO .": "grep", "ag --passthrough TODO .": "grep",
    "ag -- --pager": "grep", "rg -n -- --pre .": "grep", "find . -name a -o -name b": "glob",
    "nl -ba SKILL.md | sed -n '1,120p'": "read", "rg -n TODO . | head -20": "grep",
    "rg --files | rg SKILL": "glob", "ls -la skills | head": "glob", "grep -rn 'a|b' .": "grep",
    "/bin/bash -lc \"nl -ba a.md | sed -n '1,80p'\"": "read", "cat \"a|b.md\" | wc -l": "read",
}


def test_plain_reads_greps_and_globs_keep_their_names() -> None:
    """The strict rule must not turn an honest reviewer's reads into bash (a false alarm)."""
    assert {c: classify_command(c) for c in READS} == READS
