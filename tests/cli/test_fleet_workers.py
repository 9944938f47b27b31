"""The fleet's assessment off the event loop: worker processes, and what a failure of one
changes (nothing in the results).

A batch whose bodies hold more than ``INLINE_BODY_BYTES`` is parsed and assessed in a
worker process; a smaller one (a server that answers nothing) on the loop.  Either way
the line is the one probing the server alone gives.  A worker that cannot start, or dies
holding a job, costs one note on stderr: its server is assessed on the loop instead.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import threading
from contextlib import ExitStack
from typing import Any

import pytest

from tests._paths import REAL
from tests._ports import nothing_listening
from tests.hostile._server import hostile_server, response
from vllm_evidence._assessment import assess
from vllm_evidence._capture.http import BodyBudget, probe_sync
from vllm_evidence._cli import _fleet
from vllm_evidence._cli._fleet import (
    _OUT_OF_BAND,
    INLINE_BODY_BYTES,
    _budget,
    _dumps,
    _Fleet,
    _Job,
    _read_message,
    _WorkerGoneError,
    fork_workers,
)
from vllm_evidence._output.assessment import assessment_document
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.cli import build_parser
from vllm_evidence.testing import serve_capture


def _run_fleet(urls: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[_Fleet, str, str]:
    args = build_parser().parse_args(["probe", *urls, "--json", "--timeout", "5"])
    budget = _budget(args, None)
    assert isinstance(budget, BodyBudget)
    fleet = _Fleet(urls, args, None, None, budget)
    asyncio.run(fleet.run())
    captured = capsys.readouterr()
    return fleet, captured.out, captured.err


def _decided(document: dict[str, Any]) -> tuple[object, object]:
    return document["decisions"], document["observations"]


def _alone(url: str) -> tuple[object, object]:
    document = assessment_document(assess(readback_from_batch(probe_sync(url)), None))
    return document["decisions"], document["observations"]


def _check_as_alone(out: str, urls: list[str]) -> None:
    documents = {d["target"]: d for d in map(json.loads, out.splitlines())}
    assert sorted(documents) == sorted(urls)
    for url in urls:
        assert _decided(documents[url]) == _alone(url)
        assert documents[url]["decisions"]["capacity"]["verdict"] == "established"


def test_the_real_capture_is_assessed_in_a_worker_as_a_single_probe_assesses_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert sum(p.stat().st_size for p in REAL.glob("*.body")) > INLINE_BODY_BYTES
    with ExitStack() as stack:
        urls = [stack.enter_context(serve_capture(REAL)).url for _ in range(3)]
        fleet, out, err = _run_fleet(urls, capsys)
        _check_as_alone(out, urls)
    assert fleet.assessor is not None
    assert fleet.assessor.started >= 1
    assert err == ""


def test_servers_that_answer_nothing_are_assessed_on_the_loop_without_a_worker(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fleet, out, _ = _run_fleet([nothing_listening(), nothing_listening()], capsys)
    assert fleet.assessor is not None
    assert fleet.assessor.started == 0
    for document in map(json.loads, out.splitlines()):
        assert document["decisions"]["parallel"]["reason"] == "front_door_unreachable"


def test_a_worker_that_cannot_start_leaves_the_results_as_they_are_and_says_so_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def cannot(key: str | None) -> object:
        msg = "no worker process could be started (OSError)"
        raise _WorkerGoneError(msg)

    monkeypatch.setattr(_fleet._Worker, "start", cannot)
    with ExitStack() as stack:
        urls = [stack.enter_context(serve_capture(REAL)).url for _ in range(3)]
        fleet, out, err = _run_fleet(urls, capsys)
        _check_as_alone(out, urls)
    assert fleet.assessor is not None
    assert fleet.assessor.started == 0
    assert err.splitlines() == [
        (
            "vllm-evidence probe: note: no worker process could be started (OSError): its "
            "server was assessed on the event loop"
        )
    ]


def test_a_worker_that_dies_holding_a_job_leaves_the_results_as_they_are(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker that reads a little of what it is sent and exits, as one killed would.
    monkeypatch.setattr(
        _fleet, "_WORKER_MAIN", "import os, sys; sys.stdin.buffer.read(64); os._exit(3)"
    )
    with ExitStack() as stack:
        urls = [stack.enter_context(serve_capture(REAL)).url for _ in range(3)]
        fleet, out, err = _run_fleet(urls, capsys)
        _check_as_alone(out, urls)
    assert fleet.assessor is not None
    assert fleet.assessor.started >= 1
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("vllm-evidence probe: note: a worker process ended (")
    assert lines[0].endswith("): its server was assessed on the event loop")


def test_a_jobs_large_bodies_travel_beside_its_pickle_and_come_back_as_they_were() -> None:
    large, small = b"L" * (3 * _OUT_OF_BAND), b"s" * (_OUT_OF_BAND - 1)

    def answers(target: str, headers: dict[str, str]) -> bytes:
        return response(200, large if target == "/metrics" else small)

    with hostile_server(answers) as server:
        batch = probe_sync(server.url)
    job = _Job(batch, server.url, None, None, None, json_out=True, require=())
    data, buffers = _dumps(job)
    # The four /metrics bodies beside the pickle, the six smaller ones in it.
    assert [len(b) for b in buffers] == [len(large)] * 4
    assert len(data) < 7 * len(small)
    stream = io.BytesIO()
    stream.write(len(data).to_bytes(8, "big") + len(buffers).to_bytes(8, "big") + data)
    for buffer in buffers:
        stream.write(len(buffer).to_bytes(8, "big") + buffer)
    stream.seek(0)
    again = _read_message(stream)
    assert isinstance(again, _Job)
    assert again.batch.batch_id == batch.batch_id
    assert [(e.route, e.body) for e in again.batch.all_exchanges()] == [
        (e.route, e.body) for e in batch.all_exchanges()
    ]
    assert all(type(e.body) is bytes for e in again.batch.all_exchanges())


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_workers_forked_before_the_loop_assess_as_a_single_probe_does_and_are_reaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if threading.active_count() != 1:
        pytest.skip("a fork needs this process to have one thread")
    forked = fork_workers(None)  # before the stubs' threads start
    assert len(forked) == 2
    with ExitStack() as stack:
        urls = [stack.enter_context(serve_capture(REAL)).url for _ in range(3)]
        args = build_parser().parse_args(["probe", *urls, "--json"])
        budget = _budget(args, None)
        assert isinstance(budget, BodyBudget)
        fleet = _Fleet(urls, args, None, None, budget, forked)
        asyncio.run(fleet.run())
        captured = capsys.readouterr()
        _check_as_alone(captured.out, urls)
    assert captured.err == ""
    assert fleet.assessor is not None
    assert fleet.assessor.started >= 1  # a forked worker took the jobs
    assert all(_reaped(f.pid) for f in forked)  # used or not, each ended and was reaped


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_no_worker_is_forked_beside_another_thread() -> None:
    started = threading.Event()
    stop = threading.Event()

    def idle() -> None:
        started.set()
        stop.wait()

    thread = threading.Thread(target=idle)
    thread.start()
    try:
        started.wait()
        assert fork_workers(None) == []  # a fresh interpreter is started instead
    finally:
        stop.set()
        thread.join()
