"""Sizes from the wire are bounded to what a deployment can have; nothing is allocated
from an untrusted count, and a number past ``int()``'s digit limit is a typed outcome."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tests._paths import CAPTURES
from vllm_evidence import StartupLog, assess, historical_bundle, load, read_startup_log
from vllm_evidence._adapters.outcome import Parsed, Unparsed
from vllm_evidence._bounds import MAX_WORLD_SIZE, wire_int
from vllm_evidence._output.assessment import assessment_document
from vllm_evidence.decisions import CapacityRefused, ParallelReason, ParallelRefused
from vllm_evidence.errors import InputError
from vllm_evidence.upstream import Route

JSON_INFO = CAPTURES / "vllm-0.32.0-cpu-tp1-devmode" / "server_info__config_format_json.body"
API = "(APIServer pid=100) INFO 11-30 04:10:58 [api_utils.py:286] "
ENGINE = "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] "
KV_DP0 = "(EngineCore_DP0 pid=201) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "


def _info(key: str, value: bytes) -> bytes:
    body = JSON_INFO.read_bytes()
    replaced, count = re.subn(
        rb'"' + key.encode() + rb'": ?[0-9]+', f'"{key}": '.encode() + value, body
    )
    assert count >= 1
    return replaced


def test_wire_int_reads_up_to_18_digits_only() -> None:
    assert wire_int("0") == 0
    assert wire_int("9" * 18) == int("9" * 18)
    assert wire_int("9" * 19) is None
    assert wire_int("9" * 5000) is None
    assert wire_int("-1") is None
    assert wire_int("١٢") is None  # non-ASCII digits


@pytest.mark.parametrize("key", ["tensor_parallel_size", "data_parallel_size"])
@pytest.mark.parametrize("value", [b"30000000", b"1000000000", b"9" * 5000])
def test_a_server_info_size_past_any_deployment_is_unparsed(key: str, value: bytes) -> None:
    bundle = historical_bundle({Route.SERVER_INFO_JSON: _info(key, value)})
    assert isinstance(bundle.server_info_json, Unparsed)
    assert "larger than any deployment" in bundle.server_info_json.failure.reason
    assert isinstance(assess(bundle).parallel, ParallelRefused)


def test_the_largest_size_a_deployment_can_have_is_still_read() -> None:
    bundle = historical_bundle(
        {Route.SERVER_INFO_JSON: _info("data_parallel_size", str(MAX_WORLD_SIZE).encode())}
    )
    assert isinstance(bundle.server_info_json, Parsed)
    assert bundle.server_info_json.observation.parallel.data_parallel_size == MAX_WORLD_SIZE


@pytest.mark.parametrize("value", [b"65537", b"1000000000", b"9" * 5000])
def test_a_world_size_past_any_deployment_is_unparsed(value: bytes) -> None:
    bundle = historical_bundle({Route.GET_WORLD_SIZE: b'{"world_size": ' + value + b"}"})
    assert isinstance(bundle.world_size, Unparsed)
    assert "larger than any deployment" in bundle.world_size.failure.reason


def test_a_world_size_at_the_bound_is_read() -> None:
    body = b'{"world_size": ' + str(MAX_WORLD_SIZE).encode() + b"}"
    parsed = historical_bundle({Route.GET_WORLD_SIZE: body}).world_size
    assert isinstance(parsed, Parsed)
    assert parsed.observation.product == MAX_WORLD_SIZE


def _log(dp: int, tp: int = 1) -> str:
    return (
        f"{API}vLLM API server version 0.32.0\n"
        f"{ENGINE}Initializing a V1 LLM engine (v0.32.0) with config: model='/m', "
        f"tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size={dp}\n"
        f"{KV_DP0}GPU KV cache size: 4,096 tokens, Maximum concurrency for 2,048 tokens per "
        "request: 2.00x\n"
    )


def test_a_log_world_past_any_deployment_is_not_resolved_and_nothing_is_listed() -> None:
    log = read_startup_log(io.BytesIO(_log(dp=30_000_000).encode()))
    assert isinstance(log, StartupLog)
    assessment = assess(None, log)
    parallel = assessment.parallel
    assert isinstance(parallel, ParallelRefused)
    assert parallel.reason is ParallelReason.CONFIGURATION_UNOBSERVED
    assert "30,000,000 ranks" in parallel.detail
    capacity = assessment.capacity
    assert isinstance(capacity, CapacityRefused)
    assert "1..29999999" in capacity.detail
    assert len(str(assessment_document(assessment))) < 20_000


def test_a_log_world_at_the_bound_is_resolved() -> None:
    log = read_startup_log(io.BytesIO(_log(dp=MAX_WORLD_SIZE).encode()))
    assert isinstance(log, StartupLog)
    parallel = assess(None, log).parallel
    assert parallel.configuration is not None
    assert parallel.configuration.world_size == MAX_WORLD_SIZE


@pytest.mark.parametrize(
    "route", [Route.VERSION, Route.MODELS, Route.SERVER_INFO, Route.SERVER_INFO_JSON]
)
@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 100_000])
def test_deeply_nested_json_is_unparsed_not_a_recursion_error(route: Route, body: bytes) -> None:
    bundle = historical_bundle({route: body})
    outcome = {
        Route.VERSION: bundle.version,
        Route.MODELS: bundle.models,
        Route.SERVER_INFO: bundle.server_info,
        Route.SERVER_INFO_JSON: bundle.server_info_json,
    }[route]
    assert isinstance(outcome, Unparsed)
    assert "nested too deeply" in outcome.failure.reason


def test_a_deeply_nested_manifest_is_one_input_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_bytes(b"[" * 100_000)
    with pytest.raises(InputError, match="not a readable JSON manifest"):
        load(tmp_path)
