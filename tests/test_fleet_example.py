"""The fleet example reads every server once, each as a single probe would."""

from __future__ import annotations

import asyncio
import contextlib
import io
import socket
from contextlib import ExitStack

from examples.fleet import main, read_fleet
from tests._paths import REAL
from vllm_evidence import Assessment, InputError, assess, probe_sync, readback_from_batch
from vllm_evidence.decisions import CapacityEstablished, CapacityRefused
from vllm_evidence.output.assessment import assessment_document
from vllm_evidence.testing import serve_capture


def _refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: nothing listens there


def _decided(assessment: Assessment) -> tuple[object, object]:
    document = assessment_document(assessment)
    return document["decisions"], document["observations"]


def test_every_server_is_read_once_and_as_a_single_probe_reads_it() -> None:
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(5)]
        dead = _refused_url()
        urls = [*(d.url for d in doors), dead, "not a url"]
        results = asyncio.run(read_fleet(urls, at_once=3))
        alone = {d.url: assess(readback_from_batch(probe_sync(d.url))) for d in doors}
        requests = [len(d.requests) for d in doors]
    assert sorted(results) == sorted(urls)
    for url, single in alone.items():
        got = results[url]
        assert isinstance(got, Assessment)
        assert isinstance(got.capacity, CapacityEstablished)
        assert _decided(got) == _decided(single)
    # Each server was probed twice in all (the fleet, then the single probe above), and
    # both probes send the same requests.
    assert len(set(requests)) == 1
    assert requests[0] % 2 == 0
    dead_result = results[dead]
    assert isinstance(dead_result, Assessment)
    assert isinstance(dead_result.capacity, CapacityRefused)  # nothing answered: refused
    assert isinstance(results["not a url"], InputError)


def test_main_prints_a_line_a_server() -> None:
    with serve_capture(REAL) as door:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main([door.url, "not a url"])
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"{door.url}: vLLM 0.32.0, parallel ")
    assert lines[0].endswith("capacity established")
    assert lines[1].startswith("not a url: ")
