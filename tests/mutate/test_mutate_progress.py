"""rubricgate.mutate.progress: ticks between a run's start and its end with the counts so far,
and `rubricgate mutate` ticking every 10 s (issue 40: progress at least every 10 s)."""

from __future__ import annotations

import threading

import pytest
from click.testing import CliRunner

from rubricgate.cli.app import main
from rubricgate.errors import GateInputError
from rubricgate.mutate import flow
from rubricgate.mutate.progress import Progress

WAIT_S = 60.0  # only a guard against hanging: a tick 0.01 s apart arrives long before this


class Lines:
    """The emitted lines; `ticks_after(n)` waits until a tick follows line n."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()

    def __call__(self, line: str) -> None:
        with self._changed:
            self.lines.append(line)
            self._changed.notify_all()

    def tick_after(self, n: int) -> str:
        with self._changed:
            assert self._changed.wait_for(lambda: any(_is_tick(x) for x in self.lines[n:]), WAIT_S), self.lines
            return next(x for x in self.lines[n:] if _is_tick(x))


def _is_tick(line: str) -> bool:
    return line.startswith("mutate: ") and line.split(": ", 1)[1][0].isdigit()


def test_ticks_arrive_while_a_slow_run_works_with_the_counts_so_far() -> None:
    lines = Lines()
    with Progress(lines, total=3, every_s=0.01) as progress:
        progress.start("control")
        tick = lines.tick_after(1)  # the slow step: the control run ends only after a tick
        assert tick.startswith("mutate: 0/3 mutants done, running: control, "), tick
        progress.finish("control", "passed", 1.0)
        progress.start("m1")
        progress.start("m2")
        progress.finish("m1", "caught", 2.0)
        at = len(lines.lines)
        tick = lines.tick_after(at)
        assert tick.startswith("mutate: 1/3 mutants done (1 caught), running: m2, "), tick
        progress.finish("m2", "survived", 3.0)
        tick = lines.tick_after(len(lines.lines))
        assert tick.startswith("mutate: 2/3 mutants done (1 caught, 1 survived), "), tick
        assert ", running:" not in tick
    starts = [i for i, x in enumerate(lines.lines) if x.startswith("mutate: control: started")]
    ends = [i for i, x in enumerate(lines.lines) if x.startswith("mutate: control: passed in 1 s; ")]
    assert len(starts) == 1 and len(ends) == 1
    assert any(_is_tick(x) for x in lines.lines[starts[0] + 1:ends[0]])  # between start and finish
    assert progress._stop.is_set()  # leaving the block stops the ticker


def test_mutate_from_the_command_line_ticks_every_10_s_to_stderr(repo, tmp_path, monkeypatch) -> None:
    """The CLI's request reaches the ticker with every_s 10 and an emitter that writes stderr."""
    seen: dict = {}

    class Recording(Progress):
        def __init__(self, emit, total, every_s):
            seen.update(total=total, every_s=every_s)
            emit("mutate: probe line")
            raise GateInputError("probe", "", "stopped before the first run", "none")

    monkeypatch.setattr(flow, "Progress", Recording)
    result = CliRunner().invoke(main, ["mutate", "--repo", str(repo), "--out", str(tmp_path / "out"),
                                       "--only-rules", "body-present"])
    assert result.exit_code == 2 and "stopped before the first run" in result.output, result.output
    assert seen["every_s"] == pytest.approx(10.0) and seen["total"] >= 1
    assert "mutate: probe line" in result.stderr and "mutate: probe line" not in result.stdout
