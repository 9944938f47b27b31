"""The pytest plugin: the ``vllm_front_door`` fixture starts and stops stubs, and the
request log sees them; neither the stub nor the plugin needs Hypothesis.
"""

from __future__ import annotations

import hashlib
import http.client
import re
import socket
import subprocess
import sys

import pytest

from vllm_evidence._assessment import assess
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.decisions import (
    JoinedIncarnation,
    LogJoined,
    LogJoinRefused,
    ParallelEstablished,
)
from vllm_evidence.errors import InputError
from vllm_evidence.testing import (
    Fault,
    FrontDoorFactory,
    StubRequest,
    forbidden_requests,
    observe_requests,
)
from vllm_evidence.upstream import Route


def test_stub_and_plugin_do_not_need_hypothesis() -> None:
    code = (
        "import sys, vllm_evidence.testing, vllm_evidence.testing._plugin; "
        "from vllm_evidence.testing import serve_capture, CaptureDirectory; "
        "print('hypothesis' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


# --- the fixture and the request log ----------------------------------------------------


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_fixture_starts_the_stub_and_stops_it_after_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import http.client

        PORTS = []

        def test_uses_the_door(vllm_front_door):
            door = vllm_front_door()
            PORTS.append(door.port)
            conn = http.client.HTTPConnection("127.0.0.1", door.port, timeout=2)
            conn.request("GET", "/version")
            assert conn.getresponse().status == 200
            assert [(r.method, r.path) for r in door.requests] == [("GET", "/version")]

        def test_port_is_closed_afterwards():
            import socket
            with socket.socket() as s:
                s.settimeout(0.5)
                assert s.connect_ex(("127.0.0.1", PORTS[0])) != 0
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "ignore")
    result.assert_outcomes(passed=2)


def test_fixture_started_stubs_reach_the_session_guard(
    vllm_front_door: FrontDoorFactory, stub_request_log: list[StubRequest]
) -> None:
    before = len(stub_request_log)
    door = vllm_front_door()
    probe_sync(door.url)
    seen = stub_request_log[before:]
    assert len(seen) == len(door.requests) == 10  # 2 /metrics reads at each end + 6 routes
    assert forbidden_requests(seen) == []
    assert _port_open(door.port)


def test_a_post_is_recorded_and_flagged(
    vllm_front_door: FrontDoorFactory, stub_request_log: list[StubRequest]
) -> None:
    door = vllm_front_door()
    with observe_requests() as private:
        conn = http.client.HTTPConnection("127.0.0.1", door.port, timeout=2)
        conn.request("POST", "/collective_rpc", body=b'{"method":"x"}')
        assert conn.getresponse().status == 405
        conn.close()
    posted = [r for r in door.requests if r.method == "POST"]
    assert [(r.method, r.path) for r in posted] == [("POST", "/collective_rpc")]
    assert forbidden_requests(door.requests) == posted
    assert forbidden_requests(private) == posted
    # The session guard saw it too (and would fail the session); this test sent it on
    # purpose, so it takes exactly that request back out of the session's log.
    assert posted[0] in stub_request_log
    stub_request_log.remove(posted[0])
    # (The gate's marked canary, which other tests send on purpose, is excused.)
    assert forbidden_requests(stub_request_log, canary=True) == []


# --- recorded real servers: replay with their logs and receipts ---------------------------


def test_the_shipped_scenarios_are_listed_by_name() -> None:
    from vllm_evidence.testing import real_scenarios

    names = real_scenarios()
    assert names == (
        "vllm-0.32.0-cpu/tp1-devmode",
        "vllm-0.32.0-cpu/tp2-apikey",
        "vllm-0.32.0-cpu/tp2-devmode",
    )


def test_an_unknown_scenario_is_an_input_error_naming_the_known_ones(
    vllm_front_door: FrontDoorFactory,
) -> None:
    with pytest.raises(InputError, match=re.escape("vllm-0.32.0-cpu/tp2-devmode")):
        vllm_front_door.replay("vllm-0.32.0-cpu/tp8")


@pytest.mark.parametrize(
    ("name", "tp"),
    [("vllm-0.32.0-cpu/tp1-devmode", 1), ("vllm-0.32.0-cpu/tp2-devmode", 2)],
)
def test_a_replay_carries_its_log_and_receipt_and_joins(
    vllm_front_door: FrontDoorFactory, name: str, tp: int
) -> None:
    real = vllm_front_door.replay(name)
    assert real.name == name
    assert b"(APIServer pid=" in real.startup_log_path.read_bytes()
    assert real.receipt.log_sha256 == hashlib.sha256(real.startup_log_path.read_bytes()).hexdigest()
    assessment = assess(
        readback_from_batch(probe_sync(real.url)), real.startup_log, receipt=real.receipt
    )
    # on the port the log names (or, were it taken here, any: the receipt decides)
    if real.on_logged_port:
        logged = re.search(rb"'port': ([0-9]+)", real.startup_log_path.read_bytes())
        assert logged is not None
        assert real.port == int(logged[1])
    assert isinstance(assessment.log_join, LogJoined), assessment.log_join
    assert isinstance(assessment.parallel, ParallelEstablished), assessment.parallel
    assert assessment.parallel.configuration.tensor_parallel_size == tp


def test_a_replay_without_its_receipt_is_not_joined(vllm_front_door: FrontDoorFactory) -> None:
    real = vllm_front_door.replay("vllm-0.32.0-cpu/tp2-devmode")
    assessment = assess(readback_from_batch(probe_sync(real.url)), real.startup_log)
    assert isinstance(assessment.log_join, LogJoinRefused)
    assert not isinstance(assessment.parallel, ParallelEstablished)


def test_a_replay_takes_faults(vllm_front_door: FrontDoorFactory) -> None:
    real = vllm_front_door.replay(
        "vllm-0.32.0-cpu/tp2-devmode", faults={Route.HEALTH: Fault(status=503)}
    )
    batch = probe_sync(real.url)
    health = batch.exchange(Route.HEALTH)
    assert health is not None
    assert health.status == 503
    assert [r.path for r in real.requests].count("/metrics") == 4  # two at each end


def test_metrics_sequence_replays_recorded_bodies_in_order(
    vllm_front_door: FrontDoorFactory,
) -> None:
    first = b"process_start_time_seconds 1.0\n"
    second = b"process_start_time_seconds 2.0\n"
    door = vllm_front_door(metrics_sequence=[first, second])
    batch = probe_sync(door.url)
    assert batch.bracket_open.body == first
    assert batch.bracket_close.body == second
    join = assess(readback_from_batch(batch)).front_door_join
    assert not isinstance(join, JoinedIncarnation)


def test_without_a_metrics_sequence_both_brackets_read_the_same_body(
    vllm_front_door: FrontDoorFactory,
) -> None:
    batch = probe_sync(vllm_front_door().url)
    assert batch.bracket_open.body == batch.bracket_close.body


def test_pytest_fixtures_shows_the_fixtures_paragraph(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(vllm_front_door):\n    assert vllm_front_door\n")
    result = pytester.runpytest_inprocess("--fixtures", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert "vllm_front_door" in text
    for words in ("faults=", "restart_after_metrics_reads=1", "metrics_sequence=", ".replay("):
        assert words in text, words
