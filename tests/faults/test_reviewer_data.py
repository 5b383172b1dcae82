"""Issue 37, item 5: what a reviewer prints is data, never a way to end the run.

A tool input nested 300+ levels deep ended the whole run with an internal error and no report for
any case; a lone surrogate in the CLI's `model` printed the decision, then exited 2 "internal
error" and broke `export`; a `total_cost_usd` of -1e9 or NaN passed `--max-cost` (merge refused
it, run did not); `export` wrote a reviewer's `=HYPERLINK(...)` as the first characters of CSV
cells. Each is now data: cut with a placeholder, shown escaped, unknown, or shown as text.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubricgate.cli import main
from tests.conftest import git, make_repo
from tests.faults.reviewers import use_reviewer, write_reviewer

FIXTURES = ["pass/weekly-revenue-summary", "block/data-loader"]
FORMULA = '=HYPERLINK("http://127.0.0.1:9/x","open")'

# Replaces the reviewer's `emit`: the init event names the model, the first assistant message
# also calls a tool with a deep input, the result event carries the cost.
HOSTILE_EMIT = r'''
_emit = emit
def emit(obj):
    if obj.get("type") == "system":
        obj["model"] = MODEL
    if obj.get("type") == "assistant" and obj["message"]["id"] == "m1":
        for i, levels in enumerate((DEPTHS)):
            obj["message"]["content"].append({"type": "tool_use", "id": f"deep{i}", "name": "Read", "input": f"DEEP{i}"})
        line = json.dumps(obj)
        for i, levels in enumerate((DEPTHS)):  # written as text: json.dumps itself stops near 1,000 levels
            line = line.replace(f'"DEEP{i}"', '{"a": [' * levels + '"x"' + ']}' * levels)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        return
    if obj.get("type") == "result":
        sys.stdout.write(json.dumps(obj).replace('"total_cost_usd": 0.0', '"total_cost_usd": COST') + "\n")
        sys.stdout.flush()
        return
    _emit(obj)
'''


def _repo(tmp_path: Path, model: str = "m", depths: tuple[int, ...] = (), cost: str = "0.0") -> Path:
    repo = make_repo(tmp_path / "repo", fixtures=FIXTURES)
    attack = (HOSTILE_EMIT.replace("MODEL", json.dumps(model)).replace("(DEPTHS)", repr(tuple(depths)))
              .replace("COST", cost))
    script = write_reviewer(tmp_path / "agents", attack)
    use_reviewer(repo, script, sandbox="none")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "hostile reviewer")
    return repo


def _run(repo: Path, *args: str) -> tuple[int, str, Path]:
    result = CliRunner().invoke(main, ["run", "--repo", str(repo), *args])
    assert "internal error" not in result.output and "Traceback" not in result.output, result.output
    runs = sorted((repo / "reports").iterdir())
    return result.exit_code, result.output, runs[-1]


def test_tool_inputs_nested_300_and_200000_levels_deep_leave_every_case_reported(tmp_path: Path) -> None:
    repo = _repo(tmp_path, depths=(300, 200_000))
    code, output, run = _run(repo)
    assert code == 0, output
    summary = json.loads((run / "summary.json").read_text())
    assert [len(c["trials"]) for c in summary["cases"]] == [1, 1]
    transcript = json.loads((run / summary["cases"][0]["trials"][0]["transcript"]).read_text())
    deep = [c for c in transcript["tool_calls"] if c["raw_name"] == "Read" and "a" in c["input"]]
    assert len(deep) == 2 and all("nested deeper than" in json.dumps(c["input"]) for c in deep)
    assert any("nests deeper than" in note for note in transcript["notes"])


def test_a_lone_surrogate_in_the_model_is_shown_escaped_and_export_works(tmp_path: Path) -> None:
    repo = _repo(tmp_path, model="claude-\ud800")
    code, output, run = _run(repo)
    assert code == 0, output
    assert json.loads((run / "summary.json").read_text())["model"] == "claude-\\ud800"
    result = CliRunner().invoke(main, ["export", str(run), "--format", "csv", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "claude-\\ud800" in (tmp_path / "out" / "trials.csv").read_text(encoding="utf-8")


@pytest.mark.parametrize("cost", ["-1e9", "NaN", "-Infinity", "1e999"])
def test_a_cost_that_is_not_an_amount_stops_a_budgeted_run(tmp_path: Path, cost: str) -> None:
    repo = _repo(tmp_path, cost=cost)
    code, output, run = _run(repo, "--max-cost", "0.5", "--jobs", "1")
    assert code == 2, output
    assert "--max-cost cannot be enforced" in output and "not run" in output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["cost"]["budget"]["spent_usd"] == 0.0 and summary["cost"]["cost_usd"] is None
    ran = [t for c in summary["cases"] for t in c["trials"] if t["transcript"]]
    notes = json.loads((run / ran[0]["transcript"]).read_text())["notes"]
    assert cost in ("NaN", "-Infinity", "1e999") or any("not an amount" in n for n in notes), notes


def test_export_shows_a_reviewers_formula_as_text_in_csv_and_keeps_it_in_jsonl(tmp_path: Path) -> None:
    repo = _repo(tmp_path, model=FORMULA)
    _, _, run = _run(repo)
    runner = CliRunner()
    for fmt in ("csv", "jsonl"):
        result = runner.invoke(main, ["export", str(run), "--format", fmt, "--out", str(tmp_path / fmt)])
        assert result.exit_code == 0, result.output
    with open(tmp_path / "csv" / "trials.csv", newline="", encoding="utf-8") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert "'" + FORMULA in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]
    rows = [json.loads(line) for line in (tmp_path / "jsonl" / "trials.jsonl").read_text().splitlines()]
    assert {r["model"] for r in rows} == {FORMULA}


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
