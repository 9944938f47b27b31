"""The product against real vLLM 0.32.0 output: the four live-tier scenarios.

Each capture is replayed through the stub front door and read by the product's own
probe (GET only), with the scenario's real startup log — and, where a claim about the
server needs the log, a launch receipt naming the start time the replayed ``/metrics``
serves, the replay listening on the port the log names (the log is then joined as it is
to a live server) — so the decisions below are made on bytes a real server produced:
freshly recorded in the live tier, committed ones in the ordinary suite.  Assertions
hold for any faithful recording: no pids, ports or timings of one run are written here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._evidence import assess_witnessed, front_door_join
from vllm_evidence import assess, probe_sync, read_startup_log, readback_from_batch
from vllm_evidence._adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import Assessment
from vllm_evidence._readback import CapturedReadback, historical_bundle
from vllm_evidence.decisions import (
    CapacityEstablished,
    IdentityReason,
    JoinedIncarnation,
    JoinReason,
    JoinUnestablished,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityRefused,
)
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.upstream import Route

KEY_PATTERN = re.compile(rb"live-tier-key-[0-9A-Za-z_-]+")


def _log(directory: Path) -> StartupLog:
    log = read_startup_log(directory / "startup.log")
    assert isinstance(log, StartupLog), log
    return log


def _probe(directory: Path, *, api_key: str | None = None) -> CapturedReadback:
    with serve_capture(directory, api_key=api_key) as door:
        return readback_from_batch(probe_sync(door.url, api_key=api_key))


def _capacity_tokens(assessment: Assessment) -> int:
    decision = assessment.capacity
    assert isinstance(decision, CapacityEstablished), decision
    return sum(e.tokens.value for e in decision.engines)


# --- 1. TP=1, development mode, an alias -------------------------------------------------


def test_tp1_alias_parallel_established_from_the_log(live_root: Path) -> None:
    directory = live_root / "tp1-devmode-alias"
    unjoined = assess(_probe(directory), _log(directory))
    assert isinstance(unjoined.parallel, ParallelRefused)
    assert unjoined.parallel.reason is ParallelReason.LOG_NOT_JOINED
    with_log = assess_witnessed(directory, _log(directory))
    assert isinstance(with_log.parallel, ParallelEstablished), with_log.parallel
    assert with_log.parallel.configuration.tensor_parallel_size == 1
    assert [r.rank for r in with_log.parallel.ranks] == [0]
    assert isinstance(with_log.front_door_join, JoinedIncarnation)


def test_tp1_alias_http_alone_stops_at_stage_two(live_root: Path) -> None:
    alone = assess(_probe(live_root / "tp1-devmode-alias"))
    assert isinstance(alone.parallel, ParallelRefused)
    assert alone.parallel.reason is ParallelReason.POPULATION_UNOBSERVED
    assert alone.parallel.expected_ranks == (0,)


def test_tp1_alias_is_refused_as_artifact_identity(live_root: Path) -> None:
    assessment = assess(_probe(live_root / "tp1-devmode-alias"))
    identity = assessment.served_identity
    assert isinstance(identity, ServedIdentityRefused)
    assert identity.reason is IdentityReason.SERVED_ID_NOT_DERIVABLE
    assert [n.served_id for n in identity.names] == ["tiny-llama:q4-alias"]
    assert identity.configured_path == "/models/tiny-llama"


def test_tp1_capacity_label_equals_the_log_line(live_root: Path) -> None:
    directory = live_root / "tp1-devmode-alias"
    label_only = assess(_probe(directory))
    log_only = assess(None, _log(directory))
    both = assess_witnessed(directory, _log(directory))
    assert _capacity_tokens(label_only) == _capacity_tokens(log_only) == _capacity_tokens(both)
    assert isinstance(both.capacity, CapacityEstablished)
    assert both.capacity.corroborated_by, "the log line should corroborate the label"


# --- 2. TP=2, --api-key, no development mode -----------------------------------------------


REPLAY_KEY = "replay-key"  # the stub's key for replaying the with-key capture


def test_tp2_apikey_models_unauthorized_without_key_parsed_with_it(live_root: Path) -> None:
    directory = live_root / "tp2-apikey"
    without = _probe(directory)  # the real 401 recorded without the key
    assert type(without.models).__name__ == "Unauthorized"
    with_key = _probe(directory / "with-key", api_key=REPLAY_KEY)
    assert type(with_key.models).__name__ == "Parsed"
    with serve_capture(directory / "with-key", api_key=REPLAY_KEY) as door:
        refused = readback_from_batch(probe_sync(door.url))
    assert type(refused.models).__name__ == "Unauthorized"


def test_tp2_apikey_http_alone_stops_at_stage_one(live_root: Path) -> None:
    assessment = assess(_probe(live_root / "tp2-apikey"))
    assert isinstance(assessment.parallel, ParallelRefused)
    assert assessment.parallel.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert type(assessment.evidence.front_door.server_info).__name__ == "NotFound"  # type: ignore[union-attr]  # probed above


def test_tp2_apikey_with_its_log_establishes_tp2_with_both_ranks(live_root: Path) -> None:
    directory = live_root / "tp2-apikey"
    assessment = assess_witnessed(directory, _log(directory))
    decision = assessment.parallel
    assert isinstance(decision, ParallelEstablished), decision
    assert decision.configuration.tensor_parallel_size == 2
    assert [r.rank for r in decision.ranks] == [0, 1]
    pids = [r.pid for r in decision.ranks]
    assert all(isinstance(p, int) for p in pids)
    assert len(set(pids)) == 2


def test_tp2_apikey_key_appears_in_no_recorded_file(live_root: Path) -> None:
    for path in (live_root / "tp2-apikey").rglob("*"):
        if path.is_file():
            assert not KEY_PATTERN.search(path.read_bytes()), path


# --- 3. TP=2, development mode ---------------------------------------------------------------


def test_tp2_devmode_server_info_and_world_size(live_root: Path) -> None:
    readback = _probe(live_root / "tp2-devmode")
    assessment = assess(readback)
    decision = assessment.parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.configuration is not None
    assert decision.configuration.tensor_parallel_size == 2
    assert decision.world_size_product == 2
    assert decision.reason is ParallelReason.POPULATION_UNOBSERVED


def test_tp2_devmode_world_size_product_alone_does_not_pass_stage_one(live_root: Path) -> None:
    directory = live_root / "tp2-devmode"
    bundle = historical_bundle(
        {
            Route.VERSION: (directory / "version.body").read_bytes(),
            Route.GET_WORLD_SIZE: (directory / "get_world_size.body").read_bytes(),
        }
    )
    decision = assess(bundle).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert decision.world_size_product == 2


# --- 4. a restart between the two bracket reads ----------------------------------------------


def test_restart_mid_batch_join_is_refused_as_marker_changed(live_root: Path) -> None:
    """The product's probe reads the recorded sequence: the opening /metrics from the
    first process, every other route and the closing /metrics from the relaunched one."""
    directory = live_root / "restart-mid-batch"
    first = (directory / "first" / "metrics.body").read_bytes()
    second = (directory / "second" / "metrics.body").read_bytes()
    with serve_capture(directory / "second", metrics_sequence=[first, second]) as door:
        readback = readback_from_batch(probe_sync(door.url))
    assert isinstance(front_door_join(readback), JoinUnestablished), front_door_join(readback)
    assert front_door_join(readback).reason is JoinReason.MARKER_CHANGED
    assessment = assess(readback)
    assert assessment.front_door_join.reason.value == "marker_changed"
    # The same bytes through the metrics adapter directly agree with the bracket.
    opening, closing = parse_metrics(first), parse_metrics(second)
    assert isinstance(opening, MetricsObservation)
    assert isinstance(closing, MetricsObservation)
    assert opening.process_start_time is not None
    assert closing.process_start_time is not None
    assert opening.process_start_time.seconds != closing.process_start_time.seconds
    assert readback.bracket.markers() == (
        opening.process_start_time.seconds,
        closing.process_start_time.seconds,
    )


def test_the_relaunched_server_alone_joins(live_root: Path) -> None:
    readback = _probe(live_root / "restart-mid-batch" / "second")
    assert isinstance(assess(readback).front_door_join, JoinedIncarnation)


@pytest.mark.parametrize("half", ["first", "second"])
def test_each_restart_half_alone_is_one_incarnation(live_root: Path, half: str) -> None:
    body = (live_root / "restart-mid-batch" / half / "metrics.body").read_bytes()
    second = live_root / "restart-mid-batch" / "second"
    with serve_capture(second, metrics_sequence=[body, body]) as door:
        readback = readback_from_batch(probe_sync(door.url))
    assert isinstance(front_door_join(readback), JoinedIncarnation)
