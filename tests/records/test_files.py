"""records/files.py: summary.json written case by case, the very text of a whole dump."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricgate.models.results import CaseSummary
from rubricgate.records import files
from rubricgate.records.files import summary_pieces, write_summary
from tests.conftest import examples
from tests.reports_fixtures import summary, trial


def _whole(s) -> str:
    return s.model_dump_json(indent=2) + "\n"


# -- failure paths first ------------------------------------------------------------------------

def test_a_failure_while_the_pieces_are_made_leaves_the_old_file_and_no_temp_file(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    (tmp_path / "summary.json").write_text("old\n")

    def broken(_summary):
        yield "{\n"
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "summary_pieces", broken)
    with pytest.raises(OSError):
        write_summary(tmp_path, summary())
    assert (tmp_path / "summary.json").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_lone_surrogate_in_a_case_is_escaped_and_the_file_is_json(tmp_path: Path) -> None:
    s = summary()
    s.cases[1].why = "bad \udc80 byte"
    write_summary(tmp_path, s)
    assert json.loads((tmp_path / "summary.json").read_text())["cases"][1]["why"].startswith("bad ")
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_secret_in_a_case_is_scrubbed(tmp_path: Path) -> None:
    s = summary()
    s.cases[0].why = "token sk-live-0123456789abcdef in the case"
    write_summary(tmp_path, s, ["sk-live-0123456789abcdef"])
    text = (tmp_path / "summary.json").read_text()
    assert "sk-live-0123456789abcdef" not in text and "[REDACTED]" in text


def _strings(value, keys: bool = False) -> list[str]:
    """Every string value of JSON data (its keys too when `keys`)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [*(k for k in value if keys), *(s for v in value.values() for s in _strings(v, keys))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, keys)]
    return []


def _key_paths(value, at: str = "") -> set[str]:
    if isinstance(value, dict):
        return {f"{at}.{k}" for k in value} | {p for k, v in value.items() for p in _key_paths(v, f"{at}.{k}")}
    if isinstance(value, list):
        return {p for v in value for p in _key_paths(v, at)}
    return set()


@pytest.mark.parametrize("secret", ["review", "reviewer", "trials", "outcome"],
                         ids=["inside-field-names", "a-field-name", "a-field-name-and-a-word", "a-nested-field-name"])
@pytest.mark.parametrize("pieces", [True, False], ids=["pieces", "json-dumps-fallback"])
def test_a_secret_never_rewrites_a_field_name_and_the_summary_reads_back(tmp_path: Path, secret: str,
                                                                        pieces: bool) -> None:
    # MY_API_KEY=review (6 characters: a secret) turned the key "reviewer" into "[REDACTED]er" and
    # `report`, `trend`, `view`, `baseline update --from` failed: "Extra inputs are not permitted".
    s = summary()
    s.cases[0].why = f"the {secret} said: {secret}{secret}"
    s.cases[1].why = f"{secret}"
    if not pieces:  # a lone surrogate: pydantic-core refuses it, json.dumps writes the whole summary
        s.decision.reasons.append("bad \udc80 byte")
    write_summary(tmp_path, s, [secret])
    back = files.read_summary(tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert _key_paths(written) == _key_paths(s.model_dump(mode="json"))
    assert [v for v in _strings(written) if secret in v] == []
    assert back.cases[0].why == "the [REDACTED] said: [REDACTED]" and back.cases[1].why == "[REDACTED]"


@pytest.mark.parametrize("secret", ["review", "tool_calls"])
def test_a_secret_never_rewrites_a_field_name_of_a_model_or_json_file(tmp_path: Path, secret: str) -> None:
    from rubricgate.models.transcript import ToolCall, Transcript

    call = ToolCall(raw_name="Read", name="read", input={"path": secret})
    t = Transcript(agent="builtin", final_text=f"{secret} here", tool_calls=[call])
    files.write_model_atomic(tmp_path / "t.json", t, [secret])
    files.write_json_atomic(tmp_path / "d.json", t.model_dump(mode="json"), [secret])
    for name in ("t.json", "d.json"):
        written = json.loads((tmp_path / name).read_text())
        assert _key_paths(written) == _key_paths(t.model_dump(mode="json"))
        assert [v for v in _strings(written) if secret in v] == []
        assert Transcript.model_validate(written).final_text == "[REDACTED] here"


# -- the same text as a whole dump --------------------------------------------------------------

@pytest.mark.parametrize("count", [0, 1, 2, 5])
def test_the_pieces_are_the_whole_dump(count: int) -> None:
    s = summary()
    more = [CaseSummary(id=f"c{i}", source="tasks", why='ünïcode "quoted"\n  "cases": [] in text',
                        trials=[trial(f"c{i}", 1)], rates={"verdict": 1.0}) for i in range(max(0, count - 2))]
    s.cases = (s.cases + more)[:count]
    assert "".join(summary_pieces(s)) == _whole(s)


def test_the_written_file_is_the_whole_dump_and_one_piece_a_case(tmp_path: Path) -> None:
    s = summary()
    assert len(list(summary_pieces(s))) == len(s.cases) + 2
    write_summary(tmp_path, s)
    assert (tmp_path / "summary.json").read_text(encoding="utf-8") == _whole(s)


# -- indented JSON (replay artifacts, baseline.json, comparison and mutation records) ------------

def test_a_lone_surrogate_pydantic_core_refuses_is_written_escaped_as_json_dumps_writes_it(tmp_path: Path) -> None:
    files.write_json_atomic(tmp_path / "a.json", {"final": "cut\ud800", "n": 1})
    text = (tmp_path / "a.json").read_text(encoding="ascii")
    assert '"cut\\ud800"' in text and json.loads(text) == {"final": "cut\ud800", "n": 1}


@settings(max_examples=examples(300), deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=16))
def test_indented_json_holds_what_json_dumps_holds_in_the_same_layout(value) -> None:
    got, want = files.indented_json(value), json.dumps(value, indent=2)
    assert json.loads(got) == json.loads(want)
    assert got.isascii() and got.count("\n") == want.count("\n")


def test_values_the_models_do_not_dump_as_json_are_written_as_text(tmp_path: Path) -> None:
    files.write_json_atomic(tmp_path / "p.json", {"where": tmp_path, "big": 10**30})
    assert json.loads((tmp_path / "p.json").read_text()) == {"where": str(tmp_path), "big": 10**30}


# -- the folders a glob of reports/ holds ----------------------------------------------------------

def test_a_comparison_killed_on_its_base_side_is_a_comparisons_folder(tmp_path: Path) -> None:
    """`compare --base` killed outright (SIGKILL, a lost runner) while its base side ran leaves
    base/ alone: no comparison.json, no head/ yet. It was taken for a run folder, and `trend
    reports/*` and `export reports/*` exited 2 'no summary.json here' on it."""
    from rubricgate.records.files import comparison_folder

    (tmp_path / "compare-killed" / "base" / "20991231T000000Z-dead00" / "transcripts").mkdir(parents=True)
    (tmp_path / "compare-head-only" / "head").mkdir(parents=True)
    (tmp_path / "run" / "transcripts").mkdir(parents=True)
    assert comparison_folder(tmp_path / "compare-killed") and comparison_folder(tmp_path / "compare-head-only")
    assert not comparison_folder(tmp_path / "run")
