"""The written forms of a secret (secret_forms.py): what every written text is searched for."""

from __future__ import annotations

import base64
import html
import json

from rubricgate.secret_forms import base64_cores, encoded_forms, json_forms, written_forms

SECRET = "sk-live-<Zq9fK2mP>&7/é"


def test_the_forms_hold_each_encoding_each_escaping_and_come_longest_first() -> None:
    forms = written_forms(SECRET)
    assert list(forms) == sorted(forms, key=len, reverse=True)
    raw = SECRET.encode()
    for expected in (SECRET, base64.b64encode(raw).decode(), raw.hex(), raw.hex().upper(),
                     json.dumps(SECRET)[1:-1], json.dumps(json.dumps(SECRET)[1:-1])[1:-1], html.escape(SECRET)):
        assert expected in forms, expected


def test_the_first_escaping_is_spelled_as_other_encoders_spell_it() -> None:
    first = json_forms(SECRET, depth=1)
    assert json.dumps(SECRET, ensure_ascii=False)[1:-1].replace("/", "\\/") in first  # PHP's default
    assert "\\u003cZq9fK2mP\\u003e\\u0026" in "".join(first)  # Go's
    assert json_forms(SECRET, depth=0) == {SECRET}


def test_a_key_inside_a_longer_strings_base64_is_found_at_every_offset() -> None:
    key = b"Zq9fK2mPx7Lw3Nv8"
    cores = base64_cores(key)
    for prefix in (b"", b"u:", b"user:"):
        assert any(c in base64.b64encode(prefix + key + b"!").decode() for c in cores), prefix
    assert encoded_forms("a") >= {"a", "61", "YQ==", "YQ"}


def test_a_password_is_found_percent_encoded_as_each_url_library_writes_it() -> None:
    # A password in a connection URL a tool logs: only Python's quote(safe="") was a form, and
    # JavaScript's encodeURIComponent, Python's default quote, the WHATWG URL's userinfo and
    # lower-case hex each wrote it past the scrubbing.
    password = "Pa$$(w0rd)!k9/x+y=z @"
    forms = written_forms(password)
    for spelled in ("Pa%24%24(w0rd)!k9%2Fx%2By%3Dz%20%40",  # encodeURIComponent
                    "Pa%24%24%28w0rd%29%21k9/x%2By%3Dz%20%40",  # urllib.parse.quote(value)
                    "Pa$$(w0rd)!k9%2Fx+y%3Dz%20%40",  # new URL(): its userinfo
                    "Pa%24%24%28w0rd%29%21k9%2Fx%2By%3Dz+%40",  # a form's quote_plus
                    "Pa%24%24%28w0rd%29%21k9%2fx%2by%3dz%20%40"):  # lower-case hex
        assert spelled in forms, spelled
    assert not {f for f in written_forms("sk-live_Zq9fK2mPab") if "%" in f}  # nothing to encode, no form
