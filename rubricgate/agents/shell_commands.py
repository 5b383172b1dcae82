"""Which tool a shell command amounts to: read, grep, glob, or bash.

Codex runs every action as a shell command, so the tool-use grade rests on this: a command that
is graded as a read must not be able to write a file or run another program. The rule is
conservative: anything compound (a pipe, a list, a redirect, a substitution, a newline), any
program not listed or named by a path outside the system's bin folders (`./cat` is whatever the
reviewed tree put there), and any option, or abbreviation of one, that makes a listed program
write or execute is bash.
"""

from __future__ import annotations

import posixpath
import re
import shlex

_READ = {"cat", "head", "tail", "nl", "wc", "file", "stat"}
_GREP = {"grep", "rg", "egrep", "fgrep", "ag", "ack"}
_GLOB = {"ls", "find", "fd", "tree"}
# Options that make a listed program write files or run other programs. Long ones match as
# `--opt` or `--opt=value`; single letters also inside combined short flags (`-Hx`).
_UNSAFE_LONG = {
    "find": ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "fd": ("--exec", "--exec-batch"),
    # Programs ripgrep runs: per file, for hyperlinks, and decompressors (-z: gzip, xz, zstd...).
    "rg": ("--pre", "--pre-glob", "--hostname-bin", "--search-zip"),
    "ag": ("--pager",),
    "ack": ("--pager", "--output"),
    "file": ("--compile",),
}
_UNSAFE_LETTERS = {"fd": "xX", "tree": "oR", "file": "C", "rg": "z"}
# Where a listed program may come from when named by path: a `./cat` in the reviewed tree is
# whatever program its author wrote.
_SYSTEM_BIN = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")
# sed reads only when it prints: `-n` with line-range or /regex/ print scripts, nothing else
# (a sed script can also write files with `w` and, in GNU sed, run commands with `e`).
_SED_PRINT = re.compile(r"\s*((\d+|\$)(\s*,\s*(\d+|\$))?|/[^/\\]*/)\s*p\s*")
_SED_FLAGS = {"-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "--separate", "-u", "-z"}


def classify_command(command: str) -> str:
    """Normalized tool name for a shell command: read, grep, glob or bash. A pipeline of listed
    commands (`nl -ba f | sed -n '1,80p'`, `rg --files | rg SKILL`) is named by its first one."""
    names = [_classify_words(_words(stage)) for stage in _pipeline(unwrap_shell(command))]
    return "bash" if "bash" in names else names[0]


def _classify_words(words: list[str]) -> str:
    if not words:
        return "bash"
    if "/" in words[0] and not posixpath.normpath(words[0]).startswith(_SYSTEM_BIN):
        return "bash"
    prog, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if _unsafe_option(prog, rest):
        return "bash"
    if prog in _READ or (prog == "sed" and _sed_prints(rest)):
        return "read"
    if prog == "rg" and "--files" in rest:
        return "glob"
    if prog in _GREP:
        return "grep"
    return "glob" if prog in _GLOB else "bash"


def _unsafe_option(prog: str, rest: list[str]) -> bool:
    # After `--` come file names and patterns (for find: paths, and its primaries after them).
    options = rest[:rest.index("--")] if "--" in rest and prog != "find" else rest
    if prog == "ack" and "--noenv" not in options:
        return True  # ack also reads options (a --pager) from an .ackrc in the reviewed tree
    longs, letters = _UNSAFE_LONG.get(prog, ()), _UNSAFE_LETTERS.get(prog, "")
    for word in options:
        if any(_names_option(word, opt) for opt in longs):
            return True
        if letters and re.fullmatch(r"-[A-Za-z]+", word) and set(word[1:]) & set(letters):
            return True
    return False


def _names_option(word: str, opt: str) -> bool:
    """`word` is `opt`, `opt=value`, or for a `--long` option any prefix of it: getopt_long and
    Perl's Getopt::Long (ag, ack, file) take an unambiguous abbreviation (`--pag` for `--pager`).
    find's single-dash primaries are matched whole (`-o` is its "or", not `-ok`)."""
    name = word.split("=", 1)[0]
    if name == opt:
        return True
    return opt.startswith("--") and name.startswith("--") and len(name) > 2 and opt.startswith(name)


def _sed_prints(rest: list[str]) -> bool:
    """True for `sed -n SCRIPT FILE...` (or `-e SCRIPT`) whose every script only prints lines."""
    scripts: list[str] = []
    files: list[str] = []
    quiet = False
    words = iter(rest)
    for word in words:
        if word in ("-e", "-ne", "--expression"):
            scripts.append(next(words, ""))
            quiet = quiet or word == "-ne"
        elif word in _SED_FLAGS:
            quiet = quiet or word in ("-n", "--quiet", "--silent")
        elif word.startswith("-"):
            return False  # -i, --in-place, -f SCRIPT_FILE, anything unknown
        elif not scripts and not files:
            scripts.append(word)
        else:
            files.append(word)
    return quiet and bool(scripts) and all(_SED_PRINT.fullmatch(s) for s in scripts)


def _pipeline(command: str) -> list[str]:
    """The command cut at each `|` the shell reads as a pipe: not inside quotes, not escaped.
    Expansions that may hold a `|` of their own (`${x:-a|cat -x}`, `$[1|2]`) and bash's `$'...'`
    strings (escaped quotes inside) are not followed: such a command is one stage, and any `|`
    left in a stage makes it bash (`_words`)."""
    if any(opening in command for opening in ("$'", "${", "$[")):
        return [command]
    stages, start, quote, i = [], 0, "", 0
    while i < len(command):
        ch = command[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            i += 1  # the next character is taken literally (inside double quotes too, for `"`)
        elif quote:
            quote = "" if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "|":
            stages.append(command[start:i])
            start = i + 1
        i += 1
    return [*stages, command[start:]]


def _words(command: str) -> list[str]:
    """Shell words, or [] for anything compound (pipes, redirects, lists, substitutions, and
    newlines, which the shell runs as separate commands but shlex reads as spaces)."""
    if "\n" in command or "\r" in command:
        return []
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    # No comments: shlex would end the command at a `#` inside a word (`cat a#b; rm x` read as
    # `cat a`), where the shell reads `a#b` as a word and runs `rm x`.
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:
        return []
    # Operators come out as bare punctuation tokens; quoted "a|b" stays inside its word.
    if any(set(w) <= set("|&;<>()") for w in words) or "$(" in command or "`" in command:
        return []
    return words


def unwrap_shell(command: str) -> str:
    """`/bin/bash -lc 'cmd'` -> `cmd`; anything else unchanged."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
        return words[2]
    return command
