"""Derive the Cortex Code fixtures from the REAL Claude Code recordings.

    python tests/data/transcripts/cortex/derive.py

Cortex Code has no npm package and no way to run here, so these streams are NOT recordings of
the cortex binary. They are the real claude streams rewritten with the differences the seed
(shared/seeds/000) documents: human-readable banner and status lines on stdout, lowercase tool
names, and `thinking` blocks. `seed_pong.ndjson` is the seed's own two-line example, verbatim.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
CLAUDE = HERE.parent / "claude"
BANNERS = ["\u2713 Auto-apply [_CORTEX_CODE_DEFAULT]: 5 skill repos",
           "History redaction mode is enabled. Session history will not be persisted."]
SOURCES = ["review_ok", "forbidden_tool", "max_turns", "max_turns_after_verdict", "api_error",
           "permission_denied", "malformed_verdict"]


def rewrite(line: str, seen: set[str]) -> list[str]:
    """One claude line -> cortex lines: lowercase tools, a thinking block opening each turn."""
    ev = json.loads(line)
    out = []
    if ev.get("type") == "assistant":
        msg = ev["message"]
        for block in msg.get("content", []):
            if block.get("type") == "tool_use":
                block["name"] = block["name"].lower()
        if msg.get("id") not in seen and msg.get("model") != "<synthetic>":
            seen.add(msg.get("id"))
            think = dict(ev, message=dict(msg, content=[{"type": "thinking", "thinking": "Planning the review."}]))
            out.append(json.dumps(think))
    if ev.get("type") == "result" and ev.get("subtype") == "error_max_turns":
        out.append("Max tool call iterations reached")
    out.append(json.dumps(ev))
    return out


def derive(name: str) -> None:
    seen: set[str] = set()
    lines = list(BANNERS)
    for line in (CLAUDE / f"{name}.ndjson").read_text().splitlines():
        lines.extend(rewrite(line, seen) if line.strip() else [])
    (HERE / f"{name}.ndjson").write_text("\n".join(lines) + "\n")
    meta = json.loads((CLAUDE / f"{name}.meta.json").read_text())
    meta["recorded_with"] = "derived from claude/" + name + ".ndjson by derive.py (not a cortex recording)"
    (HERE / f"{name}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    for source in SOURCES:
        derive(source)
    (HERE / "seed_pong.ndjson").write_text(
        '{"type":"assistant","message":{"content":[{"type":"text","text":"PONG"}]}}\n'
        '{"type":"result","subtype":"error_max_turns","is_error":true}\n')
    (HERE / "stale_version.ndjson").write_text(
        "This version is no longer supported please run `cortex update`\n")
