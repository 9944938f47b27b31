"""The test kit's servers: knobs that the drawn evidence really has, consistent servers
that a correct policy admits, mixed builds it never admits, socket-free batches that
read like a probe's, and shrinking to a minimal server.

The oracle for each knob is the evidence itself (the log's bytes, what the reader and
the decisions make of them), never the generator's own record of what it drew.
"""

from __future__ import annotations

import io
import re
import socket
import tempfile
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from vllm_evidence.adapters.outcome import Parsed
from vllm_evidence.adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence.assessment import Subject, assess
from vllm_evidence.capture.batch import CaptureOrigin
from vllm_evidence.capture.http import probe_sync
from vllm_evidence.decisions import (
    LogJoined,
    LogJoinReason,
    LogJoinRefused,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
)
from vllm_evidence.readback import readback_from_batch
from vllm_evidence.testing.strategies import (
    BACKENDS,
    RELEASES,
    GeneratedLog,
    GeneratedServer,
    launches,
    mixed_builds,
    servers,
)
from vllm_evidence.testing.stub import serve_capture
from vllm_evidence.upstream import ExecutorBackend, Route

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Releases whose launches print worker rank lines (from 0.10.2).
RANKED = [r for r in RELEASES if RELEASES.index(r) >= RELEASES.index("0.10.2")]


def _rank_lines(text: bytes) -> list[tuple[int, int]]:
    """``(rank, world_size)`` of every worker line in the log's bytes."""
    return [
        (int(m[2]), int(m[1]))
        for m in re.finditer(rb"world_size=([0-9]+) rank=([0-9]+) local_rank=", text)
    ]


# --- each knob, seen in the evidence -------------------------------------------------


@SETTINGS
@given(st.data())
def test_the_release_knob_is_the_launchs_release(data: st.DataObject) -> None:
    release = data.draw(st.sampled_from(RELEASES))
    server = data.draw(servers(release=release))
    assessment = server.assess()
    version = server.startup_log().launches[-1].version
    assert version is not None
    assert version.text == release
    body = server.batch.exchange(Route.VERSION)
    assert body is not None
    assert body.body == f'{{"version": "{release}"}}'.encode()
    assert assessment.log_join.reason is not LogJoinReason.VERSION_CONTRADICTED


@SETTINGS
@given(st.data())
def test_the_size_knobs_are_the_launchs_sizes(data: st.DataObject) -> None:
    tp = data.draw(st.sampled_from([1, 2, 4, 8]))
    pp = data.draw(st.sampled_from([1, 2, 3]))
    dp = data.draw(st.sampled_from([1, 2, 4]))
    server = data.draw(
        servers(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=dp)
    )
    text = server.log.text
    assert f"tensor_parallel_size={tp},".encode() in text
    assert f"pipeline_parallel_size={pp},".encode() in text
    release = server.front_door_launch.release
    if dp > 1:  # DP > 1 draws a release that prints it
        assert release in RANKED
    if release in RANKED:
        assert f"data_parallel_size={dp},".encode() in text
    else:
        assert b"data_parallel_size=" not in text
    launch = server.startup_log().launches[-1]
    configs = launch.engine_configs
    assert configs, launch
    assert {(c.tensor_parallel_size, c.pipeline_parallel_size) for c in configs} == {(tp, pp)}
    assert len(configs) == dp  # one engine-init line per DP engine


@SETTINGS
@given(st.sampled_from(RANKED), st.data())
def test_a_server_with_every_rank_present_is_established_for_the_serving_process(
    release: str, data: st.DataObject
) -> None:
    tp = data.draw(st.sampled_from([1, 2, 4]))
    server = data.draw(servers(release=release, tensor_parallel_size=tp, data_parallel_size=1))
    ranks = _rank_lines(server.log.text)
    assert sorted(ranks) == [
        (r, tp * server.front_door_launch.pipeline_parallel_size)
        for r in range(tp * server.front_door_launch.pipeline_parallel_size)
    ]
    assessment = server.assess()
    assert isinstance(assessment.log_join, LogJoined), assessment.log_join
    assert isinstance(assessment.parallel, ParallelEstablished), assessment.parallel
    assert assessment.parallel.configuration.tensor_parallel_size == tp


@SETTINGS
@given(servers(tensor_parallel_size=4, missing_ranks=[2]))
def test_tp4_with_rank_2_missing_refuses_ranks_missing_naming_2(server: GeneratedServer) -> None:
    assert 2 not in [rank for rank, _ in _rank_lines(server.log.text)]
    assessment = server.assess()
    assert isinstance(assessment.log_join, LogJoined), assessment.log_join
    parallel = assessment.parallel
    assert isinstance(parallel, ParallelRefused), parallel
    assert parallel.reason is ParallelReason.RANKS_MISSING
    assert parallel.missing_ranks == (2,)


@SETTINGS
@given(
    st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True).flatmap(
        lambda missing: st.tuples(st.just(missing), servers(missing_ranks=missing))
    )
)
def test_any_missing_ranks_are_the_ones_refused(case: tuple[list[int], GeneratedServer]) -> None:
    missing, server = case
    printed = {rank for rank, _ in _rank_lines(server.log.text)}
    assert printed.isdisjoint(missing)
    assert printed  # some rank is left to have printed
    parallel = server.assess().parallel
    assert isinstance(parallel, ParallelRefused), parallel
    assert parallel.reason is ParallelReason.RANKS_MISSING
    assert parallel.missing_ranks == tuple(sorted(missing))


@SETTINGS
@given(st.sampled_from(BACKENDS).flatmap(lambda b: st.tuples(st.just(b), launches(backend=b))))
def test_the_backend_knob_is_the_backend_the_reader_decides(
    case: tuple[str, GeneratedLog],
) -> None:
    backend, generated = case
    text = generated.text
    assert f"distributed_executor_backend={backend},".encode() in text
    log = read_startup_log(io.BytesIO(text))
    assert isinstance(log, StartupLog)
    assert log.launches[-1].executor_backend is ExecutorBackend(backend)


@SETTINGS
@given(launches())
def test_without_the_backend_knob_no_backend_is_printed(generated: GeneratedLog) -> None:
    assert b"distributed_executor_backend" not in generated.text


@SETTINGS
@given(servers(restarted=True))
def test_a_restarted_server_is_refused_for_the_restart(server: GeneratedServer) -> None:
    readback = server.readback()
    assert readback.batch.bracket_open.body != readback.batch.bracket_close.body
    assessment = server.assess()
    assert assessment.log_join.reason is LogJoinReason.FRONT_DOOR_RESTARTED
    assert not isinstance(assessment.parallel, ParallelEstablished)


@SETTINGS
@given(servers())
def test_an_unrestarted_server_reads_the_same_marker_twice(server: GeneratedServer) -> None:
    assert server.batch.bracket_open.body == server.batch.bracket_close.body
    assert server.assess().log_join.reason is not LogJoinReason.FRONT_DOOR_RESTARTED


@pytest.mark.parametrize(
    "knobs",
    [
        {"release": "0.9.2", "missing_ranks": [0]},  # no rank lines before 0.10.2
        {"data_parallel_size": 2, "missing_ranks": [0]},  # nor with DP > 1
        # rank 2 is not in a TP=2 PP=1 world
        {"tensor_parallel_size": 2, "pipeline_parallel_size": 1, "missing_ranks": [2]},
        {"tensor_parallel_size": 2, "pipeline_parallel_size": 1, "missing_ranks": [0, 1]},
        {"release": "0.8.5", "data_parallel_size": 2},  # DP is printed from 0.10.2
        {"backend": "uni", "tensor_parallel_size": 2},
        {"backend": "nccl"},
        {"release": "0.99.0"},
        {"tensor_parallel_size": 0},
        {"missing_ranks": [-1]},
    ],
)
def test_an_impossible_knob_combination_is_refused_when_the_strategy_is_made(
    knobs: dict[str, object],
) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        servers(**knobs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "knobs",
    [
        {"release": "0.10.2", "missing_ranks": [0]},
        {"tensor_parallel_size": 4, "missing_ranks": [2]},
        {"tensor_parallel_size": 2, "pipeline_parallel_size": 2, "missing_ranks": [0, 1, 2]},
        {"release": "0.10.2", "data_parallel_size": 2},
        {"backend": "uni"},
    ],
)
def test_a_possible_knob_combination_draws(knobs: dict[str, object]) -> None:
    drawn: list[GeneratedServer] = []

    @settings(max_examples=5, database=None, deadline=None)
    @given(servers(**knobs))  # type: ignore[arg-type]
    def draw(server: GeneratedServer) -> None:
        drawn.append(server)

    draw()
    assert drawn
    assert all(isinstance(server, GeneratedServer) for server in drawn)


# --- mixed builds --------------------------------------------------------------------


@SETTINGS
@given(mixed_builds())
def test_a_mixed_build_is_two_launches_and_never_joined(server: GeneratedServer) -> None:
    assert server.mixed
    receipt = server.launch_receipt()
    assert receipt.process_start_seconds != Decimal(server.start_time)
    assessment = server.assess()
    assert isinstance(assessment.log_join, LogJoinRefused), assessment.log_join
    assert not isinstance(assessment.parallel, ParallelEstablished)


@settings(max_examples=60, deadline=None)
@given(mixed_builds(release="0.32.0", tensor_parallel_size=2, data_parallel_size=1))
def test_mixed_builds_include_identical_replicas(server: GeneratedServer) -> None:
    """Some draws hand in a log byte-identical to the front door's launch's, so only the
    receipt's start time can tell them apart."""
    assert server.assess().log_join.reason in {
        LogJoinReason.START_TIME_CONTRADICTED,
        LogJoinReason.CONFIGURATION_CONTRADICTED,
    }


def test_mixed_builds_draw_identical_replicas_and_other_launches() -> None:
    same = find(
        mixed_builds(release="0.32.0"),
        lambda s: (
            s.log.text == s.front_door.startup_log and s.log.launches == (s.front_door_launch,)
        ),
    )
    assert same.mixed
    other = find(mixed_builds(release="0.32.0"), lambda s: s.log.launches[0] != s.front_door_launch)
    assert other.mixed


# --- the batch: built in-process, read like a probe's ----------------------------------


@pytest.fixture
def no_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        msg = "a draw opened a connection"
        raise AssertionError(msg)

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket.socket, "bind", refuse)


def test_servers_are_drawn_without_a_socket(no_connections: None) -> None:
    @settings(max_examples=20, deadline=None, database=None)
    @given(servers())
    def draw(server: GeneratedServer) -> None:
        assert server.readback().batch is server.batch
        # marked as the test kit's, and it sent nothing
        assert server.batch.origin is CaptureOrigin.GENERATED
        assert server.batch.request_lines() == ()

    draw()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers())
def test_the_generated_batch_reads_like_a_probe_of_the_same_front_door(
    server: GeneratedServer,
) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="generated-") as tmp,
        serve_capture(server.front_door.write(tmp)) as door,
    ):
        probed = probe_sync(door.url, development_routes=False, timeout=5.0, deadline=10.0)
    made = server.batch
    assert probed.origin is CaptureOrigin.PROBED
    assert made.origin is CaptureOrigin.GENERATED
    assert [e.route for e in made.all_exchanges()] == [e.route for e in probed.all_exchanges()]
    assert [e.role for e in made.all_exchanges()] == [e.role for e in probed.all_exchanges()]
    for ours, theirs in zip(made.all_exchanges(), probed.all_exchanges(), strict=True):
        assert (ours.status, ours.body, ours.body_sha256, ours.transport) == (
            theirs.status,
            theirs.body,
            theirs.body_sha256,
            theirs.transport,
        )
        assert ours.header("content-type") == theirs.header("content-type")
    # and the assessment of either is the same, decision by decision
    probed_assessment = assess(
        readback_from_batch(probed), server.startup_log(), receipt=server.launch_receipt()
    )
    ours_assessment = server.assess()
    for claim in ("log_join", "parallel", "capacity", "served_identity", "health_coverage"):
        assert getattr(ours_assessment, claim).reason == getattr(probed_assessment, claim).reason


# --- shrinking -------------------------------------------------------------------------


def test_shrinking_reaches_a_minimal_server() -> None:
    smallest = find(servers(), lambda s: True)
    launch = smallest.front_door_launch
    assert launch.release == RELEASES[0]
    assert (launch.tensor_parallel_size, launch.pipeline_parallel_size) == (1, 1)
    # a minimal log: only what the launch must print, no noise lines
    assert b"Automatically detected platform" not in smallest.log.text
    assert b"warnings.warn" not in smallest.log.text


def test_shrinking_a_failure_keeps_only_what_it_needs() -> None:
    """The smallest server with TP > 1 has TP exactly 2, PP 1, DP 1."""
    found = find(servers(release="0.32.0"), lambda s: s.front_door_launch.tensor_parallel_size > 1)
    launch = found.front_door_launch
    assert (
        launch.tensor_parallel_size,
        launch.pipeline_parallel_size,
        launch.data_parallel_size,
    ) == (2, 1, 1)


# --- the acceptance: a policy that forgets the log join --------------------------------


def _forgetful_policy(server: GeneratedServer) -> bool:
    """Admits when the front door answers and the log's launch has its layout realized,
    without asking whether the log is the serving process's (no log join)."""
    launch_only = assess(None, server.startup_log())
    door = server.readback()
    return (
        isinstance(door.health, Parsed)
        and door.health.observation.status == 200
        and isinstance(launch_only.parallel, ParallelEstablished)
        and launch_only.subject is Subject.LAUNCH
    )


def _careful_policy(server: GeneratedServer) -> bool:
    assessment = server.assess()
    return isinstance(assessment.log_join, LogJoined) and isinstance(
        assessment.parallel, ParallelEstablished
    )


def test_a_policy_that_forgets_the_log_join_is_caught_by_mixed_builds() -> None:
    tried: list[GeneratedServer] = []

    # the default example budget; no shrinking, so the count is the examples it took
    @settings(database=None, deadline=None, phases=[Phase.generate])
    @given(mixed_builds())
    def never_admits_a_mixed_build(server: GeneratedServer) -> None:
        tried.append(server)
        assert not _forgetful_policy(server)

    with pytest.raises(AssertionError):
        never_admits_a_mixed_build()
    assert len(tried) <= settings.get_profile("default").max_examples
    assert _forgetful_policy(tried[-1])
    assert tried[-1].mixed


def test_a_policy_with_the_log_join_passes_the_same_test() -> None:
    @settings(database=None, deadline=None, max_examples=50)
    @given(mixed_builds())
    def never_admits_a_mixed_build(server: GeneratedServer) -> None:
        assert not _careful_policy(server)

    never_admits_a_mixed_build()
