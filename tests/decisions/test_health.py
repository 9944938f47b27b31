"""Health coverage: what a 200 covers, by release and executor backend."""

from __future__ import annotations

from tests._evidence import (
    API,
    HEALTHY,
    assess_joined,
    backend_bundle,
    banner,
    bundle,
    dev_routes_404,
    engine_init,
    log,
    probe_stub,
    rank_line,
    real_log,
    server_info_json,
    version_body,
)
from tests._paths import REAL
from tests.decisions._wording import OUTSIDE_99, RESTARTED, RESTARTED_REMEDY
from tests.decisions._wording import says as _says
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import assess
from vllm_evidence._readback import CapturedReadback, HistoricalBundle
from vllm_evidence.decisions import (
    HealthCoverageEstablished,
    HealthCoverageRefused,
    HealthReason,
    LogJoinReason,
    Subject,
)
from vllm_evidence.upstream import (
    ExecutorBackend,
    HealthCoverage,
    HealthLaw,
    LawNotEstablished,
)


def _established(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> HealthCoverageEstablished:
    decision = assess_joined(front_door, startup_log).health_coverage
    assert isinstance(decision, HealthCoverageEstablished), decision
    return decision


def _refused(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> HealthCoverageRefused:
    decision = assess_joined(front_door, startup_log).health_coverage
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
    # 0.9.2rc1 (between 0.9.1 and 0.9.2, whose mp laws differ) has no mp law; without a
    # backend the earlier arm names the backend
    assert _refused(bundle(version_body("0.9.2rc1"))).reason is HealthReason.BACKEND_UNOBSERVED
    assert _refused(backend_bundle("0.9.2rc1", "mp")).reason is HealthReason.LAW_NOT_ESTABLISHED
    # with development mode off, the real capture shows no backend over HTTP
    assert _refused(probe_stub(faults=dev_routes_404())).reason is HealthReason.BACKEND_UNOBSERVED


def test_json_and_log_naming_different_backends_do_not_join() -> None:
    """A log naming another backend is another launch: the front door's own backend is
    read, the log is not joined (its contradiction named by the log join)."""
    ray_log = log(engine_init("0.32.0", tp=1, backend="ray"))
    assessment = assess_joined(backend_bundle("0.32.0", "mp"), ray_log)
    decision = assessment.health_coverage
    assert isinstance(decision, HealthCoverageEstablished)
    assert decision.backend_source.where == JSON_INFO
    assert assessment.log_join.reason is LogJoinReason.CONFIGURATION_CONTRADICTED
    assert "'ray'" in assessment.log_join.detail
    assert "'mp'" in assessment.log_join.detail
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


# --- which source it may read ------------------------------------------------------


def test_a_log_backend_is_paired_with_the_front_doors_answer_only_when_joined() -> None:
    door = bundle(version_body("0.32.0"), HEALTHY)
    unjoined = assess(door, real_log()).health_coverage
    assert isinstance(unjoined, HealthCoverageRefused)
    assert unjoined.reason is HealthReason.LOG_NOT_JOINED
    decision = assess_joined(door, real_log()).health_coverage
    assert isinstance(decision, HealthCoverageEstablished)
    assert decision.backend_source.kind.value == "startup_log"
    assert decision.health_status == 200
    launch_only = assess(None, real_log()).health_coverage
    assert isinstance(launch_only, HealthCoverageEstablished)
    assert (launch_only.subject, launch_only.health_status) == (Subject.LAUNCH, None)


# --- what a refusal carries besides its words (witnessed in both directions) -----------


FrontDoor = CapturedReadback | HistoricalBundle


JSON_INFO = "GET /server_info?config_format=json"


def test_a_printed_none_backend_is_unobserved() -> None:
    none_log = log(engine_init("0.32.0", tp=1, backend="None"))
    assert _refused(None, none_log).reason is HealthReason.BACKEND_UNOBSERVED
    named = log(engine_init("0.32.0", tp=1, backend="my_pkg.Custom"))
    assert _refused(None, named).reason is HealthReason.BACKEND_UNKNOWN


def test_a_printed_custom_backend_is_unquoted_and_sourced() -> None:
    quoted = log(engine_init("0.32.0", tp=1, backend="'my_pkg.Custom'"))
    refused = _refused(None, quoted)
    assert refused.reason is HealthReason.BACKEND_UNKNOWN
    assert refused.backend == "my_pkg.Custom"
    assert refused.backend_source is not None
    assert refused.backend_source.where == "log launch 0, line 1 (EngineCore pid=200)"


def test_a_printed_custom_backend_is_a_log_fact() -> None:
    custom = log(engine_init("0.32.0", tp=1, backend="my_pkg.Custom"))
    refused = _refused(bundle(version_body("0.32.0"), HEALTHY), custom)
    assert refused.reason is HealthReason.BACKEND_UNKNOWN
    assert (refused.backend, refused.health_status) == ("my_pkg.Custom", 200)
    assert refused.backend_source is not None
    assert refused.backend_source.kind.value == "startup_log"


def test_a_front_door_refusal_keeps_the_health_status() -> None:
    door = bundle(version_body("0.32.0"), server_info_json(backend="my_pkg.Custom"), HEALTHY)
    refused = _refused(door)
    assert refused.reason is HealthReason.BACKEND_UNKNOWN
    assert refused.health_status == 200
    assert refused.backend_source is not None
    assert refused.backend_source.where == JSON_INFO


def test_a_restarted_front_door_establishes_nothing() -> None:
    refused = _refused(probe_stub(REAL, restart_after_metrics_reads=1))
    assert refused.reason is HealthReason.FRONT_DOOR_RESTARTED
    assert (refused.backend, refused.backend_source, refused.law) == (None, None, None)


def test_a_front_door_backend_ignores_a_log_of_another_build() -> None:
    door = bundle(version_body("0.32.0"), server_info_json(backend="mp"), HEALTHY)
    decision = assess(door, log(banner("0.27.0"))).health_coverage
    assert isinstance(decision, HealthCoverageEstablished)
    assert decision.backend_source.where == JSON_INFO


def test_refusals_after_the_backend_keep_it() -> None:
    mp_log = log(engine_init("0.32.0", tp=1, backend="mp"))
    unhealthy = _refused(bundle(version_body("0.32.0")), mp_log)
    unversioned = _refused(bundle(server_info_json(backend="mp")))
    outside = _refused(bundle(version_body("99.0"), server_info_json(backend="mp")))
    assert unhealthy.reason is HealthReason.HEALTH_NOT_OK
    for refused, where in (
        (unhealthy, "log launch 0, line 1 (EngineCore pid=200)"),
        (unversioned, JSON_INFO),
        (outside, JSON_INFO),
    ):
        assert refused.backend == "mp", refused
        assert refused.backend_source is not None
        assert refused.backend_source.where == where


def test_only_quotes_are_stripped_from_a_printed_backend() -> None:
    quoted = log(engine_init("0.32.0", tp=1, backend="'pkg.ExecutorX'"))
    refused = _refused(None, quoted)
    assert refused.backend == "pkg.ExecutorX"


# --- the law each refusal used, or that none applied ---------------------------------


def test_a_backend_without_a_law_cites_the_absence() -> None:
    decision = assess(
        bundle(version_body("0.32.0"), server_info_json(backend="ray"))
    ).health_coverage
    assert isinstance(decision, HealthCoverageRefused)
    assert decision.reason is HealthReason.LAW_NOT_ESTABLISHED
    assert isinstance(decision.law, LawNotEstablished)
    assert decision.law.question.key == "health.ray"
    assert decision.backend == "ray"
    assert decision.backend_source is not None
    assert decision.backend_source.where == "GET /server_info?config_format=json"


# --- what a person reads: each refusal's detail and remedy, written out by hand ---------
# A refusal names the earliest missing piece in words; the CLI prints them and policy
# authors quote them.  Each test below builds one case of one arm and writes the expected
# text out in full (the facts of the case filled in by hand), so that a changed word, a
# lost fact or a clause forced on or off fails here.  The tests above decide *which* arm a
# case reaches; these pin what the arm says.


MP_0_32 = (
    "MultiprocExecutor's monitor turns a worker process death into engine death, which "
    "/health reads from a local flag; nothing contacts the workers on the /health path"
)
#: 0.24 on: what the law's window leaves open (the monitor's wait, up to 9 s).
WINDOW_0_32 = (
    "; a 200 does not rule out a worker that died in the last 9 s (the monitor waits for "
    "the survivors before it fails the engine: the law's worker_death_delay)"
)


def test_health_established_names_backend_source_and_law() -> None:
    decision = assess(backend_bundle("0.32.0", "mp")).health_coverage
    assert isinstance(decision, HealthCoverageEstablished)
    assert decision.detail == f"executor 'mp' ({JSON_INFO}): {MP_0_32}{WINDOW_0_32}"


def test_health_backend_unobserved() -> None:
    _says(
        _refused(bundle(version_body("0.32.0"))),
        HealthReason.BACKEND_UNOBSERVED,
        "the executor backend is unobserved (no /server_info JSON, no log marker)",
        "give the launch's startup log, or probe /server_info?config_format=json "
        "(development mode)",
    )


def test_health_not_ok() -> None:
    _says(
        _refused(bundle(version_body("0.32.0"), server_info_json(backend="mp"))),
        HealthReason.HEALTH_NOT_OK,
        f"/health did not answer 200 (not_requested): executor 'mp' ({JSON_INFO}): "
        "MultiprocExecutor's monitor turns a worker process death into engine death, "
        f"which /health reads from a local flag; nothing contacts the workers on the "
        f"/health path; a 200 does not rule out a worker that died in the last 9 s (the "
        "monitor waits for the survivors before it fails the engine: the law's "
        "worker_death_delay), but there is no 200 to cover",
        "probe again once /health answers 200",
    )


def test_health_restarted_front_door() -> None:
    _says(
        _refused(probe_stub(REAL, restart_after_metrics_reads=1)),
        HealthReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_health_log_of_another_build() -> None:
    mp_log = log(engine_init("0.32.0", tp=1, backend="mp"))
    _says(
        _refused(bundle(version_body("0.27.0"), HEALTHY), mp_log),
        HealthReason.LOG_NOT_JOINED,
        "the startup log is not joined to this front door (version_contradicted: the log's "
        "launch reports vLLM 0.32.0 but /version reports 0.27.0: they are not the same "
        "server); the front door alone: the executor backend is unobserved (no "
        "/server_info JSON, no log marker)",
        "give the startup log of the serving launch, with its launch receipt",
    )


def test_health_backend_without_its_version() -> None:
    _says(
        _refused(bundle(server_info_json(backend="mp"))),
        HealthReason.VERSION_UNOBSERVED,
        f"backend 'mp' observed at {JSON_INFO}, but no version from that source",
        "read the version from the same source as the backend",
    )


def test_health_release_outside_the_table() -> None:
    _says(
        _refused(backend_bundle("99.0", "mp")),
        HealthReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none",
    )


def test_health_custom_executor() -> None:
    _says(
        _refused(backend_bundle("0.32.0", "my_pkg.CustomExecutor")),
        HealthReason.BACKEND_UNKNOWN,
        "executor 'my_pkg.CustomExecutor' is not one of vLLM's named backends (a custom executor)",
        "none: a custom executor's health checks are its own",
    )


def test_health_backend_without_a_law() -> None:
    _says(
        _refused(backend_bundle("0.32.0", "external_launcher")),
        HealthReason.LAW_NOT_ESTABLISHED,
        "not established for any release: What does a 200 from /health cover under the "
        "'external_launcher' executor?",
        "none",
    )


# --- mutation survivors: the arms only a joined log or a refused front door reach -------


#: A 0.32.0 ``multiproc_executor.py`` leader line: the launch's backend is ``mp`` by its
#: markers, while the engine-init line prints no ``distributed_executor_backend``.
MP_LEADER = (
    "(EngineCore pid=200) INFO 11-30 04:11:05 [multiproc_executor.py:153] DP group leader: "
    "node_rank=0, node_rank_within_dp=0, master_addr=127.0.0.1, mq_connect_ip=192.0.2.2 "
    "(local), world_size=1, local_world_size=1\n"
)


def test_a_joined_log_whose_markers_name_another_backend_conflicts() -> None:
    """The log join compares only a printed backend name, so a log whose markers say
    ``mp`` joins a front door naming ``ray``; health then names both sources."""
    marked = log(banner("0.32.0") + engine_init(tp=1) + MP_LEADER + rank_line(0, 1))
    ray_door = bundle(version_body("0.32.0"), server_info_json(backend="ray"), HEALTHY)
    assessment = assess_joined(ray_door, marked)
    assert assessment.log_join.reason is LogJoinReason.ESTABLISHED
    refused = assessment.health_coverage
    assert isinstance(refused, HealthCoverageRefused)
    _says(
        refused,
        HealthReason.BACKEND_CONFLICT,
        f"the sources name different executor backends: 'ray' at {JSON_INFO}; "
        "'mp' at log launch 0, line 3 (EngineCore pid=200)",
        "check that the startup log belongs to this server",
    )
    assert (refused.backend, refused.backend_source, refused.health_status) == (None, None, 200)
    # the same log beside a front door naming mp: one backend, established
    mp_door = bundle(version_body("0.32.0"), server_info_json(backend="mp"), HEALTHY)
    assert _established(mp_door, marked).backend is ExecutorBackend.MP


def test_health_not_ok_keeps_the_law_it_would_have_used() -> None:
    refused = _refused(bundle(version_body("0.32.0"), server_info_json(backend="mp")))
    assert refused.reason is HealthReason.HEALTH_NOT_OK
    assert isinstance(refused.law, HealthLaw)
    assert refused.law.statement == MP_0_32
    assert (refused.law.question.key, refused.law.backend) == ("health.mp", ExecutorBackend.MP)


def test_a_front_door_backend_is_not_checked_against_a_log_of_another_build() -> None:
    """The front door names the backend, so its own version scopes it: a log of another
    build changes nothing when the front door alone is refused (release outside the
    table), and the front door's refusal stands rather than ``log_not_joined``."""
    door = bundle(version_body("99.0"), server_info_json(backend="mp"), HEALTHY)
    other_build = log(banner("0.27.0") + engine_init("0.27.0", tp=1, backend="mp"))
    assessment = assess(door, other_build)
    assert assessment.log_join.reason is LogJoinReason.VERSION_CONTRADICTED
    refused = assessment.health_coverage
    assert isinstance(refused, HealthCoverageRefused)
    _says(refused, HealthReason.VERSION_NOT_ESTABLISHED, OUTSIDE_99, "none")
    assert refused.backend_source is not None
    assert refused.backend_source.where == JSON_INFO
