"""Seeded mutations of real inputs: bytes, lines, JSON and YAML values.

Every mutation takes a `random.Random` and the input's bytes and returns new bytes, so a seed
names one mutated input exactly (the fuzz report prints it). An input gets one to three
mutations, drawn from the ones that fit its kind: any file gets the byte and line mutations;
JSON (a file, or each line of a stream) gets value mutations; YAML gets value mutations and
text-level ones (flow nesting, alias bombs) that a dump of a Python value cannot produce.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import yaml

Mutation = Callable[[random.Random, bytes], bytes]


def deep_json(levels: int) -> str:
    """A JSON value nested `levels` deep, as text (json.dumps itself stops near 1,000)."""
    return '{"a": [' * levels + '"x"' + "]}" * levels


# Values that once broke something somewhere: wrong types, huge and non-finite numbers, lone
# surrogates, separators JSON keeps raw, formula-looking text, path escapes.
HOSTILE_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.5, -1e9, 1e308, 10**30, -(10**30), "", "x" * 20_000, "\ud800", "a\udfffb",
    "\u2028\u2029\x85", "\x00", "=HYPERLINK(\"http://127.0.0.1/\")", "../../etc/passwd", "/etc/passwd",
    [], {}, [1, "a", None], {"a": None}, {"type": "tool_use"}, "PASS", "BLOCK", "\r\n\t",
]
# Text a JSON encoder never writes but a reviewer may print: NaN, infinities, numbers past a
# float or an int's digit limit, escaped lone surrogates, and values nested past every bound.
HOSTILE_JSON_TEXT = [
    "NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" * 5000, '"\\ud800"', '"\\udfff\\ud800x"',
    deep_json(70), deep_json(300), deep_json(5000), deep_json(200_000), "[" * 100 + "]" * 100,
]
_SENTINEL = "__RUBRICGATE_FUZZ_SENTINEL__"


def mutate(rng: random.Random, data: bytes, kind: str) -> tuple[bytes, list[str]]:
    """One to three mutations of `data` fitting `kind` ("json", "jsonl", "yaml", "text");
    returns the bytes and the names of the mutations applied."""
    pool = MUTATIONS[kind]
    names = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        name, step = rng.choice(pool)
        data = step(rng, data)
        names.append(name)
    return data, names


# -- bytes and lines ----------------------------------------------------------------------------

def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data or b" ")
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(out))
        out[at] = rng.choice((out[at] ^ (1 << rng.randrange(8)), 0x00, 0xFF, 0x80, 0xC3, ord('"'), ord("{")))
    return bytes(out)


def insert_bytes(rng: random.Random, data: bytes) -> bytes:
    at = rng.randint(0, len(data))
    junk = rng.choice((b"\x00", b"\xff\xfe", b"\r", b"\n", b"\xe2\x80\xa8", b"{", b"}", b"]", b'"', b"\\",
                       bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))))
    return data[:at] + junk + data[at:]


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randint(0, len(data))]


def delete_span(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.randint(1, 200):]


def duplicate_span(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    span = data[start:start + rng.randint(1, 400)]
    return data[:start] + span * rng.randint(2, 20) + data[start:]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def line_op(rng: random.Random, data: bytes) -> bytes:
    """Delete, duplicate (up to 50 times), swap or reverse lines."""
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(4)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines[i:i] = [lines[i]] * rng.randint(1, 50)
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines = lines[::-1]
    return b"\n".join(lines)


def long_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    # Brackets, backticks, @ and < start the patterns that look for names and links in text.
    unit = rng.choice((b"x", b"{", b"\xff", b"|", b"[", b"`", b"@", b"<", b"*", b"\\", b"[a", b"=-"))
    lines.insert(rng.randrange(len(lines) + 1), unit * rng.choice((1000, 200_000)))
    return b"\n".join(lines)


BYTES: list[tuple[str, Mutation]] = [
    ("flip_bytes", flip_bytes), ("insert_bytes", insert_bytes), ("truncate", truncate),
    ("delete_span", delete_span), ("duplicate_span", duplicate_span), ("line_op", line_op),
    ("long_line", long_line),
]


# -- JSON values --------------------------------------------------------------------------------

def _paths(value: Any, limit: int = 20_000) -> list[tuple]:
    """Every path to a value inside `value` (the root is ()); ValueError past `limit` paths (a
    YAML alias bomb an earlier mutation planted expands to a billion)."""
    out: list[tuple] = []
    stack: list[tuple[tuple, Any]] = [((), value)]
    while stack:
        prefix, node = stack.pop()
        out.append(prefix)
        if len(out) > limit:
            raise ValueError("too many values to pick from")
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack += [((*prefix, k), v) for k, v in items]
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    value[head] = _replace(value[head], rest, new)
    return value


def mutate_value(rng: random.Random, value: Any) -> tuple[Any, str | None]:
    """`value` with one node replaced, removed or given a new key; the second item is text to
    put where the sentinel string stands (a hostile JSON text), or None."""
    path = rng.choice(_paths(value))
    choice = rng.randrange(10)
    if choice < 4:
        return _replace(value, path, rng.choice(HOSTILE_VALUES)), None
    if choice < 7:
        return _replace(value, path, _SENTINEL), rng.choice(HOSTILE_JSON_TEXT)
    parent_path = path[:-1]
    parent = value
    for step in parent_path:
        parent = parent[step]
    if path and isinstance(parent, dict) and choice == 7:
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[rng.choice(("type", "subtype", "id", "name", "input", "message", "content", "zz_unknown"))] = \
            rng.choice(HOSTILE_VALUES)
    elif isinstance(parent, list) and parent:
        parent.append(rng.choice(parent))
    return value, None


def dump_json(value: Any, hostile: str | None) -> bytes:
    text = json.dumps(value, ensure_ascii=False) if hostile is None else json.dumps(value)
    if hostile is not None:
        text = text.replace(json.dumps(_SENTINEL), hostile, 1)
    return text.encode("utf-8", "surrogatepass")


def json_value(rng: random.Random, data: bytes) -> bytes:
    try:  # an earlier mutation may have left it unreadable, or too deep for json itself
        return dump_json(*mutate_value(rng, json.loads(data)))
    except (ValueError, RecursionError):
        return flip_bytes(rng, data)


def jsonl_value(rng: random.Random, data: bytes) -> bytes:
    """One JSON line's value mutated (the stream's other lines untouched)."""
    lines = _lines(data)
    candidates = [i for i, line in enumerate(lines) if line.strip().startswith(b"{")]
    if not candidates:
        return flip_bytes(rng, data)
    i = rng.choice(candidates)
    lines[i] = json_value(rng, lines[i])
    return b"\n".join(lines)


def duplicate_key(rng: random.Random, data: bytes) -> bytes:
    """A key given twice in one object (textually: json.dumps cannot)."""
    at = data.find(b'{"')
    if at < 0:
        return flip_bytes(rng, data)
    return data[:at + 1] + b'"type": "x", "type": 1, ' + data[at + 1:]


# -- YAML ---------------------------------------------------------------------------------------

def yaml_value(rng: random.Random, data: bytes) -> bytes:
    try:  # as json_value: an earlier mutation may have left it unreadable
        value = yaml.safe_load(data)
        new, hostile = mutate_value(rng, value if isinstance(value, dict | list) else {"root": value})
        text = yaml.safe_dump(new, allow_unicode=False)
    except (yaml.YAMLError, ValueError, RecursionError):
        return flip_bytes(rng, data)
    if hostile is not None:  # a hostile JSON text is also YAML flow syntax (or a plain scalar)
        text = text.replace(_SENTINEL, hostile, 1)
    return text.encode("utf-8", "surrogatepass")


def yaml_text(rng: random.Random, data: bytes) -> bytes:
    """Text only YAML has: block nesting, aliases expanding to a billion values, tags, anchors."""
    extra = rng.choice((
        "\nzz_deep: " + "[" * rng.choice((70, 5000, 100_000)) + "]" * 100_000,
        "\nzz_block:\n" + "".join("  " * i + "- \n" for i in range(rng.choice((70, 2000)))),
        "\n" + "- " * rng.choice((70, 50_000)) + "x",
        "\na0: &a0 [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10)),
        "\nzz_tag: !!python/object/apply:os.system ['true']\n",
        "\n? [a, b]\n: 1\n", "\nzz: &x {a: *x}\n", "\n---\nsecond: document\n", "\nzz: .nan\nyy: -.inf\n",
    ))
    return data + extra.encode()


MUTATIONS: dict[str, list[tuple[str, Mutation]]] = {
    "text": BYTES,
    "json": BYTES + [("json_value", json_value)] * 6 + [("duplicate_key", duplicate_key)],
    "jsonl": BYTES + [("jsonl_value", jsonl_value)] * 6 + [("duplicate_key", duplicate_key)],
    "yaml": BYTES + [("yaml_value", yaml_value)] * 5 + [("yaml_text", yaml_text)] * 2,
}
