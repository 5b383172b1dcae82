"""runner/malloc.py: a run's threads share one glibc arena, counted by glibc's own malloc_stats."""

import os
import subprocess
import sys
import textwrap

import pytest

from rubricgate.runner import malloc

GLIBC = "CS_GNU_LIBC_VERSION" in getattr(os, "confstr_names", {}) and bool(os.confstr("CS_GNU_LIBC_VERSION"))

# Four threads allocate blocks malloc serves (over pymalloc's 512 bytes, under mmap's threshold),
# then glibc prints one "Arena N:" section per arena on stderr.
ARENAS = textwrap.dedent("""
    import ctypes, sys, threading
    from rubricgate.runner.malloc import one_malloc_arena
    if sys.argv[1] == "one":
        assert one_malloc_arena()
    def allocate():
        kept = [bytearray(20_000) for _ in range(50)]
        done.wait()
    done = threading.Event()
    threads = [threading.Thread(target=allocate) for _ in range(4)]
    for t in threads:
        t.start()
    done.set()
    for t in threads:
        t.join()
    ctypes.CDLL(None).malloc_stats()
""")


def _arenas(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"})
    return sum(line.startswith("Arena ") for line in out.stderr.splitlines())


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_threads_share_one_arena_once_set_and_each_has_its_own_otherwise():
    assert _arenas("one") == 1
    assert _arenas("default") > 1  # the check can fail: without the limit the threads spread


def test_a_c_library_that_is_not_glibc_is_left_alone(monkeypatch):
    def no_such_name(name):
        raise ValueError("unrecognized configuration name")

    monkeypatch.setattr(malloc.os, "confstr", no_such_name)
    assert malloc.one_malloc_arena() is False
    monkeypatch.setattr(malloc.os, "confstr", lambda name: None)
    assert malloc.one_malloc_arena() is False


@pytest.mark.parametrize("shard", [None, "1/2"])
def test_the_run_command_sets_it_before_the_pipeline_starts_a_shard_too(monkeypatch, tmp_path, shard):
    import threading

    from click.testing import CliRunner

    import rubricgate.fleet.shard as fleet_shard
    import rubricgate.pipeline as pipeline
    from rubricgate.cli.app import main

    order = []
    monkeypatch.setattr(malloc, "one_malloc_arena", lambda: order.append(("arena", threading.active_count())))

    def pipeline_started(options):
        order.append(("pipeline", 0))
        raise SystemExit(0)

    monkeypatch.setattr(pipeline, "run_suite", pipeline_started)
    monkeypatch.setattr(fleet_shard, "run_shard", pipeline_started)
    CliRunner().invoke(main, ["run", "--repo", str(tmp_path), *(["--shard", shard] if shard else [])])
    assert [step for step, _ in order] == ["arena", "pipeline"]


def _arena_then(monkeypatch, module, name: str) -> list[str]:
    """Record the arena call and `module.name` (the command's first thread-starting call) in order."""
    order: list[str] = []
    monkeypatch.setattr(malloc, "one_malloc_arena", lambda: order.append("arena"))

    def started(*args, **kwargs):
        order.append("runs")
        raise SystemExit(0)

    monkeypatch.setattr(module, name, started)
    return order


def test_compare_base_sets_it_before_its_sides_run(monkeypatch, tmp_path):
    from click.testing import CliRunner

    import rubricgate.cli.compare_cmd as compare_cmd
    from rubricgate.cli.app import main

    order = _arena_then(monkeypatch, compare_cmd, "paired_run")
    CliRunner().invoke(main, ["compare", "--base", "HEAD", "--repo", str(tmp_path)])
    assert order == ["arena", "runs"]


def test_baseline_update_sets_it_before_its_sessions_run(monkeypatch, tmp_path):
    from click.testing import CliRunner

    import rubricgate.flows.baseline_update as baseline_update
    from rubricgate.cli.app import main

    order = _arena_then(monkeypatch, baseline_update, "update_baseline")
    CliRunner().invoke(main, ["baseline", "update", "--repo", str(tmp_path)])
    assert order == ["arena", "runs"]


def test_record_sets_it_before_it_runs_the_new_case(monkeypatch, tmp_path):
    import rubricgate.adopt.record as adopt_record
    from rubricgate.cli import adopt_cmd

    order = _arena_then(monkeypatch, adopt_record, "run_once")
    with pytest.raises(SystemExit):
        adopt_cmd._report_today(tmp_path, "case", None)
    assert order == ["arena", "runs"]
