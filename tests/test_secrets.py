"""rubricgate.secrets: every written form, fragments at cuts, invalid Unicode, never blanks a model."""

from __future__ import annotations

import base64
import html
import re
import json
from pathlib import Path

import pytest

from rubricgate.models.transcript import ToolCall, Transcript
from rubricgate.secret_forms import json_forms
from rubricgate.secrets import REDACTED, encodable, scrub, scrub_data, scrub_file, scrub_json, scrub_model

SECRET = 'p@ss"wörd\\123-Zk8'


def _escaped(value: str, depth: int, ascii_: bool) -> str:
    for _ in range(depth):
        value = json.dumps(value, ensure_ascii=ascii_)[1:-1]
    return value


# -- failure paths first ----------------------------------------------------------------------

def test_lone_surrogates_and_undecodable_bytes_never_crash(tmp_path: Path) -> None:
    text = f"a \ud800 b {SECRET} \udcff"
    assert scrub(text, [SECRET]) == f"a \ud800 b {REDACTED} \udcff"
    f = tmp_path / "raw"
    f.write_bytes(b"\xff\xfe " + SECRET.encode() + b" \x80")
    scrub_file(f, [SECRET])
    assert f.read_bytes() == b"\xff\xfe " + REDACTED.encode() + b" \x80"
    assert encodable("x\ud800").encode("utf-8") == b"x\\ud800"


@pytest.mark.parametrize("secret", ["transcripts", "missed_rule"])
def test_scrub_model_scrubs_values_never_field_names_and_keeps_nested_models_models(secret: str) -> None:
    # "transcripts" scrubbed the field name `transcript` (a piece of it at a cut) and "missed_rule"
    # a Literal value: validation failed, the fallback left the findings and grades plain dicts,
    # and the run ended in "internal error: AttributeError: 'dict' object has no attribute 'rule'".
    from rubricgate.models.results import Grade, TrialResult
    from rubricgate.models.verdict import Finding

    result = TrialResult(case_id="c", trial=1, outcome="BLOCK", transcript="transcripts/c-1.json",
                         grades={"verdict": Grade(passed=False, category="missed_rule", reason="missed r1")},
                         findings=[Finding(severity="critical", rule="r1", issue="see transcripts/ and missed_rule")])
    clean = scrub_model(result, [secret])
    assert isinstance(clean, TrialResult) and isinstance(clean.findings[0], Finding)
    assert isinstance(clean.grades["verdict"], Grade) and clean.findings[0].rule == "r1"
    assert secret not in clean.model_dump_json() and REDACTED in clean.model_dump_json()
    assert result.transcript == "transcripts/c-1.json"  # the original is left as it was


def _decoded_base64(text: str) -> list[bytes]:
    """Every run of base64 characters in `text` decoded at each of its 4 character alignments
    (standard and URL-safe alike): what a reader of the text could decode from it."""
    decoded = []
    for run in re.findall(r"[A-Za-z0-9+/_-]+", text):
        run = run.replace("-", "+").replace("_", "/")
        for start in range(4):
            body = run[start:][:len(run[start:]) // 4 * 4]
            decoded.append(base64.b64decode(body) if body else b"")
    return decoded


@pytest.mark.parametrize("secret", ["sk-live-Zq9K2mP7vL4nR8tW", "review", 'p@ss"wörd\\123-Zk8'])
@pytest.mark.parametrize("prefix", [b"", b"u", b"us", b"usr", b"user:", b"Bearer ", b"\x00\xff"])
@pytest.mark.parametrize("suffix", [b"", b"\n", b"x", b"xy", b":rest-of-the-header"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode], ids=["standard", "urlsafe"])
def test_the_secret_base64_encoded_inside_a_longer_string_is_scrubbed(secret: str, prefix: bytes, suffix: bytes,
                                                                      encode) -> None:
    # `printf 'user:%s' "$KEY" | base64` (Basic auth) or base64 of `Bearer $KEY` starts the
    # secret at an offset that is not a multiple of 3: only its encoding at offset 0 was known.
    raw = secret.encode()
    encoded = encode(prefix + raw + suffix).decode()
    for text in (f"Authorization: Basic {encoded}\n", encoded, json.dumps({"stderr": encoded.rstrip("=")})):
        out = scrub(text, [secret])
        assert REDACTED in out, (text, out)
        left = [d for d in _decoded_base64(out) if any(raw[i:i + 5] in d for i in range(len(raw) - 4))]
        assert left == [], (text, out)


LONG_KEY = "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF3GH6IJ9KL2MN5OP8QR1ST4UV7WX0YZ3ab6cd9ef2gh5ij8kl1mn4op7q"


@pytest.mark.parametrize("width", [76, 64, 40])  # GNU base64 and MIME, PEM, a narrow tool
@pytest.mark.parametrize("prefix", [b"", b"user:", b"Bearer "])
@pytest.mark.parametrize("escape", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("scrubbed", [scrub, scrub_json], ids=["scrub", "scrub_json"])  # what files are written with
@pytest.mark.parametrize("lines", [slice(None), slice(1, -1)], ids=["every-line", "middle-lines-alone"])
def test_a_long_secret_in_wrapped_base64_is_scrubbed_line_by_line(width: int, prefix: bytes, escape: bool,
                                                                  scrubbed, lines: slice) -> None:
    # A line in the middle of a long key's wrapped base64 holds neither end of it: no form and no
    # fragment at a cut matched it, and the whole line reached every report.
    encoded = base64.b64encode(prefix + LONG_KEY.encode() + b"\n").decode()
    text = "\n".join([encoded[i:i + width] for i in range(0, len(encoded), width)][lines])
    out = scrubbed(json.dumps({"stdout": text}) if escape else text, [LONG_KEY])
    out = json.loads(out)["stdout"] if escape else out
    raw = LONG_KEY.encode()
    left = [d for line in out.splitlines() for d in _decoded_base64(line)
            if any(raw[i:i + 5] in d for i in range(len(raw) - 4))]
    assert left == [], out


def test_base64_of_other_data_and_digests_stay_beside_a_long_secret() -> None:
    other = base64.b64encode(bytes(range(200))).decode()
    digest = "3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a"
    text = f"{other}\n{digest}\nend"
    assert scrub(text, [LONG_KEY]) == text


def test_a_secret_in_longer_base64_leaves_the_text_around_it() -> None:
    secret = "sk-live-Zq9K2mP7vL4nR8tW"
    encoded = base64.b64encode(b"user:" + secret.encode()).decode()
    out = scrub(f"Authorization: Basic {encoded} end", [secret])
    assert out.startswith("Authorization: Basic dXNlcj") and out.endswith(" end") and out.count(REDACTED) == 1


def test_scrub_model_gives_back_a_model_that_holds_no_secret_as_it_is() -> None:
    # One scan of its JSON, not a walk and a copy of every nested model (on each trial's path).
    call = ToolCall(raw_name="Read", name="read", input={"file_path": "SKILL.md"}, step=1)
    transcript = Transcript(agent="a", tool_calls=[call], final_text="done")
    assert scrub_model(transcript, [SECRET]) is transcript
    assert scrub_model(transcript.model_copy(update={"final_text": SECRET}), [SECRET]).final_text == REDACTED


def test_scrub_model_keeps_a_transcript_with_a_lone_surrogate_whole() -> None:
    # A JSON round trip rejects surrogates: scrubbing must neither crash here nor blank the transcript.
    call = ToolCall(raw_name="Bash", name="bash", input={"command": f"echo \ud800 {SECRET}"}, step=1)
    t = scrub_model(Transcript(agent="a", tool_calls=[call], final_text="done"), [SECRET])
    assert [c.name for c in t.tool_calls] == ["bash"]
    assert t.tool_calls[0].input["command"] == f"echo \ud800 {REDACTED}" and t.final_text == "done"


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("ascii_", [True, False])
def test_json_escaped_forms_at_any_depth(depth: int, ascii_: bool) -> None:
    form = _escaped(SECRET, depth, ascii_)
    assert form != SECRET and form in json_forms(SECRET)
    out = scrub(f"x {form} y", [SECRET])
    assert out == f"x {REDACTED} y"


def test_html_escaped_form() -> None:
    assert scrub(f"<td>{html.escape(SECRET)}</td>", [SECRET]) == f"<td>{REDACTED}</td>"


@pytest.mark.parametrize("keep", [8, 12, len(SECRET) - 1])
def test_prefix_left_at_a_cut_is_redacted(keep: int) -> None:
    cut = ("e" * 290 + SECRET)[:290 + keep]
    assert scrub(cut, [SECRET]) == "e" * 290 + REDACTED
    escaped = _escaped(SECRET, 2, True)[:keep] + '"}'
    assert scrub(escaped, [SECRET]) == REDACTED + '"}'


def test_suffix_left_at_the_start_of_a_tail_is_redacted() -> None:
    assert scrub(SECRET[-9:] + "\nnext line", [SECRET]) == REDACTED + "\nnext line"


def test_fragment_shorter_than_eight_characters_is_left() -> None:
    assert scrub("p@ss\"w and more", [SECRET]) == "p@ss\"w and more"


@pytest.mark.parametrize("word", ["fm-description-required", "a-description-of-it", "no descriptions"])
def test_eight_characters_of_a_secret_inside_a_longer_word_are_left(word: str) -> None:
    # Issue 37: the piece "description" of a configured value rubric/soften-description became
    # [REDACTED] inside rule ids (fm[REDACTED]-required). A fragment is a fragment only at a cut.
    assert scrub(word, ["rubric/soften-description"]) == word


def test_the_same_piece_at_a_cut_is_redacted() -> None:
    value = "rubric/soften-description"
    assert scrub(f'error: branch "{value[:14]}"', [value]) == f'error: branch "{REDACTED}"'
    assert scrub(f"…{value[-11:]} was pushed", [value]) == f"…{REDACTED} was pushed"


def test_nothing_to_scrub_returns_text_unchanged() -> None:
    assert scrub("plain", []) == "plain" and scrub("plain", [SECRET]) == "plain"


# -- data --------------------------------------------------------------------------

def test_scrub_data_walks_values_and_lists_and_leaves_keys_and_other_values() -> None:
    # Its keys are the field names of what is written (a model's dump, an event): ours.
    data = {"reviewer": [f"a{SECRET}", 3, None, {"k": (SECRET,), "review": "review"}]}
    assert scrub_data(data, [SECRET]) == {"reviewer": [f"a{REDACTED}", 3, None, {"k": [REDACTED], "review": "review"}]}
    assert scrub_data(data, ["review"])["reviewer"][3] == {"k": [SECRET], "review": REDACTED}
    assert scrub_data(data, []) is data


@pytest.mark.parametrize("indent", [None, 2])
def test_scrub_json_never_changes_an_object_key_and_scrubs_every_value(indent: int | None) -> None:
    # MY_API_KEY=review made summary.json's key "reviewer" "[REDACTED]er": the run no longer read back.
    data = {"reviewer": "review", "reviews": ["a review", {"review": "x review", "n": 1}],
            "raw": json.dumps({"review": "review"}), "": "review"}
    out = json.loads(scrub_json(json.dumps(data, indent=indent), ["review"]))
    assert list(out) == list(data) and list(out["reviews"][1]) == ["review", "n"]
    assert out["reviewer"] == REDACTED and out["reviews"][0] == f"a {REDACTED}" and out[""] == REDACTED
    assert "review" not in out["raw"] and "review" not in out["reviews"][1]["review"]  # JSON in a value is the value
    assert scrub_json(json.dumps(data), ["hunter2-Qx7pL9zK"]) == json.dumps(data)


@pytest.mark.parametrize("secret", ['wer": "re', 'reviewer"', '"reviews', 'n": 1}'])
def test_scrub_json_keeps_the_keys_of_a_secret_holding_a_quote(secret: str) -> None:
    data = {"reviewer": "review", "reviews": [{"review": f"x {secret}", "n": 1}]}
    out = json.loads(scrub_json(json.dumps(data, indent=2), [secret]))
    assert list(out) == list(data) and list(out["reviews"][0]) == ["review", "n"]
    assert secret not in out["reviews"][0]["review"]


def test_an_event_keeps_its_field_names(tmp_path: Path) -> None:
    from rubricgate.records.events import EventLog

    seen: list[dict] = []
    log = EventLog(tmp_path / "events.jsonl", [seen.append], secrets=["case_id"])
    log.emit("trial_result", case_id="x", trial=1, note="the case_id is case_id")
    line = json.loads((tmp_path / "events.jsonl").read_text())
    assert list(line) == ["event", "at", "case_id", "trial", "note"] == list(seen[0])
    assert line["note"] == seen[0]["note"] == f"the {REDACTED} is {REDACTED}"


# -- JSON text stays JSON: a redaction never cuts a backslash escape in two ----------------------

@pytest.mark.parametrize(("secret", "value"), [
    ('pa"ss\\word123', "xxxxxss\\word123"),  # a kept tail starts on the second backslash of \\
    ("nabcdef123", "x\nabcdef123"),  # the secret starts on the n of \n (the value does not hold it)
    ("abcdefg\\hij", 'abcdefg"'),  # a cut head ends on the backslash of \"
    ("u00e9abcdef1", "x\u00e9abcdef1"),  # ... on the u of \u00e9 (ASCII JSON)
    ("00e9abcdef12", "x\u00e9abcdef12"),  # ... inside the \u00e9 escape
])
def test_scrubbed_json_text_still_reads_as_json_and_holds_no_piece_of_the_secret(secret: str, value: str) -> None:
    text = json.dumps({"final": value})
    scrubbed = scrub(text, [secret])
    assert scrubbed != text and REDACTED in scrubbed
    read = json.loads(scrubbed)["final"]  # raised "Invalid \\escape" or cut the string short before
    assert secret[:8] not in read and secret[-8:] not in read


def test_the_run_of_backslashes_before_a_secret_goes_with_it_at_any_depth() -> None:
    # One backslash: an escape of the secret's first character. Two: an escaped backslash in this
    # text, but in the JSON this text's string holds, the escape of that character again.
    assert scrub("C:\\tokenvalue12", ["tokenvalue12"]) == "C:" + REDACTED
    assert scrub("C:\\\\tokenvalue12", ["tokenvalue12"]) == "C:" + REDACTED


def test_json_in_json_reads_back_at_every_level_after_a_redaction() -> None:
    """A stream line kept as a string in a record: the escapes of the inner JSON are written with
    doubled backslashes, and a redaction must not cut them at either level."""
    for value, secret in (("x\nabcdef123", "nabcdef123"), ("x\u00e9abcdef12", "00e9abcdef12"),
                          ("abcdef123\u00e9y", "abcdef123\u00e9"), ("abcdef12\\", "abcdef12\\")):
        inner = json.dumps({"final": value})
        out = scrub(json.dumps({"line": inner}), [secret])
        assert secret not in out
        read = json.loads(json.loads(out)["line"])["final"]  # each level reads back
        assert secret[:8] not in read and REDACTED in read


def test_other_encoders_spellings_of_a_secret_are_scrubbed_whole() -> None:
    """Valid JSON need not be Python's: `\\/` (PHP), `\\u0026` for & (Go), upper-case hex (Java)."""
    cases = [('{"out": "AB\\/CDEFGHIJKL\\/MN"}', "AB/CDEFGHIJKL/MN"),
             ('{"o": "p\\u00E9Zq9fK2mPx7Lr4\\u00E9W"}', "p\u00e9Zq9fK2mPx7Lr4\u00e9W"),
             ('{"o": "Zq9fK2mP\\u0026x7Lr4Wt8\\u0026vN"}', "Zq9fK2mP&x7Lr4Wt8&vN")]
    for text, secret in cases:
        out = scrub(text, [secret])
        assert out.count(REDACTED) == 1 and json.loads(out), out
        assert not any(secret[i:i + 8] in json.loads(out)[next(iter(json.loads(out)))] for i in range(len(secret) - 7))


def test_upper_case_tag_escapes_and_gson_s_escapes_are_scrubbed_whole() -> None:
    """Django's json_script and PHP's JSON_HEX_TAG write `\\u003C`; Gson writes `=` and `'` as
    `\\u003d` and `\\u0027` (an Azure connection string's key ends in `==`)."""
    key = "Zq9fK2mPx7Lr4Wt8vN3bQ1=="
    gson = '{"c": "AccountName\\u003dacct;AccountKey\\u003dZq9fK2mPx7Lr4Wt8vN3bQ1\\u003d\\u003d;Suffix\\u003dcore"}'
    out = json.loads(scrub(gson, [key]))["c"]
    assert out == f"AccountName=acct;AccountKey={REDACTED};Suffix=core"
    tag = '{"a": "\\u003CZq9fK2mPx7Lr4Wt8\\u003E"}'
    assert json.loads(scrub(tag, ["<Zq9fK2mPx7Lr4Wt8>"]))["a"] == REDACTED


def test_a_secret_ending_in_a_backslash_leaves_the_next_character_in_html_escaped_json() -> None:
    text = html.escape(json.dumps({"k": "x Zq9fK2mPx7Lr4Wt8\\"}))  # ...Wt8\\&quot;}
    out = scrub(text, ["Zq9fK2mPx7Lr4Wt8\\"])
    assert json.loads(html.unescape(out)) == {"k": f"x {REDACTED}"}


def test_a_wrapped_secret_whose_head_holds_an_escape_loses_both_pieces() -> None:
    text = json.dumps({"a": 'key: Zq9f\u00e92mPx\n"7Lr4Wt8'})
    assert json.loads(scrub(text, ['Zq9f\u00e92mPx"7Lr4Wt8']))["a"] == f"key: {REDACTED}\n{REDACTED}"


@pytest.mark.parametrize("secret", ['"abcdefgh12', 'abcdefgh12"', '"abcdefgh12"'])
@pytest.mark.parametrize("value", ["abcdefgh12", "x abcdefgh12", 'say "abcdefgh12"'])
def test_a_secret_edged_with_a_quote_leaves_a_json_string_its_own_quotes(secret: str, value: str) -> None:
    """The secret's raw form matched a string's delimiter with the value: the marker took it."""
    text = json.dumps({"k": value, "m": [value, 1]})
    read = json.loads(scrub(text, [secret]))
    assert "abcdefgh" not in json.dumps(read) and read["m"][1] == 1


def test_a_tail_kept_after_a_json_escape_is_a_tail() -> None:
    """A secret wrapped onto a second line: in JSON text the tail follows `\\n`, not a newline."""
    out = scrub(json.dumps({"a": "key: Zq9fK2mP\nx7Lr4Wt8"}), ["Zq9fK2mPx7Lr4Wt8"])
    assert "x7Lr4Wt8" not in out and json.loads(out)["a"] == f"key: {REDACTED}\n{REDACTED}"
    # After an escaped letter (é) the piece continues a word: not a tail (the same as in plain text).
    kept = json.dumps({"a": "caf\u00e9x7Lr4Wt8"})
    assert scrub(kept, ["Zq9fK2mPx7Lr4Wt8"]) == kept
