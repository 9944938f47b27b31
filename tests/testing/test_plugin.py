"""The pytest plugin: the ``vllm_front_door`` fixture starts and stops stubs, and the
request log sees them; neither the stub nor the plugin needs Hypothesis.
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys

import pytest

from vllm_evidence.capture.http import probe_sync
from vllm_evidence.testing import (
    FrontDoorFactory,
    StubRequest,
    forbidden_requests,
    observe_requests,
)


def test_stub_and_plugin_do_not_need_hypothesis() -> None:
    code = (
        "import sys, vllm_evidence.testing, vllm_evidence.testing.plugin; "
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
    assert len(seen) == len(door.requests) == 8  # 2 bracket reads + 6 routes
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
    assert forbidden_requests(stub_request_log) == []
