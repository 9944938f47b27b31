"""The test kit gives the twin ``/metrics`` reads a probe makes.

A stub is one process: its ``/metrics`` reads back to back answer alike, and a restart
(``restart_after_metrics_reads``, ``metrics_sequence``) falls between runs of reads, so a
probe's two opening reads see one process and its two closing reads another.  Every
batch the strategies build reads each end twice, as a probe does.
"""

from __future__ import annotations

from hypothesis import given, settings

from tests._paths import REAL
from vllm_evidence._capture.batch import CaptureBatch
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.decisions import JoinedIncarnation, JoinReason
from vllm_evidence.testing._strategies import capture_batches, servers
from vllm_evidence.testing._strategies.servers import GeneratedServer
from vllm_evidence.testing._stub import serve_capture

FIRST = b"process_start_time_seconds 1.0\n"
SECOND = b"process_start_time_seconds 2.0\n"


def _bodies(batch: CaptureBatch) -> tuple[bytes | None, ...]:
    assert batch.bracket_open_twin is not None
    assert batch.bracket_close_twin is not None
    return (
        batch.bracket_open.body,
        batch.bracket_open_twin.body,
        batch.bracket_close.body,
        batch.bracket_close_twin.body,
    )


def test_a_metrics_sequence_answers_each_run_of_reads_alike() -> None:
    with serve_capture(REAL, metrics_sequence=[FIRST, SECOND]) as door:
        batch = probe_sync(door.url)
    assert _bodies(batch) == (FIRST, FIRST, SECOND, SECOND)


def test_a_restart_after_one_run_falls_between_the_two_ends() -> None:
    with serve_capture(REAL, restart_after_metrics_reads=1) as door:
        batch = probe_sync(door.url)
    opening, opening_twin, closing, closing_twin = _bodies(batch)
    assert opening == opening_twin
    assert closing == closing_twin
    assert opening != closing


def test_a_restart_between_two_reads_is_seen_by_the_later_one() -> None:
    """``door.restart()`` acts at once: the next read, back to back or not, is another
    process's."""
    with serve_capture(REAL) as door:
        before = probe_sync(door.url)
        door.restart()
        after = probe_sync(door.url)
    assert len(set(_bodies(before))) == len(set(_bodies(after))) == 1
    assert _bodies(before)[0] != _bodies(after)[0]


@settings(max_examples=20, deadline=None)
@given(capture_batches())
def test_every_drawn_batch_reads_each_end_twice(batch: CaptureBatch) -> None:
    assert batch.processes_counted
    join = readback_from_batch(batch).bracket
    assert join.processes_counted
    assert join.several_processes() is None


@settings(max_examples=10, deadline=None)
@given(servers() | servers(restarted=True))
def test_a_drawn_server_is_one_process(server: GeneratedServer) -> None:
    assert server.batch.processes_counted
    join = server.assess(with_log=False).front_door_join
    assert isinstance(join, JoinedIncarnation) is not server.restarted
    assert join.reason is not JoinReason.SEVERAL_PROCESSES
