"""The launcher's process tree: ``/proc`` read as bytes (a hand-made one, and this
machine's), typed into a tree, and the launch's processes gone from it — each rule in
both directions."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gate._proc import (
    API_SERVER,
    ENGINE_CORE,
    ENGINE_LINE,
    RANK0,
    RANK0_LINE,
    RANK1,
    RANK1_LINE,
    RAY_LOG,
    recorded_launch,
    recorded_tree,
    tree_of,
    write_stat,
)
from vllm_evidence._adapters.process_tree import ProcessState, observe_process_tree
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._capture import proc as capture_proc
from vllm_evidence._capture.proc import read_proc
from vllm_evidence._readback.processes import ProcessRole, lost_processes
from vllm_evidence.errors import InputError


def _this_machine(root: int) -> set[int]:
    return {pid for pid, _ in tree_of(Path("/proc"), root).members}


def test_the_tree_is_the_root_and_its_running_descendants(tmp_path: Path) -> None:
    recorded_tree(tmp_path)
    tree = tree_of(tmp_path)
    assert tree.unavailable is None
    assert dict(tree.members) == {
        API_SERVER: 1000 + API_SERVER,
        ENGINE_CORE: 1000 + ENGINE_CORE,
        RANK0: 1000 + RANK0,
        RANK1: 1000 + RANK1,
    }
    # Another root: only its own subtree; a pid not running: nothing.
    assert [pid for pid, _ in tree_of(tmp_path, ENGINE_CORE).members] == [
        ENGINE_CORE,
        RANK0,
        RANK1,
    ]
    assert tree_of(tmp_path, 99999).members == ()


def test_the_read_keeps_bytes_and_the_tree_types_them(tmp_path: Path) -> None:
    recorded_tree(tmp_path)
    read = read_proc(str(tmp_path))
    # Every entry (the machine's other process and pid 1 too), as bytes, by pid.
    assert [pid for pid, _ in read.stats] == [1, 4242, API_SERVER, ENGINE_CORE, RANK0, RANK1]
    assert read.stats[0][1].startswith(b"1 (vllm (x) y) S 0 ")
    assert read.unavailable is None


def test_a_zombie_or_a_reaped_process_is_gone(tmp_path: Path) -> None:
    recorded_tree(tmp_path / "z", zombie=(RANK1,))
    recorded_tree(tmp_path / "r", without=(RANK1,))
    for proc in ("z", "r"):
        tree = tree_of(tmp_path / proc)
        assert tree.start_ticks(RANK1) is None
        assert tree.state(RANK1) is ProcessState.GONE
        assert tree.start_ticks(RANK0) == 1000 + RANK0
        assert tree.state(RANK0) is ProcessState.RUNNING


def test_malformed_entries_are_skipped_never_trusted(tmp_path: Path) -> None:
    recorded_tree(tmp_path)
    (tmp_path / "777").mkdir()
    (tmp_path / "777" / "stat").write_text("777 (no close paren S 10538 0", encoding="ascii")
    (tmp_path / "778").mkdir()
    (tmp_path / "778" / "stat").write_text("778 (short) S 10538 1 2\n", encoding="ascii")
    write_stat(tmp_path, 779, API_SERVER, 5)
    (tmp_path / "779" / "stat").write_text("779 (x) S 1e5 " + "0 " * 17 + "5\n", encoding="ascii")
    # A stat file that names another pid than its directory's is not that pid's.
    write_stat(tmp_path, 780, API_SERVER, 5)
    (tmp_path / "780" / "stat").write_text("781 (x) S 10538 " + "0 " * 17 + "5\n", "ascii")
    (tmp_path / "self").mkdir()  # not a pid
    members = dict(tree_of(tmp_path).members)
    assert set(members) == {API_SERVER, ENGINE_CORE, RANK0, RANK1}
    # The same tree with one of them well formed takes it in: the skip is the malformation.
    write_stat(tmp_path, 780, API_SERVER, 5)
    assert 780 in dict(tree_of(tmp_path).members)


def test_no_proc_is_said_and_observes_nothing(tmp_path: Path) -> None:
    tree = tree_of(tmp_path / "absent")
    assert tree.unavailable is not None
    assert tree.unavailable.startswith(f"{tmp_path / 'absent'} cannot be read")
    assert tree.state(RANK1) is ProcessState.UNREAD
    assert lost_processes(recorded_launch(tmp=tmp_path), tree) == ()


def test_a_read_past_its_bounds_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded_tree(tmp_path)
    assert read_proc(str(tmp_path)).unavailable is None
    monkeypatch.setattr(capture_proc, "MAX_PROCESSES", 3)
    assert read_proc(str(tmp_path)).unavailable == f"{tmp_path} lists more than 3 processes"
    monkeypatch.setattr(capture_proc, "MAX_PROCESSES", 65536)
    monkeypatch.setattr(capture_proc, "MAX_READ_BYTES", 100)
    read = read_proc(str(tmp_path))
    assert read.stats == ()
    assert read.unavailable == f"{tmp_path} holds more than 100 bytes of stat files"


def test_a_root_that_is_not_a_pid_is_an_input_error(tmp_path: Path) -> None:
    recorded_tree(tmp_path)
    for root in (0, -1, True, 2**31):
        with pytest.raises(InputError, match="must be a pid"):
            observe_process_tree(read_proc(str(tmp_path)), root)


def test_a_tree_pickles_as_its_bytes_and_types_them_again(tmp_path: Path) -> None:
    recorded_tree(tmp_path / "a")
    recorded_tree(tmp_path / "b")
    write_stat(tmp_path / "b", RANK1, ENGINE_CORE, 99)  # the same pid, started later
    tree = tree_of(tmp_path / "b", earlier=tree_of(tmp_path / "a"))
    again = pickle.loads(pickle.dumps(tree))  # noqa: S301  # our own pickle
    assert again.members == tree.members
    assert again.first_seen == tree.first_seen
    assert again.state(RANK1) is ProcessState.REUSED


def test_this_machines_tree_loses_a_killed_child_at_once() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid in _this_machine(os.getpid())
        os.kill(child.pid, signal.SIGKILL)
        # Not reaped yet: a zombie, which is gone from the tree already.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert child.pid not in _this_machine(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert child.pid not in _this_machine(os.getpid())
    assert os.getpid() in _this_machine(os.getpid())


def test_every_process_of_the_launch_present_is_nothing_lost(tmp_path: Path) -> None:
    recorded_tree(tmp_path)
    assert lost_processes(recorded_launch(tmp=tmp_path), tree_of(tmp_path)) == ()


@pytest.mark.parametrize("how", ["reaped", "zombie"])
def test_a_worker_gone_is_its_rank_lost(tmp_path: Path, how: str) -> None:
    launch = recorded_launch(tmp=tmp_path)
    before = tmp_path / "before"
    recorded_tree(before)
    after = tmp_path / "after"
    recorded_tree(after, **({"without": (RANK1,)} if how == "reaped" else {"zombie": (RANK1,)}))
    (lost,) = lost_processes(launch, tree_of(after, earlier=tree_of(before)))
    assert lost.role is ProcessRole.RANK
    assert (lost.pid, lost.rank, lost.world_size, lost.line) == (RANK1, 1, 2, RANK1_LINE)
    assert not lost.reused
    assert lost.detail == (
        f"rank 1 of world size 2 (pid {RANK1}, log line {RANK1_LINE}) is gone from the "
        "launcher's process tree: its process exited (read from /proc, before the log or "
        "/health says so)"
    )


def test_a_worker_never_seen_running_is_lost_too(tmp_path: Path) -> None:
    """It printed its rank line and died before any read: it is not there."""
    recorded_tree(tmp_path, without=(RANK0,))
    (lost,) = lost_processes(recorded_launch(tmp=tmp_path), tree_of(tmp_path))
    assert (lost.pid, lost.rank, lost.line) == (RANK0, 0, RANK0_LINE)


def test_a_pid_running_as_another_process_is_the_worker_gone(tmp_path: Path) -> None:
    recorded_tree(tmp_path / "a")
    first = tree_of(tmp_path / "a")
    recorded_tree(tmp_path / "b")
    write_stat(tmp_path / "b", RANK1, ENGINE_CORE, 99)  # the same pid, started later
    tree = tree_of(tmp_path / "b", earlier=first)
    assert tree.state(RANK1) is ProcessState.REUSED
    (lost,) = lost_processes(recorded_launch(tmp=tmp_path), tree)
    assert (lost.pid, lost.reused) == (RANK1, True)
    assert "its pid now belongs to another process" in lost.detail
    # What was first seen is kept: a later tree of the same root does not forgive it ...
    later = tree_of(tmp_path / "b", earlier=tree)
    assert lost_processes(recorded_launch(tmp=tmp_path), later) == (lost,)
    # ... while a tree with no earlier one (or one of another root) has nothing to compare.
    assert tree_of(tmp_path / "b").state(RANK1) is ProcessState.RUNNING
    other_root = tree_of(tmp_path / "a", ENGINE_CORE)
    assert tree_of(tmp_path / "b", earlier=other_root).state(RANK1) is ProcessState.RUNNING


def test_the_engine_core_gone_is_named_as_such(tmp_path: Path) -> None:
    recorded_tree(tmp_path, without=(ENGINE_CORE, RANK0, RANK1))
    lost = lost_processes(recorded_launch(tmp=tmp_path), tree_of(tmp_path))
    assert [(p.role, p.pid, p.line) for p in lost] == [
        (ProcessRole.ENGINE_CORE, ENGINE_CORE, ENGINE_LINE),
        (ProcessRole.RANK, RANK1, RANK1_LINE),
        (ProcessRole.RANK, RANK0, RANK0_LINE),
    ]
    assert lost[0].detail.startswith(f"the engine core (pid {ENGINE_CORE}, log line 22) is gone")


def test_ray_workers_are_not_read_from_this_tree(tmp_path: Path) -> None:
    """Ray's workers are the raylet's (or another machine's): their absence here says
    nothing; the engine core is the launcher's.  The same empty tree finds the mp
    launch's workers gone."""
    log = read_startup_log(RAY_LOG)
    assert isinstance(log, StartupLog)
    write_stat(tmp_path, 1, 0, 1)
    tree = tree_of(tmp_path, 1)
    assert [(p.role, p.pid) for p in lost_processes(log.launches[-1], tree)] == [
        (ProcessRole.ENGINE_CORE, 1257)
    ]
    assert len(lost_processes(recorded_launch(tmp=tmp_path), tree)) == 3
