"""The launcher's parts, each alone: the child's front door from its command line, the
observer ``launch`` tells, the receipt built in memory and its log join, the loop's
rounds and intervals, and whether the child runs."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gate._proc import ENGINE_CORE, RANK1, SCENARIO, recorded_tree, write_stat
from vllm_evidence._capture.process import ChildStarted, LogProgress, process_start_time
from vllm_evidence._gate import Gate, GateLoop, GateTarget, TargetRound, parse_interval
from vllm_evidence._gate.launcher import LaunchRounds, child_front_door
from vllm_evidence._launch import LogReader, launch
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import serve_capture

# -- the child's front door ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "url", "verify"),
    [
        (["vllm", "serve", "m"], "http://127.0.0.1:8000", True),
        (["vllm", "serve", "m", "--port", "9001"], "http://127.0.0.1:9001", True),
        (["vllm", "serve", "m", "--port=9002", "--host", "0.0.0.0"], "http://127.0.0.1:9002", True),  # noqa: S104
        (["vllm", "serve", "m", "--host", "10.1.2.3"], "http://10.1.2.3:8000", True),
        (["vllm", "serve", "m", "--host", "::1"], "http://[::1]:8000", True),
        (["vllm", "serve", "m", "--ssl-certfile", "c.pem"], "https://127.0.0.1:8000", False),
        (["vllm", "serve", "m", "--port", "1", "--port", "2"], "http://127.0.0.1:2", True),
    ],
)
def test_the_childs_front_door_is_its_command_lines(
    command: list[str], url: str, *, verify: bool
) -> None:
    door = child_front_door(command)
    assert (door.url, door.verify) == (url, verify)


def test_the_childs_api_key_is_its_command_lines_or_vllms_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    assert child_front_door(["vllm", "serve", "m"]).api_key is None
    assert child_front_door(["vllm", "serve", "--api-key", "k1"]).api_key == "k1"
    assert child_front_door(["vllm", "serve", "--api-key=k2"]).api_key == "k2"
    monkeypatch.setenv("VLLM_API_KEY", "k3")
    assert child_front_door(["vllm", "serve", "m"]).api_key == "k3"
    assert child_front_door(["vllm", "serve", "--api-key", "k1"]).api_key == "k1"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["vllm", "serve", "--uds", "/run/v.sock"], "Unix socket"),
        (["vllm", "serve", "--port", "0"], "is not a port"),
        (["vllm", "serve", "--port", "70000"], "is not a port"),
    ],
)
def test_a_front_door_the_gate_cannot_probe_is_a_one_line_error(
    command: list[str], expected: str
) -> None:
    with pytest.raises(InputError, match=expected):
        child_front_door(command)


# -- the observer --------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.starts: list[tuple[ChildStarted, LogProgress, LogReader]] = []
        self.progress: list[LogProgress] = []

    def started(self, child: ChildStarted, progress: LogProgress, log: LogReader) -> None:
        self.starts.append((child, progress, log))

    def progressed(self, progress: LogProgress) -> None:
        self.progress.append(progress)


def test_an_observer_needs_no_receipt_and_reads_the_anonymous_log() -> None:
    recorder = Recorder()
    out, err = io.BytesIO(), io.BytesIO()
    child = "print('line one'); print('line two')"
    status = launch([sys.executable, "-c", child], observer=recorder, stdout=out, stderr=err)
    assert status == 0
    assert out.getvalue() == b"line one\nline two\n"  # teed unchanged all the same
    ((started, _, reader),) = recorder.starts
    assert started.start_time is not None
    last = recorder.progress[-1]
    assert last.size == len(b"line one\nline two\n")
    assert last.sha256 == hashlib.sha256(b"line one\nline two\n").hexdigest()
    assert reader.name is None  # no path: the log has no name


def test_the_log_reader_reads_a_named_log_without_moving_its_writer(tmp_path: Path) -> None:
    recorder = Recorder()
    log = tmp_path / "vllm.log"
    launch(
        [sys.executable, "-c", "print('a' * 10); print('b' * 10)"],
        log=log,
        observer=recorder,
        stdout=io.BytesIO(),
        stderr=io.BytesIO(),
    )
    ((_, _, reader),) = recorder.starts
    assert reader.name == str(log)
    assert log.read_bytes() == b"a" * 10 + b"\n" + b"b" * 10 + b"\n"
    assert not (tmp_path / "r.json").exists()


def test_the_log_reader_reads_a_prefix_by_position(tmp_path: Path) -> None:
    path = tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"0123456789")
        reader = LogReader(fd, str(path))
        assert reader.prefix(4).read() == b"0123"
        assert reader.prefix(100).read() == b"0123456789"
        os.write(fd, b"AB")  # the writer's offset was not moved by the reads
        assert path.read_bytes() == b"0123456789AB"
        with pytest.raises(ValueError, match="must not be negative"):
            reader.prefix(-1)
    finally:
        os.close(fd)


def test_no_receipt_and_no_observer_is_refused() -> None:
    with pytest.raises(InputError, match="give --receipt FILE"):
        launch(["true"])


# -- the round: the receipt in memory, and the log joined by it --------------------------------


def _log_reader(tmp: Path, data: bytes) -> tuple[LogReader, LogProgress]:
    path = tmp / "log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    return LogReader(fd, str(path)), LogProgress(len(data), hashlib.sha256(data).hexdigest())


def _started(pid: int, start: str | None) -> ChildStarted:
    return ChildStarted(pid, start, None if start else "no /proc here")


def test_a_round_joins_the_log_by_the_receipt_the_launcher_saw(tmp_path: Path) -> None:
    """The recorded server: its log and its front door, the start time this stub serves as
    the one the launcher saw: the log join is established, with no receipt file; its
    process tree (a hand-made ``/proc`` of the recorded processes) is in the evidence."""
    data = (SCENARIO / "startup.log").read_bytes().split(b"\n")[:165]
    log = b"\n".join(data) + b"\n"
    recorded_tree(tmp_path / "proc")
    with serve_capture(SCENARIO) as door:
        rounds = LaunchRounds(
            ["vllm", "serve", "m", "--port", str(door.port)],
            child_front_door(["vllm", "serve", "m", "--port", str(door.port)]),
            timeout_s=5,
            proc=str(tmp_path / "proc"),
        )
        reader, progress = _log_reader(tmp_path, log)
        # The recorded start time and API-server pid: what the recorded launcher saw.
        rounds.started(_started(10538, "1.79621892679e+09"), progress, reader)
        (result,) = asyncio.run(rounds.round())
    assessment = result.result
    assert not isinstance(assessment, str)
    assert assessment.log_join.reason.value == "established", assessment.log_join
    assert assessment.parallel.reason.value == "established"
    receipt = assessment.evidence.receipt
    assert receipt is not None
    assert (receipt.pid, receipt.log_bytes) == (10538, len(log))
    tree = assessment.evidence.process_tree
    assert tree is not None
    assert (tree.root, len(tree.members)) == (10538, 4)


def _rounds_over(tmp_path: Path, door_port: int, *, canary: bool = False) -> LaunchRounds:
    data = (SCENARIO / "startup.log").read_bytes().split(b"\n")[:165]
    log = b"\n".join(data) + b"\n"
    rounds = LaunchRounds(
        ["vllm", "serve", "m", "--port", str(door_port)],
        child_front_door(["vllm", "serve", "m", "--port", str(door_port)]),
        timeout_s=5,
        proc=str(tmp_path / "proc"),
        canary=canary,
    )
    reader, progress = _log_reader(tmp_path, log)
    rounds.started(_started(10538, "1.79621892679e+09"), progress, reader)
    return rounds


def test_a_round_whose_tree_lost_a_worker_refuses_its_rank(tmp_path: Path) -> None:
    """The launcher passes the tree it read to the assessment: a worker gone from it is
    ``rank_lost`` this round (the log says nothing yet), and capacity still holds."""
    recorded_tree(tmp_path / "proc", without=(RANK1,))
    with serve_capture(SCENARIO) as door:
        (result,) = asyncio.run(_rounds_over(tmp_path, door.port).round())
    assessment = result.result
    assert not isinstance(assessment, str)
    assert assessment.parallel.reason.value == "rank_lost"
    assert assessment.parallel.detail.startswith(f"rank 1 of world size 2 (pid {RANK1},")
    assert "process tree" in assessment.parallel.detail
    assert assessment.capacity.reason.value == "established"


def test_the_rounds_keep_each_pids_first_start_time(tmp_path: Path) -> None:
    """Round one sees rank 1's worker; by round two its pid runs another process (another
    start time): the worker is gone, though a process holds its pid."""
    recorded_tree(tmp_path / "proc")
    with serve_capture(SCENARIO) as door:
        rounds = _rounds_over(tmp_path, door.port)
        (first,) = asyncio.run(rounds.round())
        write_stat(tmp_path / "proc", RANK1, ENGINE_CORE, 99)
        (second,) = asyncio.run(rounds.round())
    assert not isinstance(first.result, str)
    assert not isinstance(second.result, str)
    assert first.result.parallel.reason.value == "established"
    assert second.result.parallel.reason.value == "rank_lost"
    assert "its pid now belongs to another process" in second.result.parallel.detail


@pytest.mark.parametrize(
    ("pid", "start", "reason"),
    [
        (10538, "1.7e+09", "start_time_contradicted"),
        (4242, "1.79621892679e+09", "pid_contradicted"),
        (10538, None, "witness_without_start_time"),
    ],
)
def test_a_round_refuses_the_join_where_the_launcher_saw_another_process(
    tmp_path: Path, pid: int, start: str | None, reason: str
) -> None:
    data = (SCENARIO / "startup.log").read_bytes().split(b"\n")[:165]
    log = b"\n".join(data) + b"\n"
    with serve_capture(SCENARIO) as door:
        rounds = LaunchRounds(
            ["vllm", "serve", "--port", str(door.port)],
            child_front_door(["vllm", "serve", "--port", str(door.port)]),
            timeout_s=5,
        )
        reader, progress = _log_reader(tmp_path, log)
        rounds.started(_started(pid, start), progress, reader)
        (result,) = asyncio.run(rounds.round())
    assert not isinstance(result.result, str)
    assert result.result.log_join.reason.value == reason


def test_a_round_before_any_log_has_no_log_to_join(tmp_path: Path) -> None:
    with serve_capture(SCENARIO) as door:
        rounds = LaunchRounds(
            ["vllm", "--port", str(door.port)],
            child_front_door(["vllm", "--port", str(door.port)]),
            timeout_s=5,
        )
        reader, _ = _log_reader(tmp_path, b"")
        rounds.started(_started(10538, "1.79621892679e+09"), LogProgress(0, ""), reader)
        (result,) = asyncio.run(rounds.round())
    assert not isinstance(result.result, str)
    assert result.result.log_join.reason.value == "no_log"


def test_the_child_runs_until_it_ends() -> None:
    rounds = LaunchRounds(["vllm"], child_front_door(["vllm"]), timeout_s=1)
    assert not rounds.child_running()  # not started yet
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start, _ = process_start_time(child.pid)
        rounds.started(_started(child.pid, start), LogProgress(0, ""), LogReader(0, None))
        assert rounds.child_running()
        child.kill()
        child.wait()
        assert not rounds.child_running()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# -- the loop ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5s", 5.0), ("500ms", 0.5), ("1m", 60.0), ("2.5", 2.5), ("1h", 3600.0)],
)
def test_an_interval_is_a_duration(text: str, seconds: float) -> None:
    assert parse_interval(text) == seconds


@pytest.mark.parametrize("text", ["", "5 s", "-1s", "1e3", "five", "2h", "10ms"])
def test_a_bad_interval_is_a_one_line_error(text: str) -> None:
    with pytest.raises(InputError, match="--interval"):
        parse_interval(text)


def test_a_round_that_raises_is_recorded_and_the_loop_goes_on() -> None:
    gate = Gate([GateTarget.of("http://127.0.0.1:1")], ["parallel"])
    calls: list[int] = []

    async def rounds() -> list[TargetRound]:
        calls.append(1)
        if len(calls) == 1:
            msg = "the disk is on fire"
            raise OSError(msg)
        return [TargetRound("http://127.0.0.1:1", "fine")]

    notices = io.StringIO()
    loop = GateLoop(gate, rounds, 1.0, notices=notices)
    first = asyncio.run(loop.run_round())
    assert first.targets[0].unassessed == "the round failed: OSError: the disk is on fire"
    second = asyncio.run(loop.run_round())
    assert second.targets[0].unassessed == "fine"
    assert second.rounds == 2
    assert notices.getvalue() == (
        "vllm-evidence gate: the round failed: OSError: the disk is on fire; the rounds go on\n"
    )


def test_the_loop_is_alive_while_it_rounds_and_not_after() -> None:
    gate = Gate([GateTarget.of("http://127.0.0.1:1")], ["parallel"])

    async def rounds() -> list[TargetRound]:
        return [TargetRound("http://127.0.0.1:1", "no server")]

    loop = GateLoop(gate, rounds, 0.05)
    assert loop.alive() == (False, "the gate's rounds are not running")
    loop.start()
    try:
        deadline = 200
        while gate.snapshot.rounds < 3 and deadline:
            deadline -= 1
            time.sleep(0.05)
        assert gate.snapshot.rounds >= 3
        assert loop.alive()[0]
    finally:
        loop.stop()
    assert not loop.alive()[0]


def test_a_loop_whose_rounds_stopped_finishing_is_not_alive() -> None:
    gate = Gate([GateTarget.of("http://127.0.0.1:1")], ["parallel"])

    async def rounds() -> list[TargetRound]:
        await asyncio.sleep(2)  # a round that takes far longer than the loop allows
        return []

    loop = GateLoop(gate, rounds, 0.05, stale_after_s=0.2)
    loop.start()
    try:
        time.sleep(0.5)
        live, why = loop.alive()
        assert not live
        assert why.startswith("no round has finished for ")
    finally:
        loop.stop(timeout=5)


def test_with_an_observer_a_receipt_given_is_written_too(tmp_path: Path) -> None:
    from vllm_evidence._adapters.receipt import read_launch_receipt

    recorder = Recorder()
    receipt = tmp_path / "r.json"
    launch(
        [sys.executable, "-c", "print('up')"],
        receipt=receipt,
        observer=recorder,
        stdout=io.BytesIO(),
        stderr=io.BytesIO(),
    )
    read = read_launch_receipt(receipt)
    ((child, _, _),) = recorder.starts
    assert (read.pid, read.log_bytes) == (child.pid, len(b"up\n"))
    assert read.log_sha256 == recorder.progress[-1].sha256


def test_a_new_start_time_on_the_front_door_forgets_the_first_start_times(
    tmp_path: Path,
) -> None:
    """Another process behind the front door (a new ``process_start_time_seconds``): its
    pids are new, so a pid running with another start time is not a pid reused; with
    the same start time it is."""
    from vllm_evidence._adapters.process_tree import ProcessState

    recorded_tree(tmp_path / "proc")
    with serve_capture(SCENARIO) as door:
        rounds = _rounds_over(tmp_path, door.port)
        asyncio.run(rounds.round())
        write_stat(tmp_path / "proc", RANK1, ENGINE_CORE, 99)
        (same,) = asyncio.run(rounds.round())
        door.restart()
        (restarted,) = asyncio.run(rounds.round())
    assert not isinstance(same.result, str)
    assert not isinstance(restarted.result, str)
    same_tree, new_tree = same.result.evidence.process_tree, restarted.result.evidence.process_tree
    assert same_tree is not None
    assert new_tree is not None
    assert same_tree.state(RANK1) is ProcessState.REUSED
    assert new_tree.state(RANK1) is ProcessState.RUNNING


@pytest.mark.parametrize("canary", [False, True])
def test_a_round_sends_the_canary_once_and_only_when_asked(tmp_path: Path, canary: bool) -> None:
    from vllm_evidence.testing._stub import Fault

    recorded_tree(tmp_path / "proc")
    with serve_capture(SCENARIO, completion=Fault()) as door:
        rounds = _rounds_over(tmp_path, door.port, canary=canary)
        (first,) = asyncio.run(rounds.round())
        (second,) = asyncio.run(rounds.round())
        posts = [r.path for r in door.requests if r.method == "POST"]
    assert posts == (["/v1/completions"] * 2 if canary else [])
    if canary:
        assert first.canary is not None
        assert second.canary is not None
        assert (first.canary.reason.value, second.canary.generated) == ("generated", True)
    else:
        assert (first.canary, second.canary) == (None, None)
