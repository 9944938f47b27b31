"""The stub front door's faults, each with the probe's typed outcome."""

from __future__ import annotations

import pytest

from tests._evidence import front_door_join
from vllm_evidence import readback_from_batch
from vllm_evidence._adapters.outcome import Parsed, TimedOut, Unparsed, Unreachable
from vllm_evidence._capture.http import probe_sync
from vllm_evidence.decisions import JoinReason, JoinUnestablished
from vllm_evidence.testing import (
    Fault,
    FrontDoorFactory,
)
from vllm_evidence.upstream._routes import Route

# --- faults, each with the probe's typed outcome -------------------------------------


def test_trickle_within_the_timeout_is_parsed(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(faults={Route.VERSION: Fault(trickle_bytes_per_s=100)})
    readback = readback_from_batch(probe_sync(door.url, timeout=2.0))
    assert isinstance(readback.version, Parsed)  # 20 bytes at 100 B/s: about 0.2 s


def test_trickle_past_the_timeout_times_out(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(faults={Route.VERSION: Fault(trickle_bytes_per_s=20)})
    readback = readback_from_batch(probe_sync(door.url, timeout=0.3))
    assert isinstance(readback.version, TimedOut)  # 20 bytes at 20 B/s: about 1 s
    assert isinstance(readback.models, Parsed)


def test_truncated_json_is_unparsed(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(faults={Route.MODELS: Fault(truncate_at=40)})
    readback = readback_from_batch(probe_sync(door.url))
    assert isinstance(readback.models, Unparsed)
    exchange = readback.batch.exchange(Route.MODELS)
    assert exchange is not None
    assert exchange.body is not None
    assert len(exchange.body) == 40


def test_garbage_is_unparsed(vllm_front_door: FrontDoorFactory) -> None:
    faults = {r: Fault(garbage=True) for r in (Route.VERSION, Route.SERVER_INFO_JSON)}
    door = vllm_front_door(faults=faults)
    readback = readback_from_batch(probe_sync(door.url))
    assert isinstance(readback.version, Unparsed)
    assert isinstance(readback.server_info_json, Unparsed)
    assert isinstance(readback.server_info, Parsed)


def test_reset_is_unreachable(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(faults={Route.VERSION: Fault(reset=True)})
    readback = readback_from_batch(probe_sync(door.url))
    assert isinstance(readback.version, Unreachable)
    assert isinstance(readback.models, Parsed)


def test_health_503_is_a_parsed_unhealthy_answer(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(faults={Route.HEALTH: Fault(status=503)})
    readback = readback_from_batch(probe_sync(door.url))
    assert isinstance(readback.health, Parsed)
    assert readback.health.observation.status == 503


def test_restart_between_probes_changes_the_marker(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door()
    before = readback_from_batch(probe_sync(door.url))
    door.restart()
    after = readback_from_batch(probe_sync(door.url))
    assert isinstance(before.metrics, Parsed)
    assert isinstance(after.metrics, Parsed)
    first, second = before.metrics.observation, after.metrics.observation
    assert first.process_start_time is not None
    assert second.process_start_time is not None
    assert second.process_start_time.seconds == first.process_start_time.seconds + 1000


def test_restart_inside_a_batch_refuses_the_join(vllm_front_door: FrontDoorFactory) -> None:
    door = vllm_front_door(restart_after_metrics_reads=1)
    join = front_door_join(readback_from_batch(probe_sync(door.url)))
    assert isinstance(join, JoinUnestablished)
    assert join.reason is JoinReason.MARKER_CHANGED


def test_fault_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="trickle"):
        Fault(trickle_bytes_per_s=0)
    with pytest.raises(ValueError, match="truncate_at"):
        Fault(truncate_at=-1)


def test_latency_is_checked_and_a_stopped_stub_leaves_no_thread() -> None:
    from tests._paths import REAL
    from vllm_evidence.testing._stub import serve_capture

    with pytest.raises(ValueError, match="latency_s"), serve_capture(REAL, latency_s=-1):
        pass
    with serve_capture(REAL, latency_s=0.001) as door:
        batch = probe_sync(door.url, development_routes=False)
        # the accept loop sleeps in select() until a connection or the stop: no polling
        thread = door._thread
    assert isinstance(readback_from_batch(batch).version, Parsed)
    assert not thread.is_alive()


def test_answers_go_out_without_waiting_on_nagle() -> None:
    from tests._paths import REAL
    from vllm_evidence.testing._stub import serve_capture

    with serve_capture(REAL) as door:
        handler = door._server.RequestHandlerClass
    assert handler.disable_nagle_algorithm is True  # type: ignore[attr-defined]


def test_a_fixed_port_another_listener_holds_is_waited_for_only_when_asked() -> None:
    import errno
    import socket
    import threading

    from tests._paths import REAL
    from vllm_evidence.testing._stub import serve_capture

    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        with pytest.raises(OSError, match="in use") as refused, serve_capture(REAL, port=port):
            pass
        assert refused.value.errno == errno.EADDRINUSE
        with (
            pytest.raises(OSError, match="in use"),
            serve_capture(REAL, port=port, bind_wait_s=0.2),
        ):
            pass
        threading.Timer(0.3, holder.close).start()
        with serve_capture(REAL, port=port, bind_wait_s=30) as door:
            assert door.url == f"http://127.0.0.1:{port}"
    finally:
        holder.close()
