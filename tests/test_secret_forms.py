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
