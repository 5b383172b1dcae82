"""Secret values and the one mechanism that keeps them out of everything rubricgate writes.

A secret (a value of a variable on `agent.secret_env`, or in a copy-only run a secret-looking
value of the harness's own environment, which the reviewer can read) reaches the agent, and the
agent can echo it anywhere: its stream, stderr, a tool input, the verdict JSON. By the time it is
written it may have been JSON-escaped once or several times (a verdict inside a stream line
inside a transcript inside an event), HTML/XML-escaped, or cut (a 300-character error line, a
stderr tail, an output cap). So scrubbing replaces, longest first:
  * every *written form* of the value: raw or encoded (base64, base64url, hex, percent; the
    part of its base64 that the base64 of any longer string holding it shares), each
    JSON-escaped at depth 1 to 3 (ASCII, UTF-8 or Go's `\\u0026`; the value's first escaping
    also as other encoders spell it: `\\/`, upper-case hex), and each of those HTML/XML-escaped;
  * any BASE64_RUN characters in a row of the value's base64 (whole or at an offset) inside base64
    text: a line of a long key's wrapped base64 holds neither end of it;
  * a *fragment left at a cut*: at least MIN_FRAGMENT leading characters of a form that stop
    short of the whole form where the text was cut, or trailing ones that start where a kept
    tail begins. The cut is the anchor: the fragment must end at the end of the text (or before
    a character no token holds: a quote, a space, `<`, a backslash, `&`, a bracket) and match the form
    as far as it goes; eight characters equal to a secret's start inside a longer word of other
    text (`description` in `fm-description-required`) are not a fragment. A fragment of
    ordinary word characters (letters, no digit, no capital inside: `description`, not
    `Zq9fK2mP`) needs its other end anchored too, where the secret began or ended: the edge of
    the text or a character that is not a letter or digit (`descriptions` keeps its word).
Scrubbing is for what is *written*: graders read the transcript as the agent gave it
(runner/written.py says when a scrub would have changed a grade or an id). It works on `str`
with plain string operations, so lone surrogates and bytes decoded with surrogateescape pass
through unchanged; models are scrubbed field by field (never through a JSON round trip, which
rejects surrogates), so a transcript is never blanked.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from rubricgate.secret_forms import base64_cores, written_forms

M = TypeVar("M", bound=BaseModel)

REDACTED = "[REDACTED]"
MIN_FRAGMENT = 8  # a cut-off piece of a secret this long is still treated as the secret
# A run of base64 holding this many characters of a secret's base64 in a row is the secret's: a
# line of wrapped base64 (GNU base64 and MIME wrap at 76, PEM at 64) holds the key's middle
# without its first or last characters, which no form and no fragment at a cut matches.
BASE64_RUN = 16
_BASE64_TEXT = re.compile(rf"[A-Za-z0-9+/_-]{{{BASE64_RUN},}}")
# --- scrubbing ---------------------------------------------------------------------------------

# What may stand right after a cut (or right before a kept tail) when the cut kept part of a
# form: an edge of the text, or a character that no token holds (the end of a JSON string, a
# tag, an escape, a space, a bracket, an ellipsis the cut added).
_CUT_EDGE = frozenset(' \t\n\r"\'`<>\\&()[]{},;:|…')
# A fragment that reads as words: random tokens hold a digit or a capital inside within 8 characters.
_ORDINARY = re.compile(r"[A-Za-z][a-z./_-]*")


def _word_at(text: str, i: int, fragment: str) -> bool:
    """Whether the word-like `fragment` continues a word at text[i] (outside the fragment)."""
    return 0 <= i < len(text) and text[i].isalnum() and _ORDINARY.fullmatch(fragment) is not None


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Replace every written form of every secret, then every fragment left at a cut."""
    return _scrubber(tuple(sorted(set(secrets))))(text)


class _Scrubber:
    """The forms of one set of secrets, with one pattern that finds any of them (or a piece
    long enough to be a fragment): most text holds none, and is returned after one scan."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self.forms = sorted({f for value in secrets for f in written_forms(value)}, key=len, reverse=True)
        self.quoted = any('"' in f for f in self.forms)  # a match may reach past a JSON string's quote
        self.pieces = {p for f in self.forms
                       for p in ((f,) if len(f) <= MIN_FRAGMENT else (f[:MIN_FRAGMENT], f[-MIN_FRAGMENT:]))}
        self.probe = re.compile(_trie_pattern(sorted(self.pieces))) if self.pieces else None
        self.heads: dict[str, list[str]] = {}  # the forms longer than a fragment, by first and last piece
        self.tails: dict[str, list[str]] = {}
        for form in (f for f in self.forms if len(f) > MIN_FRAGMENT):
            self.heads.setdefault(form[:MIN_FRAGMENT], []).append(form)
            self.tails.setdefault(form[-MIN_FRAGMENT:], []).append(form)
        self.base64_runs = frozenset(core[i:i + BASE64_RUN] for value in secrets for core in _base64_of(value)
                                     for i in range(len(core) - BASE64_RUN + 1))

    def __call__(self, text: str) -> str:
        text = self.without_base64_runs(text)
        if self.probe is None or not self.probe.search(text):
            return text
        # A form occurs only where its first piece does: one scan a piece, not one a form (the
        # forms of a secret share most pieces).
        present = {p for p in self.pieces if p in text}
        for form in self.forms:  # whole forms first, so no fragment rule can split a whole occurrence
            if form[:MIN_FRAGMENT] in present and form in text:
                text = _redact(text, _occurrences(text, form))
                present = {p for p in self.pieces if p in text}
        spans = [*(span for head, forms in self.heads.items() if head in present
                   for span in _head_spans(text, head, forms)),
                 *(span for tail, forms in self.tails.items() if tail in present
                   for span in _tail_spans(text, tail, forms))]
        return _redact(text, spans) if spans else text


    def without_base64_runs(self, text: str) -> str:
        """Every stretch of base64 text made of BASE64_RUN-character runs of a secret's base64: a
        check of its own, before the probe, which finds only whole forms and their ends."""
        if not self.base64_runs:
            return text
        spans = []
        for run in _BASE64_TEXT.finditer(text):
            found, start = run.group(), run.start()
            for i in range(len(found) - BASE64_RUN + 1):
                if found[i:i + BASE64_RUN] in self.base64_runs:
                    spans.append((start + i, start + i + BASE64_RUN))
        return _redact(text, spans) if spans else text


def _base64_of(value: str) -> set[str]:
    """The secret's base64, whole and at each alignment inside a longer string (base64_cores)."""
    raw = value.encode("utf-8", "surrogateescape")
    return {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(), *base64_cores(raw)}


# An object key of JSON text: a string (no escape in it: the names we write have none) followed
# by a colon. Its opening quote is no escaped one: every quote inside a string value of the text
# is escaped, so no piece of a value (nor a key of JSON held in a value) is taken for a key.
_JSON_KEY = re.compile(r'(?<!\\)"[^"\\\n]*"(?=[ \t\r\n]*:)')


def scrub_json(text: str, secrets: Iterable[str]) -> str:
    """`scrub` for JSON text rubricgate writes (whole, one value a line, or split between its
    values): its object keys are field names, ours, and are never changed; every string value is
    scrubbed. A secret equal to a field name or inside one (`review` in `"reviewer":`) left the
    key `"[REDACTED]er"`, and the file no longer read back as its model. Keys a reviewer chose (a
    tool's input) are data, scrubbed with the model before it is written (`scrub_model`); those
    of JSON held in a string value are part of the value here."""
    scrubber = _scrubber(tuple(sorted(set(secrets))))
    text = scrubber.without_base64_runs(text)  # base64 runs hold no key of ours: the same as scrub's
    if scrubber.probe is None or not scrubber.probe.search(text):
        return text  # most text holds no secret: one scan
    keys: list[tuple[int, int]] = []  # the keys holding a piece of a secret: the text is scrubbed around them
    for hit in scrubber.probe.finditer(text):
        key = _key_around(text, hit.start())
        if key is not None and (not keys or keys[-1] != key):
            keys.append(key)
    cleaned = _scrubbed_around(text, keys, scrubber)
    # A form holding a quote may reach a key from outside it: then the text between every two keys.
    if scrubber.quoted and _JSON_KEY.findall(cleaned) != _JSON_KEY.findall(text):
        cleaned = _scrubbed_around(text, [key.span() for key in _JSON_KEY.finditer(text)], scrubber)
    return cleaned


def _key_around(text: str, at: int) -> tuple[int, int] | None:
    """(start, stop) of the object key of JSON text holding text[at], None when none does."""
    quote = text.rfind('"', 0, at + 1)
    key = _JSON_KEY.match(text, quote) if quote >= 0 else None
    return key.span() if key is not None and key.end() > at else None


def _scrubbed_around(text: str, keep: list[tuple[int, int]], scrubber: _Scrubber) -> str:
    """text with what lies between the `keep` spans (sorted, apart) scrubbed piece by piece, the
    spans as they are. Each piece ends at a key's quote and the next begins after its other
    one: a quote is a cut edge, so the pieces are scrubbed as they would be in the whole."""
    pieces, pos = [], 0
    for begin, end in keep:
        pieces += [scrubber(text[pos:begin]), text[begin:end]]
        pos = end
    return "".join(pieces) + scrubber(text[pos:])


@lru_cache(maxsize=16)
def _scrubber(secrets: tuple[str, ...]) -> _Scrubber:
    return _Scrubber(secrets)


def _trie_pattern(words: list[str]) -> str:
    """One regular expression matching any of `words`, as a trie (an alternation of hundreds of
    literals is tried branch by branch at every position; a trie shares their prefixes)."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def walk(node: dict) -> str:
        ends = "" in node
        branches = [re.escape(ch) + walk(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body

    return walk(trie)


def _head_spans(text: str, head: str, forms: list[str]) -> list[tuple[int, int]]:
    """Where text holds `head` (the first MIN_FRAGMENT chars of each of `forms`), extended as
    far as a form matches, and the match ends at a cut (see _CUT_EDGE); a word-like match also
    starts outside a word. The forms sharing a head are tried at each of its places at once:
    the union of their spans is the longest one there that ends at a cut."""
    spans, hit = [], text.find(head)
    while hit != -1:
        ends = [_head_end(text, hit, form) for form in forms]
        cut = [end for end in ends if (end == len(text) or text[end] in _CUT_EDGE)
               and not _word_at(text, hit - 1, text[hit:end])]
        if cut:
            spans.append((hit, max(cut)))
        hit = text.find(head, hit + 1)
    return spans


def _head_end(text: str, hit: int, form: str) -> int:
    """Where form's match at `hit` ends. Run into an escape of the text that the form goes on
    differently (`\\n` where the form has `\\"`), it ends where that escape begins."""
    end = hit + MIN_FRAGMENT
    while end - hit < len(form) and end < len(text) and text[end] == form[end - hit]:
        end += 1
    inside = _escape_around(text, end - 1) if end < len(text) else None
    if inside is not None and inside[1] > end and inside[0] - hit >= MIN_FRAGMENT:
        return inside[0]
    return end


def _tail_spans(text: str, tail: str, forms: list[str]) -> list[tuple[int, int]]:
    """Where text holds `tail` (the last MIN_FRAGMENT chars of each of `forms`), extended
    backwards as far as a form matches, and the match starts where a kept tail would (see
    _CUT_EDGE); a word-like match also ends outside a word. Forms sharing a tail at once."""
    spans, hit = [], text.find(tail)
    while hit != -1:
        end = hit + MIN_FRAGMENT
        begins = [b for b in {_tail_begin(text, hit, form) for form in forms}
                  if _kept_from(text, b) and not _word_at(text, end, text[b:end])]
        if begins:
            spans.append((min(begins), end))
        hit = text.find(tail, hit + 1)
    return spans


def _tail_begin(text: str, hit: int, form: str) -> int:
    begin, k = hit, len(form) - MIN_FRAGMENT
    while k > 0 and begin > 0 and text[begin - 1] == form[k - 1]:
        begin, k = begin - 1, k - 1
    return begin


def _kept_from(text: str, begin: int) -> bool:
    """Could a kept tail begin at text[begin]: the edge of the text, a character no token holds,
    or the end of a backslash escape (in JSON text a secret cut by a line break is `...\\nx7Lr...`)."""
    if begin == 0 or text[begin - 1] in _CUT_EDGE:
        return True
    escape = _escape_around(text, begin - 1)
    if escape is None or escape[1] != begin:
        return False
    code = text[begin - 4:begin]  # a `u` escape of a letter or digit (é) continues a word, not a cut
    return not (text[begin - 5:begin - 4] == "u" and _hex_char(code).isalnum())


def _hex_char(code: str) -> str:
    """The character four hex digits name ('' when they are not four hex digits)."""
    if len(code) != 4 or any(c not in "0123456789abcdefABCDEF" for c in code):
        return ""
    return chr(int(code, 16))


def _occurrences(text: str, form: str) -> list[tuple[int, int]]:
    """Where `form` occurs in `text`, left to right, not overlapping (as str.replace finds them)."""
    spans, hit = [], text.find(form)
    while hit != -1:
        spans.append((hit, hit + len(form)))
        hit = text.find(form, hit + len(form))
    return spans


def _redact(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace the union of the spans, each merged run by one marker. A span that would cut a
    backslash escape in two takes all of it: in JSON text a secret may start right after the
    backslash of `\\n` or end on the one of `\\"`, and the marker must not leave `\\[` or a
    closing quote behind (the written file would not read back as JSON)."""
    pieces: list[str] = []
    pos = 0
    for begin, end in sorted(_whole_escapes(text, b, e) for b, e in spans):
        if end <= pos:
            continue
        if begin > pos or not pieces:
            pieces += [text[pos:begin], REDACTED]
        pos = max(pos, end)
    return "".join(pieces) + text[pos:]


def _whole_escapes(text: str, begin: int, end: int) -> tuple[int, int]:
    """The span widened to every backslash escape it cuts (at its start or at its end), and
    narrowed past a bare quote at either end: a secret starting or ending with `"` may match a
    JSON string's own delimiter, which the marker must leave in place (the quote alone tells
    nothing of the secret)."""
    first = _escape_around(text, begin) if begin < len(text) else None
    last = _escape_around(text, end - 1) if end > begin else None
    begin, end = min(begin, first[0]) if first else begin, max(end, last[1]) if last else end
    while begin < end and text[begin] == '"':  # bare here: an escaped one widened the span to its backslash
        begin += 1
    while end > begin and text[end - 1] == '"' and _backslashes_before(text, end - 1) % 2 == 0:
        end -= 1
    return begin, end


def _escape_around(text: str, at: int) -> tuple[int, int] | None:
    """(start, stop) of the backslash escape holding text[at], None when none holds it. An escape
    is taken whole at every level of JSON in JSON: the whole run of backslashes, the character
    after it and, after a `u`, its four hex digits (`\\n` in a string holding JSON is one escape
    in the inner text; cut after its backslashes it would not read back there)."""
    if "\\" not in text[max(0, at - 5):at + 1]:  # most text: no backslash near, no escape
        return None
    after = at
    while after < len(text) and text[after] == "\\":
        after += 1
    if after == len(text):  # a run of backslashes that ends the text (a cut)
        return (at - _backslashes_before(text, at), after) if after > at else None
    for escaped in range(after, max(after - 5, 0), -1):  # the escaped character, or a `u` up to 4 before
        if text[escaped - 1] == "\\" and (escaped == after or text[escaped] == "u"):
            if text[escaped] == '"':  # a string's own quote at some level: only this text's escape
                return _outer_escape(text, at)
            if text[escaped] not in _ESCAPABLE:  # no JSON escape (`\\&quot;` in HTML): the run alone
                start = escaped - _backslashes_before(text, escaped)
                return (start, escaped) if start <= at < escaped else None
            hexes = 4 if text[escaped] == "u" and _hex_char(text[escaped + 1:escaped + 5]) else 0
            start, stop = escaped - _backslashes_before(text, escaped), escaped + 1 + hexes
            return (start, stop) if start <= at < stop else None
    return None


_ESCAPABLE = frozenset("\\/bfnrtu")  # what JSON escapes with a backslash, the quote apart


def _outer_escape(text: str, at: int) -> tuple[int, int] | None:
    """The escape of this text's own level holding text[at]: a backslash begins one when the run of
    backslashes before it is even. Before a quote the run may hold escaped backslashes of inner
    levels and that quote's own escapes, so only the pair at `at` is taken."""
    for start in (at, at - 1):
        if start >= 0 and text[start] == "\\" and _backslashes_before(text, start) % 2 == 0:
            return (start, start + 2) if at < start + 2 else None
    return None


def _backslashes_before(text: str, at: int) -> int:
    run = 0
    while at - run > 0 and text[at - run - 1] == "\\":
        run += 1
    return run


def scrub_data(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of JSON-like data that rubricgate writes (dicts, lists, strings: a model's dump, an
    event) with every string value scrubbed. Its keys are left: they are field names, ours (see
    scrub_json); data keys that can hold a secret are scrubbed with their model (`scrub_model`)."""
    values = list(secrets)
    if not values:
        return value
    return _walk(value, values, keys=False)


def _walk(value: Any, secrets: list[str], keys: bool = True) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {(_walk(k, secrets) if keys else k): _walk(v, secrets, keys) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, secrets, keys) for v in value]
    if isinstance(value, BaseModel):  # its field names are no data: only their values are scrubbed
        fields = type(value).model_fields
        return value.model_copy(update={name: _walk(getattr(value, name), secrets, keys) for name in fields})
    return value


def scrub_model(model: M, secrets: Iterable[str]) -> M:
    """A copy of a pydantic model with every string value in it scrubbed, nested models kept
    models. Not validated again: a secret equal to an allowed value (`missed_rule`) leaves
    [REDACTED] where it was rather than either failing or keeping the secret; never raises (a
    lone surrogate from a CLI's output included)."""
    values = list(secrets)
    if not values:
        return model
    try:  # most models hold no secret: one scan of their JSON says so (a writer scrubs its text again)
        if scrub(text := model.model_dump_json(), values) == text:
            return model
    except PydanticSerializationError:  # a lone surrogate: every string is walked instead
        pass
    return _walk(model, values)


def scrub_file(path: Path, secrets: Iterable[str], cap: int = -1) -> None:
    """Rewrite a captured file with every secret form removed (no-op when none occur). `cap`:
    at most that many bytes are read, and a longer file is kept cut there (an agent's file read
    whole could be a gigabyte)."""
    values = list(secrets)
    # lstat, not is_file: a link the agent planted beside its output must not be written through.
    if not values or path.is_symlink() or not path.is_file():
        return
    with path.open("rb") as fh:
        raw = fh.read(cap)
        longer = cap >= 0 and fh.read(1) != b""
    # surrogateescape round-trips any bytes, so a non-UTF-8 stream is scrubbed, not mangled.
    data = raw.decode("utf-8", "surrogateescape")
    cleaned = scrub(data, values)
    if cleaned != data or longer:
        path.write_bytes(cleaned.encode("utf-8", "surrogateescape"))


def encodable(text: str) -> str:
    """text with lone surrogates shown as backslash escapes (e.g. \\ud800), so writing it as UTF-8 cannot fail."""
    return encoded(text).decode("utf-8")


def encoded(text: str) -> bytes:
    """`encodable(text)` as UTF-8 bytes, made in one pass (no copy of the text between)."""
    return text.encode("utf-8", "backslashreplace")
