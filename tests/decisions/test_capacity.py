"""KV-cache capacity: each authority rule refuses, reports or establishes, by release."""

from __future__ import annotations

import pytest

from tests._evidence import (
    API,
    KV_DP0,
    KV_DP1,
    args,
    assess_joined,
    banner,
    bundle,
    cache_config_metrics,
    engine_init,
    log,
    one_line_capacity,
    probe_stub,
    real_log,
    server_info_json,
    two_line_capacity,
    version_body,
)
from tests._paths import REAL
from tests.decisions._wording import OUTSIDE_99, RESTARTED, RESTARTED_REMEDY
from tests.decisions._wording import says as _says
from vllm_evidence._adapters.outcome import Unparsed
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import assess
from vllm_evidence._readback import CapturedReadback, HistoricalBundle, load
from vllm_evidence.decisions import (
    CapacityDecision,
    CapacityEstablished,
    CapacityReason,
    CapacityRefused,
    CapacityReported,
    LogJoinReason,
)
from vllm_evidence.testing._stub import Fault
from vllm_evidence.upstream import (
    CapacityLaw,
    CapacitySource,
    Route,
)

LABEL_0_32 = (
    'block_size="128",engine="0",kv_cache_max_concurrency="2048.0",'
    'kv_cache_size_tokens="4194304",num_gpu_blocks="32768"'
)


BLOCKS_ONLY = 'block_size="16",engine="0",num_gpu_blocks="1000"'


V0_PREFIX = "INFO 12-27 10:00:00 gpu_executor.py:76] "


def _capacity(
    front_door: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> CapacityDecision:
    return assess_joined(front_door, startup_log).capacity


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
    decision = _established(load(REAL, bodies=True), real_log())
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
    from vllm_evidence._adapters.startup_log import read_startup_log

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


def _v0_concurrency(blocks: int, length: int, concurrency: str) -> StartupLog:
    """A V0 launch that prints no block size: its block line and the concurrency line the
    executor prints right after it (v0.8.5 ``executor/executor_base.py`` L112-118)."""
    return log(
        banner("0.8.5")
        + V0_PREFIX
        + f"# cpu blocks: {blocks}, # CPU blocks: 0\n"
        + V0_PREFIX
        + f"Maximum concurrency for {length} tokens per request: {concurrency}x\n"
    )


def test_a_v0_concurrency_line_that_admits_one_integer_block_size_gives_it() -> None:
    # 65,536 × B / 2048 printed as 512.00: B in [15.99984, 16.00016], so B = 16.
    decision = _established(None, _v0_concurrency(65536, 2048, "512.00"))
    assert _tokens(decision) == [("0", 1_048_576)]  # 65,536 × 16
    (engine,) = decision.engines
    assert engine.source_kind is CapacitySource.LOG_V0_BLOCKS
    assert engine.block_size_note == (
        "block size 16: the only integer B with 65,536 × B / 2048 printed as 512.00x on "
        "line 3 (V0 prints no block size)"
    )
    assert "block size 16: the only integer B" in decision.detail
    # 507 × B / 2048 printed as 3.96: B in [15.97, 16.01], so B = 16 again.
    assert _tokens(_established(None, _v0_concurrency(507, 2048, "3.96"))) == [("0", 8112)]


def test_a_coarse_v0_concurrency_line_pins_no_block_size() -> None:
    # 10 × B / 2048 printed as 0.08: B in [15.36, 17.41], both 16 and 17 fit.
    refused = _refused(None, _v0_concurrency(10, 2048, "0.08"))
    assert refused.reason is CapacityReason.BLOCK_SIZE_UNOBSERVED
    assert refused.detail.endswith(
        "the concurrency line (line 3: 0.08x for 2048 tokens) fits block sizes 16 to 17 "
        "with 10 blocks (vLLM rounds it to 2 decimals), so it does not pin one"
    )


def test_a_v0_concurrency_line_that_fits_no_block_size_is_refused() -> None:
    # 507 × B / 2048 printed as 3.97: B in [16.017, 16.057], no integer.
    refused = _refused(None, _v0_concurrency(507, 2048, "3.97"))
    assert refused.reason is CapacityReason.BLOCK_SIZE_UNOBSERVED
    assert "fits no integer block size with 507 blocks: the two lines disagree" in (refused.detail)


def test_a_v0_concurrency_line_not_printed_with_two_decimals_is_not_read() -> None:
    for printed in ("512.0", "512.000", "512"):
        refused = _refused(None, _v0_concurrency(65536, 2048, printed))
        assert refused.reason is CapacityReason.BLOCK_SIZE_UNOBSERVED
        assert "is not printed with vLLM's 2 decimals, so it bounds nothing" in refused.detail


def test_a_printed_block_size_is_used_before_the_concurrency_line() -> None:
    text = (
        banner("0.8.5")
        + args("{'model': '/models/m', 'block_size': 32}")
        + V0_PREFIX
        + "# cpu blocks: 65536, # CPU blocks: 0\n"
        + V0_PREFIX
        + "Maximum concurrency for 2048 tokens per request: 512.00x\n"
    )
    decision = _established(None, log(text))
    assert _tokens(decision) == [("0", 2_097_152)]  # 65,536 × 32, as printed
    assert decision.engines[0].block_size_note is None


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
    refused = _refused(bundle(version_body("0.24.0rc1"), cache_config_metrics(LABEL_0_32)))
    assert refused.reason is CapacityReason.LAW_NOT_ESTABLISHED
    assert "0.24.0rc1" in refused.detail
    # The log line's law changed between 0.20.0 and 0.20.1 (both read): a build between
    # them has none, 0.20.1 and 0.21.0 (inside 0.20.1 .. 0.33.0) read it as authoritative.
    from_log = _refused(None, log(banner("0.20.1rc1") + two_line_capacity("1,000")))
    assert from_log.reason is CapacityReason.LAW_NOT_ESTABLISHED
    for grown_in in ("0.20.1", "0.21.0", "0.23.0"):
        grown = _established(None, log(banner(grown_in) + two_line_capacity("1,000")))
        assert [str(e.tokens) for e in grown.engines] == ["1,000 tokens"], grown_in
    old = _capacity(None, log(banner("0.20.0") + two_line_capacity("1,000")))
    assert isinstance(old, CapacityReported)
    assert old.reason is CapacityReason.NOT_GROUP_AWARE


def test_a_release_outside_the_table_is_not_established() -> None:
    refused = _refused(bundle(version_body("99.0"), cache_config_metrics(LABEL_0_32)))
    assert refused.reason is CapacityReason.VERSION_NOT_ESTABLISHED
    assert "99.0" in refused.detail


def test_the_v0_engine_banner_alone_is_no_capacity() -> None:
    text = f"{API}vLLM API server version 0.6.6.post1\n"
    assert _refused(None, log(text)).reason is CapacityReason.CAPACITY_UNOBSERVED


# --- which source it may read: an unparsed /metrics read, a partly labelled DP pair ----


def test_an_unparsed_metrics_read_is_named_not_called_unobserved() -> None:
    door = probe_stub(REAL, faults={Route.METRICS: Fault(body=b"<html>oops</html>\n")})
    decision = assess(door).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.METRICS_UNPARSED
    assert decision.detail.startswith("/metrics: unparsed")
    failing = probe_stub(REAL, faults={Route.METRICS: Fault(status=500)})
    decision = assess(failing).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.detail == "/metrics: http_error"


def test_capacity_for_one_of_two_resolved_engines_is_refused() -> None:
    """DP=2 resolved by /server_info, but /metrics labels only engine 0."""
    from tests._evidence import cache_config_metrics, server_info_json

    one = bundle(
        version_body("0.32.0"),
        server_info_json(dp=2),
        cache_config_metrics('engine="0",kv_cache_size_tokens="4096"'),
    )
    decision = assess(one).capacity
    assert isinstance(decision, CapacityRefused)
    assert decision.reason is CapacityReason.ENGINES_MISSING
    assert "engine(s) 1 have no capacity figure" in decision.detail
    both = bundle(
        version_body("0.32.0"),
        server_info_json(dp=2),
        cache_config_metrics(
            'engine="0",kv_cache_size_tokens="4096"', 'engine="1",kv_cache_size_tokens="4096"'
        ),
    )
    established = assess(both).capacity
    assert isinstance(established, CapacityEstablished)
    assert [e.engine for e in established.engines] == ["0", "1"]


# --- engine attribution, scanning order, provenance (pinned by mutation testing) ------


def _established_capacity(*args: object) -> CapacityEstablished:
    decision = assess(*args).capacity  # type: ignore[arg-type]  # front door / log as given
    assert isinstance(decision, CapacityEstablished), decision
    return decision


def test_engine_index_from_a_0_9_engine_core_tag() -> None:
    """0.8.5/0.9.2 name the engine process ``EngineCore_<i>``."""
    prefix = "(EngineCore_1 pid=201) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "
    decision = _established_capacity(
        None, log(banner("0.32.0") + one_line_capacity("1,024", prefix))
    )
    assert [(e.engine, e.tokens.value) for e in decision.engines] == [("1", 1024)]


def test_engine_index_defaults_to_zero_without_a_dp_tag() -> None:
    prefix = "(EngineCore pid=200) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "
    decision = _established_capacity(
        None, log(banner("0.32.0") + one_line_capacity("1,024", prefix))
    )
    assert decision.engines[0].engine == "0"


def test_a_series_without_the_label_does_not_stop_the_scan() -> None:
    front = bundle(
        version_body("0.32.0"),
        cache_config_metrics(
            'block_size="16",engine="0"', 'engine="1",kv_cache_size_tokens="2048"'
        ),
    )
    decision = _established_capacity(front)
    assert [(e.engine, e.tokens.value) for e in decision.engines] == [("1", 2048)]
    assert decision.engines[0].source.as_json() == {"kind": "front_door", "where": "GET /metrics"}


def test_a_series_without_an_engine_label_is_engine_zero() -> None:
    front = bundle(version_body("0.32.0"), cache_config_metrics('kv_cache_size_tokens="4096"'))
    assert _established_capacity(front).engines[0].engine == "0"


def test_a_v0_block_line_before_a_v1_line_does_not_stop_the_scan() -> None:
    text = (
        banner("0.32.0") + "(EngineCore pid=200) INFO 11-30 04:11:21 [executor_base.py:1] "
        "# cuda blocks: 10, # CPU blocks: 5\n" + one_line_capacity("3,000")
    )
    decision = _established_capacity(None, log(text))
    assert [e.tokens.value for e in decision.engines] == [3000]


def test_a_log_capacity_source_names_its_line_and_process() -> None:
    decision = _established_capacity(None, log(banner("0.32.0") + one_line_capacity("3,000")))
    assert decision.engines[0].source.as_json() == {
        "kind": "startup_log",
        "where": "log launch 0, line 2 (EngineCore pid=200)",
    }


def test_v0_block_size_from_the_engine_line() -> None:
    engine = (
        "INFO 12-27 10:00:05 llm_engine.py:234] Initializing an LLM engine (v0.6.6.post1) "
        "with config: model='/m', tensor_parallel_size=1, pipeline_parallel_size=1, "
        "block_size=32\n"
    )
    blocks = "INFO 12-27 10:00:20 gpu_executor.py:76] # GPU blocks: 100, # CPU blocks: 7\n"
    text = "INFO 12-27 10:00:00 api_server.py:651] vLLM API server version 0.6.6.post1\n"
    decision = _established_capacity(None, log(text + engine + blocks))
    assert decision.engines[0].tokens.value == 3200


def test_two_line_pre_0_27_is_not_established() -> None:
    decision = assess(None, log(banner("0.20.0") + two_line_capacity("5,000"))).capacity
    assert not isinstance(decision, CapacityEstablished | CapacityRefused)
    assert decision.reason.value == "not_group_aware"


# --- what a refusal carries besides its words (witnessed in both directions) -----------


FrontDoor = CapturedReadback | HistoricalBundle


def _capacity_refused(
    front_door: FrontDoor | None, startup_log: StartupLog | None = None
) -> CapacityRefused:
    decision = assess_joined(front_door, startup_log).capacity
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
    # and a front door resolving DP=2 is another launch than a log printing DP=1: the log
    # is not joined to it, so none of its figures is that server's
    front = bundle(version_body("0.32.0"), server_info_json(dp=2))
    assessment = assess_joined(front, _dp_log(1, one_line_capacity("1,000", KV_DP0, "GPU")))
    assert assessment.capacity.reason is CapacityReason.LOG_NOT_JOINED
    assert assessment.log_join.reason is LogJoinReason.CONFIGURATION_CONTRADICTED
    launch_only = assess(None, _dp_log(1, one_line_capacity("1,000", KV_DP0, "GPU"))).capacity
    assert isinstance(launch_only, CapacityEstablished), launch_only


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


# --- the law each refusal used, or that none applied ---------------------------------


def test_capacity_refusals_carry_every_law_they_weighed() -> None:
    label = 'engine="0",kv_cache_size_tokens="4096"'
    disagree = assess_joined(
        bundle(version_body("0.32.0"), cache_config_metrics(label)),
        log(banner("0.32.0") + one_line_capacity("8,192")),
    ).capacity
    assert isinstance(disagree, CapacityRefused)
    assert disagree.reason is CapacityReason.SOURCES_DISAGREE
    assert [law.question.key for law in disagree.laws] == [
        "capacity.label_kv_cache_size_tokens",
        "capacity.log_capacity_line",
    ]
    assert sorted(e.tokens.value for e in disagree.engines) == [4096, 8192]
    blocks = assess(
        bundle(version_body("0.32.0"), cache_config_metrics('block_size="16",num_gpu_blocks="9"'))
    ).capacity
    assert isinstance(blocks, CapacityRefused)
    assert blocks.reason is CapacityReason.INSUFFICIENT_AUTHORITY
    assert all(isinstance(law, CapacityLaw) for law in blocks.laws)
    assert [law.question.key for law in blocks.laws] == ["capacity.label_blocks_times_block_size"]
    unknown = assess(bundle(version_body("0.24.0rc1"), cache_config_metrics(label))).capacity
    assert isinstance(unknown, CapacityRefused)
    assert unknown.reason is CapacityReason.LAW_NOT_ESTABLISHED
    assert [type(law).__name__ for law in unknown.laws] == ["LawNotEstablished"]


# --- what a person reads: each refusal's detail and remedy, written out by hand ---------
# A refusal names the earliest missing piece in words; the CLI prints them and policy
# authors quote them.  Each test below builds one case of one arm and writes the expected
# text out in full (the facts of the case filled in by hand), so that a changed word, a
# lost fact or a clause forced on or off fails here.  The tests above decide *which* arm a
# case reaches; these pin what the arm says.


KV_LINE_2 = "log launch 0, line 2 (EngineCore pid=200)"


def test_capacity_established_names_engine_figure_and_source() -> None:
    labels = bundle(version_body("0.32.0"), cache_config_metrics(LABEL_0_32))
    alone = assess(labels).capacity
    assert isinstance(alone, CapacityEstablished)
    assert alone.detail == "engine 0: 4,194,304 tokens (GET /metrics)"
    both = assess_joined(labels, log(banner("0.32.0") + one_line_capacity("4,194,304"))).capacity
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
        _capacity_refused(one),
        CapacityReason.ENGINES_MISSING,
        "the same source resolves 2 DP engines, but engine(s) 1 have no capacity figure",
        "read every DP engine (under external load balancing, each API server reports only "
        "its own engine)",
    )


def test_capacity_sources_disagree() -> None:
    _says(
        _capacity_refused(
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
        _capacity_refused(None, log(banner("0.6.6.post1") + blocks)),
        CapacityReason.BLOCK_SIZE_UNOBSERVED,
        "V0 block line(s) seen (507 blocks, line 2) but the launch never prints its block "
        "size, and no 'Maximum concurrency' line of the same process follows the block line, "
        "so nothing pins the block size either",
        "give a launch that prints its block size",
    )


def test_capacity_block_labels_alone() -> None:
    only_blocks = cache_config_metrics('block_size="16",engine="0",num_gpu_blocks="1000"')
    _says(
        _capacity_refused(bundle(version_body("0.32.0"), only_blocks)),
        CapacityReason.INSUFFICIENT_AUTHORITY,
        "only num_gpu_blocks=1000 and block_size=16 are labelled; V1: num_gpu_blocks is summed "
        "over DP engines ('None' in 0.8.5) and block_size is a minimum over KV-cache groups, "
        "so their product is never a token capacity",
        "give the launch's startup log (its capacity line), or probe a ≥0.27 server "
        "(kv_cache_size_tokens)",
    )


def test_capacity_nothing_to_read() -> None:
    _says(
        _capacity_refused(bundle(version_body("0.32.0"))),
        CapacityReason.CAPACITY_UNOBSERVED,
        "no capacity line in the log and no kv_cache_size_tokens label",
        "give the launch's startup log, or probe /metrics of a ≥0.27 server",
    )


def test_capacity_figure_without_its_version() -> None:
    _says(
        _capacity_refused(bundle(cache_config_metrics(LABEL_0_32))),
        CapacityReason.VERSION_UNOBSERVED,
        "label_kv_cache_size_tokens seen, but no version scopes it",
        "read the version from the same source",
    )


def test_capacity_release_between_disagreeing_readings() -> None:
    """0.23.0 has no such label, 0.24.0 sets it: a build between them gets no answer."""
    _says(
        _capacity_refused(bundle(version_body("0.24.0rc1"), cache_config_metrics(LABEL_0_32))),
        CapacityReason.LAW_NOT_ESTABLISHED,
        "label_kv_cache_size_tokens: not established for 0.24.0rc1 (laws read for "
        "0.6.6.post1 .. 0.23.0, 0.24.0 .. 0.33.0)",
        "none: no law covers this source in this release",
    )


def test_the_label_of_a_release_after_the_reading_that_set_it_is_read() -> None:
    """0.25.0 lies between 0.24.0 and 0.26.0, both of which set the label alike."""
    decision = _established(bundle(version_body("0.25.0"), cache_config_metrics(LABEL_0_32)))
    assert _tokens(decision) == [("0", 4194304)]
    assert decision.engines[0].source_kind is CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS


def test_capacity_release_outside_the_table() -> None:
    _says(
        _capacity_refused(bundle(version_body("99.0"), cache_config_metrics(LABEL_0_32))),
        CapacityReason.VERSION_NOT_ESTABLISHED,
        OUTSIDE_99,
        "none: the release is outside the law table",
    )


def test_capacity_metrics_unparsed() -> None:
    failing = probe_stub(REAL, faults={Route.METRICS: Fault(status=500)})
    _says(
        _capacity_refused(failing),
        CapacityReason.METRICS_UNPARSED,
        "/metrics: http_error",
        "probe again once /metrics answers in the text format",
    )


def test_capacity_restarted_front_door() -> None:
    _says(
        _capacity_refused(probe_stub(REAL, restart_after_metrics_reads=1)),
        CapacityReason.FRONT_DOOR_RESTARTED,
        RESTARTED,
        RESTARTED_REMEDY,
    )


def test_engines_past_the_resolved_dp_size_are_a_conflict_not_more_capacity() -> None:
    """Issue 15, item 8: DP=1 by /server_info but series for engines 0 and 1."""
    two = bundle(
        version_body("0.32.0"),
        server_info_json(dp=1),
        cache_config_metrics(
            'engine="0",kv_cache_size_tokens="4096"', 'engine="1",kv_cache_size_tokens="4096"'
        ),
    )
    _says(
        _capacity_refused(two),
        CapacityReason.FIGURES_CONFLICT,
        "the same source resolves 1 DP engine(s), but has capacity figures for engine(s) 1 past it",
        "probe again; if it persists, the server's /server_info and /metrics describe "
        "different deployments",
    )


def test_two_figures_for_one_engine_are_a_conflict_not_the_smaller() -> None:
    """Issue 15, item 8: two kv_cache_size_tokens series for engine 0 that differ."""
    conflicting = bundle(
        version_body("0.32.0"),
        cache_config_metrics(
            'engine="0",kv_cache_size_tokens="4096"', 'engine="0",kv_cache_size_tokens="8192"'
        ),
    )
    refused = _capacity_refused(conflicting)
    assert refused.reason is CapacityReason.FIGURES_CONFLICT
    assert refused.detail == (
        "engine 0 has 2 different capacity figures from one source: 4,096 tokens, "
        "8,192 tokens (GET /metrics)"
    )
    assert refused.engines == ()
    repeated = bundle(
        version_body("0.32.0"),
        cache_config_metrics(
            'engine="0",kv_cache_size_tokens="4096"', 'engine="0",kv_cache_size_tokens="4096"'
        ),
    )
    assert isinstance(_capacity(repeated), CapacityEstablished)


def test_a_log_figure_past_the_logs_dp_size_is_a_conflict() -> None:
    refused = _capacity_refused(
        None,
        _dp_log(
            1,
            one_line_capacity("1,000", KV_DP0, "GPU"),
            one_line_capacity("1,000", KV_DP1, "GPU"),
        ),
    )
    assert refused.reason is CapacityReason.FIGURES_CONFLICT
    assert "engine(s) 1 past it" in refused.detail


# --- a log of another build: what it may and may not change (pinned by mutation testing) --


@pytest.mark.parametrize(
    "after_banner",
    [one_line_capacity("4,194,304"), ""],
    ids=["with-its-capacity-line", "with-no-capacity-line"],
)
def test_a_log_of_another_build_is_not_joined_whatever_it_holds(after_banner: str) -> None:
    """The log's launch is another build (0.32.0 against /version 0.33.0): none of it is
    read, its capacity line included.  With no capacity line in it, reading it anyway
    would give the front door's own ``capacity_unobserved``; the refusal names the log
    that is not joined instead."""
    _says(
        _capacity_refused(bundle(version_body("0.33.0")), log(banner("0.32.0") + after_banner)),
        CapacityReason.LOG_NOT_JOINED,
        "the startup log is not joined to this front door (version_contradicted: the log's "
        "launch reports vLLM 0.32.0 but /version reports 0.33.0: they are not the same "
        "server); the front door alone: no capacity line in the log and no "
        "kv_cache_size_tokens label",
        "give the startup log of the serving launch, with its launch receipt",
    )


def test_a_log_of_another_build_does_not_turn_an_unparsed_metrics_into_log_not_joined() -> None:
    """/metrics unparsed on a 0.33.0 front door beside a 0.32.0 log with a capacity line:
    the log is another server's, so its figure is not read and the front door's own
    refusal stands (reading the figure would establish the log's launch and so refuse
    ``log_not_joined``)."""
    door = bundle(version_body("0.33.0"), statuses={Route.METRICS: 500})
    _says(
        _capacity_refused(door, log(banner("0.32.0") + one_line_capacity("4,194,304"))),
        CapacityReason.METRICS_UNPARSED,
        "/metrics: http_error",
        "probe again once /metrics answers in the text format",
    )


def test_a_log_figure_past_the_logs_dp_size_names_the_log_in_its_remedy() -> None:
    _says(
        _capacity_refused(
            None,
            _dp_log(
                1,
                one_line_capacity("1,000", KV_DP0, "GPU"),
                one_line_capacity("1,000", KV_DP1, "GPU"),
            ),
        ),
        CapacityReason.FIGURES_CONFLICT,
        "the same source resolves 1 DP engine(s), but has capacity figures for engine(s) 1 past it",
        "check the startup log: its capacity lines name engines its own configuration does not "
        "have",
    )


def test_a_derived_v0_figure_keeps_its_concurrency_line() -> None:
    decision = _established(None, _v0_concurrency(65536, 2048, "512.00"))
    (engine,) = decision.engines
    assert engine.max_concurrency is not None
    assert str(engine.max_concurrency.value) == "512.00"
    assert engine.max_model_len is not None
    assert engine.max_model_len.value == 2048


def test_a_concurrency_line_before_the_block_line_does_not_pin_its_block_size() -> None:
    # The concurrency line follows no block line of its own; the block line after it has
    # none, so nothing pins its block size.
    text = (
        banner("0.8.5")
        + V0_PREFIX
        + "Maximum concurrency for 2048 tokens per request: 512.00x\n"
        + V0_PREFIX
        + "# cpu blocks: 65536, # CPU blocks: 0\n"
    )
    refused = _refused(None, log(text))
    assert refused.reason is CapacityReason.BLOCK_SIZE_UNOBSERVED
    assert (
        "V0 block line(s) seen (65,536 blocks, line 3) but the launch never prints its block "
        "size, and no 'Maximum concurrency' line of the same process follows the block line, "
        "so nothing pins the block size either"
    ) in refused.detail


def test_a_max_model_len_of_one_still_pins_a_block_size() -> None:
    # 10 × B / 1 printed as 160.00: B in [15.9995, 16.0005], so B = 16.
    assert _tokens(_established(None, _v0_concurrency(10, 1, "160.00"))) == [("0", 160)]


def test_a_block_size_of_one_is_derived() -> None:
    # 100 × B / 10000 printed as 0.01: B in [0.5, 1.5], so B = 1.
    assert _tokens(_established(None, _v0_concurrency(100, 10000, "0.01"))) == [("0", 100)]


def test_the_rounding_bound_is_half_a_hundredth() -> None:
    # 351 × 16 / 32000 = 0.1755, printed 0.18: 0.0045 off, inside the 0.005 bound.
    # B in [15.954, 16.866], so B = 16; a bound of 1/300 or 1/242 would admit none.
    assert _tokens(_established(None, _v0_concurrency(351, 32000, "0.18"))) == [("0", 5616)]


def test_a_concurrency_exactly_half_a_hundredth_off_still_fits() -> None:
    # 7 × 16 / 640 = 0.175 exactly, printed 0.18: B = 16 is the low end of the bound.
    assert _tokens(_established(None, _v0_concurrency(7, 640, "0.18"))) == [("0", 112)]
    # 37 × 16 / 3200 = 0.185 exactly, printed 0.18: B = 16 is the high end of the bound.
    assert _tokens(_established(None, _v0_concurrency(37, 3200, "0.18"))) == [("0", 592)]


def test_the_float_division_slack_is_one_plus_the_concurrency_over_two_to_the_fifty() -> None:
    # Printed 0.00: B = 1 fits when N / L is at most 1/200 + (0 + 1) / 2**50.
    at = 2**50 + 200  # N / L = 1/200 + 1/2**50 exactly: B = 1, at the slack's edge.
    assert _tokens(_established(None, _v0_concurrency(at, 200 * 2**50, "0.00"))) == [("0", at)]
    past = 2**49 + 200  # N / L = 1/200 + 2/2**50: past the slack, no block size fits.
    refused = _refused(None, _v0_concurrency(past, 200 * 2**49, "0.00"))
    assert refused.reason is CapacityReason.BLOCK_SIZE_UNOBSERVED
    assert "fits no integer block size with 562,949,953,421,512 blocks: the two lines disagree" in (
        refused.detail
    )
