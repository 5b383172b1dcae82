"""rubricgate.secrets: every written form, fragments at cuts, invalid Unicode, never blanks a model."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from rubricgate.models.transcript import ToolCall, Transcript
from rubricgate.secrets import (REDACTED, encodable, json_forms, scrub, scrub_data, scrub_file, scrub_model,
                                secret_values)

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


def test_nothing_to_scrub_returns_text_unchanged() -> None:
    assert scrub("plain", []) == "plain" and scrub("plain", [SECRET]) == "plain"


# -- values and data --------------------------------------------------------------------------

def test_secret_values_skip_short_and_sort_longest_first() -> None:
    env = {"A": "abc", "B": "long-secret-value", "C": "medium1"}
    assert secret_values(env, ["A", "B", "C", "D"]) == ["long-secret-value", "medium1"]


def test_scrub_data_walks_keys_lists_and_leaves_other_values() -> None:
    data = {SECRET: [f"a{SECRET}", 3, None, {"k": (SECRET,)}]}
    assert scrub_data(data, [SECRET]) == {REDACTED: [f"a{REDACTED}", 3, None, {"k": [REDACTED]}]}
    assert scrub_data(data, []) is data
