"""isolation/reaping.py: a copy-only agent's group is done when only zombies are left in it.

The agent leaves a child behind and exits. The harness adopts orphans (as a run does), so the
child, once SIGTERM ends it, is a zombie of the harness's in the agent's group: counted as alive,
the run waited the whole kill grace and then sent SIGKILL to a dead process. Run in a child
interpreter: making pytest itself a subreaper would change every later test.

Load-proof: the grace is made 30 s and the outcome asserted is that no SIGKILL was needed (the
group was found empty), not how fast the trial ended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = r'''
import json, os, signal, sys
from pathlib import Path

import pytest
from rubricgate.isolation import process, reaping
from rubricgate.isolation.process import run_process

tmp = Path(sys.argv[1])
assert reaping.adopt_orphans()
sent = []
real = reaping._signal_group
def recording(pgid, sig):
    sent.append(int(sig))
    return real(pgid, sig)
reaping._signal_group = recording
process.KILL_GRACE_S = float(sys.argv[2])
agent = ("import subprocess, sys\n"
         "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
         f"open({str(tmp / 'child.pid')!r}, 'w').write(str(p.pid))\n"
         "print('verdict', flush=True)\n")
res = run_process([sys.executable, "-c", agent], cwd=tmp, env={"PATH": os.environ["PATH"]}, timeout_s=60,
                  output_cap_bytes=10_000, stdout_path=tmp / "out.txt")
child = int((tmp / "child.pid").read_text())
stat = Path(f"/proc/{child}/stat")
state = stat.read_text().rsplit(")", 1)[-1].split()[0] if stat.exists() else "gone"
print(json.dumps({"exit_code": res.exit_code, "child": state, "sigkill": int(signal.SIGKILL) in sent}))
'''
GRACE_S = 30.0  # waiting it out would be plain; an empty group is found long before


def test_a_child_left_by_a_copy_only_agent_is_reaped_without_waiting_out_the_grace(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", HARNESS, str(tmp_path), str(GRACE_S)], capture_output=True,
                          text=True, timeout=600, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["exit_code"] == 0
    assert seen["child"] == "gone", f"the agent's child is left as {seen['child']!r} (Z: an unreaped zombie)"
    assert not seen["sigkill"], "the group was SIGKILLed: its zombie was waited on for the whole grace"


def test_a_run_whose_agent_leaves_a_child_ends_its_trial_without_a_kill(repo: Path, monkeypatch) -> None:
    # The whole path: `rubricgate run` adopts orphans, the copy-only agent answers and leaves a child.
    from click.testing import CliRunner

    from rubricgate.cli import main
    from rubricgate.isolation import process, reaping
    from tests.fake_reviewer import install

    sent: list[int] = []
    real = reaping._signal_group
    monkeypatch.setattr(reaping, "_signal_group", lambda pgid, sig: sent.append(int(sig)) or real(pgid, sig))
    monkeypatch.setattr(process, "KILL_GRACE_S", GRACE_S)
    counter = install(repo, ["linger"], jobs=1)
    result = CliRunner().invoke(main, ["run", "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    child = int((counter.parent / "linger.pid").read_text())
    assert not Path(f"/proc/{child}").exists(), "the agent's child outlived its trial (or is an unreaped zombie)"
    assert int(signal.SIGTERM) in sent and int(signal.SIGKILL) not in sent, sent  # the grace was never waited out


def test_the_sweep_of_a_runs_orphans_spares_the_harnesss_own_helpers() -> None:
    script = (
        "import subprocess\n"
        "from rubricgate.isolation.reaping import child_pids, end_helper, start_helper, sweep_orphans\n"
        "known = child_pids()\n"
        "helper = start_helper(['sleep', '600'])\n"
        "stray = subprocess.Popen(['sleep', '600'])\n"
        "killed = sweep_orphans(known)\n"
        "print(killed == [stray.pid], helper.poll() is None)\n"
        "helper.kill(); end_helper(helper)\n"
        "print(sweep_orphans(known) == [])\n")
    done = _in_a_process_of_its_own(script)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr


def test_the_sweep_takes_a_chain_of_orphans_deeper_than_its_passes() -> None:
    # Three passes of one generation each left every process below the third alive.
    script = (
        "import os, shlex, subprocess, time\n"
        "from rubricgate.isolation.reaping import adopt_orphans, child_pids, sweep_orphans\n"
        "adopt_orphans()\n"
        "known = child_pids()\n"
        "marker = f'sleep 600.{os.getpid()}'\n"
        "command = marker\n"
        "for _ in range(8):\n"
        "    command = f'sh -c {shlex.quote(command)}; :'\n"  # each level waits on the next
        "subprocess.Popen(['sh', '-c', command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "def alive():\n"
        "    out = subprocess.run(['pgrep', '-f', marker], capture_output=True, text=True).stdout\n"
        "    return out.split()\n"
        "while not alive():\n"
        "    time.sleep(0.05)\n"
        "sweep_orphans(known)\n"
        "print(alive())\n")
    done = _in_a_process_of_its_own(script)
    # Nothing of the chain runs on (a zombie reparented after the last pass waits for the next sweep).
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def _in_a_process_of_its_own(script: str) -> subprocess.CompletedProcess:
    """Run `script` in a fresh interpreter: its children, and the orphans it adopts, are its own."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


ZOMBIES = '''
import os
from pathlib import Path

import pytest
def zombies():
    """This process's zombie children (state Z), across its threads."""
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            kids = Path(f"/proc/self/task/{task}/children").read_text().split()
        except OSError:
            continue
        for pid in kids:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                found.append(int(pid))
    return found
'''

SANDBOXES = ZOMBIES + r'''
import sys, tempfile
from rubricgate.isolation.process import run_process
from rubricgate.isolation.reaping import adopt_orphans
from rubricgate.isolation.sandbox import SandboxPolicy, probe_bwrap
assert adopt_orphans()
tmp = Path(tempfile.mkdtemp())
seen = []
runs = [("exit", ["/bin/true"], 30), ("fail", ["/bin/sh", "-c", "exit 3"], 30),
        ("timeout", ["/bin/sleep", "60"], 0.5), ("background", ["/bin/sh", "-c", "sleep 60 & :"], 30)]
for name, argv, timeout_s in runs:
    ws = tmp / name
    ws.mkdir()
    res = run_process(argv, cwd=ws, env={"PATH": "/usr/bin:/bin"}, timeout_s=timeout_s, output_cap_bytes=10_000,
                      stdout_path=tmp / f"{name}.out", sandbox=SandboxPolicy("bwrap"))
    seen.append((name, res.exit_code, res.timed_out))
assert probe_bwrap() == ""
print(seen)
print(zombies())
'''


@pytest.mark.usefixtures("bwrap_ready")
def test_a_process_that_adopts_orphans_keeps_no_zombie_of_the_sandboxes_it_ran() -> None:
    # bwrap exits without reaping its PID namespace's init, which a subreaper then inherits: one
    # zombie per sandbox (trial or probe) until a run's end sweep, for ever where none follows.
    done = _in_a_process_of_its_own(SANDBOXES)
    assert done.returncode == 0, done.stderr
    seen, zombies = done.stdout.strip().splitlines()
    assert seen == "[('exit', 0, False), ('fail', 3, False), ('timeout', None, True), ('background', 0, False)]"
    assert zombies == "[]", f"zombie children left by the sandboxes: {zombies}"


def test_reaping_the_sandboxes_inits_leaves_a_child_the_process_started_to_its_popen() -> None:
    # A zombie of a Popen's own is no sandbox's init: taking it would make its exit status 0.
    script = ZOMBIES + (
        "import subprocess, time\n"
        "from rubricgate.isolation.reaping import adopt_orphans, reap_sandbox_inits\n"
        "assert adopt_orphans()\n"
        "child = subprocess.Popen(['/bin/sh', '-c', 'exit 3'])\n"
        "while child.pid not in zombies():\n"
        "    time.sleep(0.01)\n"
        "print(reap_sandbox_inits(wait_s=0), child.wait())\n")
    done = _in_a_process_of_its_own(script)
    assert done.stdout.split() == ["0", "3"], done.stdout + done.stderr


def test_a_process_adopts_orphans_while_a_run_is_under_way_and_then_as_before() -> None:
    script = (
        "from rubricgate.isolation.reaping import adopt_orphans, adopting_for_the_run, adopting_orphans\n"
        "seen = []\n"
        "with adopting_for_the_run():\n"
        "    outer = adopting_for_the_run()\n"
        "    outer.__enter__()\n"  # a second run, in another thread, ends after the first
        "    adopt_orphans()\n"
        "seen.append(adopting_orphans())\n"
        "outer.__exit__(None, None, None)\n"
        "seen.append(adopting_orphans())\n"
        "with adopting_for_the_run():\n"  # a process that adopted before the run goes on adopting
        "    pass\n"
        "adopt_orphans()\n"
        "with adopting_for_the_run():\n"
        "    pass\n"
        "seen.append(adopting_orphans())\n"
        "print(seen)\n")
    done = _in_a_process_of_its_own(script)
    assert done.stdout.strip() == "[True, False, True]", done.stdout + done.stderr
