"""What each refusal carries besides its words, and the rules mutation testing found
unwitnessed: each case is written by hand and checked in both directions where the rule
has two.
"""

from __future__ import annotations

from tests._evidence import (
    HEALTHY,
    KV_DP0,
    args,
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
from vllm_evidence.adapters.outcome import Unparsed
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
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityEstablished,
    ServedIdentityRefused,
)
from vllm_evidence.readback import CapturedReadback, HistoricalBundle
from vllm_evidence.testing.stub import Fault
from vllm_evidence.upstream import Route

FrontDoor = CapturedReadback | HistoricalBundle
JSON_INFO = "GET /server_info?config_format=json"

# --- capacity ---------------------------------------------------------------------------


def _capacity_refused(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> CapacityRefused:
    decision = assess(front_door, startup_log).capacity
    assert isinstance(decision, CapacityRefused), decision
    return decision


def test_an_unparsed_metrics_refusal_quotes_the_adapters_reason() -> None:
    door = probe_stub(REAL, faults={Route.METRICS: Fault(body=b"<html>oops</html>\n")})
    outcome = door.metrics
    assert isinstance(outcome, Unparsed)
    refused = _capacity_refused(door)
    assert refused.detail == f"/metrics: unparsed ({outcome.failure.reason})"
    assert outcome.failure.reason  # a reason is there to quote


def _dp_log(dp: int, *capacity_lines: str) -> StartupLog:
    return log(
        banner("0.32.0")
        + args(f"{{'data_parallel_size': {dp}}}")
        + engine_init(tp=1, dp=dp)
        + "".join(capacity_lines)
    )


def test_log_figures_are_checked_against_the_logs_dp_size() -> None:
    # DP=2 in the log, a figure only for engine 0: engine 1 is missing ...
    missing = _capacity_refused(None, _dp_log(2, one_line_capacity("1,000", KV_DP0, "GPU")))
    assert missing.reason is CapacityReason.ENGINES_MISSING
    # ... and with DP=1 in the log, a front door resolving DP=2 does not make one missing
    front = bundle(version_body("0.32.0"), server_info_json(dp=2))
    decision = assess(front, _dp_log(1, one_line_capacity("1,000", KV_DP0, "GPU"))).capacity
    assert isinstance(decision, CapacityEstablished), decision


def test_several_missing_engines_are_listed() -> None:
    refused = _capacity_refused(None, _dp_log(3, one_line_capacity("1,000", KV_DP0, "GPU")))
    assert refused.detail == (
        "the same source resolves 3 DP engines, but engine(s) 1, 2 have no capacity figure"
    )


def test_a_reported_figure_per_engine() -> None:
    dp0 = "(EngineCore_DP0 pid=201) INFO 11-30 04:11:21 [kv_cache_utils.py:1716] "
    dp1 = "(EngineCore_DP1 pid=202) INFO 11-30 04:11:21 [kv_cache_utils.py:1716] "
    text = banner("0.20.0") + two_line_capacity("1,000", dp0) + two_line_capacity("2,000", dp1)
    decision = assess(None, log(text)).capacity
    assert isinstance(decision, CapacityReported)
    assert decision.detail.startswith(
        "engine 0: 1,000 tokens, engine 1: 2,000 tokens, as the log prints it;"
    )


V0_HEAD = banner("0.6.6.post1") + args("{'model': '/models/m', 'block_size': 16}")


def test_a_v0_block_figure_keeps_its_line_and_process() -> None:
    untagged = "INFO 12-27 10:00:00 gpu_executor.py:76] # GPU blocks: 507, # CPU blocks: 1024\n"
    decision = assess(None, log(V0_HEAD + untagged)).capacity
    assert isinstance(decision, CapacityEstablished)
    assert [(e.engine, e.source.where) for e in decision.engines] == [("0", "log launch 0, line 3")]
    tagged = (
        "(EngineCore_DP1 pid=7) INFO 12-27 10:00:00 gpu_executor.py:76] "
        "# GPU blocks: 507, # CPU blocks: 1024\n"
    )
    decision = assess(None, log(V0_HEAD + tagged)).capacity
    assert isinstance(decision, CapacityEstablished)
    assert [(e.engine, e.source.where) for e in decision.engines] == [
        ("1", "log launch 0, line 3 (EngineCore_DP1 pid=7)")
    ]


def test_only_the_first_v0_block_line_of_a_launch_counts() -> None:
    first = "INFO 12-27 10:00:00 gpu_executor.py:76] # GPU blocks: 507, # CPU blocks: 1024\n"
    second = "INFO 12-27 10:00:01 gpu_executor.py:76] # GPU blocks: 300, # CPU blocks: 1024\n"
    decision = assess(None, log(V0_HEAD + first + second)).capacity
    assert isinstance(decision, CapacityEstablished)
    assert [e.tokens.value for e in decision.engines] == [8112]  # 507 × 16


def test_the_0_6_6_label_product_is_sourced_and_counted_once() -> None:
    two_series = cache_config_metrics(
        'block_size="16",num_gpu_blocks="507"', 'block_size="16",num_gpu_blocks="300"'
    )
    decision = assess(bundle(version_body("0.6.6.post1"), two_series)).capacity
    assert isinstance(decision, CapacityEstablished)
    assert [(e.tokens.value, e.source.where) for e in decision.engines] == [(8112, "GET /metrics")]


# --- served identity --------------------------------------------------------------------


def test_a_log_named_identity_keeps_the_args_lines_process() -> None:
    text = banner("0.32.0") + args("{'model': '/models/m'}")
    decision = assess(None, log(text)).served_identity
    assert isinstance(decision, ServedIdentityEstablished)
    assert decision.source.where == "log launch 0, line 2 (APIServer pid=100)"
    assert [(n.served_id, n.configured_path) for n in decision.names] == [
        ("/models/m", "/models/m")
    ]


def test_each_served_name_carries_its_configured_path() -> None:
    door = bundle(version_body("0.32.0"), models_body(("m", "/models/m"), ("x", "/models/m")))
    decision = assess(door).served_identity
    assert isinstance(decision, ServedIdentityRefused)
    assert [(n.served_id, n.configured_path) for n in decision.names] == [
        ("m", "/models/m"),
        ("x", "/models/m"),
    ]


def test_two_configured_paths_are_no_single_path() -> None:
    door = bundle(version_body("0.32.0"), models_body(("a", "/models/a"), ("b", "/models/b")))
    refused = assess(door).served_identity
    assert isinstance(refused, ServedIdentityRefused)
    assert refused.reason is IdentityReason.CONFIGURED_PATH_UNOBSERVED
    assert refused.configured_path is None
    one = bundle(version_body("0.32.0"), models_body(("a", "/models/a")))
    assert isinstance(assess(one).served_identity, ServedIdentityEstablished)


def test_a_front_door_identity_ignores_a_log_of_another_build() -> None:
    door = bundle(version_body("0.27.0"), models_body(("m", "/models/m")))
    decision = assess(door, log(banner("0.32.0"))).served_identity
    assert isinstance(decision, ServedIdentityEstablished)
    assert decision.source.where == "GET /v1/models"


def test_several_aliases_are_listed() -> None:
    door = bundle(version_body("0.32.0"), models_body(("a", "/models/m"), ("b", "/models/m")))
    refused = assess(door).served_identity
    assert isinstance(refused, ServedIdentityRefused)
    assert refused.detail.startswith("served id(s) 'a', 'b' are not derivable")


# --- /health coverage -------------------------------------------------------------------


def _health_refused(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> HealthCoverageRefused:
    decision = assess(front_door, startup_log).health_coverage
    assert isinstance(decision, HealthCoverageRefused), decision
    return decision


def test_a_printed_none_backend_is_unobserved() -> None:
    none_log = log(engine_init("0.32.0", tp=1, backend="None"))
    assert _health_refused(None, none_log).reason is HealthReason.BACKEND_UNOBSERVED
    named = log(engine_init("0.32.0", tp=1, backend="my_pkg.Custom"))
    assert _health_refused(None, named).reason is HealthReason.BACKEND_UNKNOWN


def test_a_printed_custom_backend_is_unquoted_and_sourced() -> None:
    quoted = log(engine_init("0.32.0", tp=1, backend="'my_pkg.Custom'"))
    refused = _health_refused(None, quoted)
    assert refused.reason is HealthReason.BACKEND_UNKNOWN
    assert refused.backend == "my_pkg.Custom"
    assert refused.backend_source is not None
    assert refused.backend_source.where == "log launch 0, line 1 (EngineCore pid=200)"


def test_a_printed_custom_backend_is_a_log_fact() -> None:
    custom = log(engine_init("0.32.0", tp=1, backend="my_pkg.Custom"))
    refused = _health_refused(bundle(version_body("0.27.0"), HEALTHY), custom)
    assert refused.reason is HealthReason.SOURCES_CONFLICT
    assert (refused.backend, refused.health_status) == ("my_pkg.Custom", None)
    assert refused.backend_source is not None
    assert refused.backend_source.kind.value == "startup_log"


def test_a_front_door_refusal_keeps_the_health_status() -> None:
    door = bundle(version_body("0.32.0"), server_info_json(backend="my_pkg.Custom"), HEALTHY)
    refused = _health_refused(door)
    assert refused.reason is HealthReason.BACKEND_UNKNOWN
    assert refused.health_status == 200
    assert refused.backend_source is not None
    assert refused.backend_source.where == JSON_INFO


def test_a_restarted_front_door_keeps_the_backend_it_saw() -> None:
    refused = _health_refused(probe_stub(REAL, restart_after_metrics_reads=1))
    assert refused.reason is HealthReason.FRONT_DOOR_RESTARTED
    assert refused.backend == "mp"
    assert refused.backend_source is not None
    assert refused.backend_source.where == JSON_INFO


def test_a_front_door_backend_ignores_a_log_of_another_build() -> None:
    door = bundle(version_body("0.32.0"), server_info_json(backend="mp"))
    decision = assess(door, log(banner("0.27.0"))).health_coverage
    assert isinstance(decision, HealthCoverageEstablished)
    assert decision.backend_source.where == JSON_INFO


def test_refusals_after_the_backend_keep_it() -> None:
    mp_log = log(engine_init("0.32.0", tp=1, backend="mp"))
    conflict = _health_refused(bundle(version_body("0.27.0")), mp_log)
    unversioned = _health_refused(bundle(server_info_json(backend="mp")))
    outside = _health_refused(bundle(version_body("99.0"), server_info_json(backend="mp")))
    for refused, where in (
        (conflict, "log launch 0, line 1 (EngineCore pid=200)"),
        (unversioned, JSON_INFO),
        (outside, JSON_INFO),
    ):
        assert refused.backend == "mp", refused
        assert refused.backend_source is not None
        assert refused.backend_source.where == where


# --- parallel ---------------------------------------------------------------------------


def _parallel_refused(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> ParallelRefused:
    decision = assess(front_door, startup_log).parallel
    assert isinstance(decision, ParallelRefused), decision
    return decision


def test_a_printed_dp_size_needs_no_note() -> None:
    text = banner("0.32.0") + engine_init(tp=1, dp=1) + rank_line(0, 1)
    decision = assess(None, log(text)).parallel
    assert isinstance(decision, ParallelEstablished)
    assert decision.configuration.data_parallel_note is None
    assert decision.law is None


def test_a_present_rank_is_sourced_to_its_worker_line() -> None:
    text = banner("0.32.0") + engine_init(tp=2) + rank_line(0, 2) + rank_line(1, 2)
    decision = assess(None, log(text)).parallel
    assert isinstance(decision, ParallelEstablished)
    assert [r.source.where for r in decision.ranks] == [
        "log launch 0, line 3 (Worker_TP0 pid=300)",
        "log launch 0, line 4 (Worker_TP1 pid=301)",
    ]


def test_a_log_without_engine_init_is_judged_at_the_join_not_as_a_conflict() -> None:
    ranks = log(banner("0.27.0") + rank_line(0, 2) + rank_line(1, 2))
    door = bundle(version_body("0.32.0"), server_info_json(tp=2))
    refused = _parallel_refused(door, ranks)
    assert refused.reason is ParallelReason.JOIN_UNESTABLISHED
    assert refused.configuration is not None
    assert refused.configuration.source.where == JSON_INFO


def test_the_text_server_info_is_scoped_by_its_own_route_law() -> None:
    text = (
        b'{"vllm_config": "model=\'/models/m\', tensor_parallel_size=1, '
        b'pipeline_parallel_size=1, data_parallel_size=1"}'
    )
    refused = _parallel_refused(bundle(version_body("0.10.2"), {Route.SERVER_INFO: text}))
    assert refused.reason is ParallelReason.POPULATION_UNOBSERVED
    assert refused.law is not None
    assert refused.law.question.key == "parallel_evidence./server_info"


def test_refusals_after_stage_one_keep_the_configuration() -> None:
    unversioned = _parallel_refused(bundle(server_info_json(tp=1)))
    outside = _parallel_refused(bundle(version_body("99.0"), server_info_json(tp=1)))
    no_json_law = _parallel_refused(bundle(version_body("0.10.2"), server_info_json(tp=1)))
    product = _parallel_refused(
        bundle(
            version_body("0.32.0"),
            server_info_json(tp=2),
            {Route.GET_WORLD_SIZE: b'{"world_size":4}'},
        )
    )
    unjoined = _parallel_refused(
        bundle(version_body("0.32.0"), server_info_json(tp=2)),
        log(banner("0.32.0") + rank_line(0, 2)),
    )
    for refused in (unversioned, outside, no_json_law, product, unjoined):
        assert refused.configuration is not None, refused
        assert refused.configuration.source.where == JSON_INFO
    assert (product.reason, unjoined.reason) == (
        ParallelReason.CONFIGURATION_CONFLICT,
        ParallelReason.JOIN_UNESTABLISHED,
    )


def test_a_product_conflict_keeps_the_http_route_law() -> None:
    door = bundle(
        version_body("0.32.0"), server_info_json(tp=2), {Route.GET_WORLD_SIZE: b'{"world_size":4}'}
    )
    refused = _parallel_refused(door)
    assert refused.reason is ParallelReason.CONFIGURATION_CONFLICT
    assert refused.law is not None
    assert refused.law.question.key == "parallel_evidence./server_info?config_format=json"


def test_only_quotes_are_stripped_from_a_printed_backend() -> None:
    quoted = log(engine_init("0.32.0", tp=1, backend="'pkg.ExecutorX'"))
    refused = _health_refused(None, quoted)
    assert refused.backend == "pkg.ExecutorX"
