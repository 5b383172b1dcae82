"""isolation/identity.py: a root harness's user namespaces, lent one live sandbox at a time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rubricgate.isolation.identity import SANDBOX_HOST_ID, NamespacePool, enter_namespace
from rubricgate.isolation.sandbox_user import SANDBOX_UID
from tests.timing import HANG_S

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a root harness's namespaces (run as root)")


@pytest.fixture
def pool():
    made = NamespacePool()
    yield made
    made.close()


def test_a_lent_namespace_maps_root_to_root_and_the_sandbox_user_to_no_host_user(pool) -> None:
    held = pool.lend()
    pool.give_back(held)
    uid_map = Path(f"/proc/{held.holder.pid}/uid_map").read_text().split()
    assert uid_map == ["0", "0", "1", str(SANDBOX_UID), str(SANDBOX_HOST_ID), "1"]
    assert os.readlink(held.path) != os.readlink("/proc/self/ns/user")
    assert enter_namespace(held.path)[1:] == [f"--user={held.path}", "--"] and enter_namespace(None) == []


def test_two_live_sandboxes_never_share_one_and_a_returned_one_is_reused(pool) -> None:
    first, second = pool.lend(), pool.lend()
    assert os.readlink(first.path) != os.readlink(second.path)
    pool.give_back(first)
    assert pool.lend() is first  # made once, lent again
    pool.give_back(first)
    pool.give_back(second)


def test_a_namespace_whose_holder_died_is_not_lent_again(pool) -> None:
    held = pool.lend()
    held.holder.kill()
    held.holder.wait()
    pool.give_back(held)
    fresh = pool.lend()
    assert fresh is not held and fresh.holder.poll() is None
    pool.give_back(fresh)


def test_the_holder_ends_when_the_harness_lets_go_of_its_pipe() -> None:
    held = NamespacePool().lend()
    held.holder.stdin.close()  # what the kernel does when the harness dies
    assert held.holder.wait(HANG_S) == 0


def test_a_dead_holder_left_behind_is_reaped_with_its_pipe_closed(pool) -> None:
    held = pool.lend()
    held.holder.kill()
    os.waitid(os.P_PID, held.holder.pid, os.WEXITED | os.WNOWAIT)  # dead, not yet reaped
    pool.give_back(held)
    pool.give_back(pool.lend())
    assert held.holder.returncode is not None and held.holder.stdin.closed


def test_closing_the_pool_ends_every_free_holder_and_names_none_after(pool) -> None:
    first, second = pool.lend(), pool.lend()
    pool.give_back(first)
    pool.give_back(second)
    assert pool.holder_pids() == {first.holder.pid, second.holder.pid}
    pool.close()
    assert (first.holder.returncode, second.holder.returncode) == (0, 0) and pool.holder_pids() == set()
