"""Harness overhead per trial, against baselines measured in the same run.

Part 1, the builtin reviewer: (a) reviewing one case in a prepared workspace (the work an agent
must do anyway) and (b) that plus the irreducible cost of a fresh copy: `cp -r` of the same files
and `rm -r` afterwards, against the full `run_suite` pipeline per trial (workspace clone, agent,
tree check, grading, transcript/event/report writes), and the peak traced memory of a full run.

Part 2, the cost of isolation: a stub agent CLI (the `command` agent printing a Claude-format
transcript) run through the whole pipeline with `agent.sandbox: none` (copy-only) and
`agent.sandbox: bwrap`, alternating, median of the rounds; the difference per trial is what the
bubblewrap sandbox adds (target: <= 10 ms per trial), with the spread of the rounds' paired
differences (each bubblewrap round minus the copy-only round of the same round). Measured twice:
on the same copied workspaces (`--keep-workspaces` makes bubblewrap copy too), the sandbox's own
launch cost; and as a run uses it, an overlay over the snapshot against copy-only's copies.

Part 3, the sandbox's launch alone: `/bin/true` started through `run_process` (the call every
trial's agent goes through) with and without the bubblewrap policy, alternating, in the same
writable folder: the per-launch difference, median and quartiles. This is what the sandbox adds
to each trial with nothing else in the figure (no workspace, no Python start-up), so it is the
least noisy of the three on a shared machine.

Part 4, the sandbox's root against the one it replaced: rubricgate's bubblewrap command for
`/bin/true` (the root built from an allowlist: system folders, the few /etc files, private
/tmp and HOME, passwd/group from pipes, the rlimit prefix) against the earlier design's root
(`--ro-bind / /`, tmpfs over HOME and the hidden folders), both started straight by
subprocess with the same namespaces, alternating: what the allowlist adds per trial
(target: <= 10 ms).

Part 5, the network: `/bin/true`, then `curl` of one page from a loopback server, through
`run_process` in rubricgate's sandbox with `agent.sandbox_network` shared, none (a network
namespace of its own) and allowlist (that, the trial's proxy door, socat in the sandbox and the
wait until it listens; curl's request relayed by the proxy), alternating: what the allowlist
adds per trial against the shared network (target: <= 10 ms at the median), and the harness's
own CPU per trial in each mode (its Python: the door, the relay thread).

Part 6, the harness's own CPU per sandboxed trial: the stub CLI through `run_suite` (39 cases,
`--jobs 1`), CPU seconds of the harness process alone (its Python: planning, launching,
supervising, the proxy, grading, writing; the sandbox's processes are not counted), a run of 4
trials a case against one of 1, over the trials that adds, per network setting (target: <= 3 ms
a trial).

    python bench/run_overhead.py [--trials 3] [--rounds 3] [--launches 60] [--launch-only] [--cpu-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rubricgate.agents.base import AgentRequest  # noqa: E402
from rubricgate.agents.builtin import BuiltinAgent  # noqa: E402
from rubricgate.isolation.limits import Limits  # noqa: E402
from rubricgate.isolation.netaccess import NetworkAccess  # noqa: E402
from rubricgate.isolation.process import run_process  # noqa: E402
from rubricgate.isolation.sandbox import SandboxPolicy, probe_bwrap, wrap  # noqa: E402
from rubricgate.models.config import Config  # noqa: E402
from rubricgate.pipeline import RunOptions, run_suite  # noqa: E402
from rubricgate.runner.workspace import RunTree, list_tree  # noqa: E402
from rubricgate.suite.cases import neutral_layout  # noqa: E402

KEEP_OUT = {"fixtures", "evals", "tests", "bench", "reports", "baseline.json", "rubricgate.yaml"}
STUB = r"""import json, sys
def emit(o): sys.stdout.write(json.dumps(o) + "\n")
text = "ok\n```json\n" + json.dumps({"tier": "PASS", "summary": "s", "files_reviewed": [], "findings": []}) + "\n```\n"
emit({"type": "system", "subtype": "init", "cwd": ".", "session_id": "s", "tools": ["Read"], "model": "m"})
for i in range(17):
    emit({"type": "assistant", "message": {"id": f"m{i}", "model": "m", "role": "assistant",
          "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": "x"}}]}})
    emit({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}})
emit({"type": "assistant", "message": {"id": "end", "model": "m", "role": "assistant", "content": [{"type": "text", "text": text}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "result": text, "num_turns": 18,
      "total_cost_usd": 0.0, "usage": {"input_tokens": 1, "output_tokens": 1}, "permission_denials": []})
"""

CHANGED = "reviewer/.changed-skills.txt"
SHARED = NetworkAccess("shared")


def clean_copy(dest: Path) -> Path:
    """A clone of the committed tree, so a concurrent edit here cannot trip the tree check."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    return dest


def _workspace(repo: Path, review: list[str]):
    layout = neutral_layout(repo, Config(), review, {}, "bench")
    tree = RunTree(repo, list_tree(repo, KEEP_OUT), sorted(layout["workspace_paths"].values()))
    return tree, tree.workspace(layout["files"], layout["workspace_paths"], (CHANGED, layout["workspace_review"]))


def bare_review_seconds(repo: Path, reps: int) -> float:
    tree, ws = _workspace(repo, ["fixtures/block/data-loader/SKILL.md"])
    request = AgentRequest(case_id="b", trial=1, workspace=ws.root, prompt_file=ws.root / "reviewer/prompts/evaluate.md",
                           rubric_file=ws.root / "reviewer/evaluator/references/rubric.md",
                           changed_files_file=ws.root / CHANGED, scratch=ws.scratch)
    agent = BuiltinAgent()
    start = time.perf_counter()
    for _ in range(reps):
        agent.run(request)
    tree.remove()
    return (time.perf_counter() - start) / reps


def plain_copy_seconds(repo: Path, reps: int) -> float:
    """cp -r + rm -r of the tracked tree: what any isolating harness must pay per trial."""
    tree, staged = _workspace(repo, [])  # the same files, no .git
    start = time.perf_counter()
    for _ in range(reps):
        dest = Path(tempfile.mkdtemp(prefix="rubricgate-bench-cp-"))
        subprocess.run(["cp", "-r", str(staged.root), str(dest / "copy")], check=True)
        subprocess.run(["rm", "-r", str(dest)], check=True)
    elapsed = (time.perf_counter() - start) / reps
    tree.remove()
    return elapsed


def pipeline_seconds(repo: Path, trials: int) -> tuple[float, int, int]:
    """Seconds per trial of a full run, then peak traced memory of a second, traced run."""
    start = time.perf_counter()
    outcome = run_suite(RunOptions(repo=repo, trials=trials, reports_dir=repo.parent / "reports"))
    elapsed = time.perf_counter() - start
    tracemalloc.start()  # tracing slows Python several-fold, so it gets a run of its own
    run_suite(RunOptions(repo=repo, trials=trials, reports_dir=repo.parent / "reports"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    n = sum(len(c.trials) for c in outcome.summary.cases)
    return elapsed / n, n, peak


# (agent.sandbox, keep_workspaces): copy-only always copies each workspace; bubblewrap mounts an
# overlay over the run's snapshot, or copies under --keep-workspaces. Kept folders are removed
# outside the timing, so both "copies" modes pay the same copy and no removal.
MODES = {"copy-only": ("none", False), "bwrap": ("bwrap", False),
         "copy-only, copies": ("none", True), "bwrap, copies": ("bwrap", True)}


def isolation_seconds(repo: Path, stub: Path, trials: int, rounds: int) -> dict[str, list[float]]:
    """Seconds per trial of the stub agent in each round and mode, the modes alternating."""
    import yaml
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    config_path = repo / "rubricgate.yaml"
    config = yaml.safe_load(config_path.read_text())
    for _ in range(rounds):
        for mode, (sandbox, keep) in MODES.items():
            config["agent"] = {"name": "command", "command": [sys.executable, str(stub)], "format": "claude",
                               "sandbox": sandbox}
            config_path.write_text(yaml.safe_dump(config))
            start = time.perf_counter()
            outcome = run_suite(RunOptions(repo=repo, trials=trials, reports_dir=repo.parent / "reports",
                                           require_baseline=False, keep_workspaces=keep))
            n = sum(len(c.trials) for c in outcome.summary.cases)
            times[mode].append((time.perf_counter() - start) / n)
            if outcome.workspaces is not None:
                shutil.rmtree(outcome.workspaces, ignore_errors=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launches", type=int, default=60)
    parser.add_argument("--launch-only", action="store_true", help="only parts 3 to 5")
    parser.add_argument("--cpu-only", action="store_true", help="only part 6")
    args = parser.parse_args()
    problem = probe_bwrap()
    tmp = Path(tempfile.mkdtemp(prefix="rubricgate-bench-"))
    try:
        if args.cpu_only:
            report_trial_cpu(trial_cpu_ms(tmp, args.rounds))
            return
        if not args.launch_only:
            pipeline_and_isolation(tmp, args.trials, args.rounds, problem)
        if problem:
            print(f"sandbox launch: not measured ({problem})")
            return
        (tmp / "launch" / "cwd").mkdir(parents=True)
        report_launch(launch_ms(tmp / "launch" / "cwd", args.launches))
        report_roots(roots_ms(tmp / "launch" / "cwd", args.launches))
        report_network(*network_ms(tmp / "launch" / "cwd", args.launches))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def pipeline_and_isolation(tmp: Path, trials: int, rounds: int, problem: str) -> None:
    """Parts 1 and 2, printed."""
    repo = clean_copy(tmp / "repo")
    bare = bare_review_seconds(repo, 50)
    floor = bare + plain_copy_seconds(repo, 20)
    per_trial, n, peak = pipeline_seconds(repo, trials)
    files = len(list_tree(repo, {"reports"} | KEEP_OUT))
    stub = tmp / "stub.py"
    stub.write_text(STUB)
    print(f"repository files copied per trial : {files}")
    print(f"baseline: bare builtin review     : {bare * 1000:8.2f} ms")
    print(f"pipeline: per trial ({n} trials)  : {per_trial * 1000:8.2f} ms")
    print(f"baseline: cp -r + rm -r + review  : {floor * 1000:8.2f} ms")
    print(f"ratio pipeline / (copy + review)  : {per_trial / floor:8.2f}x")
    print(f"harness overhead beyond the copy  : {(per_trial - floor) * 1000:8.2f} ms per trial")
    print(f"peak traced memory, whole run     : {peak / 1e6:8.1f} MB")
    if problem:
        print(f"isolation: not measured ({problem})")
        return
    report_isolation(isolation_seconds(repo, stub, trials, rounds))


# The least a bubblewrap sandbox can be: /usr, its links, /proc, /dev, new namespaces. Its launch
# is the floor any bubblewrap-based harness pays, the reference for what rubricgate adds on top.
BARE_BWRAP = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
              "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--unshare-user",
              "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]


def launch_ms(folder: Path, launches: int) -> dict[str, list[float]]:
    """Wall ms of each `/bin/true` launch through run_process, plain and in rubricgate's sandbox,
    and of a bare bubblewrap around it, alternating."""
    policy = SandboxPolicy("bwrap", limits=Limits(), network=SHARED)  # the network's own cost: part 5
    times: dict[str, list[float]] = {"plain": [], "bwrap": [], "bare": []}
    for i in range(launches):
        for mode, sandbox in (("plain", None), ("bwrap", policy)):
            start = time.perf_counter()
            done = run_process(["/bin/true"], cwd=folder, env={"PATH": "/usr/bin:/bin"}, timeout_s=30,
                               output_cap_bytes=1 << 16, stdout_path=folder.parent / f"out-{mode}-{i}", sandbox=sandbox)
            times[mode].append((time.perf_counter() - start) * 1000)
            if done.exit_code != 0:
                raise SystemExit(f"{mode}: /bin/true failed: {done.stderr_tail}")
        start = time.perf_counter()
        subprocess.run([*BARE_BWRAP, "/bin/true"], check=True)
        times["bare"].append((time.perf_counter() - start) * 1000)
    return times


def report_launch(times: dict[str, list[float]]) -> None:
    """Median launch per mode and the paired differences' median and quartiles."""
    report_paired(times, "plain", "bwrap", "plain / sandbox", "sandbox launch adds per trial")
    print(f"launch /bin/true in a bare bwrap  : {statistics.median(times['bare']):8.2f} ms (the floor of any bwrap sandbox)")


def report_paired(times: dict[str, list[float]], base: str, new: str, modes: str, added: str) -> None:
    """Both modes' median launch, then what `new` adds to `base`: the median and quartiles of the
    paired differences (each launch against its neighbour of the other mode)."""
    diffs = [b - a for a, b in zip(times[base], times[new], strict=True)]
    q1, median, q3 = statistics.quantiles(diffs, n=4)
    print(f"launch /bin/true, {modes:<16}: {statistics.median(times[base]):8.2f} / "
          f"{statistics.median(times[new]):.2f} ms ({len(diffs)} each)")
    print(f"{added:<34}: {median:8.2f} ms median, quartiles {q1:.2f} .. {q3:.2f} ms"
          f"  (target <= 10 ms: {'met' if median <= 10 else 'MISSED'})")


def report_isolation(iso: dict[str, list[float]]) -> None:
    """Medians per mode, then what bubblewrap adds per trial: on the same copied workspaces (the
    sandbox's own cost) and as a run uses it (overlay against copy-only's copies), each with the
    spread of the rounds' paired differences."""
    for mode, values in iso.items():
        print(f"stub CLI per trial, {mode:<18}: {statistics.median(values) * 1000:8.2f} ms")
    for label, sandboxed, plain in (("same copied workspaces", "bwrap, copies", "copy-only, copies"),
                                    ("as run (overlay vs copy)", "bwrap", "copy-only")):
        diffs = sorted((b - n) * 1000 for n, b in zip(iso[plain], iso[sandboxed], strict=True))
        added = statistics.median(diffs)
        print(f"sandbox adds per trial, {label}: {added:8.2f} ms median, rounds {diffs[0]:.1f} .. {diffs[-1]:.1f} ms"
              f"  (target <= 10 ms: {'met' if added <= 10 else 'MISSED'})")



# The earlier design's root: the whole host read-only, a list of folders hidden under tmpfs
# (HOME, the repository, the cache), the workspace writable; the same namespaces as today.
def denylist_argv(folder: Path) -> list[str]:
    """The bubblewrap command the denylist sandbox ran for /bin/true in `folder`."""
    hidden = [Path.home(), ROOT, Path.home() / ".cache" / "rubricgate"]
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in hidden:
        if path.exists() and path not in folder.parents:
            args += ["--tmpfs", str(path)]
    return [*args, "--bind", str(folder), str(folder), "--unshare-user", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--chdir", str(folder), "--clearenv", "/bin/true"]


def allowlist_launch(policy: SandboxPolicy, folder: Path) -> None:
    """/bin/true in today's sandbox (`wrap`, as every trial's agent is started), by subprocess."""
    read_end, write_end = os.pipe()
    argv, payload = wrap(policy, ["/bin/true"], cwd=folder, env={"PATH": "/usr/bin:/bin"}, args_fd=read_end)
    os.write(write_end, payload)
    os.close(write_end)
    try:
        subprocess.run(argv, check=True, pass_fds=(read_end,))
    finally:
        os.close(read_end)


def roots_ms(folder: Path, launches: int) -> dict[str, list[float]]:
    """Wall ms of each /bin/true launch in the allowlist root and the denylist root, alternating."""
    policy = SandboxPolicy("bwrap", limits=Limits(), network=SHARED)  # as the denylist root had it
    old = denylist_argv(folder)
    times: dict[str, list[float]] = {"allowlist": [], "denylist": []}
    for _ in range(launches):
        start = time.perf_counter()
        allowlist_launch(policy, folder)
        times["allowlist"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        subprocess.run(old, check=True)
        times["denylist"].append((time.perf_counter() - start) * 1000)
    return times


def report_roots(times: dict[str, list[float]]) -> None:
    """Median launch per root and what the allowlist adds to the denylist, paired."""
    report_paired(times, "denylist", "allowlist", "denylist / allow", "allowlist root adds per trial")


NETWORK_MODES = ("shared", "none", "allowlist")


def network_ms(folder: Path, launches: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(wall ms, harness CPU ms) of each launch per network mode and agent, alternating."""
    import http.server
    import threading

    from rubricgate.isolation.netaccess import HostPort, network_access

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    agents = {"true": ["/bin/true"], "curl": ["/usr/bin/curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/"]}
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    policies = {mode: SandboxPolicy("bwrap", limits=Limits(), network=network_access(
        mode, [HostPort("127.0.0.1", port)], {})) for mode in NETWORK_MODES}  # type: ignore[arg-type]
    try:
        for i in range(launches):
            for agent, argv in agents.items():
                for mode, policy in policies.items():
                    if agent == "curl" and mode == "none":
                        continue  # nothing to reach
                    key = f"{agent}, {mode}"
                    start, spent = time.perf_counter(), time.process_time()
                    done = run_process(argv, cwd=folder, env={"PATH": "/usr/bin:/bin"}, timeout_s=30,
                                       output_cap_bytes=1 << 16, stdout_path=folder.parent / f"net-{i}" / "out",
                                       sandbox=policy)
                    wall.setdefault(key, []).append((time.perf_counter() - start) * 1000)
                    cpu.setdefault(key, []).append((time.process_time() - spent) * 1000)
                    if done.exit_code != 0:
                        raise SystemExit(f"{key}: exit {done.exit_code}: {done.stderr_tail}")
    finally:
        server.shutdown()
        server.server_close()
    return wall, cpu


def report_network(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    """Per agent: what a namespace of its own and the allowlist add to the shared network, paired,
    and the harness's CPU per launch in each mode."""
    for agent in ("true", "curl"):
        if agent == "true":
            report_paired(wall, "true, shared", "true, none", "shared / netns", "own netns adds per trial")
        report_paired(wall, f"{agent}, shared", f"{agent}, allowlist", f"{agent}: shared/allow",
                      f"allowlist adds per trial ({agent})")
    for key, values in cpu.items():
        q1, median, q3 = statistics.quantiles(values, n=4)
        print(f"harness CPU per launch, {key:<16}: {median:6.2f} ms median, quartiles {q1:.2f} .. {q3:.2f} ms")


def trial_cpu_ms(tmp: Path, rounds: int) -> dict[str, list[float]]:
    """Harness CPU ms per trial of the stub CLI through the pipeline, per network setting: the
    difference between a run of 4 trials a case and one of 1, over the trials that adds (the
    run's fixed start and end drop out), rounds alternating."""
    import yaml
    repo = clean_copy(tmp / "cpu-repo")
    stub = tmp / "cpu-stub.py"
    stub.write_text(STUB)
    config_path = repo / "rubricgate.yaml"
    config = yaml.safe_load(config_path.read_text())
    times: dict[str, list[float]] = {}
    for _ in range(rounds):
        for network in ("shared", "allowlist"):
            config["agent"] = {"name": "command", "command": [sys.executable, str(stub)], "format": "claude",
                               "sandbox": "bwrap", "sandbox_network": network, "preflight": False}
            config_path.write_text(yaml.safe_dump(config))
            spent = {}
            for trials in (1, 4):
                start = time.process_time()
                outcome = run_suite(RunOptions(repo=repo, trials=trials, jobs=1, reports_dir=tmp / "cpu-reports",
                                               require_baseline=False))
                spent[trials] = (time.process_time() - start, sum(len(c.trials) for c in outcome.summary.cases))
            (cpu1, n1), (cpu4, n4) = spent[1], spent[4]
            times.setdefault(network, []).append((cpu4 - cpu1) * 1000 / (n4 - n1))
    return times


def report_trial_cpu(times: dict[str, list[float]]) -> None:
    for network, values in times.items():
        print(f"harness CPU per sandboxed trial, network {network:<9}: {statistics.median(values):6.2f} ms median "
              f"(rounds {min(values):.2f} .. {max(values):.2f})  (target <= 3 ms: "
              f"{'met' if statistics.median(values) <= 3 else 'MISSED'})")


if __name__ == "__main__":
    main()
