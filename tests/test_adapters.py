"""Each front-door adapter, on real bodies (expected values copied by hand) and on bad ones."""

from __future__ import annotations

from decimal import Decimal

import pytest
from packaging.version import Version

from tests._paths import public_capture, real_body
from vllm_evidence.adapters.failure import BodyParseFailure
from vllm_evidence.adapters.health import HealthAnswer, parse_health
from vllm_evidence.adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence.adapters.models import ServedModels, parse_models
from vllm_evidence.adapters.server_info import (
    ServerInfo,
    ServerInfoForm,
    parse_server_info_json,
    parse_server_info_text,
    split_config_text,
)
from vllm_evidence.adapters.version import SelfReportedVersion, parse_version
from vllm_evidence.adapters.world_size import WorldSizeProduct, parse_world_size
from vllm_evidence.measure import TokenCount
from vllm_evidence.upstream.routes import ParallelEvidenceKind, Route


def _is_a(value: object, cls: type) -> bool:
    return isinstance(value, cls)


# ------------------------------------------------------------------------- /version


def test_version_real_capture() -> None:
    parsed = parse_version(real_body("version"))
    assert isinstance(parsed, SelfReportedVersion)
    assert parsed.raw == "0.32.0"
    assert parsed.version == Version("0.32.0")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0.25.2.dev0+g752a3a504.d20260714", Version("0.25.2.dev0+g752a3a504.d20260714")),
        ("0.6.6.post1", Version("0.6.6.post1")),
        ("0.10.1.1", Version("0.10.1.1")),
    ],
)
def test_version_dev_post_local(raw: str, expected: Version) -> None:
    parsed = parse_version(f'{{"version": "{raw}"}}'.encode())
    assert isinstance(parsed, SelfReportedVersion)
    assert parsed.raw == raw
    assert parsed.version == expected


@pytest.mark.parametrize(
    "body",
    [b'{"version": "not a version"}', b'{"version": 32}', b"[]", b"<html>", b"\xff\xfe", b""],
)
def test_version_unparseable_is_a_failure(body: bytes) -> None:
    parsed = parse_version(body)
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route is Route.VERSION
    assert parsed.reason


# ------------------------------------------------------------------------ /v1/models


def test_models_real_capture() -> None:
    parsed = parse_models(real_body("v1_models"))
    assert isinstance(parsed, ServedModels)
    assert len(parsed.cards) == 1
    card = parsed.cards[0]
    assert card.served_id == "tiny-llama:q4-alias"
    assert card.owned_by == "vllm"
    assert card.root == "/models/tiny-llama"
    assert card.parent is None
    assert card.max_model_len == TokenCount(2048)


def test_models_lora_cards() -> None:
    parsed = parse_models(public_capture("models/aibrix-runtime-lora-adapters.txt"))
    assert isinstance(parsed, ServedModels)
    assert [c.served_id for c in parsed.cards] == [
        "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "lora-1",
        "lora-2",
    ]
    base, lora1, lora2 = parsed.cards
    assert base.parent is None
    assert base.max_model_len == TokenCount(32768)
    assert lora1.parent == "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    assert lora1.root == "bharati2324/Qwen2.5-1.5B-Instruct-Code-LoRA-r16v2"
    assert lora1.max_model_len is None
    assert lora2.root == lora1.root


@pytest.mark.parametrize(
    "body",
    [
        b'{"data": [{"id": "m", "max_model_len": 2048.5}]}',
        b'{"data": [{"id": "m", "max_model_len": "2048"}]}',
        b'{"data": [{"id": "m", "max_model_len": -1}]}',
        b'{"data": [{"root": "/x"}]}',
        b'{"data": [{"id": "m", "parent": 3}]}',
        b'{"object": "list"}',
        b'{"error": "Unauthorized"}',
        b"not json",
    ],
)
def test_models_malformed_is_a_failure(body: bytes) -> None:
    parsed = parse_models(body)
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route is Route.MODELS


# --------------------------------------------------------------------------- /metrics

# Copied by hand from tests/fixtures/captures/vllm-0.32.0-cpu-tp1-devmode/metrics.body
REAL_CACHE_CONFIG_LABELS = {
    "_block_size_resolved": "True",
    "block_size": "128",
    "cache_dtype": "auto",
    "cache_hit_alignment_tokens": "None",
    "effective_attention_block_size": "128",
    "enable_mamba_shared_prefix_checkpoint": "False",
    "enable_prefix_caching": "True",
    "engine": "0",
    "gpu_memory_utilization": "0.92",
    "hash_block_size": "None",
    "is_attention_free": "False",
    "kv_cache_dtype_skip_layers": "[]",
    "kv_cache_layout": "None",
    "kv_cache_max_concurrency": "2048.0",
    "kv_cache_memory_bytes": "1073741824",
    "kv_cache_size_tokens": "4194304",
    "kv_offloading_backend": "native",
    "kv_offloading_size": "None",
    "kv_sharing_fast_prefill": "False",
    "mamba_block_size": "None",
    "mamba_cache_dtype": "auto",
    "mamba_cache_mode": "none",
    "mamba_page_size_padded": "None",
    "mamba_ssm_cache_dtype": "auto",
    "num_cpu_blocks": "None",
    "num_gpu_blocks": "32768",
    "num_gpu_blocks_override": "None",
    "prefix_cache_retention_interval": "0",
    "prefix_caching_hash_algo": "sha256",
    "prefix_match_unit": "None",
    "replayssm_buffer_len": "16",
    "skip_page_size_padded": "None",
    "sliding_window": "None",
    "swa_bounded_replay": "True",
    "use_kda_recoverssm": "False",
    "use_replayssm": "False",
    "user_specified_block_size": "False",
}


def test_metrics_real_capture() -> None:
    parsed = parse_metrics(real_body("metrics"))
    assert isinstance(parsed, MetricsObservation)
    assert len(parsed.cache_config_info) == 1
    series = parsed.cache_config_info[0]
    assert series.labels == REAL_CACHE_CONFIG_LABELS
    assert series.engine == "0"
    assert series.value == Decimal("1.0")
    assert TokenCount.parse(series.label("kv_cache_size_tokens") or "") == TokenCount(4194304)
    assert parsed.process_start_time is not None
    assert parsed.process_start_time.seconds == Decimal("1.79601185221e+09")
    assert {"vllm:cache_config_info", "vllm:num_requests_running"} <= parsed.vllm_families
    assert "process_start_time_seconds" not in parsed.vllm_families
    assert all(name.startswith("vllm:") for name in parsed.vllm_families)


def test_metrics_v0_era_without_help_or_engine() -> None:
    parsed = parse_metrics(public_capture("metrics/aibrix-runtime-qwen2.5-coder-v0engine.txt"))
    assert isinstance(parsed, MetricsObservation)
    assert len(parsed.cache_config_info) == 1
    series = parsed.cache_config_info[0]
    assert series.engine is None
    assert series.labels == {
        "block_size": "16",
        "cache_dtype": "auto",
        "calculate_kv_scales": "False",
        "cpu_offload_gb": "0",
        "enable_prefix_caching": "False",
        "gpu_memory_utilization": "0.9",
        "is_attention_free": "False",
        "num_cpu_blocks": "9362",
        "num_gpu_blocks": "81767",
        "num_gpu_blocks_override": "None",
        "sliding_window": "None",
        "swap_space_bytes": "4294967296",
    }
    assert parsed.process_start_time is None
    assert "vllm:num_requests_swapped" in parsed.vllm_families


def test_metrics_escapes_whitespace_and_timestamps() -> None:
    body = (
        b"# TYPE vllm:cache_config_info gauge\n"
        b'  vllm:cache_config_info { a = "x\\"y" , b="back\\\\slash",c="line\\nbreak",'
        b'd="keep\\q", engine="1", } 1.0 1700000000000\n'
        b"process_start_time_seconds   1.5e+09  \n"
    )
    parsed = parse_metrics(body)
    assert isinstance(parsed, MetricsObservation)
    assert parsed.cache_config_info[0].labels == {
        "a": 'x"y',
        "b": "back\\slash",
        "c": "line\nbreak",
        "d": "keep\\q",
        "engine": "1",
    }
    assert parsed.process_start_time is not None
    assert parsed.process_start_time.seconds == Decimal(1500000000)


def test_metrics_one_series_per_engine() -> None:
    body = (
        b'vllm:cache_config_info{engine="0",num_gpu_blocks="200"} 1.0\n'
        b'vllm:cache_config_info{engine="1",num_gpu_blocks="200"} 1.0\n'
    )
    parsed = parse_metrics(body)
    assert isinstance(parsed, MetricsObservation)
    assert [engine for engine, _ in parsed.series_by_engine()] == ["0", "1"]
    assert parsed.process_start_time is None


def test_metrics_does_not_take_a_longer_name_for_the_target() -> None:
    body = b'vllm:cache_config_info_extra{a="b"} 1\nprocess_start_time_seconds_x 5\n'
    parsed = parse_metrics(body)
    assert isinstance(parsed, MetricsObservation)
    assert parsed.cache_config_info == ()
    assert parsed.process_start_time is None


@pytest.mark.parametrize(
    "body",
    [
        b'vllm:cache_config_info{a="unterminated} 1\n',
        b"vllm:cache_config_info{a=unquoted} 1\n",
        b'vllm:cache_config_info{a="b"}\n',
        b"process_start_time_seconds one\n",
        b"process_start_time_seconds 1\nprocess_start_time_seconds 2\n",
        b"\xff\xfe",
        b"",
    ],
)
def test_metrics_malformed_is_a_failure(body: bytes) -> None:
    parsed = parse_metrics(body)
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route is Route.METRICS


# ----------------------------------------------------------------------- /server_info


def test_server_info_text_real_capture() -> None:
    parsed = parse_server_info_text(real_body("server_info"))
    assert isinstance(parsed, ServerInfo)
    assert parsed.form is ServerInfoForm.TEXT
    assert parsed.parallel.tensor_parallel_size == 1
    assert parsed.parallel.pipeline_parallel_size == 1
    assert parsed.parallel.data_parallel_size == 1
    assert parsed.parallel.decode_context_parallel_size == 1
    assert parsed.parallel.world_size is None
    assert parsed.parallel.distributed_executor_backend is None
    assert parsed.model == "/models/tiny-llama"
    assert parsed.served_model_name == "tiny-llama:q4-alias"
    assert parsed.instance_id is None


def test_server_info_json_real_capture() -> None:
    parsed = parse_server_info_json(real_body("server_info__config_format_json"))
    assert isinstance(parsed, ServerInfo)
    assert parsed.form is ServerInfoForm.JSON
    p = parsed.parallel
    assert (p.tensor_parallel_size, p.pipeline_parallel_size, p.data_parallel_size) == (1, 1, 1)
    assert p.prefill_context_parallel_size == 1
    assert p.world_size == 1
    assert p.distributed_executor_backend == "mp"
    assert parsed.instance_id == "1796011859079858751"


def test_server_info_text_before_0_10_2_has_no_dp() -> None:
    config = (
        "model='m', speculative_config=None, tokenizer='m', dtype=torch.float16, "
        "tensor_parallel_size=4, pipeline_parallel_size=2, "
        "compilation_config={\"level\": 3, 'x': [1, (2, 3)], 'q': 'a, b=c'}, "
        "served_model_name=m"
    )
    body = ('{"vllm_config": ' + __import__("json").dumps(config) + "}").encode()
    parsed = parse_server_info_text(body)
    assert isinstance(parsed, ServerInfo)
    assert parsed.parallel.tensor_parallel_size == 4
    assert parsed.parallel.pipeline_parallel_size == 2
    assert parsed.parallel.data_parallel_size is None


def test_split_config_text_respects_nesting_and_quotes() -> None:
    items = split_config_text("a=1, b={'k': [1, 2], 'j': (3, 4)}, c='x, y=z', d=f(1, 2)")
    assert items == {"a": "1", "b": "{'k': [1, 2], 'j': (3, 4)}", "c": "'x, y=z'", "d": "f(1, 2)"}
    assert isinstance(split_config_text("a=1, a=2"), ValueError)
    assert isinstance(split_config_text("a=(1, 2"), ValueError)


@pytest.mark.parametrize(
    ("parser", "body"),
    [
        (parse_server_info_text, real_body("server_info__config_format_json")),
        (parse_server_info_json, real_body("server_info")),
        (parse_server_info_text, b'{"vllm_config": "model=\'m\', dtype=auto"}'),
        (parse_server_info_text, b'{"vllm_config": "tensor_parallel_size=two"}'),
        (parse_server_info_json, b'{"vllm_config": {"parallel_config": {}}}'),
        (
            parse_server_info_json,
            b'{"vllm_config": {"parallel_config": {"tensor_parallel_size": "2"}}}',
        ),
        (parse_server_info_text, b"model='m', tensor_parallel_size=1"),
    ],
)
def test_server_info_wrong_form_or_garbage_is_a_failure(parser: object, body: bytes) -> None:
    parsed = parser(body)  # type: ignore[operator]  # the parametrised parsers are callables
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route in (Route.SERVER_INFO, Route.SERVER_INFO_JSON)


# -------------------------------------------------------------------- /get_world_size


def test_world_size_real_capture_is_a_product_not_a_configuration() -> None:
    parsed = parse_world_size(real_body("get_world_size"))
    assert isinstance(parsed, WorldSizeProduct)
    assert parsed.product == 1
    assert parsed.kind is ParallelEvidenceKind.WORLD_SIZE_PRODUCT
    assert not _is_a(parsed, ServerInfo)
    assert not hasattr(parsed, "tensor_parallel_size")
    assert not hasattr(parsed, "parallel")


@pytest.mark.parametrize("body", [b'{"world_size": 0}', b'{"world_size": "2"}', b"{}", b"2"])
def test_world_size_malformed_is_a_failure(body: bytes) -> None:
    assert isinstance(parse_world_size(body), BodyParseFailure)


# --------------------------------------------------------------------------- /health


def test_health_status_only() -> None:
    ok = parse_health(200)
    assert isinstance(ok, HealthAnswer)
    assert ok.healthy
    dead = parse_health(503)
    assert isinstance(dead, HealthAnswer)
    assert not dead.healthy
    assert parse_health(404) is None
    assert parse_health(302) is None
