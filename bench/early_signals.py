"""Ctrl-C and SIGTERM in the first second of `rubricgate run`: every outcome, offset by offset.

An interrupt at any instant of a run must end it with exit 2 and the one line
(`error: interrupted: ...`), never click's "Aborted!", exit 1 (the regression code), a
traceback or a death by the signal. This sends SIGINT and SIGTERM to the installed console
script (`rubricgate run` on a copy of this repository's suite, the builtin reviewer) at offsets
from 0.0 s to --until after exec (the moment Popen returns), --tries times each, and prints one
row per offset: how many tries ended each way.

    python bench/early_signals.py                       # the full grid: 0.0-1.0 s, step 0.05, 20 tries
    python bench/early_signals.py --tries 3 --step 0.1  # a quick look
    python bench/early_signals.py --load 4              # with 4 busy processes of its own beside it
    python bench/early_signals.py --launcher 1200 --load 3  # only the launcher's first 6 ms

Outcomes: `ok` exit 2 and the one line; `done` the run ended before the signal arrived (exit 0
or 1 without the signal having been delivered: not an interrupt); `lost` the signal arrived and
the run went on to its end regardless (exit 0 or 1 more than LOST_AFTER_S after it);
`killed` died by the signal;
`traceback`; `exit1`; `other` anything else (its stderr's last line is printed once); `hang`
still going HANG_S after the signal (its threads' stacks are printed).
The `rubricgate` command is a launcher (bin/rubricgate): sh finds the interpreter, then execs
it through `env --block-signal`, so a signal sent during the interpreter's start-up waits,
pending, for rubricgate's handlers. Before env blocks it (sh's few milliseconds and env's own
start) a signal kills at once (sh sets no trap: dash runs one only between commands, and a
signal caught while the `exec` line ran was lost). The `pre` column counts the tries whose
signal was sent while /proc showed nothing holding it, which the table keeps apart from the rest.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTCOMES = ("ok", "done", "lost", "killed", "traceback", "exit1", "other", "hang")
LOST_AFTER_S = 0.25  # a run that ends this long after a signal it did not act on went on without it
HANG_S = 300  # a try still going this long after its signal is a hang (its threads are dumped)


def make_repo(dest: Path) -> Path:
    """A git repository with this project's reviewer, config, fixtures, tasks and baseline."""
    for name in ("reviewer", "fixtures", "evals"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns(".changed-skills.txt"))
    for name in ("rubricgate.yaml", "baseline.json"):
        shutil.copy(ROOT / name, dest / name)
    (dest / ".gitignore").write_text("reports/\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(dest), "-c", "user.email=b@example.com", "-c", "user.name=b",
                    "commit", "-qm", "suite"], check=True)
    return dest


def console_script() -> str:
    """The installed `rubricgate` beside this interpreter (what a user runs), else on PATH."""
    beside = Path(sys.executable).parent / "rubricgate"
    return str(beside) if beside.exists() else (shutil.which("rubricgate") or "rubricgate")


def _signal_state(pid: int) -> str:
    """`bare` (SIGTERM would kill it: nothing holds it yet), `held` (blocked, from env's
    sigprocmask on through the interpreter's start-up) or `handled` (rubricgate's own handler is
    set and nothing blocks it), from /proc."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "bare"
    fields = dict(ln.split(":", 1) for ln in status.splitlines() if ":" in ln)
    bit = 1 << (signal.SIGTERM - 1)
    caught, blocked = (bool(int(fields.get(k, "0"), 16) & bit) for k in ("SigCgt", "SigBlk"))
    if blocked:
        return "held"
    return "handled" if caught else "bare"


def one_try(argv: list[str], sig: int, offset: float) -> tuple[str, bool, str]:
    """(outcome, signal sent before anything held it, last stderr line)."""
    # SIGINT as a terminal delivers it, even when this script runs in the background.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(offset)
    pre = _signal_state(proc.pid) == "bare"
    if proc.poll() is None:
        proc.send_signal(sig)
        sent = True
    else:
        sent = False
    sent_at = time.monotonic()
    try:
        out, err = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # the fault handler prints every thread's stack
        out, err = proc.communicate(timeout=60)
        return "hang", pre, err[-8000:]  # every thread's stack, printed whole below
    last = (err.strip().splitlines() or [""])[-1]
    outcome = classify(proc.returncode, out, err, sent)
    if outcome == "done" and sent and time.monotonic() - sent_at > LOST_AFTER_S:
        outcome = "lost"  # it did not end as the signal arrived: it went on to its end without it
    return outcome, pre, last


def classify(code: int, out: str, err: str, sent: bool) -> str:
    """Before a run folder exists the one line is on stderr; after, the partial report (stdout)
    says the run was interrupted and stderr holds no error line of its own."""
    if "Traceback" in err or "Fatal Python error" in err:
        return "traceback"
    if code < 0:
        return "killed"
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    said = (len(lines) == 1 and "interrupted" in lines[0]) or (not lines and "interrupted" in out)
    if code == 2 and said and "Aborted!" not in err:
        return "ok"
    if not sent or (code in (0, 1) and "interrupted" not in err + out):
        return "done" if code in (0, 1) else "other"
    return "exit1" if code == 1 else "other"


def state_after_ms(argv: list[str], reps: int, state: str) -> list[float]:
    """Milliseconds from exec (Popen returned) to the moment /proc first shows `state` (`held`:
    the launcher's trap or block, `handled`: rubricgate's handler) or a later one."""
    order = ("bare", "held", "handled")
    found = []
    for _ in range(reps):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start = time.perf_counter()
        while order.index(_signal_state(proc.pid)) < order.index(state) and proc.poll() is None:
            time.sleep(0.0002)
        found.append((time.perf_counter() - start) * 1000)
        proc.kill()
        proc.wait()
    return sorted(found)


def interpreter_ms(flags: list[str], reps: int) -> list[float]:
    """Wall milliseconds of an interpreter that starts and leaves at once (`os._exit`, no
    finalization), with or without `site`: its start-up alone."""
    found = []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run([sys.executable, *flags, "-c", "import os; os._exit(0)"], check=True)
        found.append((time.perf_counter() - start) * 1000)
    return sorted(found)


def quartiles(values: list[float]) -> str:
    n = len(values)
    return f"{values[n // 2]:.0f} ms (quartiles {values[n // 4]:.0f} to {values[(3 * n) // 4]:.0f})"


def burners(count: int, seconds: float) -> list[subprocess.Popen]:
    """`count` busy processes of this benchmark's own, each ending by itself after `seconds`."""
    spin = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]


def grid(args: argparse.Namespace, argv: list[str]) -> dict[tuple[str, float], list[tuple[str, bool, str]]]:
    offsets = [round(i * args.step, 3) for i in range(int(round(args.until / args.step)) + 1)]
    cells = [(name, off) for off in offsets for name in args.signals]
    work = [(cell, t) for t in range(args.tries) for cell in cells]  # interleaved: load drifts evenly
    results: dict[tuple[str, float], list[tuple[str, bool, str]]] = {cell: [] for cell in cells}
    with ThreadPoolExecutor(args.workers) as pool:
        futures = [(cell, pool.submit(one_try, argv, getattr(signal, f"SIG{cell[0]}"), cell[1])) for cell, _ in work]
        for cell, future in futures:
            results[cell].append(future.result())
    return results


def print_table(results, signals: list[str]) -> None:
    print(f"{'offset s':>8} " + " ".join(f"| {s:<5} " + " ".join(f"{o:>9}" for o in (*OUTCOMES, "pre")) for s in signals))
    offsets = sorted({off for _, off in results})
    for off in offsets:
        cells = []
        for name in signals:
            rows = results[(name, off)]
            count = Counter(outcome for outcome, _, _ in rows)
            pre = sum(1 for _, p, _ in rows if p)
            cells.append(f"| {name:<5} " + " ".join(f"{count[o]:>9}" for o in OUTCOMES) + f" {pre:>9}")
        print(f"{off:>8.2f} " + " ".join(cells))
    bad = [(cell, r) for cell, rows in results.items() for r in rows if r[0] not in ("ok", "done")]
    after = [(cell, r) for cell, r in bad if not r[1]]
    total = sum(len(rows) for rows in results.values())
    print(f"\n{total} tries: {total - len(bad)} ok or finished first; {len(bad)} not, "
          f"{len(bad) - len(after)} of them sent before anything held the signal, "
          f"{len(after)} after it")
    for (name, off), (outcome, _, last) in sorted(after)[:10]:
        print(f"  SIG{name} at {off:.2f} s: {outcome}: " + (f"its threads:\n{last}" if outcome == "hang" else last[:160]))


STAND_IN = """#!{python} -S
import time
time.sleep(0.05)  # read well after the signal was sent (at most 6 ms after exec)
status = open("/proc/self/status").read()
print(" ".join(ln.split()[1] for ln in status.splitlines() if ln.startswith(("SigPnd", "ShdPnd"))))
"""


def launcher_window(tries: int) -> Counter:
    """The launcher's own first milliseconds, closer than a run can show: bin/rubricgate copied
    beside a stand-in `python` that prints its pending signals and exits 0, signalled 0-6 ms
    after exec (busy-waited, 0.2 ms steps). Each try is `killed` (before env blocked it),
    `held` (pending in the interpreter, which rubricgate's handlers would take) or `lost`
    (neither: the interpreter ran without it)."""
    found: Counter = Counter()
    with tempfile.TemporaryDirectory(prefix="rg-bench-launcher-") as tmp:
        command = Path(tmp) / "rubricgate"
        shutil.copy(ROOT / "bin" / "rubricgate", command)
        (Path(tmp) / "python").write_text(STAND_IN.format(python=sys.executable))
        (Path(tmp) / "python").chmod(0o755)
        for i in range(tries):
            sig = (signal.SIGINT, signal.SIGTERM)[i % 2]
            proc = subprocess.Popen([str(command)], stdout=subprocess.PIPE, text=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            until = time.perf_counter() + (i // 2 % 30) * 0.0002
            while time.perf_counter() < until:
                pass
            proc.send_signal(sig)
            out, _ = proc.communicate()
            pending = any(int(mask, 16) & (1 << (sig - 1)) for mask in out.split())
            found[(sig.name, "killed" if proc.returncode < 0 else "held" if pending else "lost")] += 1
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--step", type=float, default=0.05)
    parser.add_argument("--until", type=float, default=1.0)
    parser.add_argument("--signals", type=lambda s: s.split(","), default=["INT", "TERM"])
    parser.add_argument("--workers", type=int, default=1, help="tries at once (each a whole run)")
    parser.add_argument("--load", type=int, default=0, help="busy processes of its own beside the tries")
    parser.add_argument("--launcher", type=int, default=0, metavar="TRIES",
                        help="only the launcher's first 6 ms, TRIES signals with a stand-in interpreter")
    args = parser.parse_args()
    if args.launcher:
        load = burners(args.load, 3 * 3600)
        try:
            found = launcher_window(args.launcher)
        finally:
            for proc in load:
                proc.kill()
                proc.wait()
        print(f"# bin/rubricgate, 0-6 ms after exec, {args.launcher} tries, {args.load} busy processes beside, "
              f"load average {os.getloadavg()[0]:.1f}")
        for name in ("SIGINT", "SIGTERM"):
            print(f"{name}: " + ", ".join(f"{o} {found[(name, o)]}" for o in ("killed", "held", "lost")))
        return 0
    with tempfile.TemporaryDirectory(prefix="rg-bench-signals-") as tmp:
        repo = make_repo(Path(tmp) / "repo")
        argv = [console_script(), "run", "--repo", str(repo), "--jobs", "2"]
        load = burners(args.load, 3 * 3600)
        began = time.monotonic()
        try:
            held, handled = state_after_ms(argv, 20, "held"), state_after_ms(argv, 20, "handled")
            bare, site = interpreter_ms(["-S"], 20), interpreter_ms([], 20)
            results = grid(args, argv)
        finally:
            for proc in load:
                proc.kill()
                proc.wait()
        print(f"# {argv[0]} run, {args.tries} tries per cell, {args.load} busy processes beside, "
              f"load average at the end {os.getloadavg()[0]:.1f}, {time.monotonic() - began:.0f} s\n")
        print(f"exec -> the signals held (launcher): {quartiles(held)}; -> rubricgate's handler: "
              f"{quartiles(handled)}; for scale, "
              f"the interpreter's start-up alone {quartiles(site)}, without site (-S) {quartiles(bare)}\n")
        print_table(results, args.signals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
