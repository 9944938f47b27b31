"""An orchestration rule tested the way a user's suite would: public kit and API only."""

from __future__ import annotations

import tempfile

from hypothesis import given, settings

from vllm_evidence import Assessment, Parsed, assess, probe_sync, readback_from_batch
from vllm_evidence.decisions import JoinedIncarnation
from vllm_evidence.testing import (
    CaptureDirectory,
    Fault,
    FrontDoorFactory,
    assessments,
    capture_directories,
    forbidden_requests,
    serve_capture,
)
from vllm_evidence.upstream import Route


def may_take_traffic(assessment: Assessment) -> bool:
    """A router's rule: admit a server only on a parsed healthy answer from one incarnation."""
    door = assessment.evidence.front_door
    if door is None or not isinstance(assessment.front_door_join, JoinedIncarnation):
        return False
    return isinstance(door.health, Parsed) and door.health.observation.status == 200


def test_the_recorded_server_may_take_traffic(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door()
    assert may_take_traffic(assess(readback_from_batch(probe_sync(door.url))))
    assert forbidden_requests(door.requests) == []


def test_a_dead_engine_may_not(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(faults={Route.HEALTH: Fault(status=503)})
    assert not may_take_traffic(assess(readback_from_batch(probe_sync(door.url))))


def test_a_restart_mid_read_may_not(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(restart_after_metrics_reads=1)
    assert not may_take_traffic(assess(readback_from_batch(probe_sync(door.url))))


@settings(max_examples=20, deadline=None)
@given(assessments())
def test_caller_assembled_evidence_never_takes_traffic(assessment: Assessment) -> None:
    # assessments() is built from historical bundles and logs: never one joined read.
    assert not may_take_traffic(assessment)


@settings(max_examples=5, deadline=None)
@given(capture_directories(release="0.33.0", startup_log=False))
def test_generated_servers_through_the_stub(capture: CaptureDirectory) -> None:
    # A fixture is per test, not per example: the kit's stub is used directly here.
    with tempfile.TemporaryDirectory() as tmp, serve_capture(capture.write(tmp)) as door:
        assessment = assess(readback_from_batch(probe_sync(door.url)))
        sent = list(door.requests)
    healthy = capture.statuses.get(Route.HEALTH, 200) == 200
    assert may_take_traffic(assessment) == healthy
    assert forbidden_requests(sent) == []
