"""cli/compare_cmd.py: how a comparison is printed."""

from __future__ import annotations

from rubricgate.cli.compare_cmd import UNJUDGED_NAMED, render_comparison, unjudged_lines
from rubricgate.gating.compare import CaseFlip

NEVER = ["base: never ran", "head: never ran"]


def test_unjudged_cases_with_the_same_reasons_share_one_line_that_counts_and_names_them() -> None:
    """An interrupt leaves every case not yet run unjudged: 2,000 cases are one line, not 2,000."""
    flips = [CaseFlip(f"c{i}", "unjudged", "0/0", "0/0", list(NEVER)) for i in range(2000)]
    lines = unjudged_lines(flips)
    named = ", ".join(f"c{i}" for i in range(UNJUDGED_NAMED))
    assert lines == [f"  UNJUDGED   2000 cases ({named} and {2000 - UNJUDGED_NAMED} more)  0/0 -> 0/0",
                     "      base: never ran", "      head: never ran"]


def test_unjudged_cases_that_differ_keep_their_own_lines() -> None:
    flips = [CaseFlip("a", "unjudged", "1/1", "-", ["head: never ran"]),
             CaseFlip("b", "unjudged", "0/0", "0/0", list(NEVER)),
             CaseFlip("c", "unjudged", "0/0", "0/0", list(NEVER)),
             CaseFlip("d", "unjudged", "0/0", "0/0", ["base: no judged trial (3 errored)", "head: never ran"])]
    assert unjudged_lines(flips) == [
        "  UNJUDGED   a  1/1 -> -", "      head: never ran",
        "  UNJUDGED   2 cases (b, c)  0/0 -> 0/0", "      base: never ran", "      head: never ran",
        "  UNJUDGED   d  0/0 -> 0/0", "      base: no judged trial (3 errored)", "      head: never ran"]


def test_the_printed_comparison_keeps_every_regressed_case_on_its_own_line_above_the_unjudged() -> None:
    from types import SimpleNamespace
    flips = [CaseFlip("u1", "unjudged", "0/0", "0/0", list(NEVER)),
             CaseFlip("r1", "regressed", "3/3", "0/3", ["verdict: BLOCK -> PASS"], p_value=0.01, credible=True),
             CaseFlip("u2", "unjudged", "0/0", "0/0", list(NEVER)),
             CaseFlip("r2", "regressed", "3/3", "1/3", [], p_value=0.2)]
    decision = SimpleNamespace(status="error", exit_code=2, method="strict", reasons=["interrupted"], warnings=[])
    comparison = SimpleNamespace(flips=flips, tests=[], order=None, decision=decision, base_label="HEAD",
                                 head_label="working tree",
                                 counts=lambda: {"regressed": 2, "fixed": 0, "unchanged": 0, "unjudged": 2})
    lines = render_comparison(comparison).splitlines()
    at = {line.split()[1]: i for i, line in enumerate(lines) if line.startswith("  ") and not line.startswith("      ")}
    assert at["r1"] < at["r2"] < at["2"], lines
    assert "  UNJUDGED   2 cases (u1, u2)  0/0 -> 0/0" in lines
    assert lines[-1] == "decision (strict): COULD NOT JUDGE (exit 2) - interrupted"


def _ordered(order: dict) -> list[str]:
    from types import SimpleNamespace
    decision = SimpleNamespace(status="pass", exit_code=0, method="strict", reasons=[], warnings=[])
    comparison = SimpleNamespace(flips=[], tests=[], order=order, decision=decision, base_label="HEAD",
                                 head_label="working tree", counts=lambda: {"regressed": 0, "fixed": 0, "unchanged": 0})
    return [line for line in render_comparison(comparison).splitlines() if line.startswith("order:")]


def test_the_order_line_names_the_cache_only_when_answers_were_cached() -> None:
    plain = {"seed": 7, "interleaved": False, "cached": False, "rounds": [["base", "head"]]}
    assert _ordered(plain) == ["order: one side after the other, seed 7"]
    assert _ordered({**plain, "cached": True}) == [
        "order: one side after the other (cached answers are keyed by trial index), seed 7"]
    assert _ordered({**plain, "interleaved": True, "rounds": [["base", "head"], ["head", "base"]]}) == [
        "order: interleaved in 2 rounds, seed 7"]


def test_a_comparison_let_through_by_inconclusive_pass_says_so_in_its_decision_line() -> None:
    """It read 'INCONCLUSIVE (exit 0)' where `run` reads 'passed by gate.inconclusive: pass'."""
    from types import SimpleNamespace
    decision = SimpleNamespace(status="inconclusive", exit_code=0, method="strict", reasons=["held"], warnings=[])
    comparison = SimpleNamespace(flips=[], tests=[], order=None, decision=decision, base_label="HEAD",
                                 head_label="working tree", counts=lambda: {"regressed": 0, "fixed": 0, "unchanged": 0})
    assert render_comparison(comparison).splitlines()[-1] == \
        "decision (strict): INCONCLUSIVE (exit 0, passed by gate.inconclusive: pass) - held"


def test_a_comparison_that_stops_before_its_end_leaves_no_earlier_record_at_its_json_path(tmp_path) -> None:
    """`compare --json FILE` wrote FILE only at its end: one that stopped on bad input, or was
    killed outright (the OOM killer, a cancelled step), left an earlier comparison's record there,
    and `publish --compare FILE` stated that comparison's PASS for this push."""
    from click.testing import CliRunner

    from rubricgate.cli import main

    earlier = tmp_path / "compare.json"
    earlier.write_text('{"decision": {"status": "pass", "exit_code": 0}}')
    got = CliRunner().invoke(main, ["compare", str(tmp_path / "no-run-a"), str(tmp_path / "no-run-b"),
                                    "--repo", str(tmp_path), "--json", str(earlier)])
    assert got.exit_code == 2, got.output
    assert not earlier.exists()
