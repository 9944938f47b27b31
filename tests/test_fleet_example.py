"""The fleet example reads every server once, each as a single probe would."""

from __future__ import annotations

import asyncio
import contextlib
import io
from contextlib import ExitStack

from examples.fleet import main, read_fleet
from tests._paths import REAL
from tests._ports import nothing_listening
from vllm_evidence import Assessment, InputError, assess, probe_sync, readback_from_batch
from vllm_evidence.capture.http import BodyBudget
from vllm_evidence.decisions import CapacityEstablished, CapacityRefused
from vllm_evidence.output.assessment import assessment_document
from vllm_evidence.testing import serve_capture


def _decided(assessment: Assessment) -> tuple[object, object]:
    document = assessment_document(assessment)
    return document["decisions"], document["observations"]


def test_every_server_is_read_once_and_as_a_single_probe_reads_it() -> None:
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(5)]
        dead = nothing_listening()
        urls = [*(d.url for d in doors), dead, "not a url"]
        results = asyncio.run(read_fleet(urls, at_once=3))
        by_fleet = [len(d.requests) for d in doors]
        alone = {d.url: assess(readback_from_batch(probe_sync(d.url))) for d in doors}
        by_both = [len(d.requests) for d in doors]
    assert sorted(results) == sorted(urls)
    for url, single in alone.items():
        got = results[url]
        assert isinstance(got, Assessment)
        assert isinstance(got.capacity, CapacityEstablished)
        assert _decided(got) == _decided(single)
    # The fleet sent each server exactly the requests of one probe: as many as the single
    # probe after it (a server read twice, or not at all, would show here).
    assert by_fleet == [both - fleet for both, fleet in zip(by_both, by_fleet, strict=True)]
    assert all(by_fleet)
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


def test_the_fleet_holds_its_bodies_within_its_budget_and_gives_every_batch_back() -> None:
    # The real capture's bodies: ~260 KB a server, reserved at the 8 MiB cap while read.
    budget = BodyBudget(100 * 1024 * 1024)
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(4)]
        results = asyncio.run(read_fleet([d.url for d in doors], body_budget=budget))
    for result in results.values():
        assert isinstance(result, Assessment)
        assert isinstance(result.capacity, CapacityEstablished)
    # Four probes of ten requests at the cap want 320 MiB at once: the budget held them
    # to 100 MiB, and they waited rather than failed.
    assert budget.high_water <= 100 * 1024 * 1024
    assert budget.waits > 0
    assert budget.held == 0
