"""KV-cache capacity: each authority rule refuses, reports or establishes, by release."""

from __future__ import annotations

from tests._evidence import (
    API,
    KV_DP0,
    KV_DP1,
    args,
    banner,
    bundle,
    cache_config_metrics,
    log,
    one_line_capacity,
    probe_stub,
    real_log,
    two_line_capacity,
    version_body,
)
from tests._paths import REAL
from vllm_evidence.adapters.startup_log import StartupLog
from vllm_evidence.assessment import assess
from vllm_evidence.decisions import (
    CapacityDecision,
    CapacityEstablished,
    CapacityReason,
    CapacityRefused,
    CapacityReported,
)
from vllm_evidence.readback import CapturedReadback, HistoricalBundle, load
from vllm_evidence.upstream import CapacitySource

LABEL_0_32 = (
    'block_size="128",engine="0",kv_cache_max_concurrency="2048.0",'
    'kv_cache_size_tokens="4194304",num_gpu_blocks="32768"'
)
BLOCKS_ONLY = 'block_size="16",engine="0",num_gpu_blocks="1000"'
V0_PREFIX = "INFO 12-27 10:00:00 gpu_executor.py:76] "


def _capacity(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> CapacityDecision:
    return assess(front_door, startup_log).capacity


def _established(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> CapacityEstablished:
    decision = _capacity(front_door, startup_log)
    assert isinstance(decision, CapacityEstablished), decision
    return decision


def _refused(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> CapacityRefused:
    decision = _capacity(front_door, startup_log)
    assert isinstance(decision, CapacityRefused), decision
    return decision


def _reported(startup_log: StartupLog) -> CapacityReported:
    decision = _capacity(None, startup_log)
    assert isinstance(decision, CapacityReported), decision
    return decision


def _tokens(decision: CapacityEstablished | CapacityReported) -> list[tuple[str, int]]:
    return [(e.engine, e.tokens.value) for e in decision.engines]


# --- authoritative sources (≥0.27) -----------------------------------------------------------


def test_the_kv_cache_size_tokens_label_is_authoritative_from_0_27() -> None:
    decision = _established(bundle(version_body("0.32.0"), cache_config_metrics(LABEL_0_32)))
    assert _tokens(decision) == [("0", 4194304)]
    assert decision.engines[0].source_kind is CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS
    assert decision.corroborated_by == ()


def test_the_one_line_log_figure_is_authoritative_from_0_27() -> None:
    decision = _established(None, log(banner("0.32.0") + one_line_capacity("4,194,304")))
    assert _tokens(decision) == [("0", 4194304)]
    engine = decision.engines[0]
    assert engine.source_kind is CapacitySource.LOG_CAPACITY_LINE
    assert engine.max_model_len is not None
    assert engine.max_model_len.value == 2048
    assert engine.max_concurrency is not None
    assert str(engine.max_concurrency.value) == "2048.00"  # exact, as printed


def test_the_two_line_log_figure_of_0_27_is_authoritative() -> None:
    decision = _established(None, log(banner("0.27.0") + two_line_capacity("1,000,000")))
    assert _tokens(decision) == [("0", 1000000)]


def test_label_and_log_agreeing_corroborate() -> None:
    decision = _established(
        bundle(version_body("0.32.0"), cache_config_metrics(LABEL_0_32)),
        log(banner("0.32.0") + one_line_capacity("4,194,304")),
    )
    assert _tokens(decision) == [("0", 4194304)]
    assert [(e.engine, e.tokens.value) for e in decision.corroborated_by] == [("0", 4194304)]
    assert len(decision.laws) == 2


def test_label_and_log_disagreeing_pick_neither() -> None:
    refused = _refused(
        bundle(version_body("0.32.0"), cache_config_metrics(LABEL_0_32)),
        log(banner("0.32.0") + one_line_capacity("4,194,303")),
    )
    assert refused.reason is CapacityReason.SOURCES_DISAGREE
    assert sorted(e.tokens.value for e in refused.engines) == [4194303, 4194304]


def test_real_label_equals_the_real_log_line() -> None:
    decision = _established(load(REAL), real_log())
    assert _tokens(decision) == [("0", 4194304)]
    assert [e.tokens.value for e in decision.corroborated_by] == [4194304]
    # each source alone gives the same figure
    assert _tokens(_established(probe_stub())) == [("0", 4194304)]
    assert _tokens(_established(None, real_log())) == [("0", 4194304)]


# --- per DP engine ----------------------------------------------------------------------------


def _dp_labels(zero: int, one: int) -> str:
    return (
        f'block_size="16",engine="0",kv_cache_size_tokens="{zero}",num_gpu_blocks="250"'
        "} 1.0\nvllm:cache_config_info{"
        f'block_size="16",engine="1",kv_cache_size_tokens="{one}",num_gpu_blocks="250"'
    )


def test_each_dp_engine_has_its_own_figure() -> None:
    dp_log = log(
        banner("0.32.0")
        + one_line_capacity("1,000", KV_DP0, device="GPU")
        + one_line_capacity("2,000", KV_DP1, device="GPU")
    )
    from_log = _established(None, dp_log)
    assert _tokens(from_log) == [("0", 1000), ("1", 2000)]
    labels = bundle(version_body("0.32.0"), cache_config_metrics(_dp_labels(1000, 2000)))
    assert _tokens(_established(labels)) == [("0", 1000), ("1", 2000)]
    both = _established(labels, dp_log)
    assert [(e.engine, e.tokens.value) for e in both.corroborated_by] == [("0", 1000), ("1", 2000)]


def test_dp_engines_swapped_between_label_and_log_disagree() -> None:
    dp_log = log(
        banner("0.32.0")
        + one_line_capacity("2,000", KV_DP0, device="GPU")
        + one_line_capacity("1,000", KV_DP1, device="GPU")
    )
    labels = bundle(version_body("0.32.0"), cache_config_metrics(_dp_labels(1000, 2000)))
    assert _refused(labels, dp_log).reason is CapacityReason.SOURCES_DISAGREE


# --- reported, never established (before 0.27) -------------------------------------------------


def test_0_15_and_0_20_log_lines_are_not_group_aware() -> None:
    for version in ("0.15.0", "0.20.0"):
        reported = _reported(log(banner(version) + two_line_capacity("500,000")))
        assert reported.reason is CapacityReason.NOT_GROUP_AWARE
        assert _tokens(reported) == [("0", 500000)]
        assert "hybrid" in reported.detail


def test_0_10_log_lines_are_per_worker_before_reduction() -> None:
    worker0 = "(VllmWorker TP0 pid=11) INFO 09-03 02:12:26 [kv_cache_utils.py:868] "
    worker1 = "(VllmWorker TP1 pid=12) INFO 09-03 02:12:26 [kv_cache_utils.py:868] "
    text = (
        banner("0.10.1.1")
        + two_line_capacity("5,000", worker0)
        + two_line_capacity("4,000", worker1)
    )
    reported = _reported(log(text))
    assert reported.reason is CapacityReason.PER_WORKER_BEFORE_REDUCTION
    assert _tokens(reported) == [("0", 4000)]  # the smallest per-rank figure


def test_the_public_0_10_1_1_tp2_log_is_reported_per_worker() -> None:
    from tests._paths import PUBLIC
    from vllm_evidence.adapters.startup_log import read_startup_log

    read = read_startup_log(
        PUBLIC / "startup-log" / "dennislee22-v0.10.1.1-qwen2-7b-tp2-mp-vllmworker.txt"
    )
    assert isinstance(read, StartupLog)
    decision = assess(None, read).capacity
    assert isinstance(decision, CapacityReported)
    assert decision.reason is CapacityReason.PER_WORKER_BEFORE_REDUCTION


# --- block fields are never a V1 capacity -----------------------------------------------------


def test_block_labels_alone_are_insufficient_on_v1() -> None:
    for version in ("0.9.2", "0.32.0"):
        refused = _refused(bundle(version_body(version), cache_config_metrics(BLOCKS_ONLY)))
        assert refused.reason is CapacityReason.INSUFFICIENT_AUTHORITY
        assert refused.engines == ()
        assert "num_gpu_blocks=1000" in refused.detail


def test_the_0_6_6_block_product_is_established() -> None:
    labels = cache_config_metrics('block_size="16",num_gpu_blocks="507"')
    decision = _established(bundle(version_body("0.6.6.post1"), labels))
    assert _tokens(decision) == [("0", 8112)]  # 507 × 16
    assert decision.engines[0].source_kind is CapacitySource.LABEL_BLOCKS_TIMES_BLOCK_SIZE


def test_v0_block_lines_need_the_launchs_block_size() -> None:
    head = banner("0.6.6.post1")
    blocks = V0_PREFIX + "# GPU blocks: 507, # CPU blocks: 1024\n"
    refused = _refused(None, log(head + blocks))
    assert refused.reason is CapacityReason.BLOCK_SIZE_UNOBSERVED
    with_size = head + args("{'model': '/models/m', 'block_size': 16}") + blocks
    decision = _established(None, log(with_size))
    assert _tokens(decision) == [("0", 8112)]  # 507 × 16
    assert decision.engines[0].source_kind is CapacitySource.LOG_V0_BLOCKS


# --- unobserved and unscoped ----------------------------------------------------------------


def test_nothing_to_read_is_capacity_unobserved() -> None:
    assert _refused(bundle(version_body("0.32.0"))).reason is CapacityReason.CAPACITY_UNOBSERVED
    assert _refused(None, log(banner("0.32.0"))).reason is CapacityReason.CAPACITY_UNOBSERVED


def test_a_figure_without_a_version_from_its_source_is_version_unobserved() -> None:
    assert _refused(bundle(cache_config_metrics(LABEL_0_32))).reason is (
        CapacityReason.VERSION_UNOBSERVED
    )
    assert _refused(None, log(one_line_capacity("4,194,304"))).reason is (
        CapacityReason.VERSION_UNOBSERVED
    )
    # the log's version does not scope the label
    assert _refused(bundle(cache_config_metrics(LABEL_0_32)), log(banner("0.32.0"))).reason is (
        CapacityReason.VERSION_UNOBSERVED
    )


def test_a_release_between_disagreeing_read_releases_has_no_law() -> None:
    refused = _refused(bundle(version_body("0.25.0"), cache_config_metrics(LABEL_0_32)))
    assert refused.reason is CapacityReason.LAW_NOT_ESTABLISHED
    assert "0.25.0" in refused.detail
    from_log = _refused(None, log(banner("0.25.0") + two_line_capacity("1,000")))
    assert from_log.reason is CapacityReason.LAW_NOT_ESTABLISHED


def test_a_release_outside_the_table_is_not_established() -> None:
    refused = _refused(bundle(version_body("99.0"), cache_config_metrics(LABEL_0_32)))
    assert refused.reason is CapacityReason.VERSION_NOT_ESTABLISHED
    assert "99.0" in refused.detail


def test_the_v0_engine_banner_alone_is_no_capacity() -> None:
    text = f"{API}vLLM API server version 0.6.6.post1\n"
    assert _refused(None, log(text)).reason is CapacityReason.CAPACITY_UNOBSERVED
