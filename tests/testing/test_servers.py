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
from collections.abc import Callable
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import CLAIMS, Claim, Subject, assess, claim_established
from vllm_evidence._capture.batch import CaptureBatch, CaptureOrigin
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._readback import readback_from_batch
from vllm_evidence._readback.executor import resolve_executor
from vllm_evidence.decisions import (
    CapacityEstablished,
    HealthCoverageEstablished,
    HealthReason,
    LogJoined,
    LogJoinReason,
    LogJoinRefused,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
)
from vllm_evidence.testing._strategies import (
    BACKENDS,
    RELEASES,
    GeneratedLog,
    GeneratedServer,
    launches,
    mixed_builds,
    servers,
)
from vllm_evidence.testing._stub import serve_capture
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
    assert resolve_executor(log.launches[-1]).backend is ExecutorBackend(backend)


@SETTINGS
@given(launches(backend="unprinted"))
def test_the_unprinted_backend_knob_prints_no_backend(generated: GeneratedLog) -> None:
    assert b"distributed_executor_backend" not in generated.text
    log = read_startup_log(io.BytesIO(generated.text))
    assert isinstance(log, StartupLog)
    config = log.launches[-1].engine_config
    assert config is not None
    assert config.distributed_executor_backend is None


def _printed(pattern: bytes, text: bytes) -> bytes | None:
    found = re.search(pattern, text)
    return None if found is None else found[1]


def _vllm_resolves(text: bytes) -> str | None:
    """The backend vLLM picks when none is given, for the world the engine-init line
    prints (``vllm-upstream.md`` §5): ``mp`` for more than one worker across the DP
    engines, ``uni`` for one; 0.6.6 ran one worker with no backend name."""
    tp = int(_printed(rb"tensor_parallel_size=([0-9]+),", text) or b"0")
    pp = int(_printed(rb"pipeline_parallel_size=([0-9]+),", text) or b"0")
    dp = int(_printed(rb"data_parallel_size=([0-9]+),", text) or b"1")
    if b"version 0.6.6.post1" in text:
        return "mp" if tp * pp > 1 else None
    return "mp" if tp * pp * dp > 1 else "uni"


def _backend_kind(generated: GeneratedLog) -> str:
    """``resolved`` (the backend vLLM resolves, or none where it resolves none), ``ray``,
    or ``unprinted`` (none printed where vLLM resolves one); never another."""
    printed = _printed(rb"distributed_executor_backend=([a-z_]+),", generated.text)
    shown = None if printed is None else printed.decode()
    resolved = _vllm_resolves(generated.text)
    if shown == resolved:
        return "resolved"
    assert shown in ("ray", None), (shown, resolved)
    return "ray" if shown == "ray" else "unprinted"


def test_the_default_backend_is_drawn_as_vllm_resolves_it() -> None:
    """Left open, the backend is the one vLLM resolves for the printed world in most
    draws, with a share of ``ray`` and of none printed; never another."""
    kinds: list[str] = []

    @settings(max_examples=150, database=None, deadline=None, phases=[Phase.generate])
    @given(launches())
    def draw(generated: GeneratedLog) -> None:
        kinds.append(_backend_kind(generated))

    draw()
    assert kinds.count("resolved") > len(kinds) // 2, kinds
    # the two other shares are drawn too (hypothesis favours the first, resolved, choice)
    ray = find(launches(), lambda g: _backend_kind(g) == "ray")
    assert _backend_kind(ray) == "ray"
    unprinted = find(launches(), lambda g: _backend_kind(g) == "unprinted")
    assert _backend_kind(unprinted) == "unprinted"


# --- capacity: never 0 tokens unless asked ------------------------------------------

_CAPACITY_FIGURES = re.compile(rb"KV cache size: ([0-9,]+) tokens|# GPU blocks: ([0-9]+),")


def _capacity_figures(text: bytes) -> list[int]:
    """Every KV-cache token (or V0 block) count the log's capacity lines print."""
    return [int((m[1] or m[2]).replace(b",", b"")) for m in _CAPACITY_FIGURES.finditer(text)]


@SETTINGS
@given(servers())
def test_no_default_server_prints_a_zero_capacity(server: GeneratedServer) -> None:
    figures = _capacity_figures(server.log.text)
    assert figures  # every launch prints a capacity line
    assert 0 not in figures
    capacity = server.assess().capacity
    if isinstance(capacity, CapacityEstablished):
        assert all(engine.tokens.value > 0 for engine in capacity.engines), capacity


@SETTINGS
@given(servers(zero_capacity=True))
def test_zero_capacity_prints_zero_in_every_capacity_line(server: GeneratedServer) -> None:
    figures = _capacity_figures(server.log.text)
    assert figures
    assert set(figures) == {0}


@SETTINGS
@given(servers(release="0.32.0", zero_capacity=True))
def test_a_zero_capacity_server_is_established_at_zero_tokens(server: GeneratedServer) -> None:
    """The hard case a capacity floor must refuse: a group-aware 0 is still a figure."""
    capacity = server.assess().capacity
    assert isinstance(capacity, CapacityEstablished), capacity
    assert [engine.tokens.value for engine in capacity.engines] == [0] * len(capacity.engines)


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
        {"backend": None, "zero_capacity": 0},  # a bool, not a number
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
        {"backend": "unprinted", "tensor_parallel_size": 2},
        {"zero_capacity": True},
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


def _probed(server: GeneratedServer) -> CaptureBatch:
    """A default probe (development routes included) of the stub serving the drawn
    server's front door."""
    with (
        tempfile.TemporaryDirectory(prefix="generated-") as tmp,
        serve_capture(server.front_door.write(tmp)) as door,
    ):
        return probe_sync(door.url, timeout=5.0, deadline=10.0)


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(servers() | mixed_builds())
def test_a_drawn_server_assesses_the_same_served_on_a_socket(server: GeneratedServer) -> None:
    """The in-process batch reads every route a default probe of the served front door
    reads, with the same answers, and the assessment is the same decision by decision."""
    probed = _probed(server)
    made = server.batch
    assert probed.origin is CaptureOrigin.PROBED
    assert made.origin is CaptureOrigin.GENERATED
    routes = [(e.route, e.role) for e in made.all_exchanges()]
    assert routes == [(e.route, e.role) for e in probed.all_exchanges()]
    # the development routes are read (the probe's default), answered or not
    assert {Route.SERVER_INFO, Route.SERVER_INFO_JSON, Route.GET_WORLD_SIZE} <= {
        r for r, _ in routes
    }
    for ours, theirs in zip(made.all_exchanges(), probed.all_exchanges(), strict=True):
        assert (ours.status, ours.body, ours.body_sha256, ours.transport) == (
            theirs.status,
            theirs.body,
            theirs.body_sha256,
            theirs.transport,
        )
        assert ours.header("content-type") == theirs.header("content-type")
    served = assess(
        readback_from_batch(probed), server.startup_log(), receipt=server.launch_receipt()
    )
    ours_assessment = server.assess()
    assert ours_assessment.subject is served.subject
    for claim in CLAIMS:
        mine, theirs_decision = getattr(ours_assessment, claim), getattr(served, claim)
        assert type(mine) is type(theirs_decision), (claim, mine, theirs_decision)
        assert mine == theirs_decision, (claim, mine, theirs_decision)
        assert mine.detail == theirs_decision.detail, claim


@settings(
    max_examples=10,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(servers() | mixed_builds())
def test_without_the_development_routes_too_the_socket_and_the_kit_agree(
    server: GeneratedServer,
) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="generated-") as tmp,
        serve_capture(server.front_door.write(tmp)) as door,
    ):
        probed = probe_sync(door.url, development_routes=False, timeout=5.0, deadline=10.0)
    made = server.readback(development_routes=False).batch
    assert [e.route for e in made.all_exchanges()] == [e.route for e in probed.all_exchanges()]
    assert Route.SERVER_INFO not in {e.route for e in made.all_exchanges()}
    served = assess(
        readback_from_batch(probed), server.startup_log(), receipt=server.launch_receipt()
    )
    ours = server.assess(development_routes=False)
    for claim in CLAIMS:
        assert getattr(ours, claim) == getattr(served, claim), claim


@SETTINGS
@given(servers(release="0.32.0"))
def test_a_server_serves_the_development_routes_its_launch_registered(
    server: GeneratedServer,
) -> None:
    """A launch whose route table lists ``/server_info`` answers it (both forms) and
    ``/get_world_size`` with its own figures; any other launch answers them 404."""
    registered = b"Route: /server_info, Methods: GET" in server.log.text
    answers = {
        route: server.batch.exchange(route)
        for route in (Route.SERVER_INFO, Route.SERVER_INFO_JSON, Route.GET_WORLD_SIZE)
    }
    for route, exchange in answers.items():
        assert exchange is not None, route
        assert exchange.status == (200 if registered else 404), (route, exchange.status)
    assessment = server.assess()
    assert assessment.log_join.reason is LogJoinReason.ESTABLISHED
    if registered:
        world = answers[Route.GET_WORLD_SIZE]
        assert world is not None
        launch = server.startup_log().launches[-1]
        config = launch.engine_config
        assert config is not None
        dp = config.data_parallel_size or 1
        tp, pp = config.tensor_parallel_size or 0, config.pipeline_parallel_size or 0
        assert world.body == f'{{"world_size": {tp * pp * dp}}}'.encode()


def test_servers_draw_development_mode_launches_and_others() -> None:
    serving = find(
        servers(release="0.32.0"),
        lambda s: b"Route: /server_info, Methods: GET" in s.log.text,
    )
    exchange = serving.batch.exchange(Route.SERVER_INFO_JSON)
    assert exchange is not None
    assert exchange.status == 200
    plain = find(servers(release="0.32.0"), lambda s: b"Route: /server_info" not in s.log.text)
    exchange = plain.batch.exchange(Route.SERVER_INFO_JSON)
    assert exchange is not None
    assert exchange.status == 404


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


# --- the acceptance: properties that can fail -----------------------------------------

#: The claims a three-claim admission policy requires.
THREE_CLAIMS: tuple[Claim, ...] = ("parallel", "capacity", "health_coverage")


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


def _log_only_policy(server: GeneratedServer) -> bool:
    """The naive three-claim policy: the log's claims for its own launch, read as if the
    log were the serving process's (it never looks at ``log_join``)."""
    launch_only = assess(None, server.startup_log())
    return all(
        claim_established(launch_only, claim, subject=Subject.LAUNCH) for claim in THREE_CLAIMS
    )


def _three_claim_policy(server: GeneratedServer) -> bool:
    """The careful one: each claim established about the serving process (log evidence
    reaches one only through the log join)."""
    assessment = server.assess()
    return all(claim_established(assessment, claim) for claim in THREE_CLAIMS)


#: The share of default ``servers()`` draws the three-claim policy must admit: well below
#: the measured 40 to 45 % (``python benchmarks/bench_strategies.py --share 3000``), and
#: below the lowest 300-draw run seen (37 %), so that the test does not flake.
ADMISSIBLE_FLOOR = 0.20


def test_default_servers_are_three_claim_admissible_often_enough() -> None:
    """With no knob, a good share of drawn servers gives a three-claim policy something
    to admit (before, none did: 0 of 300), so that "never admits a mixed build" means
    something for it."""
    admitted: list[bool] = []
    reasons: list[tuple[str, ...]] = []

    @settings(
        max_examples=300,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(servers())
    def draw(server: GeneratedServer) -> None:
        admitted.append(_three_claim_policy(server))
        assessment = server.assess()
        reasons.append(tuple(getattr(assessment, c).reason.value for c in THREE_CLAIMS))

    draw()
    assert len(admitted) == 300
    share = sum(admitted) / len(admitted)
    assert share >= ADMISSIBLE_FLOOR, (share, sorted(set(reasons)))


@pytest.mark.parametrize(
    "knobs",
    [
        {"release": "0.20.0"},  # capacity line not group-aware before 0.27
        {"data_parallel_size": 2},  # no rank lines with DP > 1
        {"release": "0.32.0", "tensor_parallel_size": 2, "missing_ranks": [1]},
        {"release": "0.32.0", "backend": "ray"},  # no health law for the legacy Ray executor
    ],
)
def test_a_hard_knob_gives_a_server_no_three_claim_policy_admits(
    knobs: dict[str, object],
) -> None:
    @settings(max_examples=15, database=None, deadline=None)
    @given(servers(**knobs))  # type: ignore[arg-type]
    def never_admitted(server: GeneratedServer) -> None:
        assert not _three_claim_policy(server)

    never_admitted()


@SETTINGS
@given(servers(release="0.32.0", backend="unprinted"))
def test_an_unprinted_backend_is_observed_only_where_the_front_door_names_it(
    server: GeneratedServer,
) -> None:
    health = server.assess().health_coverage
    json_answer = server.batch.exchange(Route.SERVER_INFO_JSON)
    assert json_answer is not None
    if json_answer.status == 404:
        assert health.reason is HealthReason.BACKEND_UNOBSERVED
    else:  # a development-mode server's /server_info JSON names the resolved backend
        assert isinstance(health, HealthCoverageEstablished), health
        assert "/server_info" in str(health.backend_source)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(servers())
def test_on_a_consistent_server_the_log_only_policy_admits_what_the_careful_one_does(
    server: GeneratedServer,
) -> None:
    """The two differ only where the log is another launch's, or where the front door
    itself names what the log did not print (the backend, in its /server_info JSON)."""
    log_only, careful = _log_only_policy(server), _three_claim_policy(server)
    if log_only:
        assert careful
    elif careful:
        health = server.assess().health_coverage
        assert isinstance(health, HealthCoverageEstablished), health
        assert str(health.backend_source) == "GET /server_info?config_format=json"
        assert b"distributed_executor_backend" not in server.log.text


def _caught(policy: Callable[[GeneratedServer], bool]) -> list[GeneratedServer]:
    """Run "never admits a mixed build" against ``policy`` within hypothesis's default
    example budget (no shrinking, so the count is the examples it took); return the
    servers tried, the last one the one it admitted."""
    tried: list[GeneratedServer] = []

    @settings(database=None, deadline=None, phases=[Phase.generate])
    @given(mixed_builds())
    def never_admits_a_mixed_build(server: GeneratedServer) -> None:
        tried.append(server)
        assert not policy(server)

    with pytest.raises(AssertionError):
        never_admits_a_mixed_build()
    assert len(tried) <= settings.get_profile("default").max_examples
    assert policy(tried[-1])
    assert tried[-1].mixed
    return tried


def test_a_policy_that_forgets_the_log_join_is_caught_by_mixed_builds() -> None:
    _caught(_forgetful_policy)


def test_a_log_only_three_claim_policy_is_caught_by_mixed_builds() -> None:
    caught = _caught(_log_only_policy)[-1]
    assessment = caught.assess()
    assert isinstance(assessment.log_join, LogJoinRefused), assessment.log_join
    assert not _three_claim_policy(caught)


@pytest.mark.parametrize("policy", [_careful_policy, _three_claim_policy])
def test_a_policy_with_the_log_join_passes_the_same_test(
    policy: Callable[[GeneratedServer], bool],
) -> None:
    @settings(database=None, deadline=None, max_examples=50)
    @given(mixed_builds())
    def never_admits_a_mixed_build(server: GeneratedServer) -> None:
        assert not policy(server)

    never_admits_a_mixed_build()
