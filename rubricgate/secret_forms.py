"""Every form in which a secret value may be written: raw or encoded (base64, base64url, hex,
percent as URL libraries spell it; the part of its base64 that the base64 of any longer string holding it shares), each
JSON-escaped at depth 1 to 3 as encoders spell it, and each of those HTML/XML-escaped. What
rubricgate/secrets.py searches every written text for, longest first."""

from __future__ import annotations

import base64
import html
import json
import re
import urllib.parse
from functools import lru_cache

from rubricgate.secret_env import MIN_SECRET_CHARS

ESCAPE_DEPTH = 3


def json_forms(value: str, depth: int = ESCAPE_DEPTH, spelled: bool = True) -> set[str]:
    """The value JSON-escaped 0..depth times: the first time in any of the encoders' spellings
    (_FIRST_SPELLINGS: what wrote the value may be the reviewer's tool, in any language; only
    Python's when not `spelled`), each further time as JSON writers escape a string they are
    given (ASCII, UTF-8, or Go's)."""
    forms, level = {value}, {value}
    for escaping in range(depth):
        spellings = _OUTER_SPELLINGS if escaping else _FIRST_SPELLINGS if spelled else _PYTHON_SPELLINGS
        level = {spell(f) for f in level for spell in spellings}
        forms |= level
    return forms


def _body(value: str, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)[1:-1]


def _upper_hex(body: str) -> str:
    """`\\u00e9` as `\\u00E9` (an escaped backslash before `u` is no escape)."""
    return re.sub(r"(?<!\\)((?:\\\\)*\\u)([0-9a-f]{4})", lambda m: m.group(1) + m.group(2).upper(), body)


def _hex_escaped(body: str, chars: str) -> str:
    """These characters as `\\u` escapes (lower-case hex)."""
    return body.translate({ord(c): f"\\u{ord(c):04x}" for c in chars})


# How encoders spell a string body: Python's (ASCII or UTF-8, as most do), with `/` as `\\/`
# (PHP's default), with `<`, `>`, `&` as `\\u003c`, `\\u003e`, `\\u0026` (Go's default), with
# `=` and `'` escaped too (Gson's), and each with upper-case hex (Java's, Django's json_script,
# PHP's JSON_HEX_TAG).
_PYTHON_SPELLINGS = (lambda f: _body(f, True), lambda f: _body(f, False))
_FIRST_SPELLINGS = (
    *_PYTHON_SPELLINGS,
    lambda f: _body(f, True).replace("/", "\\/"),
    lambda f: _body(f, False).replace("/", "\\/"),
    lambda f: _hex_escaped(_body(f, False), "<>&"),
    lambda f: _hex_escaped(_body(f, False), "<>&='"),
    lambda f: _upper_hex(_body(f, True)),
    lambda f: _upper_hex(_hex_escaped(_body(f, False), "<>&")),
    lambda f: _upper_hex(_hex_escaped(_body(f, False), "<>&='")),
)
# A string escaped again (a stream line holding a tool's JSON): as JSON writers do, Go's among them.
_OUTER_SPELLINGS = (*_PYTHON_SPELLINGS, lambda f: _hex_escaped(_body(f, False), "<>&"))


def _markup_forms(form: str) -> set[str]:
    """HTML (quote on or off) and XML-attribute escaping of one form."""
    xml_attr = html.escape(form, quote=False).replace('"', "&quot;").replace("\n", "&#10;")
    return {html.escape(form, quote=True), html.escape(form, quote=False), xml_attr}


def encoded_forms(value: str) -> set[str]:
    """The value as the common encodings write it: base64 (standard and URL-safe, padded or
    not, alone or inside the base64 of a longer string: `base64_cores`), hex (either case) and
    percent-encoding (`percent_forms`). A reviewer asked not to print a key may still print it
    encoded."""
    raw = value.encode("utf-8", "surrogateescape")
    b64 = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    return {value, *b64, *(f.rstrip("=") for f in b64), *base64_cores(raw), raw.hex(), raw.hex().upper(),
            *percent_forms(value)}


# The characters each URL library leaves as they are when it percent-encodes (Python's quote
# keeps letters, digits and `_.-~` besides): Python's quote with nothing else safe, and with
# its default "/"; JavaScript's encodeURIComponent; the WHATWG URL's userinfo (`new URL()`'s
# password in Node and browsers). A password in a connection URL a tool logs is written so.
_PERCENT_SAFE = ("", "/", "!*'()", "!$%&'()*+,")
_PERCENT_ESCAPE = re.compile("%[0-9A-F]{2}")


def percent_forms(value: str) -> set[str]:
    """The value percent-encoded as URL libraries write it (`_PERCENT_SAFE`, and a form's
    space as `+`), each with upper- and lower-case hex; none for a value they all leave as it
    is (a key of letters, digits, `-` and `_`)."""
    forms = {urllib.parse.quote(value, safe=safe, errors="surrogateescape") for safe in _PERCENT_SAFE}
    forms.add(urllib.parse.quote_plus(value, safe="", errors="surrogateescape"))
    forms |= {_PERCENT_ESCAPE.sub(lambda m: m.group().lower(), form) for form in forms}
    return forms - {value}


def base64_cores(raw: bytes) -> set[str]:
    """What the base64 (standard and URL-safe) of any longer string holding `raw` always holds,
    whatever comes before and after it: `printf 'user:%s' "$KEY" | base64` (Basic auth) or the
    base64 of `Bearer $KEY` encodes the key at an offset that is not a multiple of 3. For each
    of the 3 alignments (0, 1 or 2 bytes of the prefix in the key's first group of 3), the
    characters made of the key's bits alone: without the leading ones that hold bits of the
    prefix and the trailing one that holds bits of what follows. A core shorter than
    MIN_SECRET_CHARS is too common to be the secret and is left out."""
    cores = set()
    for shift in range(3):
        first, last = -(-8 * shift // 6), 8 * (shift + len(raw)) // 6  # characters i with first <= i < last
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            core = encode(bytes(shift) + raw).decode()[first:last]
            if len(core) >= MIN_SECRET_CHARS:
                cores.add(core)
    return cores


@lru_cache(maxsize=64)
def written_forms(value: str) -> tuple[str, ...]:
    """Every form in which `value` may appear in a written file, longest first."""
    forms: set[str] = set()
    for encoded in encoded_forms(value):
        # Other encoders' spellings for the value itself; its encodings (base64, hex) as Python
        # spells them: each spelling multiplies the forms every scrubbed text is searched for.
        forms |= json_forms(encoded, spelled=encoded == value)
    for form in list(forms):
        forms |= _markup_forms(form)
    return tuple(sorted(forms, key=len, reverse=True))
