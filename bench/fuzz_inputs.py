"""Fuzz every input format: mutated real inputs through the code that reads them (issues 37, 38).

For each transcript format (mutations of the real recorded streams under tests/data/transcripts,
and of the files a CLI writes beside them: codex's session rollout, Copilot's usage file; every
CLI's folders found on their own), each side log the run reads while a CLI runs (Qwen Code's
debug log) and each file format (rubricgate.yaml, a task, expect.yaml,
baseline.json, rubric.md, the prompt, summary.json, events.jsonl, shard.json, a stored
transcript, a cache entry, a comparison.json), COUNT seeded mutated inputs (byte flips, truncation, duplication,
long lines, deep nesting, huge and non-finite numbers, lone surrogates, wrong types, duplicate
keys, YAML alias bombs) go through tests/fuzz/targets.py. Printed per format: inputs (and how
many mutated the stream and each file beside it), failures (an exception, a hang past 60 s,
or an outcome outside the format's documented classes), the outcome classes with their counts,
and the time per input (median / 95th percentile / slowest). Each failing input is written to
--out with its seed, for replay.

Usage: python bench/fuzz_inputs.py [--count 1000] [--seed 37] [--only FORMAT ...] [--out DIR]
Exit 1 when any input failed. The test suite runs the same loop at a small count
(tests/fuzz/test_fuzz_inputs.py); docs/architecture.md keeps the table of the last full run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import HANG_S, Tally, fuzz_files, fuzz_side_logs, fuzz_transcripts  # noqa: E402
from tests.fuzz.targets import FILES, World, recordings, side_logs  # noqa: E402

DEFAULT_COUNT = 1000  # the issue 37 and 38 target: at least 1,000 mutated inputs of every format
HEADER = ["| format | inputs (the file mutated) | failures | outcome classes | time per input (median / p95 / max) |",
          "|---|---|---|---|---|"]


def formats() -> list[tuple[Callable[..., list[Tally]], str]]:
    """Every format the fuzz knows, transcripts first: (its loop, its name)."""
    return [*((fuzz_transcripts, fmt) for fmt in recordings()), *((fuzz_side_logs, fmt) for fmt in side_logs()),
            *((fuzz_files, f.name) for f in FILES)]


def row(t: Tally) -> str:
    classes = ", ".join(f"{name} {n}" for name, n in sorted(t.outcomes.items(), key=lambda x: (-x[1], x[0])))
    sources = ", ".join(f"{name} {n}" for name, n in sorted(t.sources.items(), key=lambda x: (-x[1], x[0])))
    inputs = f"{t.inputs} ({sources})" if set(t.sources) != {t.fmt} else str(t.inputs)
    return f"| {t.fmt} | {inputs} | {len(t.failures)} | {classes} | {t.spread()} |"


def save_failures(tallies: list[Tally], out: Path, seed: int) -> list[str]:
    lines = []
    for t in tallies:
        for f in t.failures:
            name = f"{f.fmt.replace(' ', '-').replace('/', '-')}-{f.index}"
            (out / f"{name}.input").write_bytes(f.data)
            lines.append(f"{name}: {f.label} seed {seed} index {f.index} {'+'.join(f.mutations)}: {f.error}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"mutated inputs per format (default {DEFAULT_COUNT})")
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--only", nargs="*", default=None, help="formats to fuzz (default: every one)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/rubricgate-fuzz-failures"))
    args = ap.parse_args(argv)
    world = World.make()
    started = time.perf_counter()
    print("\n".join(HEADER), flush=True)
    tallies: list[Tally] = []
    try:
        for run, fmt in formats():
            if args.only and fmt not in args.only:
                continue
            tallies += run(world, args.count, args.seed, {fmt})
            print(row(tallies[-1]), flush=True)
    finally:
        world.close()
    total = sum(t.inputs for t in tallies)
    failed = sum(len(t.failures) for t in tallies)
    slowest = max((max(t.seconds) for t in tallies if t.seconds), default=0.0)
    print(f"\n{total} inputs in {time.perf_counter() - started:.0f} s, seed {args.seed}: {failed} failed; "
          f"slowest input {slowest:.1f} s (a hang is {HANG_S:.0f} s)")
    if failed:
        args.out.mkdir(parents=True, exist_ok=True)
        print("\n".join(save_failures(tallies, args.out, args.seed)))
        print(f"failing inputs written to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
