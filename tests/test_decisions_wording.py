"""What a person reads: every refusal arm's ``detail`` and ``remedy``, written out by hand.

A refusal names the earliest missing piece in words; the CLI prints them and policy
authors quote them.  Each test below builds one case of one arm and writes the expected
text out in full (the facts of the case filled in by hand), so that a changed word, a
lost fact or a clause forced on or off fails here.  Other tests decide *which* arm a case
reaches; these pin what the arm says.
"""

from __future__ import annotations

from typing import Protocol

from tests._evidence import (
    args,
    backend_bundle,
    banner,
    bundle,
    cache_config_metrics,
    engine_init,
    log,
    models_body,
    one_line_capacity,
    probe_stub,
    rank_line,
    server_info_json,
    two_line_capacity,
    version_body,
)
from tests._paths import REAL
from vllm_evidence.adapters.startup_log import StartupLog
from vllm_evidence.assessment import assess
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReason,
    CapacityRefused,
    CapacityReported,
    HealthCoverageEstablished,
    HealthCoverageRefused,
    HealthReason,
    IdentityReason,
    JoinedIncarnation,
    JoinReason,
    JoinUnestablished,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityEstablished,
    ServedIdentityRefused,
)
from vllm_evidence.readback import CapturedReadback, HistoricalBundle
from vllm_evidence.testing.stub import Fault
from vllm_evidence.upstream import Route

RESTARTED = (
    "the server restarted during the probe (process_start_time_seconds changed): "
    "/version and the other routes may come from different processes"
)
RESTARTED_REMEDY = "probe again once the server is up"
OUTSIDE_99 = (
    "vLLM 99.0 is outside the releases this law table was read from "
    "(0.6.6.post1 .. 0.33.0); nothing is established for it"
)
JSON_INFO = "GET /server_info?config_format=json"
ENGINE_LINE_2 = "log launch 0, line 2 (EngineCore pid=200)"
TP2 = banner("0.32.0") + engine_init(tp=2)
FrontDoor = CapturedReadback | HistoricalBundle


class _Refusal(Protocol):
    """The three words every refusal arm carries (any decision's refused type)."""

    @property
    def reason(self) -> object: ...
    @property
    def detail(self) -> str: ...
    @property
    def remedy(self) -> str: ...


def _says(refused: _Refusal, reason: object, detail: str, remedy: str) -> None:
    assert (refused.reason, refused.detail, refused.remedy) == (reason, detail, remedy)


# --- parallel -------------------------------------------------------------------------


def _parallel(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None
) -> ParallelRefused:
    decision = assess(front_door, startup_log).parallel
    assert isinstance(decision, ParallelRefused), decision
    return decision


def test_parallel_established_detail_names_sizes_source_and_every_pid() -> None:
    decision = assess(None, log(TP2 + rank_line(0, 2) + rank_line(1, 2))).parallel
    assert isinstance(decision, ParallelEstablished)
    assert decision.detail == (
        f"TP=2 PP=1 DP=1 from {ENGINE_LINE_2}; every expected rank present "
        "(rank 0 pid 300, rank 1 pid 301)"
    )


def test_parallel_nothing_observed() -> None:
    _says(
        _parallel(None, None),
        ParallelReason.CONFIGURATION_UNOBSERVED,
        "no /server_info answer and no engine-init line",
        "give the launch's startup log (engine-init line), or probe /server_info "
        "with development mode on",
    )


def test_parallel_a_product_alone_says_why_it_is_no_configuration() -> None:
    front_door = bundle(version_body("0.32.0"), {Route.GET_WORLD_SIZE: b'{"world_size":2}'})
    refused = _parallel(front_door, None)
    assert refused.detail == "/get_world_size answered 2, a product that is TP, PP or DP alike"


def test_parallel_every_stage_one_shortfall_is_named_in_order() -> None:
    no_sizes = (
        "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] Initializing a V1 LLM engine "
        "(v0.32.0) with config: model='/models/m', data_parallel_size=1\n"
    )
    no_pp = b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": 2}}}'
    no_tp = bundle(version_body("0.32.0"), {Route.SERVER_INFO_JSON: no_pp})
    refused = _parallel(no_tp, log(banner("0.32.0") + no_sizes))
    assert refused.detail == (
        "the engine-init line (line 2) does not print TP and PP sizes; "
        f"{JSON_INFO} does not carry TP and PP sizes"
    )


def test_parallel_dp_unprinted_without_an_args_line() -> None:
    refused = _parallel(None, log(banner("0.32.0") + engine_init(tp=2, dp=None)))
    assert refused.detail == (
        "the engine-init line (line 2) does not print data_parallel_size and the launch "
        "has no non-default args line"
    )


def test_parallel_text_server_info_before_dp_was_printed() -> None:
    text = (
        b'{"vllm_config": "model=\'/models/m\', tensor_parallel_size=1, '
        b'pipeline_parallel_size=1, quantization=None"}'
    )
    refused = _parallel(bundle(version_body("0.8.5"), {Route.SERVER_INFO: text}), None)
    assert refused.detail == (
        "GET /server_info does not carry data_parallel_size (the text form before 0.10.2)"
    )


def test_parallel_data_parallel_notes() -> None:
    absent = args("{'model': '/models/m', 'tensor_parallel_size': 2}")
    decision = assess(None, log(banner("0.32.0") + absent + engine_init(tp=2, dp=None))).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.configuration is not None
    assert decision.configuration.data_parallel_note == (
        "data_parallel_size absent from the non-default args (line 2): the default, 1"
    )
    given = args("{'data_parallel_size': 2}")
    decision = assess(None, log(banner("0.32.0") + given + engine_init(tp=1, dp=None))).parallel
    assert isinstance(decision, ParallelRefused)
    assert decision.configuration is not None
    assert decision.configuration.data_parallel_note == (
        "data_parallel_size from the non-default args (line 2)"
    )


def test_parallel_versions_of_two_builds() -> None:
    text = banner("0.32.0") + engine_init(tp=1) + rank_line(0, 1)
    other = bundle(version_body("0.27.0"), server_info_json(tp=1))
    _says(
        _parallel(other, log(text)),
        ParallelReason.CONFIGURATION_CONFLICT,
        "the log's launch reports vLLM 0.32.0 but /version reports 0.27.0: "
        "they are not the same server",
        "give the startup log of the serving launch",
    )


def test_parallel_restarted_front_door() -> None:
    _says(
        _parallel(probe_stub(REAL, restart_after_metrics_reads=1), None),
        ParallelReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_parallel_configuration_without_its_version() -> None:
    _says(
        _parallel(bundle(server_info_json(tp=1)), None),
        ParallelReason.VERSION_UNOBSERVED,
        f"configuration from {JSON_INFO}, but no version from that source",
        "read the version from the same source",
    )


def test_parallel_version_outside_the_table() -> None:
    _says(
        _parallel(bundle(version_body("99.0"), server_info_json(tp=1)), None),
        ParallelReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none",
    )


def test_parallel_route_without_a_law_in_that_release() -> None:
    refused = _parallel(bundle(version_body("0.10.2"), server_info_json(tp=1)), None)
    _says(
        refused,
        ParallelReason.VERSION_NOT_ESTABLISHED,
        "not established for 0.10.2 (laws read for 0.11.0 .. 0.33.0)",
        "none",
    )
    assert refused.law is not None
    assert refused.law.statement == refused.detail


def test_parallel_log_and_front_door_sizes_differ() -> None:
    ranks = log(TP2 + rank_line(0, 2) + rank_line(1, 2))
    _says(
        _parallel(bundle(version_body("0.32.0"), server_info_json(tp=1)), ranks),
        ParallelReason.CONFIGURATION_CONFLICT,
        f"{ENGINE_LINE_2} gives (TP, PP, DP, PCP) (2, 1, 1, 1) but {JSON_INFO} gives "
        "(1, 1, 1, 1): the log and the front door describe different servers or launches",
        "give the startup log of the serving launch",
    )


def test_parallel_product_against_the_configuration() -> None:
    four = bundle(
        version_body("0.32.0"), server_info_json(tp=2), {Route.GET_WORLD_SIZE: b'{"world_size":4}'}
    )
    _says(
        _parallel(four, None),
        ParallelReason.CONFIGURATION_CONFLICT,
        "/get_world_size answered 4, but the configuration gives 2 per engine × 1",
        "check the sources describe one server",
    )


def test_parallel_http_configuration_without_a_log() -> None:
    _says(
        _parallel(bundle(version_body("0.32.0"), server_info_json(tp=2)), None),
        ParallelReason.POPULATION_UNOBSERVED,
        "expected ranks [0, 1]; no startup log shows which workers joined",
        "give the launch's startup log (per-rank worker lines)",
    )


def test_parallel_http_configuration_with_log_ranks() -> None:
    ranks = log(banner("0.32.0") + rank_line(0, 2) + rank_line(1, 2))
    _says(
        _parallel(bundle(version_body("0.32.0"), server_info_json(tp=2)), ranks),
        ParallelReason.JOIN_UNESTABLISHED,
        f"configuration from {JSON_INFO}, worker lines from log launch 0: nothing witnesses "
        "that the log belongs to the serving process",
        "give a log whose launch prints its engine-init line",
    )


def test_parallel_launch_without_worker_lines() -> None:
    _says(
        _parallel(None, log(TP2)),
        ParallelReason.POPULATION_UNOBSERVED,
        "the launch has no worker rank lines",
        "give a log with the workers' start-up lines",
    )


def test_parallel_workers_of_another_world() -> None:
    _says(
        _parallel(None, log(TP2 + rank_line(0, 4) + rank_line(1, 4))),
        ParallelReason.WORLD_SIZE_MISMATCH,
        "the launch's worker lines joined world size(s) [4], not 2",
        "check the log belongs to this configuration",
    )


def test_parallel_ray_collapsed_lines() -> None:
    collapsed = rank_line(
        0, 2, tag="RayWorkerWrapper pid=401, ip=10.0.0.2", suffix=" [repeated 3x across cluster]"
    )
    _says(
        _parallel(None, log(TP2 + rank_line(0, 2) + collapsed)),
        ParallelReason.RANKS_UNATTRIBUTED,
        "ranks [1] not attributed: Ray collapsed 3 similar worker line(s) "
        "('[repeated Nx across cluster]')",
        "run with Ray log deduplication off (RAY_DEDUP_LOGS=0)",
    )


def test_parallel_a_rank_that_never_started() -> None:
    _says(
        _parallel(None, log(TP2 + rank_line(0, 2))),
        ParallelReason.RANKS_MISSING,
        "expected ranks [1] have no worker line",
        "a rank never started: look at that worker",
    )


# --- capacity ---------------------------------------------------------------------------

LABEL_0_32 = (
    'block_size="128",engine="0",kv_cache_max_concurrency="2048.0",'
    'kv_cache_size_tokens="4194304",num_gpu_blocks="32768"'
)
KV_LINE_2 = "log launch 0, line 2 (EngineCore pid=200)"


def _capacity(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> CapacityRefused:
    decision = assess(front_door, startup_log).capacity
    assert isinstance(decision, CapacityRefused), decision
    return decision


def test_capacity_established_names_engine_figure_and_source() -> None:
    labels = bundle(version_body("0.32.0"), cache_config_metrics(LABEL_0_32))
    alone = assess(labels).capacity
    assert isinstance(alone, CapacityEstablished)
    assert alone.detail == "engine 0: 4,194,304 tokens (GET /metrics)"
    both = assess(labels, log(banner("0.32.0") + one_line_capacity("4,194,304"))).capacity
    assert isinstance(both, CapacityEstablished)
    assert both.detail == (
        "engine 0: 4,194,304 tokens (GET /metrics) — the log and the label agree"
    )


def test_capacity_engines_missing() -> None:
    one = bundle(
        version_body("0.32.0"),
        server_info_json(dp=2),
        cache_config_metrics('engine="0",kv_cache_size_tokens="4096"'),
    )
    _says(
        _capacity(one),
        CapacityReason.ENGINES_MISSING,
        "the same source resolves 2 DP engines, but engine(s) 1 have no capacity figure",
        "read every DP engine (under external load balancing, each API server reports only "
        "its own engine)",
    )


def test_capacity_sources_disagree() -> None:
    _says(
        _capacity(
            bundle(version_body("0.32.0"), cache_config_metrics(LABEL_0_32)),
            log(banner("0.32.0") + one_line_capacity("4,194,303")),
        ),
        CapacityReason.SOURCES_DISAGREE,
        "the authoritative sources disagree: engine 0: 4,194,304 tokens at GET /metrics; "
        f"engine 0: 4,194,303 tokens at {KV_LINE_2}",
        "check that the startup log belongs to this server",
    )


def test_capacity_reported_not_group_aware() -> None:
    decision = assess(None, log(banner("0.20.0") + two_line_capacity("500,000"))).capacity
    assert isinstance(decision, CapacityReported)
    _says(
        decision,
        CapacityReason.NOT_GROUP_AWARE,
        "engine 0: 500,000 tokens, as the log prints it; in this release the figure is not "
        "group-aware, so it misreports hybrid (multi-group) models",
        "vLLM ≥0.27 logs and labels a group-aware capacity",
    )


def test_capacity_reported_per_worker() -> None:
    worker0 = "(VllmWorker TP0 pid=11) INFO 09-03 02:12:26 [kv_cache_utils.py:868] "
    worker1 = "(VllmWorker TP1 pid=12) INFO 09-03 02:12:26 [kv_cache_utils.py:868] "
    text = (
        banner("0.10.1.1")
        + two_line_capacity("5,000", worker0)
        + two_line_capacity("4,000", worker1)
    )
    decision = assess(None, log(text)).capacity
    assert isinstance(decision, CapacityReported)
    _says(
        decision,
        CapacityReason.PER_WORKER_BEFORE_REDUCTION,
        "engine 0: 4,000 tokens, as the log prints it; in this release the figure is not "
        "group-aware, so it misreports hybrid (multi-group) models; logged per worker, the "
        "smallest shown",
        "vLLM ≥0.27 logs and labels a group-aware capacity",
    )


def test_capacity_v0_blocks_without_a_block_size() -> None:
    blocks = "INFO 12-27 10:00:00 gpu_executor.py:76] # GPU blocks: 507, # CPU blocks: 1024\n"
    _says(
        _capacity(None, log(banner("0.6.6.post1") + blocks)),
        CapacityReason.BLOCK_SIZE_UNOBSERVED,
        "V0 block line(s) seen (507 blocks, line 2) but the launch never prints its block size",
        "give a launch that prints its block size",
    )


def test_capacity_block_labels_alone() -> None:
    only_blocks = cache_config_metrics('block_size="16",engine="0",num_gpu_blocks="1000"')
    _says(
        _capacity(bundle(version_body("0.32.0"), only_blocks)),
        CapacityReason.INSUFFICIENT_AUTHORITY,
        "only num_gpu_blocks=1000 and block_size=16 are labelled; V1: num_gpu_blocks is summed "
        "over DP engines ('None' in 0.8.5) and block_size is a minimum over KV-cache groups, "
        "so their product is never a token capacity",
        "give the launch's startup log (its capacity line), or probe a ≥0.27 server "
        "(kv_cache_size_tokens)",
    )


def test_capacity_nothing_to_read() -> None:
    _says(
        _capacity(bundle(version_body("0.32.0"))),
        CapacityReason.CAPACITY_UNOBSERVED,
        "no capacity line in the log and no kv_cache_size_tokens label",
        "give the launch's startup log, or probe /metrics of a ≥0.27 server",
    )


def test_capacity_figure_without_its_version() -> None:
    _says(
        _capacity(bundle(cache_config_metrics(LABEL_0_32))),
        CapacityReason.VERSION_UNOBSERVED,
        "label_kv_cache_size_tokens seen, but no version scopes it",
        "read the version from the same source",
    )


def test_capacity_release_between_disagreeing_readings() -> None:
    _says(
        _capacity(bundle(version_body("0.25.0"), cache_config_metrics(LABEL_0_32))),
        CapacityReason.LAW_NOT_ESTABLISHED,
        "label_kv_cache_size_tokens: not established for 0.25.0 (laws read for "
        "0.6.6.post1 .. 0.20.0, 0.27.0 .. 0.33.0)",
        "none: no law covers this source in this release",
    )


def test_capacity_release_outside_the_table() -> None:
    _says(
        _capacity(bundle(version_body("99.0"), cache_config_metrics(LABEL_0_32))),
        CapacityReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none: the release is outside the law table",
    )


def test_capacity_metrics_unparsed() -> None:
    failing = probe_stub(REAL, faults={Route.METRICS: Fault(status=500)})
    _says(
        _capacity(failing),
        CapacityReason.METRICS_UNPARSED,
        "/metrics: http_error",
        "probe again once /metrics answers in the text format",
    )


def test_capacity_restarted_front_door() -> None:
    _says(
        _capacity(probe_stub(REAL, restart_after_metrics_reads=1)),
        CapacityReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_capacity_log_of_another_build() -> None:
    _says(
        _capacity(
            bundle(version_body("0.33.0")),
            log(banner("0.32.0") + one_line_capacity("4,194,304")),
        ),
        CapacityReason.SOURCES_CONFLICT,
        "the log's launch reports vLLM 0.32.0 but /version reports 0.33.0: "
        "they are not the same server",
        "give the startup log of the serving launch",
    )


# --- served identity --------------------------------------------------------------------


def _identity(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> ServedIdentityRefused:
    decision = assess(front_door, startup_log).served_identity
    assert isinstance(decision, ServedIdentityRefused), decision
    return decision


def test_identity_established_says_intent_not_bytes() -> None:
    door = bundle(version_body("0.32.0"), models_body(("m", "/models/m")))
    decision = assess(door).served_identity
    assert isinstance(decision, ServedIdentityEstablished)
    assert decision.detail == (
        "served id(s) 'm' derive from the configured path '/models/m'; that is configuration "
        "intent, not proof of the weights' bytes"
    )


def test_identity_nothing_names_the_models() -> None:
    _says(
        _identity(None),
        IdentityReason.MODELS_UNOBSERVED,
        "no /v1/models answer and no launch naming its served models",
        "probe /v1/models, or give the launch's startup log",
    )
    _says(
        _identity(bundle(version_body("0.32.0"))),
        IdentityReason.MODELS_UNOBSERVED,
        "/v1/models: not_requested",
        "probe /v1/models, or give the launch's startup log",
    )


def test_identity_behind_an_api_key() -> None:
    _says(
        _identity(probe_stub(api_key="secret")),
        IdentityReason.MODELS_UNOBSERVED,
        "/v1/models: unauthorized",
        "probe with the API key (/v1/models is guarded by --api-key)",
    )


def test_identity_restarted_front_door() -> None:
    _says(
        _identity(probe_stub(REAL, restart_after_metrics_reads=1)),
        IdentityReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_identity_log_of_another_build() -> None:
    _says(
        _identity(bundle(version_body("0.27.0")), log(banner("0.32.0") + args("{'model': 'm'}"))),
        IdentityReason.SOURCES_CONFLICT,
        "the log's launch reports vLLM 0.32.0 but /version reports 0.27.0: "
        "they are not the same server",
        "give the startup log of the serving launch, or probe /v1/models with the key",
    )


def test_identity_without_its_version() -> None:
    _says(
        _identity(bundle(models_body(("m", "/models/m")))),
        IdentityReason.VERSION_UNOBSERVED,
        "no vLLM version alongside GET /v1/models",
        "read /version (or the launch's version banner) from the same source",
    )


def test_identity_release_outside_the_table() -> None:
    _says(
        _identity(bundle(version_body("99.0"), models_body(("m", "/models/m")))),
        IdentityReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none",
    )


def test_identity_card_without_a_root() -> None:
    _says(
        _identity(bundle(version_body("0.32.0"), models_body(("m", None)))),
        IdentityReason.CONFIGURED_PATH_UNOBSERVED,
        "GET /v1/models names no single configured path",
        "read /v1/models (root) or the launch's non-default args (model)",
    )


def test_identity_alias() -> None:
    _says(
        _identity(bundle(version_body("0.32.0"), models_body(("tiny:alias", "/models/tiny")))),
        IdentityReason.SERVED_ID_NOT_DERIVABLE,
        "served id(s) 'tiny:alias' are not derivable from the configured path '/models/tiny': "
        "an alias is not evidence of the artifact",
        "serve under the configured path (or its final component), or check the weights out "
        "of band",
    )


# --- /health coverage -------------------------------------------------------------------

MP_0_32 = (
    "MultiprocExecutor's monitor turns a worker process death into engine death, which "
    "/health reads from a local flag; nothing contacts the workers on the /health path"
)


def _health(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> HealthCoverageRefused:
    decision = assess(front_door, startup_log).health_coverage
    assert isinstance(decision, HealthCoverageRefused), decision
    return decision


def test_health_established_names_backend_source_and_law() -> None:
    decision = assess(backend_bundle("0.32.0", "mp")).health_coverage
    assert isinstance(decision, HealthCoverageEstablished)
    assert decision.detail == f"executor 'mp' ({JSON_INFO}): {MP_0_32}"


def test_health_backend_unobserved() -> None:
    _says(
        _health(bundle(version_body("0.32.0"))),
        HealthReason.BACKEND_UNOBSERVED,
        "the executor backend is unobserved (no /server_info JSON, no log marker)",
        "give the launch's startup log, or probe /server_info?config_format=json "
        "(development mode)",
    )


def test_health_backends_conflict() -> None:
    ray_log = log(engine_init("0.32.0", tp=1, backend="ray"))
    _says(
        _health(backend_bundle("0.32.0", "mp"), ray_log),
        HealthReason.BACKEND_CONFLICT,
        f"the sources name different executor backends: 'mp' at {JSON_INFO}; "
        "'ray' at log launch 0, line 1 (EngineCore pid=200)",
        "check that the startup log belongs to this server",
    )


def test_health_restarted_front_door() -> None:
    _says(
        _health(probe_stub(REAL, restart_after_metrics_reads=1)),
        HealthReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_health_log_of_another_build() -> None:
    mp_log = log(engine_init("0.32.0", tp=1, backend="mp"))
    _says(
        _health(bundle(version_body("0.27.0")), mp_log),
        HealthReason.SOURCES_CONFLICT,
        "the log's launch reports vLLM 0.32.0 but /version reports 0.27.0: "
        "they are not the same server",
        "give the startup log of the serving launch",
    )


def test_health_backend_without_its_version() -> None:
    _says(
        _health(bundle(server_info_json(backend="mp"))),
        HealthReason.VERSION_UNOBSERVED,
        f"backend 'mp' observed at {JSON_INFO}, but no version from that source",
        "read the version from the same source as the backend",
    )


def test_health_release_outside_the_table() -> None:
    _says(
        _health(backend_bundle("99.0", "mp")),
        HealthReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none",
    )


def test_health_custom_executor() -> None:
    _says(
        _health(backend_bundle("0.32.0", "my_pkg.CustomExecutor")),
        HealthReason.BACKEND_UNKNOWN,
        "executor 'my_pkg.CustomExecutor' is not one of vLLM's named backends (a custom executor)",
        "none: a custom executor's health checks are its own",
    )


def test_health_backend_without_a_law() -> None:
    _says(
        _health(backend_bundle("0.32.0", "external_launcher")),
        HealthReason.LAW_NOT_ESTABLISHED,
        "not established for any release: What does a 200 from /health cover under the "
        "'external_launcher' executor?",
        "none",
    )


# --- front-door join --------------------------------------------------------------------


def test_join_established_names_the_marker() -> None:
    decision = assess(probe_stub(REAL)).front_door_join
    assert isinstance(decision, JoinedIncarnation)
    assert decision.detail == (
        "both /metrics reads carried process_start_time_seconds 1796011852.21"
    )


def test_join_without_a_front_door() -> None:
    decision = assess(None, log(banner("0.32.0"))).front_door_join
    assert isinstance(decision, JoinUnestablished)
    _says(
        decision,
        JoinReason.NO_FRONT_DOOR,
        "no front-door readback was given",
        "probe the server's front door",
    )
