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
