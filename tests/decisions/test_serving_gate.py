"""The serving gate and the log-join wrapper every serving decision goes through.

Capacity, parallel, served identity and health coverage share one order:

1. the gate: a front door that was not reached, answered only errors, or restarted
   during the batch refuses, whatever a log says;
2. without a log to keep out (none, a launch claim, or the log joined), the decision
   reads everything;
3. otherwise the decision is made without the log: an established answer stands; a
   refusal stands when the log would not change it (same arm, same reason); and when the
   log would change it, the decision refuses ``log_not_joined``, naming the log join's
   refusal and the front door's own answer.

Health coverage then refuses ``health_not_ok`` for an established coverage when
``/health`` did not answer 200, on every path (there is no 200 to cover).  Every
expected word below is written by hand.
"""

from __future__ import annotations

from typing import Any

from tests._evidence import (
    HEALTHY,
    assess_joined,
    banner,
    bundle,
    cache_config_metrics,
    engine_init,
    log,
    models_body,
    probe_stub,
    real_log,
    server_info_json,
    version_body,
)
from tests.decisions._wording import RESTARTED, RESTARTED_REMEDY, says
from vllm_evidence import assess
from vllm_evidence._assessment import Assessment
from vllm_evidence._readback import CapturedReadback
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReason,
    CapacityRefused,
    HealthCoverageEstablished,
    HealthCoverageRefused,
    HealthReason,
    IdentityReason,
    ParallelReason,
    ParallelRefused,
    ServedIdentityEstablished,
    ServedIdentityRefused,
    Subject,
)
from vllm_evidence.testing._stub import Fault
from vllm_evidence.upstream import Route

#: The log join's refusal for bodies a caller supplied (no bracketed batch).
UNJOINED = (
    "the startup log is not joined to this front door (marker_unobserved: bodies supplied "
    "by a caller were not read in one bracketed batch); the front door alone: "
)
UNJOINED_REMEDY = (
    "probe the server itself (one bracketed batch) while /metrics answers with "
    "process_start_time_seconds (one API-server process)"
)
NO_CAPACITY = "no capacity line in the log and no kv_cache_size_tokens label"
NO_CONFIGURATION = "no /server_info answer and no engine-init line"
NO_BACKEND = "the executor backend is unobserved (no /server_info JSON, no log marker)"
NO_MODELS = "/v1/models: not_requested"
MP_LAW = (
    "MultiprocExecutor's monitor turns a worker process death into engine death, which "
    "/health reads from a local flag; nothing contacts the workers on the /health path"
    # 0.24 on: what the law's window leaves open (the monitor's wait, up to 9 s).
    "; a 200 does not rule out a worker that died in the last 9 s (the monitor waits for "
    "the survivors before it fails the engine: the law's worker_death_delay)"
)
NOT_ANSWERING = (
    "no route answered with something this package reads (/version http_error, "
    "/v1/models not_requested, /metrics not_requested, /server_info not_requested, "
    "/server_info?config_format=json not_requested, /get_world_size not_requested, "
    "/health not_requested)"
)

VERSION = version_body("0.32.0")
#: A log with a banner and an engine-init line, but no capacity, rank, backend or
#: served-name line: it adds nothing the front door lacks.
BARE_LOG = banner("0.32.0") + engine_init(tp=1)


def _decisions(assessment: Assessment) -> list[Any]:
    """The four serving decisions (any arm: the gate tests read their common words)."""
    return [
        getattr(assessment, name)
        for name in ("capacity", "parallel", "served_identity", "health_coverage")
    ]


# --- the gate comes first, before any log -------------------------------------------------


def test_an_unreachable_front_door_refuses_every_serving_decision_with_or_without_a_log() -> None:
    faults = {route: Fault(reset=True) for route in Route if route.probe_readable}
    door = probe_stub(faults=faults)
    assert isinstance(door, CapturedReadback)
    for startup_log in (None, real_log()):
        for decision in _decisions(assess(door, startup_log)):
            assert decision.reason.value == "front_door_unreachable", decision
            assert decision.detail.startswith(f"no request to {door.batch.target} was answered (")
            assert decision.remedy == ("probe the address the server listens on, once it is up")
            assert decision.subject is Subject.SERVING


def test_a_front_door_answering_only_errors_refuses_every_serving_decision() -> None:
    door = bundle(statuses={Route.VERSION: 500})
    for startup_log in (None, real_log()):
        for decision in _decisions(assess(door, startup_log)):
            says(
                decision,
                type(decision.reason)("front_door_not_answering"),
                NOT_ANSWERING,
                "probe again once the server answers",
            )


def test_a_restarted_front_door_refuses_every_serving_decision_before_the_log() -> None:
    door = probe_stub(restart_after_metrics_reads=1)
    for startup_log in (None, real_log()):
        for decision in _decisions(assess(door, startup_log)):
            says(
                decision,
                type(decision.reason)("front_door_restarted"),
                RESTARTED,
                RESTARTED_REMEDY,
            )


def test_a_gate_refusal_carries_no_figures() -> None:
    door = bundle(statuses={Route.VERSION: 500})
    assessment = assess(door, real_log())
    capacity = assessment.capacity
    assert isinstance(capacity, CapacityRefused)
    assert (capacity.engines, capacity.laws) == ((), ())
    parallel = assessment.parallel
    assert isinstance(parallel, ParallelRefused)
    assert (parallel.configuration, parallel.world_size_product, parallel.law) == (None, None, None)
    health = assessment.health_coverage
    assert isinstance(health, HealthCoverageRefused)
    assert (health.backend, health.health_status, health.law) == (None, None, None)
    identity = assessment.served_identity
    assert isinstance(identity, ServedIdentityRefused)
    assert (identity.names, identity.configured_path, identity.source) == ((), None, None)


# --- capacity -------------------------------------------------------------------------------


def test_capacity_the_front_doors_established_figure_stands_beside_an_unjoined_log() -> None:
    label = cache_config_metrics('engine="0",kv_cache_size_tokens="4096"')
    decision = assess(bundle(VERSION, label), real_log()).capacity
    assert isinstance(decision, CapacityEstablished)
    assert decision.detail == "engine 0: 4,096 tokens (GET /metrics)"
    assert decision.corroborated_by == ()  # the unjoined log's figure is not read
    assert decision.subject is Subject.SERVING


def test_capacity_a_log_that_adds_nothing_leaves_the_front_doors_refusal() -> None:
    decision = assess(bundle(VERSION, HEALTHY), log(BARE_LOG)).capacity
    assert isinstance(decision, CapacityRefused)
    says(
        decision,
        CapacityReason.CAPACITY_UNOBSERVED,
        NO_CAPACITY,
        "give the launch's startup log, or probe /metrics of a ≥0.27 server",
    )


def test_capacity_a_log_that_would_add_a_figure_is_not_joined() -> None:
    decision = assess(bundle(VERSION), real_log()).capacity
    assert isinstance(decision, CapacityRefused)
    says(decision, CapacityReason.LOG_NOT_JOINED, UNJOINED + NO_CAPACITY, UNJOINED_REMEDY)
    assert (decision.engines, decision.laws) == ((), ())


# --- parallel -------------------------------------------------------------------------------


def test_parallel_a_log_that_adds_nothing_leaves_the_front_doors_refusal_and_product() -> None:
    world = {Route.GET_WORLD_SIZE: b'{"world_size":2}'}
    decision = assess(bundle(VERSION, world), log(banner("0.32.0"))).parallel
    assert isinstance(decision, ParallelRefused)
    says(
        decision,
        ParallelReason.CONFIGURATION_UNOBSERVED,
        "/get_world_size answered 2, a product that is TP, PP or DP alike",
        "give the launch's startup log (engine-init line), or probe /server_info with "
        "development mode on",
    )
    assert decision.world_size_product == 2


def test_parallel_a_log_that_would_add_is_not_joined_and_keeps_the_front_doors_product() -> None:
    world = {Route.GET_WORLD_SIZE: b'{"world_size":1}'}
    decision = assess(bundle(VERSION, world), real_log()).parallel
    assert isinstance(decision, ParallelRefused)
    says(
        decision,
        ParallelReason.LOG_NOT_JOINED,
        UNJOINED + "/get_world_size answered 1, a product that is TP, PP or DP alike",
        UNJOINED_REMEDY,
    )
    assert decision.world_size_product == 1
    assert (decision.configuration, decision.expected_ranks, decision.law) == (None, None, None)


def test_parallel_without_a_product_the_unjoined_refusal_carries_none() -> None:
    decision = assess(bundle(VERSION), real_log()).parallel
    assert isinstance(decision, ParallelRefused)
    says(decision, ParallelReason.LOG_NOT_JOINED, UNJOINED + NO_CONFIGURATION, UNJOINED_REMEDY)
    assert decision.world_size_product is None


# --- served identity ------------------------------------------------------------------------


def test_identity_the_front_doors_established_names_stand_beside_an_unjoined_log() -> None:
    decision = assess(bundle(VERSION, models_body(("m", "/models/m"))), real_log())
    identity = decision.served_identity
    assert isinstance(identity, ServedIdentityEstablished)
    assert identity.detail == (
        "served id(s) 'm' derive from the configured path '/models/m'; that is configuration "
        "intent, not proof of the weights' bytes"
    )
    assert identity.subject is Subject.SERVING


def test_identity_a_log_that_adds_nothing_leaves_the_front_doors_refusal() -> None:
    decision = assess(bundle(VERSION, HEALTHY), log(BARE_LOG)).served_identity
    assert isinstance(decision, ServedIdentityRefused)
    says(
        decision,
        IdentityReason.MODELS_UNOBSERVED,
        NO_MODELS,
        "probe /v1/models, or give the launch's startup log",
    )


def test_identity_a_log_that_would_add_names_is_not_joined() -> None:
    decision = assess(bundle(VERSION), real_log()).served_identity
    assert isinstance(decision, ServedIdentityRefused)
    says(decision, IdentityReason.LOG_NOT_JOINED, UNJOINED + NO_MODELS, UNJOINED_REMEDY)
    assert (decision.names, decision.configured_path, decision.source) == ((), None, None)


# --- health coverage, and the 200 it needs ---------------------------------------------------


def test_health_a_log_that_adds_nothing_leaves_the_front_doors_refusal_and_status() -> None:
    decision = assess(bundle(VERSION, HEALTHY), log(BARE_LOG)).health_coverage
    assert isinstance(decision, HealthCoverageRefused)
    says(
        decision,
        HealthReason.BACKEND_UNOBSERVED,
        NO_BACKEND,
        "give the launch's startup log, or probe /server_info?config_format=json "
        "(development mode)",
    )
    assert decision.health_status == 200


def test_health_a_log_that_would_add_a_backend_is_not_joined_and_keeps_the_status() -> None:
    for statuses, status in (({}, 200), ({Route.HEALTH: 500}, 500)):
        door = bundle(VERSION, HEALTHY, statuses=statuses)
        decision = assess(door, real_log()).health_coverage
        assert isinstance(decision, HealthCoverageRefused)
        says(decision, HealthReason.LOG_NOT_JOINED, UNJOINED + NO_BACKEND, UNJOINED_REMEDY)
        assert decision.health_status == status
        assert (decision.backend, decision.backend_source, decision.law) == (None, None, None)


def test_health_the_front_doors_established_coverage_stands_beside_an_unjoined_log() -> None:
    door = bundle(VERSION, server_info_json(backend="mp"), HEALTHY)
    decision = assess(door, real_log()).health_coverage
    assert isinstance(decision, HealthCoverageEstablished)
    assert decision.detail == f"executor 'mp' (GET /server_info?config_format=json): {MP_LAW}"
    assert decision.health_status == 200


def test_health_the_front_doors_established_coverage_needs_a_200_beside_an_unjoined_log() -> None:
    # The front door alone establishes a coverage; without a 200 it covers nothing, and
    # that is the answer, not log_not_joined.
    door = bundle(VERSION, server_info_json(backend="mp"), statuses={Route.HEALTH: 500})
    decision = assess(door, real_log()).health_coverage
    assert isinstance(decision, HealthCoverageRefused)
    says(
        decision,
        HealthReason.HEALTH_NOT_OK,
        "/health did not answer 200 (status 500): executor 'mp' "
        f"(GET /server_info?config_format=json): {MP_LAW}, but there is no 200 to cover",
        "probe again once /health answers 200",
    )
    assert (decision.backend, decision.health_status) == ("mp", 500)


def test_health_without_a_log_an_established_coverage_needs_a_200() -> None:
    door = bundle(VERSION, server_info_json(backend="mp"), statuses={Route.HEALTH: 500})
    decision = assess(door).health_coverage
    assert isinstance(decision, HealthCoverageRefused)
    assert decision.reason is HealthReason.HEALTH_NOT_OK
    healthy = assess(bundle(VERSION, server_info_json(backend="mp"), HEALTHY)).health_coverage
    assert isinstance(healthy, HealthCoverageEstablished)


def test_health_a_joined_log_establishes_coverage_only_with_a_200() -> None:
    refused = assess_joined(bundle(VERSION, statuses={Route.HEALTH: 500}), real_log())
    decision = refused.health_coverage
    assert isinstance(decision, HealthCoverageRefused)
    assert decision.reason is HealthReason.HEALTH_NOT_OK
    assert decision.health_status == 500
    assert decision.backend_source is not None
    assert decision.backend_source.kind.value == "startup_log"
    joined = assess_joined(bundle(VERSION, HEALTHY), real_log()).health_coverage
    assert isinstance(joined, HealthCoverageEstablished)
    assert joined.health_status == 200
