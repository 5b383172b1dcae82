"""Gate soundness: how often each gate method cries wolf, and how often it catches a real drop.

A stochastic reviewer is simulated on a 30-case suite: each case passes each trial with a known
probability (most cases are reliable, some are flaky, a few are hard). For K = 1, 3, 5 trials per
case, each simulated CI run first measures a baseline (as `rubricgate baseline update` would,
from one run at K trials), then runs the suite again, either unchanged or with the reviewer's
mean pass rate lowered by 5, 10 or 15 points, and asks each gate method whether it fails.

Two ways to lose 15 points are simulated: "spread" (every case gets proportionally worse, the
typical effect of a vaguer prompt) and "concentrated" (a few reliable cases break outright, the
typical effect of a deleted rule).

Usage: python bench/gate_soundness.py [--sims N] [--seed S] [--out bench/out]
Prints a markdown table and writes gate_soundness.png and gate_soundness.md under --out.
"""

from __future__ import annotations

import argparse
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rubricgate.stats import judge_rate  # noqa: E402

CASES = [0.97] * 20 + [0.85] * 6 + [0.60] * 4  # mean 0.897
TRIALS = (1, 3, 5)
DROPS = (0.0, 0.05, 0.10, 0.15)
CONFIDENCE, MIN_TRIALS = 0.95, 3


def dropped(probs: np.ndarray, drop: float, how: str) -> np.ndarray:
    """Per-case probabilities whose mean is `drop` lower than the original mean."""
    if how == "spread":
        return probs * (1 - drop / probs.mean())
    out, left = probs.copy(), drop * len(probs)
    for i in np.argsort(-probs):  # the most reliable cases break first
        take = min(out[i], left)
        out[i], left = out[i] - take, left - take
    return out


@lru_cache(maxsize=None)
def statistical(passes: int, trials: int, base_passes: int) -> str:
    """The statistical method's status for one rate (memoized: counts repeat a lot)."""
    k = trials // len(CASES)
    return judge_rate(passes, trials, base_passes / trials, trials, CONFIDENCE, k >= MIN_TRIALS).status


def simulate(rng: np.random.Generator, k: int, drop: float, how: str, sims: int) -> dict[str, float]:
    """Fraction of runs each method fails (and the statistical method warns) for one cell."""
    probs = np.array(CASES)
    base = rng.binomial(k, probs, size=(sims, len(probs))).sum(axis=1)
    cur = rng.binomial(k, dropped(probs, drop, how), size=(sims, len(probs))).sum(axis=1)
    n = k * len(probs)
    statuses = [statistical(int(c), n, int(b)) for c, b in zip(cur, base)]
    return {"strict": float(np.mean(cur < base)),
            "statistical": statuses.count("regression") / sims,
            "warn": statuses.count("inconclusive") / sims}


def run(sims: int, seed: int) -> list[dict[str, object]]:
    """Every (scenario, K, drop) cell, with one generator so the whole table is reproducible."""
    rng = np.random.default_rng(seed)
    rows = []
    for how in ("spread", "concentrated"):
        for k in TRIALS:
            for drop in DROPS:
                if how == "concentrated" and drop == 0.0:
                    continue  # identical to spread at zero drop
                rows.append({"how": how, "k": k, "drop": drop, **simulate(rng, k, drop, how, sims)})
    return rows


def table(rows: list[dict[str, object]], sims: int) -> str:
    """Markdown: false alarms (drop 0) and power (drops > 0) per method and trial count."""
    head = ["| drop | model | trials | strict fails | statistical fails | statistical warns |",
            "| --- | --- | --- | --- | --- | --- |"]
    body = [f"| {r['drop']:.0%} | {r['how'] if r['drop'] else 'none'} | {r['k']} | {r['strict']:.1%} "
            f"| {r['statistical']:.1%} | {r['warn']:.1%} |" for r in rows]
    note = (f"\n{sims} simulated runs per row; 30 cases; baseline measured at the same trials; "
            f"confidence {CONFIDENCE}; statistical warns below {MIN_TRIALS} trials.\n"
            "Drop 0% = false-alarm rate; drops > 0 = power.")
    return "\n".join(head + body) + "\n" + note


def chart(rows: list[dict[str, object]], path: Path) -> None:
    """Fail rate against drop, one line per method and trial count (spread model)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for method, style in (("strict", "--"), ("statistical", "-")):
        for k, colour in zip(TRIALS, ("tab:blue", "tab:orange", "tab:green")):
            pts = [r for r in rows if r["k"] == k and (r["how"] == "spread" or not r["drop"])]
            ax.plot([100 * r["drop"] for r in pts], [100 * r[method] for r in pts], style,
                    color=colour, marker="o", label=f"{method}, {k} trial{'s' * (k > 1)}")
    ax.axhline(5, color="grey", lw=0.8)
    ax.axhline(80, color="grey", lw=0.8)
    ax.set(xlabel="true drop in pass rate (points)", ylabel="runs failed by the gate (%)",
           title="Gate soundness: false alarms at 0, power above", xticks=[0, 5, 10, 15])
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=20240605)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    rows = run(args.sims, args.seed)
    text = table(rows, args.sims)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gate_soundness.md").write_text(text, encoding="utf-8")
    chart(rows, args.out / "gate_soundness.png")
    print(f"\nwrote {args.out / 'gate_soundness.md'} and {args.out / 'gate_soundness.png'}")


if __name__ == "__main__":
    main()
