"""Health coverage: what a 200 covers, by release and executor backend."""

from __future__ import annotations

from tests._evidence import (
    API,
    backend_bundle,
    banner,
    bundle,
    dev_routes_404,
    engine_init,
    log,
    probe_stub,
    server_info_json,
    version_body,
)
from vllm_evidence.adapters.startup_log import StartupLog
from vllm_evidence.assessment import assess
from vllm_evidence.decisions import (
    HealthCoverageEstablished,
    HealthCoverageRefused,
    HealthReason,
)
from vllm_evidence.readback import CapturedReadback, HistoricalBundle
from vllm_evidence.upstream import ExecutorBackend, HealthCoverage


def _established(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> HealthCoverageEstablished:
    decision = assess(front_door, startup_log).health_coverage
    assert isinstance(decision, HealthCoverageEstablished), decision
    return decision


def _refused(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> HealthCoverageRefused:
    decision = assess(front_door, startup_log).health_coverage
    assert isinstance(decision, HealthCoverageRefused), decision
    return decision


def test_mp_on_0_32_reaches_worker_death() -> None:
    decision = _established(backend_bundle("0.32.0", "mp"))
    assert decision.backend is ExecutorBackend.MP
    assert decision.coverage is HealthCoverage.WORKER_DEATH_REACHES
    assert decision.backend_source.where == "GET /server_info?config_format=json"


def test_the_real_capture_is_mp_from_its_json_and_from_its_log() -> None:
    live = _established(probe_stub())
    assert live.coverage is HealthCoverage.WORKER_DEATH_REACHES
    assert live.health_status == 200
    from tests._evidence import real_log

    from_log = _established(None, real_log())
    assert from_log.backend is ExecutorBackend.MP
    assert from_log.backend_source.where.startswith("log launch 0, line")


def test_legacy_ray_on_0_11_does_not_watch_workers() -> None:
    decision = _established(backend_bundle("0.11.0", "ray"))
    assert decision.coverage is HealthCoverage.WORKERS_NOT_WATCHED
    from_log = _established(None, log(engine_init("0.11.0", tp=1, backend="ray")))
    assert from_log.coverage is HealthCoverage.WORKERS_NOT_WATCHED


def test_ray_between_read_releases_has_no_law() -> None:
    refused = _refused(backend_bundle("0.32.0", "ray"))
    assert refused.reason is HealthReason.LAW_NOT_ESTABLISHED
    assert refused.backend == "ray"
    assert _established(backend_bundle("0.33.0", "ray")).coverage is (
        HealthCoverage.WORKER_DEATH_REACHES
    )


def test_an_unobserved_backend_is_refused_before_a_missing_law() -> None:
    # 0.9.1 has no mp law; without a backend the earlier arm names the backend
    assert _refused(bundle(version_body("0.9.1"))).reason is HealthReason.BACKEND_UNOBSERVED
    assert _refused(backend_bundle("0.9.1", "mp")).reason is HealthReason.LAW_NOT_ESTABLISHED
    # with development mode off, the real capture shows no backend over HTTP
    assert _refused(probe_stub(faults=dev_routes_404())).reason is HealthReason.BACKEND_UNOBSERVED


def test_json_and_log_naming_different_backends_conflict() -> None:
    ray_log = log(engine_init("0.32.0", tp=1, backend="ray"))
    refused = _refused(backend_bundle("0.32.0", "mp"), ray_log)
    assert refused.reason is HealthReason.BACKEND_CONFLICT
    assert "'mp'" in refused.detail
    assert "'ray'" in refused.detail
    mp_log = log(engine_init("0.32.0", tp=1, backend="mp"))
    assert _established(backend_bundle("0.32.0", "mp"), mp_log).backend is ExecutorBackend.MP


def test_a_custom_executor_in_server_info_is_unknown() -> None:
    refused = _refused(backend_bundle("0.32.0", "my_pkg.executor.CustomExecutor"))
    assert refused.reason is HealthReason.BACKEND_UNKNOWN
    assert refused.backend == "my_pkg.executor.CustomExecutor"


def test_a_custom_executor_printed_by_the_log_is_unknown_not_unobserved() -> None:
    """The launch printed its backend: it was observed, only not one vLLM names."""
    text = (
        f"{API}vLLM API server version 0.6.6.post1\n"
        "INFO 12-27 10:00:00 llm_engine.py:234] Initializing an LLM engine (v0.6.6.post1) "
        "with config: model='/models/m', tensor_parallel_size=1, pipeline_parallel_size=1, "
        "distributed_executor_backend=my_pkg.CustomExecutor\n"
    )
    refused = _refused(None, log(text))
    assert refused.reason is HealthReason.BACKEND_UNKNOWN
    assert refused.backend == "my_pkg.CustomExecutor"


def test_external_launcher_has_no_law() -> None:
    refused = _refused(backend_bundle("0.32.0", "external_launcher"))
    assert refused.reason is HealthReason.LAW_NOT_ESTABLISHED
    assert refused.backend == "external_launcher"


def test_uni_on_0_32_covers_the_engine_process() -> None:
    assert _established(backend_bundle("0.32.0", "uni")).coverage is HealthCoverage.ENGINE_PROCESS


def test_health_coverage_is_version_gated() -> None:
    no_version = bundle(server_info_json(backend="mp"))
    assert _refused(no_version).reason is HealthReason.VERSION_UNOBSERVED
    assert _refused(backend_bundle("99.0", "mp")).reason is HealthReason.VERSION_NOT_ESTABLISHED
    assert _established(backend_bundle("0.8.5", "mp")).coverage is HealthCoverage.API_SERVER_ONLY
    assert _established(backend_bundle("0.10.2", "mp")).coverage is (
        HealthCoverage.WORKER_DEATH_REACHES
    )
    # a log's backend is scoped by the log's own version
    assert _refused(None, log(engine_init("99.0", tp=1, backend="mp"))).reason is (
        HealthReason.VERSION_NOT_ESTABLISHED
    )
    scoped = _established(None, log(banner("0.32.0") + engine_init(tp=1, backend="mp")))
    assert scoped.coverage is HealthCoverage.WORKER_DEATH_REACHES
