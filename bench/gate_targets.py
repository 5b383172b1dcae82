"""Issue 39's targets, each met or not with the figure it rests on (bench/gate_power.py's results).

A share is judged on its point estimate; the figure carries its Monte Carlo standard error, so a
reader sees how close to the limit it is. A target whose rows are not in the results (a part not
run, or not loaded with --load) is listed as NO DATA, never left out; one judged on fewer rows
than it names says how many it had.
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


def _no_data(what: str) -> str:
    return f"- {what}: NO DATA (none of its rows in this run: run its part, or --load it)"


def _worst(results: dict, names: tuple[str, ...], key: str, what: str, limit: float, above: bool = False,
           whole: bool = False, expected: int | None = None, design: str = "") -> list[str]:
    """The worst row of the scenarios whose name begins with one of `names` (whole: is one of them),
    of the designs whose name begins with `design`."""
    rows = {k: m for k, m in results.items()
            if (k[0] in names if whole else k[0].startswith(names)) and k[3].startswith(design)}
    if not rows:
        return [_no_data(what)]
    pick = min if above else max
    worst_key, worst = pick(rows.items(), key=lambda kv: _p(kv[1], key))
    met = _p(worst, key) >= limit if above else _p(worst, key) <= limit
    partial = f"; only {len(rows)} of its {expected} rows" if expected and len(rows) < expected else ""
    return [_target(what, met, f"worst {_se(worst, key)}: {', '.join(map(str, worst_key))}{partial}")]


def targets(results: dict, exact: dict | None = None) -> list[str]:
    """Every target of issue 39 with the rows it is judged on (`exact`: (suite, fixed trials) -> the
    fixed designs' exact P(PASS | a drop of exactly the margin), bench/gate_exact.py: the fixed
    designs' PASS error is judged on it, their simulated rows are shown beside it)."""
    out = _worst(results, ("unchanged, within-run dependence",), "exit1",
                 "exit 1 <= 5% with nothing changed under within-run dependence 0.1 and 0.3 (mixed and stable, "
                 "30 and 100 cases, adaptive and fixed)", ALPHA, expected=24)
    out += _worst(results, ("unchanged",), "exit1", "exit 1 <= 5% with nothing changed under independence, every "
                  "design", ALPHA, whole=True, expected=30)
    out += _worst(results, ("drop margin+5 (10 pts), spread",), "exit0",
                  "exit 0 <= 20% at a drop of margin + 5 points (mixed and near-stable 30 cases, every design)", 0.20,
                  expected=13)
    out += _worst(results, ("drop exactly the margin (5 pts), spread",), "exit0",
                  "P(PASS | drop = margin) <= alpha, adaptive, perfect / stable / near-stable / mixed (simulated)",
                  ALPHA, expected=4, design="adaptive")
    out += _exact(exact)
    out += _worst(results, ("drop exactly the margin, continued",), "exit0",
                  "P(PASS | drop = margin) <= alpha over five continuations of an INCONCLUSIVE run", ALPHA, expected=2)
    out += [_collapse(results, cases) for cases in (30, 300, 1000)]
    efficiency = [_efficiency(results, k) for k in results if k[3].startswith("adaptive")
                  and k[0].startswith(("drop margin+5", "flaky", "PR workflow (compare --base), drop margin+5"))]
    out += efficiency or [_no_data("adaptive <= 60% of the trials of the fixed design reaching the same power")]
    out += _near_stable(results)
    out += _worst(results, ("PR workflow (compare --base), unchanged",), "exit1",
                  "exit 1 <= 5% with nothing changed in the PR workflow (compare --base), adaptive and fixed", ALPHA)
    out += _worst(results, ("PR workflow (compare --base), drop exactly the margin",), "exit0",
                  "P(PASS | drop = margin) <= alpha in the PR workflow (compare --base), adaptive and fixed", ALPHA)
    out += _worst(results, ("drift: both",), "exit1", "exit 1 <= 5% with a 2-point drift in the PR workflow", ALPHA)
    return out


def _exact(exact: dict | None) -> list[str]:
    what = "P(PASS | drop = margin) <= alpha, fixed 1-10 on the four 30-case suites (exact, the verdict's PASS)"
    if not exact:
        return [_no_data(what)]
    (suite, k), worst = max(exact.items(), key=lambda kv: kv[1])
    return [_target(what, worst <= ALPHA, f"worst {worst:.2%}: {suite}, fixed {k}; {len(exact)} designs")]


def _collapse(results: dict, cases: int) -> str:
    what = f"one collapsing case on {cases} cases: never exit 0, exit 1 >= 95%"
    m = results.get(("one stable case collapses", "near-stable", cases, "adaptive"))
    if not m:
        return _no_data(what)
    return _target(what, m["exit0"] == 0 and _p(m, "exit1") >= 0.95,
                   f"exit 0 {_se(m, 'exit0')}, exit 1 {_se(m, 'exit1')}, exit 2 {_se(m, 'exit2')}")


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
        return [_no_data("near-stable 30 cases: mean trials within 1.05x the best valid boundary of the family")]
    from gate_boundary import best_valid

    best = best_valid()
    ratio = m["trials"] / best.trials
    return [_target("near-stable 30 cases: mean trials within 1.05x the best valid boundary of the family", ratio <= 1.05,
                    f"{m['trials']:.1f} ± {m['trials_se']:.1f} trials, PASS {_se(m, 'exit0')}, against "
                    f"{best.trials:.1f} ({ratio:.2f}x; the best boundary {best.describe()}, "
                    f"{best.trials / 60:.2f}x the information limit)")]
