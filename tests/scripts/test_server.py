"""A server's process group and what it leaves behind, and the pids a lifecycle scenario
kills, read from the committed logs (the pids written out by hand from them)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from live_vllm.common import REAL, LiveTierError
from live_vllm.lifecycle import ENGINE_PID, RANK_PID, pid_in_log
from live_vllm.runs import Run
from live_vllm.scenarios import LIFECYCLE_SCENARIOS, SCENARIOS, Scenario
from live_vllm.server import Server, dist_ids, free_port

LOGS = REAL / "vllm-0.32.0-cpu"


def _log(scenario: str) -> bytes:
    return (LOGS / scenario / "startup.log").read_bytes()


@pytest.mark.parametrize(
    ("scenario", "pid"),
    [("tp2-worker-kill", 10885), ("failed-startup", 24697), ("tp2-keepalive-engine-death", 21493)],
)
def test_the_rank_1_worker_is_the_one_that_logs_rank_1(scenario: str, pid: int) -> None:
    """Its first line is tagged ``VllmWorker-1``, the ``rank=1`` line ``Worker``."""
    assert pid_in_log(_log(scenario), RANK_PID) == pid


def test_a_tp1_log_has_no_rank_1_worker() -> None:
    assert pid_in_log(_log("tp1-engine-kill"), RANK_PID) is None
    assert pid_in_log(b"(Worker pid=7) world_size=2 rank=0 local_rank=0\n", RANK_PID) is None


@pytest.mark.parametrize(("scenario", "pid"), [("tp1-engine-kill", 17625), ("dp2-eager", 19267)])
def test_the_engine_is_the_first_engine_core_tag(scenario: str, pid: int) -> None:
    assert pid_in_log(_log(scenario), ENGINE_PID) == pid


def test_a_second_dp_engine_alone_is_not_the_engine() -> None:
    assert pid_in_log(b"(EngineCore_DP1 pid=19268) INFO\n", ENGINE_PID) is None


def test_the_distributed_group_id_is_read_from_the_servers_own_log() -> None:
    assert dist_ids(_log("tp2-worker-kill")) == ["09ab0f2bedf04d59b87d0720e45abbd7"]
    assert dist_ids(b"vllm_dist_abc vllm_dist_0123456789abcdef0 x") == ["0123456789abcdef0"]
    assert dist_ids(b"no group here") == []


class _SleepingRun(Run):
    """A run whose "server" is a sleeping interpreter with a child of its own (a worker)."""

    def argv(self, scenario: Scenario) -> list[str]:
        child = "import subprocess, sys, time; "
        child += "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        child += "print('started', flush=True); time.sleep(60)"
        return [sys.executable, "-c", child]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _forgotten(server: Server) -> bool:
    """The server let go of its process and is no longer stopped at exit."""
    return server.proc is None and server not in Server._live


def _wait_for(path: Path, text: bytes) -> None:
    import time

    for _ in range(500):
        if path.exists() and text in path.read_bytes():
            return
        time.sleep(0.01)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    (tmp_path / "run").mkdir()
    return _SleepingRun(env_dir=tmp_path / "venv", root=tmp_path / "run", port=free_port())


def test_a_server_runs_in_its_own_group_and_stopping_it_ends_the_group(run: Run) -> None:
    server = Server(run, SCENARIOS[1], run.root / "logs" / "startup.log")
    server.start()
    assert server.proc is not None
    pgid = server.proc.pid
    _wait_for(server.log_path, b"started")
    assert os.getpgid(pgid) == pgid != os.getpgid(0)
    assert server in Server._live
    server.stop()
    assert not _group_alive(pgid)
    assert _forgotten(server)


def test_stop_all_ends_every_server_still_running(run: Run) -> None:
    servers = [Server(run, SCENARIOS[0], run.root / name / "startup.log") for name in ("a", "b")]
    for server in servers:
        server.start()
    groups = [s.proc.pid for s in servers if s.proc is not None]
    Server.stop_all()
    assert len(groups) == 2
    assert not any(_group_alive(g) for g in groups)
    assert Server._live == set()


def test_a_server_never_started_cannot_be_waited_on_and_stops_as_a_no_op(run: Run) -> None:
    server = Server(run, SCENARIOS[0], run.root / "startup.log")
    with pytest.raises(LiveTierError, match="before start"):
        server.wait_ready()
    server.stop()
    assert _forgotten(server)


@pytest.mark.parametrize(
    ("receipt", "pgid"),
    [
        ('{"pid": 4242}', 4242),
        ('{"pid": 0}', None),
        ('{"pid": "4242"}', None),
        ("{", None),
        ("[]", None),
    ],
)
def test_the_launched_childs_group_is_the_receipts_pid(
    run: Run, receipt: str, pgid: int | None
) -> None:
    launched = next(s for s in LIFECYCLE_SCENARIOS if s.launched)
    server = Server(run, launched, run.root / "startup.log")
    server.receipt_path.write_text(receipt, encoding="utf-8")
    assert server.receipt_path == run.root / "launch-receipt.json"
    assert server.child_pgid() == pgid


def test_a_server_started_directly_has_no_child_group(run: Run) -> None:
    direct = SCENARIOS[0]
    assert not direct.launched
    server = Server(run, direct, run.root / "startup.log")
    server.receipt_path.write_text('{"pid": 4242}', encoding="utf-8")
    assert server.child_pgid() is None
