"""Issue 39's targets, each met or not with the figure it rests on (bench/gate_power.py's results).

A share is judged on its point estimate; the figure carries its Monte Carlo standard error, so a
reader sees how close to the limit it is.
"""

from __future__ import annotations

import math

ALPHA = 0.05


def _p(m: dict, key: str) -> float:
    return m[key] / m["runs"]


def _se(m: dict, key: str) -> str:
    p = _p(m, key)
    return f"{p:.1%} ± {math.sqrt(p * (1 - p) / m['runs']):.1%}"


def _target(what: str, met: bool, figure: str) -> str:
    return f"- {what}: {'met' if met else 'NOT met'} ({figure})"


def _worst(results: dict, prefix: tuple[str, ...], key: str, what: str, limit: float, above: bool = False) -> list[str]:
    rows = {k: m for k, m in results.items() if k[0].startswith(prefix)}
    if not rows:
        return []
    pick = min if above else max
    worst_key, worst = pick(rows.items(), key=lambda kv: _p(kv[1], key))
    met = _p(worst, key) >= limit if above else _p(worst, key) <= limit
    return [_target(what, met, f"worst {_se(worst, key)}: {', '.join(map(str, worst_key))}")]


def targets(results: dict) -> list[str]:
    """Every target of issue 39 with the rows it is judged on."""
    out = []
    out += _worst(results, ("unchanged, within-run dependence",), "exit1",
                  "exit 1 <= 5% with nothing changed under within-run dependence 0.1 and 0.3 (mixed and stable, "
                  "30 and 100 cases, adaptive and fixed)", ALPHA)
    out += _worst(results, ("unchanged",), "exit1", "exit 1 <= 5% with nothing changed, every design", ALPHA)
    drop = results.get(("drop margin+5 (10 pts), spread", "mixed", 30, "adaptive"))
    if drop:
        out.append(_target("exit 0 <= 20% at a drop of margin + 5 points on the mixed 30-case suite (adaptive)",
                           _p(drop, "exit0") <= 0.20, _se(drop, "exit0")))
    out += _worst(results, ("drop exactly the margin (5 pts)",), "exit0",
                  "P(PASS | drop = margin) <= alpha, fixed 1-10 and adaptive, perfect / stable / near-stable / mixed", ALPHA)
    out += _worst(results, ("drop exactly the margin, continued",), "exit0",
                  "P(PASS | drop = margin) <= alpha over five continuations of an INCONCLUSIVE run", ALPHA)
    for cases in (30, 300, 1000):
        m = results.get(("one stable case collapses", "near-stable", cases, "adaptive"))
        if m:
            out.append(_target(f"one collapsing case on {cases} cases: never exit 0, exit 1 >= 95%",
                               m["exit0"] == 0 and _p(m, "exit1") >= 0.95,
                               f"exit 0 {_se(m, 'exit0')}, exit 1 {_se(m, 'exit1')}"))
    out += _worst(results, ("PR workflow (compare --base), unchanged",), "exit1",
                  "exit 1 <= 5% with nothing changed in the PR workflow (compare --base), adaptive and fixed", ALPHA)
    out += _worst(results, ("PR workflow (compare --base), drop exactly the margin",), "exit0",
                  "P(PASS | drop = margin) <= alpha in the PR workflow (compare --base), adaptive and fixed", ALPHA)
    out += [_efficiency(results, k) for k in results if k[3].startswith("adaptive")
            and k[0].startswith(("drop margin+5", "flaky", "PR workflow (compare --base), drop margin+5"))]
    out += _near_stable(results)
    out += _worst(results, ("drift: both",), "exit1", "exit 1 <= 5% with a 2-point drift in the PR workflow", ALPHA)
    return out


def _efficiency(results: dict, key: tuple) -> str:
    """Adaptive trials against what a fixed design needs for the adaptive power."""
    what = f"adaptive <= 60% of the trials of the fixed design reaching the same power ({key[0]}, {key[1]} {key[2]})"
    m = results[key]
    power = _p(m, "exit1")
    fixed = sorted(((_p(v, "exit1"), v["trials"]) for k, v in results.items()
                    if k[:3] == key[:3] and k[3].startswith("fixed")), key=lambda pv: pv[1])
    need = fixed_trials_for(power, fixed)
    if need is None:
        return _target(what, True, f"no fixed design here reaches the adaptive power {power:.1%} ({m['trials']:.0f} trials)")
    ratio = m["trials"] / need
    return _target(what, ratio <= 0.6, f"{m['trials']:.0f} vs {need:.0f} trials ({ratio:.0%}) at power {power:.1%}")


def fixed_trials_for(power: float, fixed: list[tuple[float, float]]) -> float | None:
    """Trials a fixed design needs for `power`, from (power, trials) rows sorted by trials."""
    below = (0.0, 0.0)
    for p, trials in fixed:
        if p >= power:
            return trials if p == below[0] else below[1] + (trials - below[1]) * (power - below[0]) / (p - below[0])
        below = max(below, (p, trials))
    return None


def _near_stable(results: dict) -> list[str]:
    """The near-stable 30-case suite's mean trials against the best valid boundary of the family
    (bench/gate_boundary.py: the least mean trials any exactly valid failure-count boundary with
    a look every round reaches on the same suite model)."""
    m = results.get(("unchanged", "near-stable", 30, "adaptive"))
    if not m:
        return []
    from gate_boundary import best_valid

    best = best_valid()
    ratio = m["trials"] / best.trials
    return [_target("near-stable 30 cases: mean trials within 1.05x the best valid boundary of the family", ratio <= 1.05,
                    f"{m['trials']:.1f} ± {m['trials_se']:.1f} trials, PASS {_se(m, 'exit0')}, against "
                    f"{best.trials:.1f} ({ratio:.2f}x; the best boundary {best.describe()}, "
                    f"{best.trials / 60:.2f}x the information limit)")]
