"""What a person reads in the law table's ``repr``: each law's question, span and fields.

Written by hand: a law names its question's key, the span it was read for, then each of
its own fields (never the statement or citation); a missing law names its question and
version; a span of one release names it once.
"""

from __future__ import annotations

from tests._evidence import release_laws
from vllm_evidence.upstream import (
    CapacityLaw,
    CapacitySource,
    ExecutorBackend,
    HealthLaw,
    LawNotEstablished,
    ModelCardLaw,
    ParallelEvidenceLaw,
    Route,
)
from vllm_evidence.upstream._releases import span


def test_a_law_names_its_question_span_and_own_fields() -> None:
    laws = release_laws("0.32.0")
    health = laws.health(ExecutorBackend.MP)
    assert isinstance(health, HealthLaw)
    # The span's own text is pinned below, on spans built from their ends: a law's
    # span moves when a release is read again, its repr's shape does not.
    assert repr(health) == (
        f"HealthLaw('health.mp' read for {health.span}, backend=ExecutorBackend.MP, "
        "coverage=HealthCoverage.WORKER_DEATH_REACHES, worker_death_delay_s=9)"
    )
    assert repr(health.question) == "Question('health.mp')"
    capacity = laws.capacity(CapacitySource.LOG_CAPACITY_LINE)
    assert isinstance(capacity, CapacityLaw)
    assert repr(capacity) == (
        f"CapacityLaw('capacity.log_capacity_line' read for {capacity.span}, "
        "source=CapacitySource.LOG_CAPACITY_LINE, authority=CapacityAuthority.AUTHORITATIVE)"
    )
    parallel = laws.parallel_evidence(Route.SERVER_INFO_JSON)
    assert isinstance(parallel, ParallelEvidenceLaw)
    assert repr(parallel) == (
        "ParallelEvidenceLaw('parallel_evidence./server_info?config_format=json' read for "
        f"{parallel.span}, route=Route.SERVER_INFO_JSON, "
        "kind=ParallelEvidenceKind.RESOLVED_CONFIGURATION, reports_data_parallel_size=True)"
    )


def test_a_law_without_fields_of_its_own_names_its_question_and_span_only() -> None:
    law = release_laws("0.32.0").model_card()
    assert isinstance(law, ModelCardLaw)
    assert repr(law) == f"ModelCardLaw('identity.model_card' read for {law.span})"


def test_a_span_of_one_release_names_it_once() -> None:
    assert repr(span("0.32.0", "0.32.0")) == "ReleaseSpan(0.32.0)"
    assert repr(span("0.9.2", "0.33.0")) == "ReleaseSpan(0.9.2 .. 0.33.0)"
    assert str(span("0.9.2", "0.33.0")) == "0.9.2 .. 0.33.0"
    assert str(span("0.32.0", "0.32.0")) == "0.32.0"


def test_a_missing_law_names_its_question_and_version() -> None:
    missing = release_laws("0.8.5").health(ExecutorBackend.EXTERNAL_LAUNCHER)
    assert isinstance(missing, LawNotEstablished)
    assert repr(missing) == "LawNotEstablished('health.external_launcher' for 0.8.5)"


def test_release_laws_name_their_version_and_how_many_answers() -> None:
    laws = release_laws("0.32.0")
    assert repr(laws) == f"ReleaseLaws(0.32.0, {len(laws.answers)} answers)"
    assert len(laws.answers) > 1  # the count is the table's, "answers" plural


def test_every_other_law_type_names_its_question_span_and_own_fields() -> None:
    """The law types the test above does not show, one each (hand-written)."""
    from packaging.version import Version

    from vllm_evidence._adapters.startup_log import ExecutorMarker
    from vllm_evidence.upstream import executor_marker_law

    laws = release_laws("0.8.5")
    route = laws.route(Route.VERSION)
    assert not isinstance(route, LawNotEstablished)
    assert repr(route) == (
        f"RouteLaw('route./version' read for {route.span}, route=Route.VERSION, "
        "gate=RouteGate.ALWAYS, api_key_guarded=False)"
    )
    marker = laws.incarnation_marker()
    assert not isinstance(marker, LawNotEstablished)
    assert repr(marker) == (
        f"IncarnationMarkerLaw('incarnation.process_start_time_seconds' read for "
        f"{marker.span}, marker=IncarnationMarker.PRESENT_UNLESS_MULTIPROCESS_REGISTRY)"
    )
    log_format = laws.capacity_log_format()
    assert not isinstance(log_format, LawNotEstablished)
    assert repr(log_format) == (
        f"CapacityLogFormatLaw('capacity.log_format' read for {log_format.span}, "
        "format=CapacityFormat.V1_TWO_LINE)"
    )
    labels = laws.cache_config_labels()
    assert repr(labels) == (
        "CacheConfigLabelsLaw('metrics.cache_config_info.labels' read for 0.8.5, labels="
        "{'block_size', 'cache_dtype', 'calculate_kv_scales', …(14 items)}, "
        "cpu_platform_labels={'cpu_kvcache_space_bytes'})"
    )
    failure = release_laws("0.32.0").health_failure()
    assert not isinstance(failure, LawNotEstablished)
    assert repr(failure) == (
        f"HealthFailureLaw('health.failure_status' read for {failure.span}, failure_status=503)"
    )
    executor = executor_marker_law(ExecutorMarker.MP_LEADER_LINE, Version("0.32.0"))
    assert executor is not None
    assert not isinstance(executor, LawNotEstablished)
    assert repr(executor) == (
        f"ExecutorMarkerLaw('executor.mp_leader_line' read for {executor.span}, "
        "marker=ExecutorMarker.MP_LEADER_LINE, backends={ExecutorBackend.MP}, files=())"
    )
